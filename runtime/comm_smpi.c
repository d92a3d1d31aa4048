/* SPDX-License-Identifier: MIT */
/* runtime/comm_smpi.c: the StarPU-MPI backend of the collective engine (--comm-backend
 * starpu-mpi).  A collective is a task graph of StarPU-MPI point-to-point transfers
 * (starpu_mpi_isend_detached / starpu_mpi_irecv_detached on registered handles) and local
 * reduction tasks, submitted by the collective's own task (codelets/collective_smpi.c) while
 * it holds its tiles, and completed through the engine like an NCCL request: the graph's
 * operations count down, the engine polls the count, then releases the task, so the
 * channel token, the statistics and the --comm-timeout watchdog are those of the MPI backend.
 *
 * Why inside the task: the tiles are the task's until it ends (its data accesses order it
 * against compute), so the transfers see exactly the data the graph says, and everything
 * the graph IR, the policies and the trace know about a collective node stays true.  The
 * handles registered here cover pieces of those tiles (home node RAM, CPU-only codelets, so
 * StarPU never copies them elsewhere) or scratch that StarPU allocates; all are unregistered
 * with starpu_data_unregister_submit once the graph is submitted.
 *
 * Algorithms (p ranks, n elements, a latency alpha per message, beta per byte, gamma per
 * element reduced), chosen per tensor by size (HX_SMPI_ALGO=ring|tree|halving overrides:
 * halving, for a power of two of ranks, only when asked; hx_smpi_algo_for says why):
 *   ring (large n; bandwidth-optimal): reduce-scatter then all-gather over p chunks (ops.h's
 *     split rule), 2(p-1) steps each moving n/p:  2(p-1) alpha + 2 (p-1)/p n beta
 *     + (p-1)/p n gamma.  Chunk c is summed along the ring starting at group rank c:
 *     ((x_c + x_{c+1}) + x_{c+2}) + ..., then copied to every rank, so every rank ends with
 *     the same bits.
 *   halving (large n, p a power of two): recursive halving then doubling, log2 p steps each
 *     way moving n/2, n/4, ...:  2 log2 p alpha + 2 (p-1)/p n beta + (p-1)/p n gamma.
 *   tree (small n; latency-optimal): binomial reduce to group rank 0, then binomial
 *     broadcast, 2 ceil(log2 p) steps each moving n:  2 ceil(log2 p) (alpha + n beta)
 *     + ceil(log2 p) n gamma.  Rank r adds r + 1, r + 2, r + 4, ... in that order.
 * Either way the algorithm, not the arrival order, fixes every sum: results are bitwise the
 * same for any scheduler, worker count or timing.  The crossover, SMPI_TREE_MAX_BYTES, is
 * where the ring's extra 2(p-1) - 2 log2 p latencies cost what the tree's extra bandwidth
 * does on the bed's 1 Gbit/s link (alpha ~ 50 us): ~ 64 KiB.
 *
 * Tags (starpu_mpi_tag_t, 64 bits): channel (7 bits) | number (32) | tensor (8) | step (8).
 * A collective's number counts the collectives on its channel on this rank (the channel
 * token makes it the same on every member); a send or receive counts the messages between
 * its pair of ranks in its direction on the channel, with step 255.  So no two messages
 * between a pair of ranks ever share a tag.
 * Test: tests/mpi/collectives.sh (every op, every algorithm forced, 2-4 ranks) and
 * tests/mpi/parity_smpi.sh (training on every kind of mesh). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <starpu.h>
#include <starpu_mpi.h>

#include "helix/error.h"
#include "helix/graph.h"
#include "helix/ops.h"
#include "helix/runtime.h"
#include "helix/tensor.h"
#include "runtime/comm_internal.h"
#include "runtime/sim_models.h"

#define SMPI_TREE_MAX_BYTES (64 << 10)
#define SMPI_MAX_STEPS 256
#define SMPI_MAX_TENSORS 256

struct hx_smpi_coll {
    struct hx_coll_req r;          /* first: the engine hands it back to done() */
    const struct hx_group *g;
    int dtype;
    size_t esize;
    long number;                   /* this collective's number on its channel */
    int ntensors;                  /* tensors added so far: the tag's tensor field */
    int pending;                   /* operations submitted and not finished (atomic) */
    int failed;                    /* a submission failed: reported, the task still ends */
    int prio;                      /* of its reduction and copy tasks: its lane's (lane_prio) */
};

/* Message numbering per channel, by worker threads that the channel token serializes:
 * collectives started (every member runs the same ones), and point-to-point messages per
 * peer and direction (members run different ones; MPI's order between a pair is kept). */
static long numbers[HX_GROUP_COUNT];
static long *sent[HX_GROUP_COUNT], *received[HX_GROUP_COUNT];
#define P2P_STEP 255 /* the step field of a point-to-point message */

/* ---- the reduction task: acc := acc (+ | max) in ---- */

struct acc_args {
    int dtype, reduce;
};

/* The reduction tasks' arguments, one per (dtype, op): cl_arg points here (never freed). */
static const struct acc_args acc_args[3][2] = {
    { { HX_F32, HX_SUM }, { HX_F32, HX_MAX } },
    { { HX_F64, HX_SUM }, { HX_F64, HX_MAX } },
    { { HX_I32, HX_SUM }, { HX_I32, HX_MAX } },
};

static void acc_cpu(void *buffers[], void *cl_arg)
{
    const struct acc_args *a = cl_arg;
    long n = (long)STARPU_VECTOR_GET_NX(buffers[0]);
    void *y = (void *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const void *x = (const void *)STARPU_VECTOR_GET_PTR(buffers[1]);
    int max = a->reduce == HX_MAX;
    if (a->dtype == HX_F32) {
        float *u = y;
        const float *v = x;
        for (long i = 0; i < n; i++) {
            u[i] = max ? (v[i] > u[i] ? v[i] : u[i]) : u[i] + v[i];
        }
    } else if (a->dtype == HX_F64) {
        double *u = y;
        const double *v = x;
        for (long i = 0; i < n; i++) {
            u[i] = max ? (v[i] > u[i] ? v[i] : u[i]) : u[i] + v[i];
        }
    } else {
        int32_t *u = y;
        const int32_t *v = x;
        for (long i = 0; i < n; i++) {
            u[i] = max ? (v[i] > u[i] ? v[i] : u[i]) : u[i] + v[i];
        }
    }
}

/* History models, as every codelet of helix has: they are what a simulation (helix simulate)
 * charges these tasks, calibrated by real runs like the others. */
static struct starpu_perfmodel acc_model = { .type = STARPU_HISTORY_BASED,
                                             .symbol = "hx_smpi_reduce" };
static struct starpu_perfmodel copy_in_model = { .type = STARPU_HISTORY_BASED,
                                                 .symbol = "hx_smpi_copy_in" };
static struct starpu_perfmodel copy_out_model = { .type = STARPU_HISTORY_BASED,
                                                  .symbol = "hx_smpi_copy_out" };

static struct starpu_codelet acc_cl = {
    .cpu_funcs = { acc_cpu },
    .nbuffers = 2,
    .modes = { STARPU_RW, STARPU_R },
    .name = "smpi_reduce",
    .model = &acc_model,
};

/* ---- copies between a task's tile (a pointer the collective's task holds) and scratch ----
 * cl_arg: struct copy_args (freed by StarPU with the task).  Copy-in fills scratch from the
 * tile; copy-out writes (or, for a reduce-scatter with accumulate, adds) scratch into it. */

struct copy_args {
    void *tile;
    int dtype, add;
};

static void copy_in_cpu(void *buffers[], void *cl_arg)
{
    const struct copy_args *a = cl_arg;
    size_t bytes = STARPU_VECTOR_GET_NX(buffers[0]) * STARPU_VECTOR_GET_ELEMSIZE(buffers[0]);
    memcpy((void *)STARPU_VECTOR_GET_PTR(buffers[0]), a->tile, bytes);
}

/* dst := src, or dst += src with @p add; n elements of @p dtype */
static void put(void *dst, const void *src, long n, int dtype, int add)
{
    if (!add) {
        memcpy(dst, src, (size_t)n * hx_dtype_size((enum hx_dtype)dtype));
    } else if (dtype == HX_F32) {
        for (long i = 0; i < n; i++) {
            ((float *)dst)[i] += ((const float *)src)[i];
        }
    } else if (dtype == HX_F64) {
        for (long i = 0; i < n; i++) {
            ((double *)dst)[i] += ((const double *)src)[i];
        }
    } else {
        for (long i = 0; i < n; i++) {
            ((int32_t *)dst)[i] += ((const int32_t *)src)[i];
        }
    }
}

static void copy_out_cpu(void *buffers[], void *cl_arg)
{
    const struct copy_args *a = cl_arg;
    put(a->tile, (const void *)STARPU_VECTOR_GET_PTR(buffers[0]),
        (long)STARPU_VECTOR_GET_NX(buffers[0]), a->dtype, a->add);
}

static struct starpu_codelet copy_in_cl = {
    .cpu_funcs = { copy_in_cpu },
    .nbuffers = 1,
    .modes = { STARPU_W },
    .name = "smpi_copy_in",
    .model = &copy_in_model,
};

static struct starpu_codelet copy_out_cl = {
    .cpu_funcs = { copy_out_cpu },
    .nbuffers = 1,
    .modes = { STARPU_R },
    .name = "smpi_copy_out",
    .model = &copy_out_model,
};

/* ---- bookkeeping ---- */

static void one_done(void *arg)
{
    struct hx_smpi_coll *c = arg;
    int lane = c->r.lane; /* (read first: once pending is 0 the engine may free c) */
    /* only a simulation's lanes sleep until kicked; a real one polls (runtime/comm_engine.c) */
    if (__atomic_sub_fetch(&c->pending, 1, __ATOMIC_RELEASE) == 0 && hx_runtime_simulated()) {
        hx_comm_engine_kick(lane);
    }
}

static int poll_done(struct hx_coll_req *r)
{
    struct hx_smpi_coll *c = (struct hx_smpi_coll *)r;
    return __atomic_load_n(&c->pending, __ATOMIC_ACQUIRE) == 0 ? 1 : 0;
}

static void coll_done(struct hx_coll_req *r, const MPI_Status *st, int ok)
{
    (void)st;
    (void)ok;
    free(r);
}

static void fail(struct hx_smpi_coll *c, const char *what, int ret)
{
    if (!c->failed) {
        HX_TASK_ERR(HX_ERUNTIME, "%s on channel %s seq %d (StarPU-MPI backend): %s failed: %s",
                    c->r.op, hx_group_name((enum hx_group_kind)c->r.channel), c->r.seq, what,
                    strerror(ret < 0 ? -ret : ret));
    }
    c->failed = 1;
}

static starpu_mpi_tag_t tag_of(const struct hx_smpi_coll *c, int tensor, int step)
{
    return (starpu_mpi_tag_t)(((uint64_t)(c->r.channel & 0x7f) << 56) |
                              (((uint64_t)c->number & 0xffffffffu) << 16) |
                              ((uint64_t)(tensor & 0xff) << 8) | (uint64_t)(step & 0xff));
}

static int world_of(const struct hx_group *g, int j)
{
    return g->first + j * g->stride;
}

/* A vector handle over @p n elements at @p p (RAM), or StarPU-allocated scratch (p NULL);
 * unregistered once every operation submitted on it has run. */
static starpu_data_handle_t vec(struct hx_smpi_coll *c, void *p, long n)
{
    starpu_data_handle_t h;
    starpu_vector_data_register(&h, p != NULL ? STARPU_MAIN_RAM : -1, (uintptr_t)p,
                                (uint32_t)n, c->esize);
    return h;
}

/* A detached transfer of @p h with group rank @p peer: a send (@p out) or a receive. */
static void xfer(struct hx_smpi_coll *c, starpu_data_handle_t h, int peer, int tensor, int step,
                 int out)
{
    if (c->failed) {
        return;
    }
    __atomic_fetch_add(&c->pending, 1, __ATOMIC_RELAXED);
    int rank = world_of(c->g, peer);
    starpu_mpi_tag_t tag = tag_of(c, tensor, step);
    int ret = out ? starpu_mpi_isend_detached(h, rank, tag, MPI_COMM_WORLD, one_done, c)
                  : starpu_mpi_irecv_detached(h, rank, tag, MPI_COMM_WORLD, one_done, c);
    if (ret != 0) {
        __atomic_fetch_sub(&c->pending, 1, __ATOMIC_RELAXED);
        fail(c, out ? "starpu_mpi_isend_detached" : "starpu_mpi_irecv_detached", ret);
    }
}

static void send(struct hx_smpi_coll *c, starpu_data_handle_t h, int to, int tensor, int step)
{
    xfer(c, h, to, tensor, step, 1);
}

static void recv(struct hx_smpi_coll *c, starpu_data_handle_t h, int from, int tensor, int step)
{
    xfer(c, h, from, tensor, step, 0);
}

static void reduce(struct hx_smpi_coll *c, starpu_data_handle_t acc, starpu_data_handle_t in,
                   int op)
{
    if (c->failed) {
        return;
    }
    if (hx_sim_model_check(&acc_cl, "StarPU-MPI's reduction task") != HX_OK) {
        c->failed = 1; /* (said) */
        return;
    }
    int d = c->dtype == HX_F32 ? 0 : c->dtype == HX_F64 ? 1 : 2;
    const struct acc_args *a = &acc_args[d][op == HX_MAX];
    __atomic_fetch_add(&c->pending, 1, __ATOMIC_RELAXED);
    int ret = starpu_task_insert(&acc_cl, STARPU_RW, acc, STARPU_R, in, STARPU_CL_ARGS_NFREE,
                                 a, sizeof *a, STARPU_CALLBACK_WITH_ARG_NFREE, one_done, c,
                                 STARPU_PRIORITY, c->prio, 0);
    if (ret != 0) {
        __atomic_fetch_sub(&c->pending, 1, __ATOMIC_RELAXED);
        fail(c, "submitting a reduction task", ret);
    }
}

static void copy(struct hx_smpi_coll *c, struct starpu_codelet *cl, starpu_data_handle_t h,
                 void *tile, int add)
{
    if (c->failed) {
        return;
    }
    if (hx_sim_model_check(cl, "StarPU-MPI's copy task") != HX_OK) {
        c->failed = 1; /* (said) */
        return;
    }
    struct copy_args *a = malloc(sizeof *a);
    if (a == NULL) {
        fail(c, "allocating a copy task's arguments", ENOMEM);
        return;
    }
    *a = (struct copy_args){ tile, c->dtype, add };
    __atomic_fetch_add(&c->pending, 1, __ATOMIC_RELAXED);
    int ret = starpu_task_insert(cl, cl == &copy_in_cl ? STARPU_W : STARPU_R, h, STARPU_CL_ARGS,
                                 a, sizeof *a, STARPU_CALLBACK_WITH_ARG_NFREE, one_done, c,
                                 STARPU_PRIORITY, c->prio, 0);
    if (ret != 0) {
        __atomic_fetch_sub(&c->pending, 1, __ATOMIC_RELAXED);
        free(a);
        fail(c, "submitting a copy task", ret);
    }
}

/* The priority of a collective's reduction and copy tasks on channel @p ch: the top, so a
 * ring's next step is not held behind compute, and one below it on the inter-node lane.
 * Why: these are plain StarPU tasks in the workers' queues, where an inter-node all-reduce's
 * reductions (chunks of a large message) could otherwise run ahead of an intra-node one's
 * queued after them; the intra-node peer waits on the fast link, the inter-node one on the
 * slow link anyway (runtime/comm_engine.c, "Lanes").  Priorities order tasks only: each sum
 * still follows its handles' dependencies, so no number changes. */
static int lane_prio(int ch)
{
    return hx_comm_lane(ch) == HX_LANE_COMM_INTER ? STARPU_MAX_PRIO - 1 : STARPU_MAX_PRIO;
}

/* ---- algorithms (group ranks; me = g->rank) ---- */

/* Binomial broadcast of @p h from group rank @p root: in relative ranks v = me - root, rank v
 * receives from v - m at the level m of its lowest set bit, then sends to v + m' for each
 * smaller m'; ceil(log2 p) levels, tags from @p step0. */
static void tree_bcast(struct hx_smpi_coll *c, starpu_data_handle_t h, int root, int k,
                       int step0)
{
    int p = c->g->size, v = (c->g->rank - root + p) % p;
    int top = 1;
    while (top < p) {
        top <<= 1;
    }
    for (int m = top >> 1, s = 0; m >= 1; m >>= 1, s++) {
        if ((v & (2 * m - 1)) == 0 && v + m < p) {
            send(c, h, (v + m + root) % p, k, step0 + s);
        } else if ((v & (2 * m - 1)) == m) {
            recv(c, h, (v - m + root) % p, k, step0 + s);
        }
    }
}

/* Binomial reduce to group rank 0, then binomial broadcast from it. */
static void tree_allreduce(struct hx_smpi_coll *c, void *buf, long n, int op, int k)
{
    int p = c->g->size, me = c->g->rank, step = 0;
    starpu_data_handle_t h = vec(c, buf, n), tmp = NULL;
    int mask = 1;
    for (; mask < p; mask <<= 1, step++) {
        if (me & mask) {
            send(c, h, me - mask, k, step);
            break;
        }
        if (me + mask < p) {
            if (tmp == NULL) {
                tmp = vec(c, NULL, n);
            }
            recv(c, tmp, me + mask, k, step);
            reduce(c, h, tmp, op);
        }
    }
    tree_bcast(c, h, 0, k, SMPI_MAX_STEPS / 2); /* the reverse of the reduce */
    starpu_data_unregister_submit(h);
    if (tmp != NULL) {
        starpu_data_unregister_submit(tmp);
    }
}

/* Reduce-scatter then all-gather around the ring me -> me + 1. */
static void ring_allreduce(struct hx_smpi_coll *c, void *buf, long n, int op, int k)
{
    int p = c->g->size, me = c->g->rank;
    int next = (me + 1) % p, prev = (me + p - 1) % p;
    starpu_data_handle_t chunk[SMPI_MAX_STEPS], tmp[SMPI_MAX_STEPS];
    for (int j = 0; j < p; j++) {
        long cnt = hx_split_count(n, p, j);
        char *at = (char *)buf + (size_t)hx_split_offset(n, p, j) * c->esize;
        chunk[j] = cnt > 0 ? vec(c, at, cnt) : NULL;
        tmp[j] = NULL;
    }
    for (int s = 0; s < p - 1; s++) { /* reduce-scatter: chunk (me - s) goes on */
        int out = (me - s + 2 * p) % p, in = (me - s - 1 + 2 * p) % p;
        if (chunk[out] != NULL) {
            send(c, chunk[out], next, k, s);
        }
        if (chunk[in] != NULL) {
            tmp[in] = vec(c, NULL, hx_split_count(n, p, in));
            recv(c, tmp[in], prev, k, s);
            reduce(c, chunk[in], tmp[in], op);
        }
    }
    for (int s = 0; s < p - 1; s++) { /* all-gather: rank me holds the sum of chunk me + 1 */
        int out = (me + 1 - s + 2 * p) % p, in = (me - s + 2 * p) % p;
        if (chunk[out] != NULL) {
            send(c, chunk[out], next, k, p - 1 + s);
        }
        if (chunk[in] != NULL) {
            recv(c, chunk[in], prev, k, p - 1 + s);
        }
    }
    for (int j = 0; j < p; j++) {
        if (chunk[j] != NULL) {
            starpu_data_unregister_submit(chunk[j]);
        }
        if (tmp[j] != NULL) {
            starpu_data_unregister_submit(tmp[j]);
        }
    }
}

/* Recursive halving then recursive doubling (Rabenseifner's all-reduce), p a power of two.
 * Reduce-scatter: at distance d = 1, 2, 4, ... rank me keeps the half of its chunk range
 * that bit d of me selects, sends the other half to me ^ d and adds the half it receives
 * (chunk by chunk, ops.h's split into p chunks); it ends with one chunk, fully summed.
 * All-gather: the same exchanges backwards (d = p/2 .. 1), each rank sending what it holds
 * and receiving its partner's half.  Why beside the ring: the largest exchange (n/2) is at
 * distance 1, the smallest (n/p) at p/2, so with consecutive ranks per node the big ones stay
 * inside a node: on 2+2 ranks each node sends n over the link (both phases), the ring 1.5 n
 * (its two crossing edges carry 2(p-1)/p n each).  Cost: 2 log2 p alpha + 2 (p-1)/p n beta
 * + (p-1)/p n gamma, as the ring's bandwidth with log2 p latencies.  Every sum's order is
 * fixed by the algorithm: (x_a + x_a^1) + (x_a^2 + x_a^3) + ..., the same bits everywhere. */
static void halving_allreduce(struct hx_smpi_coll *c, void *buf, long n, int op, int k)
{
    int p = c->g->size, me = c->g->rank;
    starpu_data_handle_t chunk[SMPI_MAX_STEPS];
    for (int j = 0; j < p; j++) {
        long cnt = hx_split_count(n, p, j);
        char *at = (char *)buf + (size_t)hx_split_offset(n, p, j) * c->esize;
        chunk[j] = cnt > 0 ? vec(c, at, cnt) : NULL;
    }
    int lo = 0, hi = p, los[16], his[16], s = 0; /* my chunk range, before each halving */
    for (int d = 1; d < p; d <<= 1, s++) {
        int partner = me ^ d, mid = (lo + hi) / 2, low = (me & d) == 0;
        int klo = low ? lo : mid, khi = low ? mid : hi; /* kept; the rest goes to partner */
        for (int j = lo; j < hi; j++) {
            if (chunk[j] == NULL) {
                continue;
            }
            if (j < klo || j >= khi) {
                send(c, chunk[j], partner, k, j);
            } else {
                starpu_data_handle_t tmp = vec(c, NULL, hx_split_count(n, p, j));
                recv(c, tmp, partner, k, j);
                reduce(c, chunk[j], tmp, op);
                starpu_data_unregister_submit(tmp);
            }
        }
        los[s] = lo, his[s] = hi, lo = klo, hi = khi;
    }
    for (int d = p >> 1; d >= 1; d >>= 1) { /* back up: my range, then my partner's too */
        s--;
        int partner = me ^ d;
        for (int j = los[s]; j < his[s]; j++) {
            if (chunk[j] == NULL) {
                continue;
            }
            if (j >= lo && j < hi) {
                send(c, chunk[j], partner, k, p + j);
            } else {
                recv(c, chunk[j], partner, k, p + j);
            }
        }
        lo = los[s], hi = his[s];
    }
    for (int j = 0; j < p; j++) {
        if (chunk[j] != NULL) {
            starpu_data_unregister_submit(chunk[j]);
        }
    }
}

/* ---- the interface of comm_internal.h ---- */

void hx_smpi_reset(void)
{
    for (int ch = 0; ch < HX_GROUP_COUNT; ch++) {
        numbers[ch] = 0;
        free(sent[ch]);
        free(received[ch]);
        sent[ch] = received[ch] = NULL;
    }
}

enum hx_smpi_algo hx_smpi_algo_for(long bytes, int p)
{
    const char *e = getenv("HX_SMPI_ALGO");
    int pow2 = p > 0 && (p & (p - 1)) == 0;
    if (e != NULL && strcmp(e, "ring") == 0) {
        return HX_SMPI_RING;
    }
    if (e != NULL && strcmp(e, "tree") == 0) {
        return HX_SMPI_TREE;
    }
    if (e != NULL && strcmp(e, "halving") == 0) { /* a power of two only: else the ring */
        return pow2 ? HX_SMPI_HALVING : HX_SMPI_RING;
    }
    /* halving only when asked: on the bed's dp 4 (2+2 ranks, 1 Gbit/s) it put 1.0 n on the
     * link against the ring's 1.5 n, yet its steps were slower (1.33x Open MPI's against the
     * ring's 1.24x, 3 rounds each, bench/comm_backend.sh): the cores, not the link, bound
     * those runs */
    return bytes <= SMPI_TREE_MAX_BYTES ? HX_SMPI_TREE : HX_SMPI_RING;
}

struct hx_smpi_coll *hx_smpi_begin(int ch, int seq, const char *op, int dtype,
                                   const struct hx_group **g)
{
    MPI_Comm comm;
    if (hx_comm_channel(ch, op, &comm, g) != HX_OK) {
        return NULL;
    }
    if ((*g)->size > SMPI_MAX_STEPS / 2 - 1) {
        HX_TASK_ERR(HX_EUNSUPPORTED, "%s on channel %s seq %d: a group of %d ranks; the "
                    "StarPU-MPI backend's tags number at most %d steps, so groups of at most "
                    "%d ranks: use --comm-backend mpi", op, hx_group_name((enum hx_group_kind)ch),
                    seq, (*g)->size, SMPI_MAX_STEPS / 2, SMPI_MAX_STEPS / 2 - 1);
        return NULL;
    }
    struct hx_smpi_coll *c = calloc(1, sizeof *c);
    if (c == NULL) {
        HX_TASK_ERR(HX_ENOMEM, "%s on channel %s seq %d: no memory for its state", op,
                    hx_group_name((enum hx_group_kind)ch), seq);
        return NULL;
    }
    c->r.req = MPI_REQUEST_NULL;
    c->r.poll = poll_done;
    c->r.task = starpu_task_get_current();
    c->r.channel = ch;
    c->r.seq = seq;
    c->r.op = op;
    c->r.done = coll_done;
    c->r.started = hx_comm_count_start();
    c->g = *g;
    c->dtype = dtype;
    c->esize = hx_dtype_size((enum hx_dtype)dtype);
    c->prio = lane_prio(ch);
    c->number = -1; /* the first tensor numbers it: a collective, or a message to a peer */
    return c;
}

/* The tag field of the collective's next tensor, or -1 (reported) past the tags' limits. */
static int next_tensor(struct hx_smpi_coll *c, long n)
{
    if (c->number < 0) {
        c->number = numbers[c->r.channel]++;
    }
    int k = c->ntensors++;
    if (k >= SMPI_MAX_TENSORS || n > (long)UINT32_MAX) {
        HX_TASK_ERR(HX_EUNSUPPORTED, "%s on channel %s seq %d: tensor %d of %ld elements; the "
                    "StarPU-MPI backend takes at most %d tensors of 2^32 - 1 elements per "
                    "collective", c->r.op, hx_group_name((enum hx_group_kind)c->r.channel),
                    c->r.seq, k, n, SMPI_MAX_TENSORS);
        c->failed = 1;
        return -1;
    }
    return k;
}

int hx_smpi_allreduce(struct hx_smpi_coll *c, void *buf, long n, int reduce)
{
    int k = next_tensor(c, n);
    if (k < 0) {
        return HX_EUNSUPPORTED;
    }
    c->r.bytes += (double)n * (double)c->esize;
    if (c->g->size == 1 || n == 0) {
        return HX_OK;
    }
    switch (hx_smpi_algo_for((long)((size_t)n * c->esize), c->g->size)) {
    case HX_SMPI_HALVING:
        halving_allreduce(c, buf, n, reduce, k);
        break;
    case HX_SMPI_RING:
        ring_allreduce(c, buf, n, reduce, k);
        break;
    default:
        tree_allreduce(c, buf, n, reduce, k);
    }
    return c->failed ? HX_ERUNTIME : HX_OK;
}

int hx_smpi_broadcast(struct hx_smpi_coll *c, void *buf, long n, int root)
{
    int k = next_tensor(c, n);
    if (k < 0) {
        return HX_EUNSUPPORTED;
    }
    c->r.bytes += c->g->rank == root ? (double)n * (double)c->esize : 0;
    if (c->g->size == 1 || n == 0 || c->failed) {
        return c->failed ? HX_ERUNTIME : HX_OK;
    }
    starpu_data_handle_t h = vec(c, buf, n);
    tree_bcast(c, h, root, k, 0);
    starpu_data_unregister_submit(h);
    return c->failed ? HX_ERUNTIME : HX_OK;
}

/* Handles over the p shares of @p buf (ops.h's split of @p total; NULL for an empty one). */
static void shares(struct hx_smpi_coll *c, void *buf, long total, starpu_data_handle_t *h)
{
    int p = c->g->size;
    for (int j = 0; j < p; j++) {
        long cnt = hx_split_count(total, p, j);
        char *at = (char *)buf + (size_t)hx_split_offset(total, p, j) * c->esize;
        h[j] = cnt > 0 ? vec(c, at, cnt) : NULL;
    }
}

static void unregister_all(starpu_data_handle_t *h, int n)
{
    for (int j = 0; j < n; j++) {
        if (h[j] != NULL) {
            starpu_data_unregister_submit(h[j]);
        }
    }
}

int hx_smpi_allgather(struct hx_smpi_coll *c, const void *piece, void *full, long total)
{
    int k = next_tensor(c, total), p = c->g->size, me = c->g->rank;
    if (k < 0) {
        return HX_EUNSUPPORTED;
    }
    long mine = hx_split_count(total, p, me);
    c->r.bytes += (double)mine * (double)c->esize;
    /* this rank's share into place: the task holds both tiles, no transfer reads them yet */
    memcpy((char *)full + (size_t)hx_split_offset(total, p, me) * c->esize, piece,
           (size_t)mine * c->esize);
    if (p == 1 || total == 0 || c->failed) {
        return c->failed ? HX_ERUNTIME : HX_OK;
    }
    starpu_data_handle_t h[SMPI_MAX_STEPS];
    shares(c, full, total, h);
    int next = (me + 1) % p, prev = (me + p - 1) % p;
    for (int s = 0; s < p - 1; s++) { /* ring: share me - s goes on, me - s - 1 arrives */
        int out = (me - s + 2 * p) % p, in = (me - s - 1 + 2 * p) % p;
        if (h[out] != NULL) {
            send(c, h[out], next, k, s);
        }
        if (h[in] != NULL) {
            recv(c, h[in], prev, k, s);
        }
    }
    unregister_all(h, p);
    return c->failed ? HX_ERUNTIME : HX_OK;
}

int hx_smpi_reduce_scatter(struct hx_smpi_coll *c, const void *full, void *piece, long total,
                           int op, int accumulate)
{
    int k = next_tensor(c, total), p = c->g->size, me = c->g->rank;
    if (k < 0) {
        return HX_EUNSUPPORTED;
    }
    c->r.bytes += (double)total * (double)c->esize;
    long mine = hx_split_count(total, p, me);
    const char *src = (const char *)full;
    if (p == 1 || total == 0 || c->failed) { /* the sum over one rank is its share */
        if (!c->failed && mine > 0) {
            put(piece, src, mine, c->dtype, accumulate);
        }
        return c->failed ? HX_ERUNTIME : HX_OK;
    }
    /* full is read-only to this task: the ring sums in StarPU-allocated copies of its shares.
     * Share j is summed along the ring starting at group rank j + 1, ending at rank j:
     * step s sends share me - s - 1 and adds the arriving share me - s - 2. */
    starpu_data_handle_t h[SMPI_MAX_STEPS] = { 0 }, tmp[SMPI_MAX_STEPS] = { 0 };
    int next = (me + 1) % p, prev = (me + p - 1) % p;
    for (int j = 0; j < p; j++) {
        long cnt = hx_split_count(total, p, j);
        h[j] = cnt > 0 ? vec(c, NULL, cnt) : NULL;
        tmp[j] = NULL;
        if (h[j] != NULL) {
            copy(c, &copy_in_cl, h[j],
                 (void *)(src + (size_t)hx_split_offset(total, p, j) * c->esize), 0);
        }
    }
    for (int s = 0; s < p - 1; s++) {
        int out = (me - s - 1 + 2 * p) % p, in = (me - s - 2 + 2 * p) % p;
        if (h[out] != NULL) {
            send(c, h[out], next, k, s);
        }
        if (h[in] != NULL) {
            tmp[in] = vec(c, NULL, hx_split_count(total, p, in));
            recv(c, tmp[in], prev, k, s);
            reduce(c, h[in], tmp[in], op);
        }
    }
    if (h[me] != NULL) {
        copy(c, &copy_out_cl, h[me], piece, accumulate);
    }
    unregister_all(h, p);
    unregister_all(tmp, p);
    return c->failed ? HX_ERUNTIME : HX_OK;
}

int hx_smpi_alltoall(struct hx_smpi_coll *c, const void *in, void *out, long n)
{
    int k = next_tensor(c, n), p = c->g->size, me = c->g->rank;
    if (k < 0) {
        return HX_EUNSUPPORTED;
    }
    long blk = n / p;
    size_t bytes = (size_t)blk * c->esize;
    c->r.bytes += (double)(n - blk) * (double)c->esize;
    memcpy((char *)out + (size_t)me * bytes, (const char *)in + (size_t)me * bytes, bytes);
    if (p == 1 || blk == 0 || c->failed) {
        return c->failed ? HX_ERUNTIME : HX_OK;
    }
    /* pairwise: at step s rank me sends its block for me + s and receives from me - s, so
     * every rank talks to one peer at a time */
    for (int s = 1; s < p; s++) {
        int to = (me + s) % p, from = (me - s + p) % p;
        starpu_data_handle_t hs = vec(c, (char *)in + (size_t)to * bytes, blk);
        starpu_data_handle_t hr = vec(c, (char *)out + (size_t)from * bytes, blk);
        send(c, hs, to, k, s);
        recv(c, hr, from, k, s);
        starpu_data_unregister_submit(hs);
        starpu_data_unregister_submit(hr);
    }
    return c->failed ? HX_ERUNTIME : HX_OK;
}

/* Point to point with group rank @p peer, one message of the whole tile, numbered by the
 * messages between this pair in this direction on the channel. */
static int p2p(struct hx_smpi_coll *c, void *buf, long n, int peer, int out)
{
    long **count = out ? sent : received;
    int ch = c->r.channel;
    if (count[ch] == NULL && (count[ch] = calloc(SMPI_MAX_STEPS, sizeof **count)) == NULL) {
        fail(c, "allocating the message counters", ENOMEM);
        return HX_ENOMEM;
    }
    /* every message its own number, even two in one collective (a shift sends to one peer
     * and receives from another, or both ways with the same one) */
    c->number = count[ch][peer]++;
    if (next_tensor(c, n) < 0) {
        return HX_EUNSUPPORTED;
    }
    c->r.bytes += out ? (double)n * (double)c->esize : 0;
    if (n == 0 || c->failed) {
        return c->failed ? HX_ERUNTIME : HX_OK;
    }
    starpu_data_handle_t h = vec(c, buf, n);
    xfer(c, h, peer, 0, P2P_STEP, out);
    starpu_data_unregister_submit(h);
    return c->failed ? HX_ERUNTIME : HX_OK;
}

int hx_smpi_send(struct hx_smpi_coll *c, const void *buf, long n, int peer)
{
    return p2p(c, (void *)buf, n, peer, 1);
}

int hx_smpi_recv(struct hx_smpi_coll *c, void *buf, long n, int peer)
{
    return p2p(c, buf, n, peer, 0);
}

void hx_smpi_end(struct hx_smpi_coll *c, int ok)
{
    (void)ok; /* what was submitted runs either way: a peer waits for it */
    if (__atomic_load_n(&c->pending, __ATOMIC_ACQUIRE) == 0 && c->g->size == 1) {
        hx_comm_local_done(&c->r);
        free(c);
        return;
    }
    starpu_task_end_dep_add(c->r.task, 1);
    hx_comm_post(&c->r);
}
