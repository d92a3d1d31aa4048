/* SPDX-License-Identifier: MIT */
/* tests/mpi/coll_harness.h: what the collective tests share, header-only: a graph built by
 * hand with hx_graph_add (collective nodes of kind COMM, one (1,1) i32 token per channel,
 * taken first in RW), producers that write each input tile, and submission in build order.
 *
 * Inputs are small integers (plus quarters in f64): value(tensor id, world rank, element), so
 * every rank knows every rank's inputs and any summation order is exact.  Producers are plain
 * StarPU tasks interleaved with the graph's nodes; submitted with the workers paused, they
 * run by priority, ascending ids on even ranks and descending on odd ones, after a sleep of
 * 0, 150 or 300 us: collectives become ready in different orders on different ranks, which
 * the channel token must survive.  Used by tests/mpi/collectives.c and lost_rank.c. */
#ifndef HX_TEST_COLL_HARNESS_H
#define HX_TEST_COLL_HARNESS_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <starpu.h>

#include "helix/helix.h"

static int W, R; /* world size and rank */

static double value(int key, int wrank, long idx, int dtype)
{
    long v = ((long)(wrank + 1) * 131 + (long)key * 17 + idx * 7) % 61 - 30;
    return dtype == HX_F64 ? (double)v + 0.25 * (double)(idx % 4) : (double)v;
}

struct producer {
    struct hx_tensor *t;
    int tile, id, delay_us;
    int victim;                 /* raise this signal instead of producing (lost_rank.c) */
};

static int first_producer = -1; /* the first producer this rank ran: shows the skew */

static void produce_cpu(void *buffers[], void *arg)
{
    const struct producer *p = arg;
    int none = -1;
    __atomic_compare_exchange_n(&first_producer, &none, p->id, 0, __ATOMIC_RELAXED,
                                __ATOMIC_RELAXED);
    if (p->victim) {
        fprintf(stderr, "rank %d raises signal %d in producer %d\n", R, p->victim, p->id);
        raise(p->victim);
    }
    if (p->delay_us > 0) {
        usleep((useconds_t)p->delay_us);
    }
    long cols = (long)STARPU_MATRIX_GET_NX(buffers[0]);
    long n = (long)STARPU_MATRIX_GET_NY(buffers[0]) * cols;
    long base = (long)hx_tile_row0(p->t, p->tile) * cols;
    void *x = (void *)STARPU_MATRIX_GET_PTR(buffers[0]);
    for (long e = 0; e < n; e++) {
        double v = value(p->t->id, R, base + e, p->t->dtype);
        if (p->t->dtype == HX_F32) {
            ((float *)x)[e] = (float)v;
        } else if (p->t->dtype == HX_F64) {
            ((double *)x)[e] = v;
        } else {
            ((int32_t *)x)[e] = (int32_t)v;
        }
    }
}

static struct starpu_codelet produce_cl = {
    .name = "test_produce",
    .cpu_funcs = { produce_cpu },
    .nbuffers = 1,
    .modes = { STARPU_W },
};

/* The job: graph nodes and producers in submission order. */
struct step {
    int node;                   /* graph node, or -1: producer `prod` */
    int prod;
};

static struct job {
    hx_graph_t g;
    struct hx_mesh mesh;
    struct hx_tensor *token[HX_GROUP_COUNT];
    int seq[HX_GROUP_COUNT];
    struct producer *prods;
    int nprods;
    struct step *steps;
    int nsteps;
    int ncoll;
    int victim_signal, victim_at; /* rank 1 raises the signal in producer victim_at */
} J;

/* Grows @p p to hold element @p n: capacity 16, doubling whenever n reaches a power of 2. */
static void *grow(void *p, int n, size_t size)
{
    if (n >= 16 ? (n & (n - 1)) == 0 : n == 0) {
        p = realloc(p, size * (size_t)(n ? 2 * n : 16));
        if (p == NULL) {
            fprintf(stderr, "rank %d: out of memory for %d entries\n", R, 2 * n);
            exit(99);
        }
    }
    return p;
}

static void job_begin(void)
{
    memset(&J, 0, sizeof J);
    J.g = hx_graph_create();
    first_producer = -1;
}

static void job_end(void)
{
    hx_graph_destroy(J.g);
    free(J.steps);
    free(J.prods);
    memset(&J, 0, sizeof J);
}

static void add_step(int node, int prod)
{
    J.steps = grow(J.steps, J.nsteps, sizeof *J.steps);
    J.steps[J.nsteps++] = (struct step){ node, prod };
}

static void produce(struct hx_tensor *t, int tile)
{
    J.prods = grow(J.prods, J.nprods, sizeof *J.prods);
    int id = J.nprods++;
    J.prods[id] = (struct producer){ t, tile, id, 150 * ((id + R) % 3), 0 };
    if (J.victim_signal != 0 && R == 1 && id == J.victim_at) {
        J.prods[id].victim = J.victim_signal;
    }
    add_step(-1, id);
}

static void produce_all(struct hx_tensor *t)
{
    for (int i = 0; i < t->ntiles; i++) {
        produce(t, i);
    }
}

/* Tensor "<channel>.c<case>.<what>" of (rows, cols) in row tiles of tile_rows (0: one). */
static struct hx_tensor *tensor(int k, int c, const char *what, int dt, int rows, int cols,
                                int tile_rows)
{
    char name[HX_NAME_MAX];
    snprintf(name, sizeof name, "%s.c%d.%s", hx_group_name((enum hx_group_kind)k), c, what);
    return hx_graph_tensor(J.g, name, (enum hx_dtype)dt, HX_ROLE_COMM, rows, cols, tile_rows);
}

/* A collective on channel k: token (RW) first, then @p n data refs. */
static void coll(enum hx_op op, int k, int dtype, int reduce, int peer, int acc, int n,
                 const struct hx_ref *data)
{
    struct hx_ref refs[HX_NODE_MAXREFS];
    if (J.token[k] == NULL) {
        char name[HX_NAME_MAX];
        snprintf(name, sizeof name, "chan.%s", hx_group_name((enum hx_group_kind)k));
        J.token[k] = hx_graph_tensor(J.g, name, HX_I32, HX_ROLE_SCALAR, 1, 1, 0);
    }
    refs[0] = hx_ref_of(J.token[k], 0, HX_RW);
    memcpy(refs + 1, data, sizeof *data * (size_t)n);
    union hx_op_args a = { .coll = { .channel = k, .seq = J.seq[k]++, .dtype = dtype,
                                     .reduce = reduce, .peer = peer, .accumulate = acc } };
    struct hx_node *node = hx_graph_add(J.g, op, &a, n + 1, refs, 0, 0);
    node->kind = HX_KIND_COMM;
    node->lane = HX_LANE_COMM_INTRA;
    add_step(node->id, -1);
    J.ncoll++;
}

/* Realize, submit every step with the workers paused (so every producer is queued before
 * any runs and priorities decide their order), resume and wait.  @return the run status. */
static int job_run(void)
{
    int ret = hx_graph_realize(J.g);
    if (ret != HX_OK) {
        return ret;
    }
    starpu_pause();
    for (int s = 0; s < J.nsteps && ret == HX_OK; s++) {
        if (J.steps[s].node >= 0) {
            ret = hx_graph_submit(J.g, J.steps[s].node, J.steps[s].node + 1);
            continue;
        }
        struct producer *p = &J.prods[J.steps[s].prod];
        struct starpu_task *t = starpu_task_create();
        t->cl = &produce_cl;
        t->cl_arg = p;
        t->handles[0] = (starpu_data_handle_t)p->t->handles[p->tile];
        t->priority = (R % 2 == 0 ? -1 : 1) * (p->id % 1000);
        if (starpu_task_submit(t) != 0) {
            ret = HX_ERR(HX_ERUNTIME, "submitting producer %d of %s", p->id, p->t->name);
        }
    }
    starpu_resume();
    int wret = hx_graph_wait(J.g);
    return ret != HX_OK ? ret : wret;
}

/* MPI, then StarPU through StarPU-MPI (workers: STARPU_NCPU). */
static void start_runtime(int *argc, char ***argv)
{
    struct hx_runtime_opts ro;
    if (hx_mpi_init(argc, argv) != HX_OK) {
        exit(1);
    }
    W = hx_mpi_world_size();
    R = hx_mpi_world_rank();
    hx_runtime_opts_init(&ro);
    ro.mpi = 1;
    if (hx_runtime_init(&ro) != HX_OK) {
        hx_mpi_abort(1);
    }
}

static void stop_runtime(void)
{
    hx_runtime_shutdown();
    hx_mpi_finalize();
}

#endif /* HX_TEST_COLL_HARNESS_H */
