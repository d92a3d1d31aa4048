/* SPDX-License-Identifier: MIT */
/* tools/plan_measure.c: `helix plan --measure FILE` under mpirun: this bed's collectives,
 * timed through helix's own graphs (issue 25, "Measured bandwidth"; AMSP profiles its
 * w(o, v, p) the same way).  For every group shape the world has, with G ranks a node:
 *   a node's ranks (p = G, 1 node), one rank a node (p = nodes), everyone (p = N),
 * the all-reduce, all-gather and reduce-scatter of one packed message, and a point-to-point
 * transfer inside a node and across, are timed at two sizes, every group of the shape
 * running its own at the same time (as a step's data-parallel groups do, sharing the
 * node's NIC): REPS in a row a run, one untimed run then TIMED timed ones; a run takes its
 * slowest rank's time, and the fastest run counts (other work on a shared machine only
 * slows one down).
 * A line through the two sizes gives each its fixed cost and bandwidth in the ring model's
 * terms: t = alpha + f S / B, f = 2(p-1)/p for an all-reduce, (p-1)/p for an all-gather or
 * a reduce-scatter, 1 for a transfer.  Rank 0 writes them (tools/plan_model.h reads them:
 * `helix plan --comm FILE`), whole or not at all.
 * Test: tests/cli/plan.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "helix/error.h"
#include "tools/plan_model.h"
#include "tools/tools.h"

#define REPS 8  /* collectives a run */
#define TIMED 3 /* timed runs after the untimed one; the fastest counts (the machine is shared) */
static const double sizes[2] = { 256.0 * 1024, 4.0 * 1024 * 1024 }; /* bytes */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* One graph of REPS collectives @p op of @p bytes on channel @p ch (for a transfer: group
 * rank 0 sends to group rank 1), run once untimed and once timed: the seconds of one, the
 * slowest rank's. */
static int time_op(const struct hx_mesh *ms, int ch, enum hx_op op, double bytes, double *t)
{
    const struct hx_group *gr = &ms->groups[ch];
    int n = (int)(bytes / 4), p = gr->size, me = gr->rank;
    hx_graph_t g = hx_graph_create();
    if (g == NULL) {
        return HX_ERR(HX_ENOMEM, "a measurement graph");
    }
    hx_tensor_t full = hx_graph_tensor(g, "full", HX_F32, HX_ROLE_COMM, 1, n, 0);
    hx_tensor_t part = hx_graph_tensor(g, "part", HX_F32, HX_ROLE_COMM, 1,
                                       (int)hx_split_count(n, p, me), 0);
    for (int r = 0; r < REPS; r++) {
        switch (op) {
        case HX_OP_ALLREDUCE:
            hx_allreduce(g, ch, 1, &full, HX_SUM);
            break;
        case HX_OP_ALLGATHER:
            hx_allgather_packed(g, ch, 1, &full, &part);
            break;
        case HX_OP_REDUCE_SCATTER:
            hx_reduce_scatter_packed(g, ch, 1, &part, &full, 0);
            break;
        default: /* a transfer between group ranks 0 and 1 */
            if (me == 0) {
                hx_send_tiles(g, ch, full, 1);
            } else if (me == 1) {
                hx_recv_tiles(g, ch, full, 0);
            }
        }
    }
    int ret = hx_graph_realize(g);
    *t = 1e30;
    for (int run = 0; run < 1 + TIMED && ret == HX_OK; run++) {
        double sync = 0, t0, took;
        ret = hx_comm_host_allreduce(HX_GROUP_WORLD, &sync, 1, HX_F64, HX_MAX);
        t0 = now();
        ret = ret == HX_OK ? hx_graph_submit(g, 0, g->nnodes) : ret;
        int w = hx_graph_wait(g);
        ret = ret == HX_OK ? w : ret;
        took = (now() - t0) / REPS;
        /* the slowest rank's time of the run; the least disturbed run counts */
        ret = ret == HX_OK ? hx_comm_host_allreduce(HX_GROUP_WORLD, &took, 1, HX_F64, HX_MAX)
                           : ret;
        if (run > 0 && took < *t) {
            *t = took;
        }
    }
    hx_graph_destroy(g);
    return ret;
}

static int measure(const struct hx_mesh *ms, int per_node, struct plan_measured *m, int *nm)
{
    static const int chans[3] = { HX_GROUP_TP, HX_GROUP_DP, HX_GROUP_WORLD };
    static const enum hx_op ops[4] = { HX_OP_ALLREDUCE, HX_OP_ALLGATHER, HX_OP_REDUCE_SCATTER,
                                       HX_OP_RECV };
    int ret = HX_OK;
    *nm = 0;
    for (int c = 0; c < 3 && ret == HX_OK; c++) {
        const struct hx_group *gr = &ms->groups[chans[c]];
        int nodes = gr->nodes > 0 ? gr->nodes : 1;
        /* the world is measured when it is neither a node nor one rank a node */
        if (gr->size < 2 || (c == 2 && (per_node < 2 || nodes < 2))) {
            continue;
        }
        for (int o = 0; o < 4 && ret == HX_OK; o++) {
            if (ops[o] == HX_OP_RECV && c == 2) {
                continue; /* a transfer is a node's or across: the first two */
            }
            double t[2];
            for (int s = 0; s < 2 && ret == HX_OK; s++) {
                ret = time_op(ms, chans[c], ops[o], sizes[s], &t[s]);
            }
            if (ret != HX_OK) {
                break;
            }
            struct plan_measured *e = &m[(*nm)++];
            e->op = ops[o] == HX_OP_RECV ? HX_OP_RECV : ops[o];
            e->p = ops[o] == HX_OP_RECV ? 2 : gr->size;
            e->nodes = nodes;
            double f = plan_ring_factor(ops[o], e->p);
            double slope = (t[1] - t[0]) / (sizes[1] - sizes[0]);
            e->gbytes_per_s = slope > 0 ? f / slope / 1e9 : 0;
            e->alpha_us = (t[0] - (slope > 0 ? slope * sizes[0] : 0)) * 1e6;
            e->alpha_us = e->alpha_us > 0 ? e->alpha_us : 0;
        }
    }
    return ret;
}

static int write_table(const char *path, const struct plan_measured *m, int nm, int world,
                       int per_node)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        return HX_ERR(HX_EIO, "cannot write %s; choose a writable path for --measure", tmp);
    }
    fprintf(f, "# helix plan --measure: %d ranks, %d a node; t = alpha + f S / B (f: 2(p-1)/p "
            "all-reduce, (p-1)/p all-gather and reduce-scatter, 1 transfer), from %.0f and "
            "%.0f bytes, %d in a row, the fastest of %d runs\n# op p nodes alpha_us "
            "gbytes_per_s\n", world, per_node, sizes[0], sizes[1], REPS, TIMED);
    for (int i = 0; i < nm; i++) {
        fprintf(f, "%s %d %d %.1f %.4f\n", hx_op_name((enum hx_op)m[i].op), m[i].p, m[i].nodes,
                m[i].alpha_us, m[i].gbytes_per_s);
    }
    int bad = ferror(f) | (fclose(f) != 0);
    if (bad || rename(tmp, path) != 0) {
        remove(tmp);
        return HX_ERR(HX_EIO, "writing %s failed", path);
    }
    return HX_OK;
}

int plan_measure(int argc, char **argv, const char *path, int per_node)
{
    if (hx_mpi_init(&argc, &argv) != HX_OK) {
        return 1;
    }
    int rank = hx_mpi_world_rank(), size = hx_mpi_world_size();
    int G = per_node > 0 ? per_node : hx_mpi_local_size();
    if (size < 2 || G < 1 || size % G != 0) {
        if (rank == 0) {
            fprintf(stderr, "helix plan: error: --measure times collectives between ranks: "
                    "run it under mpirun with 2 or more ranks, whole nodes of --gpus-per-node "
                    "%d (now %d ranks)\n", G, size);
        }
        hx_mpi_finalize();
        return 2;
    }
    struct hx_mesh mesh;
    struct hx_mesh_request q = { .world_size = size, .world_rank = rank, .tp = G,
                                 .ranks_per_node = G };
    int ret = hx_mesh_init(&mesh, &q, rank != 0);
    struct hx_runtime_opts ro;
    hx_runtime_opts_init(&ro);
    ro.mpi = 1;
    struct hx_comm_opts co = { .timeout = 120 };
    if (ret == HX_OK && (hx_runtime_init(&ro) != HX_OK || hx_comm_open(&mesh, &co) != HX_OK)) {
        hx_mpi_abort(1);
    }
    struct plan_measured m[PLAN_MEASURED_MAX];
    int nm = 0;
    ret = ret == HX_OK ? measure(&mesh, G, m, &nm) : ret;
    if (ret == HX_OK && rank == 0) {
        ret = write_table(path, m, nm, size, G);
        for (int i = 0; ret == HX_OK && i < nm; i++) {
            printf("%-15s p %2d on %d node%s: %8.1f us + S / %.4f GB/s\n",
                   hx_op_name((enum hx_op)m[i].op), m[i].p, m[i].nodes,
                   m[i].nodes > 1 ? "s" : " ", m[i].alpha_us, m[i].gbytes_per_s);
        }
    }
    if (hx_comm_is_open()) {
        hx_comm_close();
        hx_runtime_shutdown();
    }
    hx_mpi_finalize();
    return ret == HX_OK ? 0 : ret == HX_EINVAL ? 2 : 1;
}

int plan_read_measured(const char *path, struct plan_measured *m, int *nm)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return HX_ERR(HX_EIO, "cannot read --comm %s; make it with `mpirun ... helix plan "
                      "--measure %s`", path, path);
    }
    char line[512], op[32];
    int ln = 0, ret = HX_OK;
    *nm = 0;
    while (ret == HX_OK && fgets(line, sizeof line, f) != NULL) {
        ln++;
        if (line[0] == '#' || line[0] == '\n') {
            continue;
        }
        struct plan_measured e;
        if (*nm == PLAN_MEASURED_MAX ||
            sscanf(line, "%31s %d %d %lf %lf", op, &e.p, &e.nodes, &e.alpha_us,
                   &e.gbytes_per_s) != 5 || e.p < 2 || e.nodes < 1 || e.alpha_us < 0 ||
            e.gbytes_per_s < 0) {
            ret = HX_ERR(HX_EINVAL, "%s:%d: expected \"op p nodes alpha_us gbytes_per_s\" "
                         "(at most %d lines), as helix plan --measure writes", path, ln,
                         PLAN_MEASURED_MAX);
            break;
        }
        e.op = strcmp(op, hx_op_name(HX_OP_ALLREDUCE)) == 0       ? HX_OP_ALLREDUCE
             : strcmp(op, hx_op_name(HX_OP_ALLGATHER)) == 0       ? HX_OP_ALLGATHER
             : strcmp(op, hx_op_name(HX_OP_REDUCE_SCATTER)) == 0 ? HX_OP_REDUCE_SCATTER
             : strcmp(op, hx_op_name(HX_OP_RECV)) == 0            ? HX_OP_RECV : -1;
        if (e.op < 0) {
            ret = HX_ERR(HX_EINVAL, "%s:%d: unknown collective '%s'", path, ln,
                         flags_esc(op));
            break;
        }
        m[(*nm)++] = e;
    }
    fclose(f);
    return ret;
}
