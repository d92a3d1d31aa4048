/* SPDX-License-Identifier: MIT */
/* tests/mpi/collectives.c: every collective of include/helix/ops.h, on every channel of the
 * meshes of this world (1 to 4 ranks), gives exactly what the host computes, while
 * producers skewed per rank make the collectives ready in different orders on different
 * ranks: the per-channel token must keep them matched (architecture.md §3).  The graph,
 * inputs and skew come from tests/mpi/coll_harness.h.
 *
 * Each rank checks its own results; the failure counts meet on rank 0 through
 * hx_comm_host_allreduce, and rank 0 prints the TAP lines.  Per mesh: one line per channel
 * (14 cases: f32/f64/i32, sum and max, a packed bucket of 15, per-tile, uneven all-gather and
 * reduce-scatter, accumulate, broadcast, all-to-all, send/recv of 256 KiB, ring shifts), the
 * host helpers, the engine's counters, and that the skew really reordered the producers.
 * Run by tests/mpi/collectives.sh at np 1 (no mpirun), 2, 3 and 4, on every backend. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/helix.h"
#include "mpi/coll_harness.h"
#include "tap.h"

#define NCASES 16
#define NPACK 15 /* a full DDP bucket: token + 15 tensors */
#define NSPLIT 12 /* a packed layer gather: token + 12 pieces + 12 full tensors */
#define P2P_ELEMS 65536

/* What rank-local result to compare, and with which values. */
struct check {
    int channel;
    const char *what;
    struct hx_tensor *t;
    double *expect;             /* hx_tensor_numel(t) values */
};

static struct check *checks;
static int nchecks;

static double *expect_for(int k, const char *what, struct hx_tensor *t)
{
    checks = grow(checks, nchecks, sizeof *checks);
    double *e = calloc(hx_tensor_numel(t), sizeof *e);
    if (e == NULL) {
        exit(99);
    }
    checks[nchecks++] = (struct check){ k, what, t, e };
    return e;
}

/* ops.h's split: count and offset of group rank j among p for `total` elements */
static long cnt(long total, int p, int j)
{
    return total / p + (j < total % p);
}

static long off(long total, int p, int j)
{
    long o = 0;
    for (int i = 0; i < j; i++) {
        o += cnt(total, p, i);
    }
    return o;
}

/* All-reduce expectation of one whole tensor: sum or max over the group. */
static void expect_reduced(const struct hx_group *g, struct hx_tensor *t, double *e, int max)
{
    for (long i = 0; i < (long)hx_tensor_numel(t); i++) {
        for (int j = 0; j < g->size; j++) {
            double v = value(t->id, hx_group_member(g, j), i, t->dtype);
            e[i] = j == 0 ? v : (max ? (v > e[i] ? v : e[i]) : e[i] + v);
        }
    }
}

static void build_channel(int k)
{
    const struct hx_group *g = &J.mesh.groups[k];
    int p = g->size, me = g->rank;
    struct hx_ref r[HX_NODE_MAXREFS];
    struct hx_tensor *x, *y, *ts[NPACK], *full[NSPLIT], *piece[NSPLIT];

    /* 0-2: one tensor, f32 sum, f64 max, i32 sum */
    static const struct { int dt, max, rows, cols; const char *what; } one[] = {
        { HX_F32, 0, 3, 5, "allreduce f32 sum" }, { HX_F64, 1, 2, 7, "allreduce f64 max" },
        { HX_I32, 0, 1, 9, "allreduce i32 sum" } };
    for (int c = 0; c < 3; c++) {
        x = tensor(k, c, "x", one[c].dt, one[c].rows, one[c].cols, 0);
        produce_all(x);
        r[0] = hx_ref_of(x, 0, HX_RW);
        coll(HX_OP_ALLREDUCE, k, one[c].dt, one[c].max ? HX_MAX : HX_SUM, 0, 0, 1, r);
        expect_reduced(g, x, expect_for(k, one[c].what, x), one[c].max);
    }
    /* 3: a packed bucket of NPACK tensors of different shapes */
    for (int i = 0; i < NPACK; i++) {
        char w[16];
        snprintf(w, sizeof w, "b%d", i);
        ts[i] = tensor(k, 3, w, HX_F32, 1 + i % 3, 2 + i, 0);
        produce_all(ts[i]);
        r[i] = hx_ref_of(ts[i], 0, HX_RW);
    }
    coll(HX_OP_ALLREDUCE, k, HX_F32, HX_SUM, 0, 0, NPACK, r);
    for (int i = 0; i < NPACK; i++) {
        expect_reduced(g, ts[i], expect_for(k, "packed allreduce (bucket of 15)", ts[i]), 0);
    }
    /* 4: one all-reduce per row tile (10 x 3 in tiles of 4 rows) */
    x = tensor(k, 4, "x", HX_F32, 10, 3, 4);
    for (int i = 0; i < x->ntiles; i++) {
        produce(x, i);
        r[0] = hx_ref_of(x, i, HX_RW);
        coll(HX_OP_ALLREDUCE, k, HX_F32, HX_SUM, 0, 0, 1, r);
    }
    expect_reduced(g, x, expect_for(k, "per-tile allreduce", x), 0);
    /* 5: uneven all-gather, total 5p+3 */
    long total = 5L * p + 3;
    x = tensor(k, 5, "in", HX_F32, 1, (int)cnt(total, p, me), 0);
    y = tensor(k, 5, "out", HX_F32, 1, (int)total, 0);
    produce_all(x);
    r[0] = hx_ref_of(x, 0, HX_R);
    r[1] = hx_ref_of(y, 0, HX_W);
    coll(HX_OP_ALLGATHER, k, HX_F32, 0, 0, 0, 2, r);
    double *e = expect_for(k, "uneven allgather f32", y);
    for (int j = 0; j < p; j++) {
        for (long i = 0; i < cnt(total, p, j); i++) {
            e[off(total, p, j) + i] = value(x->id, hx_group_member(g, j), i, HX_F32);
        }
    }
    /* 6: tile-wise all-gather (the builder's layout): full (4p,3) tiles of 2p rows from
     * shard (4,3) tiles of 2 rows, rank-major inside a tile */
    x = tensor(k, 6, "shard", HX_F64, 4, 3, 2);
    y = tensor(k, 6, "full", HX_F64, 4 * p, 3, 2 * p);
    e = expect_for(k, "tile-wise allgather f64", y);
    for (int i = 0; i < 2; i++) {
        produce(x, i);
        r[0] = hx_ref_of(x, i, HX_R);
        r[1] = hx_ref_of(y, i, HX_W);
        coll(HX_OP_ALLGATHER, k, HX_F64, 0, 0, 0, 2, r);
        for (int j = 0; j < p; j++) {
            for (long q = 0; q < 6; q++) { /* 2 rows x 3 of member j's shard tile i */
                e[(long)i * 6 * p + j * 6 + q] =
                    value(x->id, hx_group_member(g, j), i * 6 + q, HX_F64);
            }
        }
    }
    /* 7-9: uneven reduce-scatter: f32 sum, f64 sum accumulating, i32 max */
    static const struct { int dt, max, acc; const char *what; } rs[] = {
        { HX_F32, 0, 0, "uneven reduce_scatter f32 sum" },
        { HX_F64, 0, 1, "reduce_scatter f64 accumulate" },
        { HX_I32, 1, 0, "reduce_scatter i32 max" } };
    for (int c = 0; c < 3; c++) {
        total = 5L * p + 3 + c;
        x = tensor(k, 7 + c, "in", rs[c].dt, 1, (int)total, 0);
        y = tensor(k, 7 + c, "out", rs[c].dt, 1, (int)cnt(total, p, me), 0);
        produce_all(x);
        if (rs[c].acc) {
            produce_all(y);
        }
        r[0] = hx_ref_of(x, 0, HX_R);
        r[1] = hx_ref_of(y, 0, rs[c].acc ? HX_RW : HX_W);
        coll(HX_OP_REDUCE_SCATTER, k, rs[c].dt, rs[c].max ? HX_MAX : HX_SUM, 0, rs[c].acc, 2, r);
        e = expect_for(k, rs[c].what, y);
        for (long i = 0; i < cnt(total, p, me); i++) {
            for (int j = 0; j < p; j++) {
                double v = value(x->id, hx_group_member(g, j), off(total, p, me) + i, rs[c].dt);
                e[i] = j == 0 ? v : (rs[c].max ? (v > e[i] ? v : e[i]) : e[i] + v);
            }
            if (rs[c].acc) {
                e[i] += value(y->id, R, i, rs[c].dt);
            }
        }
    }
    /* 10-11: broadcast from the last group rank; a packed one of 3 f64 tensors from 0 */
    x = tensor(k, 10, "x", HX_F32, 2, 3, 0);
    produce_all(x);
    r[0] = hx_ref_of(x, 0, HX_RW);
    coll(HX_OP_BROADCAST, k, HX_F32, 0, p - 1, 0, 1, r);
    e = expect_for(k, "broadcast f32 from the last rank", x);
    for (long i = 0; i < 6; i++) {
        e[i] = value(x->id, hx_group_member(g, p - 1), i, HX_F32);
    }
    static const int shape[3][2] = { { 1, 4 }, { 2, 2 }, { 4, 1 } };
    for (int i = 0; i < 3; i++) {
        char w[16];
        snprintf(w, sizeof w, "b%d", i);
        ts[i] = tensor(k, 11, w, HX_F64, shape[i][0], shape[i][1], 0);
        produce_all(ts[i]);
        r[i] = hx_ref_of(ts[i], 0, HX_RW);
    }
    coll(HX_OP_BROADCAST, k, HX_F64, 0, 0, 0, 3, r);
    for (int i = 0; i < 3; i++) {
        e = expect_for(k, "packed broadcast f64 from rank 0", ts[i]);
        for (long q = 0; q < 4; q++) {
            e[q] = value(ts[i]->id, hx_group_member(g, 0), q, HX_F64);
        }
    }
    /* 12: all-to-all, blocks of 3 i32 */
    x = tensor(k, 12, "in", HX_I32, 1, 3 * p, 0);
    y = tensor(k, 12, "out", HX_I32, 1, 3 * p, 0);
    produce_all(x);
    r[0] = hx_ref_of(x, 0, HX_R);
    r[1] = hx_ref_of(y, 0, HX_W);
    coll(HX_OP_ALLTOALL, k, HX_I32, 0, 0, 0, 2, r);
    e = expect_for(k, "alltoall i32", y);
    for (int j = 0; j < p; j++) {
        for (long q = 0; q < 3; q++) {
            e[j * 3 + q] = value(x->id, hx_group_member(g, j), me * 3 + q, HX_I32);
        }
    }
    /* 14: packed all-gather of a layer: NSPLIT tensors of uneven totals (p+1, 3p+1, ..),
     * rank j's pieces back to back in one message, unpacked into every full tensor */
    for (int q = 0; q < NSPLIT; q++) {
        char w[16];
        long tq = q == 0 ? p + 1 : 3L * q * p + q % 5;
        snprintf(w, sizeof w, "piece%d", q);
        piece[q] = tensor(k, 14, w, HX_F32, 1, (int)cnt(tq, p, me), 0);
        snprintf(w, sizeof w, "full%d", q);
        full[q] = tensor(k, 14, w, HX_F32, 1, (int)tq, 0);
        produce_all(piece[q]);
        r[q] = hx_ref_of(piece[q], 0, HX_R);
        r[NSPLIT + q] = hx_ref_of(full[q], 0, HX_W);
    }
    coll(HX_OP_ALLGATHER, k, HX_F32, 0, 0, 0, 2 * NSPLIT, r);
    for (int q = 0; q < NSPLIT; q++) {
        long tq = full[q]->cols;
        e = expect_for(k, "packed allgather of 12 tensors", full[q]);
        for (int j = 0; j < p; j++) {
            for (long i = 0; i < cnt(tq, p, j); i++) {
                e[off(tq, p, j) + i] = value(piece[q]->id, hx_group_member(g, j), i, HX_F32);
            }
        }
    }
    /* 15: packed reduce-scatter of a layer's gradients, f64, accumulating into the pieces */
    for (int q = 0; q < NSPLIT; q++) {
        char w[16];
        long tq = q == 0 ? p + 1 : 2L * q * p + q % 3;
        snprintf(w, sizeof w, "full%d", q);
        full[q] = tensor(k, 15, w, HX_F64, 1, (int)tq, 0);
        snprintf(w, sizeof w, "piece%d", q);
        piece[q] = tensor(k, 15, w, HX_F64, 1, (int)cnt(tq, p, me), 0);
        produce_all(full[q]);
        produce_all(piece[q]);
        r[q] = hx_ref_of(full[q], 0, HX_R);
        r[NSPLIT + q] = hx_ref_of(piece[q], 0, HX_RW);
    }
    coll(HX_OP_REDUCE_SCATTER, k, HX_F64, HX_SUM, 0, 1, 2 * NSPLIT, r);
    for (int q = 0; q < NSPLIT; q++) {
        long tq = full[q]->cols;
        e = expect_for(k, "packed reduce_scatter of 12 tensors, accumulating", piece[q]);
        for (long i = 0; i < cnt(tq, p, me); i++) {
            e[i] = value(piece[q]->id, R, i, HX_F64);
            for (int j = 0; j < p; j++) {
                e[i] += value(full[q]->id, hx_group_member(g, j), off(tq, p, me) + i, HX_F64);
            }
        }
    }
    /* 13: send/recv around the ring, 256 KiB (past the eager limit): even group ranks send
     * first and odd ones receive first, as blocking MPI_Send/MPI_Recv would need */
    if (p > 1) {
        int next = (me + 1) % p, prev = (me + p - 1) % p;
        x = tensor(k, 13, "send", HX_F32, 1, P2P_ELEMS, 0);
        y = tensor(k, 13, "recv", HX_F32, 1, P2P_ELEMS, 0);
        produce_all(x);
        struct hx_ref sr = hx_ref_of(x, 0, HX_R), rr = hx_ref_of(y, 0, HX_W);
        for (int phase = 0; phase < 2; phase++) {
            if ((phase == 0) == (me % 2 == 0)) {
                coll(HX_OP_SEND, k, HX_F32, 0, next, 0, 1, &sr);
            } else {
                coll(HX_OP_RECV, k, HX_F32, 0, prev, 0, 1, &rr);
            }
        }
        e = expect_for(k, "send/recv ring f32 256 KiB", y);
        for (long q = 0; q < P2P_ELEMS; q++) {
            e[q] = value(x->id, hx_group_member(g, prev), q, HX_F32);
        }
    }
    /* 14: ring shifts (Flux's tile steps), f64, 256 KiB, every distance k = 1..p-1 and its
     * negative: in goes to group rank r - k, out comes from r + k */
    for (int d = 1; d < p; d++) {
        for (int sign = 1; sign >= -1; sign -= 2) {
            char what[32];
            int kk = sign * d;
            snprintf(what, sizeof what, "shift%+d.in", kk);
            x = tensor(k, 14, what, HX_F64, 1, P2P_ELEMS / 2, 0);
            snprintf(what, sizeof what, "shift%+d.out", kk);
            y = tensor(k, 14, what, HX_F64, 1, P2P_ELEMS / 2, 0);
            produce_all(x);
            struct hx_ref sr[2] = { hx_ref_of(x, 0, HX_R), hx_ref_of(y, 0, HX_W) };
            coll(HX_OP_SHIFT, k, HX_F64, 0, kk, 0, 2, sr);
            e = expect_for(k, sign > 0 ? "shift by +k f64 256 KiB" : "shift by -k f64 256 KiB",
                           y);
            int from = ((me + kk) % p + p) % p;
            for (long q = 0; q < P2P_ELEMS / 2; q++) {
                e[q] = value(x->id, hx_group_member(g, from), q, HX_F64);
            }
        }
    }
}

/* Mismatches of this rank, per channel; prints the first of each check on stderr. */
static void verify(int *fails)
{
    for (int c = 0; c < nchecks; c++) {
        struct check *ck = &checks[c];
        long n = (long)hx_tensor_numel(ck->t), bad = 0, first = -1;
        double got1 = 0;
        hx_tensor_begin_access(ck->t, 'r');
        for (long i = 0; i < n; i++) {
            double got = ck->t->dtype == HX_F32   ? (double)hx_f32(ck->t)[i]
                         : ck->t->dtype == HX_F64 ? hx_f64(ck->t)[i]
                                                  : (double)hx_i32(ck->t)[i];
            if (got != ck->expect[i]) {
                if (bad++ == 0) {
                    first = i;
                    got1 = got;
                }
            }
        }
        hx_tensor_end_access(ck->t);
        if (bad > 0) {
            fails[ck->channel]++;
            fprintf(stderr, "# rank %d: channel %s: %s (%s): %ld of %ld elements differ, first "
                    "[%ld] = %g, expected %g\n", R, hx_group_name((enum hx_group_kind)ck->channel),
                    ck->what, ck->t->name, bad, n, first, got1, ck->expect[first]);
        }
    }
}

/* The host helpers on every channel; @return mismatches on this rank. */
static int check_host(void)
{
    int bad = 0;
    for (int k = 0; k < HX_GROUP_COUNT; k++) {
        const struct hx_group *g = &J.mesh.groups[k];
        int p = g->size, me = g->rank, sum = 0;
        int32_t v = R + 1;
        bad += hx_comm_host_allreduce((enum hx_group_kind)k, &v, 1, HX_I32, HX_SUM) != HX_OK;
        for (int j = 0; j < p; j++) {
            sum += hx_group_member(g, j) + 1;
        }
        bad += v != sum;
        double b = me == p - 1 ? 10.0 * R + 0.5 : -1;
        bad += hx_comm_host_bcast((enum hx_group_kind)k, &b, sizeof b, p - 1) != HX_OK;
        bad += b != 10.0 * hx_group_member(g, p - 1) + 0.5;
        long rb[HX_MESH_MAX_RANKS], tot = 0;
        unsigned char send[8], recv[64];
        for (int j = 0; j < p; j++) {
            rb[j] = j + 1;
            tot += rb[j];
        }
        memset(send, R + 1, sizeof send);
        bad += hx_comm_host_allgatherv((enum hx_group_kind)k, send, me + 1, recv, rb) != HX_OK;
        for (int j = 0, o = 0; j < p; o += j + 1, j++) {
            for (int q = 0; q <= j; q++) {
                bad += recv[o + q] != hx_group_member(g, j) + 1;
            }
        }
        bad += hx_comm_host_barrier((enum hx_group_kind)k) != HX_OK;
        if (bad) {
            fprintf(stderr, "# rank %d: host helpers on channel %s: %d mismatches so far\n", R,
                    hx_group_name((enum hx_group_kind)k), bad);
        }
        (void)tot;
    }
    return bad;
}

struct mesh_case {
    const char *name;
    struct hx_mesh_request req;
};

static const struct mesh_case meshes1[] = { { "serial", { .dp = 0 } } };
static const struct mesh_case meshes2[] = {
    { "dp 2, ZeRO-2", { .zero_stage = 2 } },
    { "dp 2, ZeRO-3", { .zero_stage = 3 } },
    { "tp 2", { .tp = 2 } },
    { "pp 2", { .pp = 2 } },
};
static const struct mesh_case meshes3[] = { /* odd: uneven shares, a ring of 3 */
    { "dp 3", { .dp = 0 } },
    { "dp 3, ZeRO-3", { .zero_stage = 3 } },
};
static const struct mesh_case meshes4[] = {
    { "dp 2 x tp 2", { .tp = 2 } },
    { "dp 4, s_p 2 s_g 4 s_os 4", { .shard_p = 2, .shard_g = 4, .shard_os = 4 } },
    { "pp 2 x tp 2", { .pp = 2, .tp = 2 } },
    { "dp 4, MiCS on 2 nodes of 2", { .mics = 1, .ranks_per_node = 2 } },
};

#define LINES_PER_MESH (HX_GROUP_COUNT + 3)

/* Run every case on one mesh; rank 0 prints LINES_PER_MESH TAP lines. */
static void run_mesh(const struct mesh_case *mc)
{
    struct hx_mesh_request req = mc->req;
    req.world_size = W;
    req.world_rank = R;
    job_begin();
    if (hx_mesh_init(&J.mesh, &req, 0) != HX_OK) {
        hx_mpi_abort(99);
    }
    struct hx_comm_opts co = { .timeout = 20 }; /* a hang fails in 20 s, not never */
    const char *backend = getenv("HX_COMM_BACKEND"); /* collectives.sh runs each backend */
    if (backend != NULL && hx_comm_backend_from_name(backend, &co.backend) != HX_OK) {
        fprintf(stderr, "collectives: HX_COMM_BACKEND=%s is not mpi, starpu-mpi or nccl\n",
                backend);
        hx_mpi_abort(99);
    }
    if (hx_comm_open(&J.mesh, &co) != HX_OK) {
        hx_mpi_abort(99);
    }
    for (int k = 0; k < HX_GROUP_COUNT; k++) {
        build_channel(k);
    }
    int fails[LINES_PER_MESH] = { 0 };
    if (job_run() != HX_OK) {
        for (int k = 0; k < HX_GROUP_COUNT; k++) {
            fails[k]++;
        }
    } else {
        verify(fails);
    }
    fails[HX_GROUP_COUNT] = check_host();
    struct hx_comm_stats st;
    hx_comm_get_stats(&st);
    fails[HX_GROUP_COUNT + 1] = st.collectives != J.ncoll || (W > 1 && !(st.bytes > 0));
    int lo = first_producer, hi = first_producer;
    hx_comm_host_allreduce(HX_GROUP_WORLD, &hi, 1, HX_I32, HX_MAX);
    lo = -lo;
    hx_comm_host_allreduce(HX_GROUP_WORLD, &lo, 1, HX_I32, HX_MAX);
    lo = -lo;
    hx_comm_host_allreduce(HX_GROUP_WORLD, fails, LINES_PER_MESH, HX_I32, HX_SUM);
    if (R == 0) {
        for (int k = 0; k < HX_GROUP_COUNT; k++) {
            const struct hx_group *g = &J.mesh.groups[k];
            char peers[128] = "";
            for (int j = 0; j < g->size; j++) {
                snprintf(peers + strlen(peers), sizeof peers - strlen(peers), "%s%d",
                         j ? "," : "", hx_group_member(g, j));
            }
            tap_ok(fails[k] == 0, "%s: channel %s (group of %d, rank 0's: world ranks %s): "
                   "%d cases exact on every rank (%d failed)", mc->name,
                   hx_group_name((enum hx_group_kind)k), g->size, peers,
                   g->size > 1 ? NCASES : NCASES - 1, fails[k]);
        }
        tap_ok(fails[HX_GROUP_COUNT] == 0, "%s: host allreduce, bcast, allgatherv and barrier "
               "exact on every channel (%d mismatches)", mc->name, fails[HX_GROUP_COUNT]);
        tap_ok(fails[HX_GROUP_COUNT + 1] == 0, "%s: the engine counted %d collectives, %.0f "
               "bytes on rank 0 (%d ranks disagree)", mc->name, J.ncoll, st.bytes,
               fails[HX_GROUP_COUNT + 1]);
        if (W == 1) {
            tap_skip("one rank: no skew to check");
        } else {
            tap_ok(lo != hi, "%s: producers ran in different orders on different ranks (first "
                   "producer %d vs %d of %d)", mc->name, lo, hi, J.nprods);
        }
    }
    job_end();
    for (int c = 0; c < nchecks; c++) {
        free(checks[c].expect);
    }
    free(checks);
    checks = NULL;
    nchecks = 0;
    hx_comm_close();
}

int main(int argc, char **argv)
{
    start_runtime(&argc, &argv);
    int status = 0;
    if (W < 1 || W > 4) {
        if (R == 0) {
            printf("1..0 # SKIP the meshes are written for 1 to 4 ranks, not %d\n", W);
        }
    } else {
        const struct mesh_case *ms = W == 1 ? meshes1 : W == 2 ? meshes2 : W == 3 ? meshes3
                                                                                   : meshes4;
        int n = W == 1 ? 1 : W == 3 ? 2 : 4;
        if (R == 0) {
            tap_plan(n * LINES_PER_MESH);
        }
        for (int m = 0; m < n; m++) {
            run_mesh(&ms[m]);
        }
        status = R == 0 ? tap_exit() : 0;
    }
    stop_runtime();
    return status;
}
