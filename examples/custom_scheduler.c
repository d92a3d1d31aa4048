/* SPDX-License-Identifier: MIT */
/* examples/custom_scheduler.c: write a StarPU scheduling policy in one file and run helix under it.
 * It shows
 *   1- how a policy reads the IR node every helix task carries (task->sched_data) to decide:
 *      "flops-first" gives a worker the ready task with the most floating-point work;
 *   2- the four callbacks StarPU calls (init, deinit, push, pop) and their locking rules;
 *   3- hx_sched_register plus --sched NAME: the same graph runs under any policy (this one,
 *      hx-prio, eager, dmda, ...) and gives the same result, because a scheduler only orders
 *      and places tasks.  An order a policy relies on beyond that (hx-prefetch's gathers,
 *      serial-comm's barriers, a strand plan) it asks of the graph builder with its needs
 *      (enum hx_sched_need); this one needs nothing;
 *   4- what a policy sees of the devices: which implementations a task's codelet has (CPU,
 *      OpenCL, CUDA), which workers can run it, and its predicted length on each worker's
 *      arch from the codelet's perf model, as hx-prio weighs them to place a task where it
 *      finishes first (schedulers/hx_prio.c); flops-first prints them for the first task.
 * Run: ./custom_scheduler [--sched NAME] [--opencl N]   (default flops-first, no OpenCL) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "helix/error.h"
#include "helix/graph.h"
#include "helix/runtime.h"
#include "helix/sched.h"

/* ---- the policy: one list of ready tasks, guarded by a mutex ---- */

struct flops_first {
    struct starpu_task_list ready;
    starpu_pthread_mutex_t lock;
    int described; /* the first task pushed was described (describe_task) */
};

static double task_flops(const struct starpu_task *task)
{
    const struct hx_node *node = task->sched_data; /* NULL for tasks submitted outside a graph */
    return node ? node->flops : 0.0;
}

static void ff_init(unsigned ctx)
{
    struct flops_first *s = malloc(sizeof *s);
    HX_ASSERT(s != NULL, "flops-first: out of memory");
    starpu_task_list_init(&s->ready);
    STARPU_PTHREAD_MUTEX_INIT(&s->lock, NULL);
    s->described = 0;
    starpu_sched_ctx_set_policy_data(ctx, s); /* state per context, no globals */
}

static void ff_deinit(unsigned ctx)
{
    struct flops_first *s = starpu_sched_ctx_get_policy_data(ctx);
    HX_ASSERT(starpu_task_list_empty(&s->ready), "flops-first: tasks left at shutdown");
    STARPU_PTHREAD_MUTEX_DESTROY(&s->lock);
    free(s);
}

/* What a policy sees of the devices, for one task.  A codelet has one function per kind of
 * worker it can run on: cpu_funcs, opencl_funcs, cuda_funcs (helix's compute codelets have
 * the device ones when helix was built with them; its collectives only the CPU one).
 * starpu_worker_can_execute_task_first_impl(w, task, &impl) says whether worker w can run
 * the task (its kind has an implementation, and task->where allows it: helix's --compute-on)
 * and through which implementation.  The codelet's perf model (a history model, one per op:
 * codelets/codelets.h) predicts the length on a worker's arch, in microseconds: NaN until
 * StarPU has enough samples of this size on that arch (it records them while running:
 * STARPU_CALIBRATE=1, or after its "not calibrated enough" warning).  hx-prio adds the
 * predicted wait and transfer to that length and leaves a task to another kind of worker
 * that would finish it earlier; a policy of your own could do the same with these calls. */
static void describe_task(struct starpu_task *task)
{
    const struct starpu_codelet *cl = task->cl;
    printf("task %s: implementations%s%s%s\n", cl->name, cl->cpu_funcs[0] ? " cpu" : "",
           cl->opencl_funcs[0] ? " opencl" : "", cl->cuda_funcs[0] ? " cuda" : "");
    for (unsigned w = 0; w < starpu_worker_get_count(); w++) {
        char name[64];
        unsigned impl;
        starpu_worker_get_name((int)w, name, sizeof name);
        if (!starpu_worker_can_execute_task_first_impl(w, task, &impl)) {
            printf("  worker %u (%s): cannot run it\n", w, name);
            continue;
        }
        struct starpu_perfmodel_arch *arch = starpu_worker_get_perf_archtype((int)w,
                                                                            task->sched_ctx);
        double us = starpu_task_expected_length(task, arch, impl);
        if (isnan(us) || us <= 0.0) {
            printf("  worker %u (%s): implementation %u, length not calibrated yet\n", w, name,
                   impl);
        } else {
            printf("  worker %u (%s): implementation %u, predicted %.1f us\n", w, name, impl,
                   us);
        }
    }
}

/* Called when a task becomes ready, by the submitting thread or by a worker that just
 * finished its last dependency. */
static int ff_push(struct starpu_task *task)
{
    struct flops_first *s = starpu_sched_ctx_get_policy_data(task->sched_ctx);
    /* Before the task is in the list: once it is, a worker may run it and StarPU free it. */
    if (!__atomic_exchange_n(&s->described, 1, __ATOMIC_RELAXED)) {
        describe_task(task);
    }
    starpu_worker_relax_on(); /* let StarPU wake us while we wait for the lock */
    STARPU_PTHREAD_MUTEX_LOCK(&s->lock);
    starpu_worker_relax_off();
    starpu_task_list_push_back(&s->ready, task);
    starpu_push_task_end(task); /* before unlocking, so no worker has taken the task yet */
    STARPU_PTHREAD_MUTEX_UNLOCK(&s->lock);
    /* Debian's StarPU polls pop_task (STARPU_NON_BLOCKING_DRIVERS); a build with blocking
     * drivers would also need starpu_wake_worker_relax_light() here. */
    return 0;
}

/* Called by an idle worker, with its own sched mutex held: return a task or NULL. */
static struct starpu_task *ff_pop(unsigned ctx)
{
    struct flops_first *s = starpu_sched_ctx_get_policy_data(ctx);
    unsigned worker = starpu_worker_get_id_check();
    struct starpu_task *best = NULL;

    if (starpu_task_list_empty(&s->ready)) { /* unlocked peek: a miss only waits one poll */
        return NULL;
    }
    starpu_worker_relax_on();
    STARPU_PTHREAD_MUTEX_LOCK(&s->lock);
    starpu_worker_relax_off();
    for (struct starpu_task *t = starpu_task_list_begin(&s->ready);
         t != starpu_task_list_end(&s->ready); t = starpu_task_list_next(t)) {
        /* strict '>' keeps the oldest of equal tasks; skip tasks this worker cannot run */
        if ((best == NULL || task_flops(t) > task_flops(best)) &&
            starpu_worker_can_execute_task_first_impl(worker, t, NULL)) {
            best = t;
        }
    }
    if (best != NULL) {
        starpu_task_list_erase(&s->ready, best);
    }
    STARPU_PTHREAD_MUTEX_UNLOCK(&s->lock);
    return best;
}

static struct starpu_sched_policy flops_first_policy = {
    .init_sched = ff_init,
    .deinit_sched = ff_deinit,
    .push_task = ff_push,
    .pop_task = ff_pop,
    .policy_name = "flops-first",
    .policy_description = "the ready task with the most flops first (example)",
    .worker_type = STARPU_WORKER_LIST,
};

/* ---- a graph to run it on: two products, cut into row tiles ---- */

#define M 512    /* rows of A and C */
#define N 64     /* columns of B and C */
#define TILE 64  /* rows per task */

/* C(M,N) = A(M,k) B(k,N): one matmul task per row tile of A and C. */
static void add_product(hx_graph_t g, struct hx_tensor *c, struct hx_tensor *a,
                        struct hx_tensor *b, int tile)
{
    int m = hx_tile_nrows(a, tile), k = a->cols;
    union hx_op_args args = { .mm = { .m = m, .n = N, .k = k, .alpha = 1.0f, .beta = 0.0f } };
    struct hx_ref refs[3] = { hx_ref_of(a, tile, HX_R), hx_ref_of(b, 0, HX_R),
                              hx_ref_of(c, tile, HX_W) };
    hx_graph_add(g, HX_OP_MATMUL, &args, 3, refs, 2.0 * m * N * k,
                 4.0 * ((double)m * k + (double)k * N + (double)m * N));
}

/* Multiples of 1/8 in [-6/8, 6/8]: every product and partial sum here is exact in float, so
 * any summation order gives the same bits. */
static void fill(struct hx_tensor *t, int salt)
{
    float *x = hx_f32(t);
    for (int i = 0; i < t->rows; i++) {
        for (int j = 0; j < t->cols; j++) {
            x[i * t->cols + j] = (float)((i * 7 + j * 3 + salt) % 13 - 6) / 8.0f;
        }
    }
}

/* Largest |C - A B| against a plain triple loop. */
static double max_error(struct hx_tensor *c, struct hx_tensor *a, struct hx_tensor *b)
{
    double worst = 0.0;
    int k = a->cols;
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            double ref = 0.0;
            for (int p = 0; p < k; p++) {
                ref += (double)hx_f32(a)[i * k + p] * hx_f32(b)[p * N + j];
            }
            worst = fmax(worst, fabs(hx_f32(c)[i * N + j] - ref));
        }
    }
    return worst;
}

int main(int argc, char **argv)
{
    const char *sched = "flops-first";
    int opencl = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--sched") == 0 && i + 1 < argc) {
            sched = argv[++i];
        } else if (strcmp(argv[i], "--opencl") == 0 && i + 1 < argc) {
            opencl = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--sched NAME] [--opencl N]   (default flops-first, "
                    "no OpenCL worker)\n", argv[0]);
            return 2;
        }
    }

    /* 1. make the policy selectable by name (it needs no order from the graph: 0), then
     *    start StarPU with the chosen one */
    if (hx_sched_register(&flops_first_policy, 0) != HX_OK) {
        return 1;
    }
    struct hx_runtime_opts opts;
    hx_runtime_opts_init(&opts);
    opts.sched = sched;
    opts.opencl = opencl; /* OpenCL workers beside the CPU ones (PoCL without a GPU) */
    if (hx_runtime_init(&opts) != HX_OK) {
        return 1; /* an unknown name was reported with the list of choices */
    }

    /* 2. the graph: a cheap product (k=32) and an expensive one (k=512), tiles interleaved in
     *    submission order; flops-first runs the expensive tiles first when both are ready */
    hx_graph_t g = hx_graph_create();
    struct hx_tensor *a1 = hx_graph_tensor(g, "a1", HX_F32, HX_ROLE_INPUT, M, 32, TILE);
    struct hx_tensor *b1 = hx_graph_tensor(g, "b1", HX_F32, HX_ROLE_INPUT, 32, N, 0);
    struct hx_tensor *c1 = hx_graph_tensor(g, "c1", HX_F32, HX_ROLE_ACTIVATION, M, N, TILE);
    struct hx_tensor *a2 = hx_graph_tensor(g, "a2", HX_F32, HX_ROLE_INPUT, M, 512, TILE);
    struct hx_tensor *b2 = hx_graph_tensor(g, "b2", HX_F32, HX_ROLE_INPUT, 512, N, 0);
    struct hx_tensor *c2 = hx_graph_tensor(g, "c2", HX_F32, HX_ROLE_ACTIVATION, M, N, TILE);
    for (int t = 0; t < a1->ntiles; t++) {
        add_product(g, c1, a1, b1, t);
        add_product(g, c2, a2, b2, t);
    }

    /* 3. allocate and register, fill the inputs, run, and check against plain loops */
    int ret = hx_graph_realize(g);
    if (ret == HX_OK) {
        fill(a1, 1);
        fill(b1, 2);
        fill(a2, 3);
        fill(b2, 4);
        ret = hx_graph_submit(g, 0, -1);
    }
    if (ret == HX_OK) {
        ret = hx_graph_wait(g);
    }
    double err1 = INFINITY, err2 = INFINITY;
    if (ret == HX_OK && (ret = hx_tensor_begin_access(c1, 'r')) == HX_OK) {
        err1 = max_error(c1, a1, b1);
        hx_tensor_end_access(c1);
    }
    if (ret == HX_OK && (ret = hx_tensor_begin_access(c2, 'r')) == HX_OK) {
        err2 = max_error(c2, a2, b2);
        hx_tensor_end_access(c2);
    }
    int ok = ret == HX_OK && err1 == 0.0 && err2 == 0.0;
    printf("policy %s, %d CPU and %d OpenCL workers: %d matmul tasks, max |C - A B| = %g "
           "(k=32), %g (k=512): %s\n", hx_runtime_sched_name(), hx_runtime_workers(),
           hx_runtime_opencl_workers(), g->nnodes, err1, err2, ok ? "OK" : "WRONG");

    hx_graph_destroy(g); /* unregisters the tiles: before the runtime stops */
    hx_runtime_shutdown();
    return ok ? 0 : 1;
}
