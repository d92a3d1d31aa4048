/* SPDX-License-Identifier: MIT */
/* tests/mpi/comm_poll.c: the collective engine's polled requests, the path by which the NCCL
 * backend completes its tasks (runtime/comm_nccl.c polls a cudaEvent where MPI requests are
 * tested), driven here on CPU workers by a poll function of the test's own, since no NCCL
 * call can run on this machine; and the backend's parts that need no GPU: its names, the
 * refusal where this build or this StarPU cannot run NCCL, the mapping of helix's dtypes and
 * reductions to NCCL's (a CUDA build), and which codelets the tasks get per backend.
 * A world of one rank (a singleton MPI, no mpirun); the watchdog (30 s) turns a request the
 * engine never finishes into a failure instead of a hang.
 *
 * Polled tasks: each task's CPU function posts a request with no MPI request and a poll
 * function, after adding an end-dependency to itself, as runtime/comm_nccl.c does.  Checked:
 * the task does not end while its poll says "not yet" (and is polled meanwhile), ends once it
 * says "finished" with done() called once, ok and no MPI status; a failed poll ends it with
 * ok = 0; a host MPI request completes while a polled one is pending (the MPI requests and
 * the polled ones share the tested set); the engine counts the polled tasks. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <starpu.h>

#include "codelets/codelets.h"
#include "helix/helix.h"
#include "runtime/comm_internal.h"
#include "tap.h"
#if HX_HAVE_CUDA
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wundef" /* NCCL's header tests __cplusplus in C */
#include <nccl.h>
#pragma GCC diagnostic pop
#endif

/* One polled request: what its poll answers, and what the engine did with it.  The
 * progress thread and the test's thread share the fields: atomics. */
struct polled {
    struct hx_coll_req r;  /* first: the engine hands it back */
    int answer;            /* what poll returns: 0 not yet, 1 finished, -1 failed */
    int polls;             /* poll calls */
    int done_calls, done_ok, done_status_null;
    int ended;             /* the task's callback ran */
};

static struct polled P[3];

static int get(const int *x)
{
    return __atomic_load_n(x, __ATOMIC_SEQ_CST);
}

static void set(int *x, int v)
{
    __atomic_store_n(x, v, __ATOMIC_SEQ_CST);
}

static int poll_fn(struct hx_coll_req *r)
{
    struct polled *p = (struct polled *)r;
    __atomic_add_fetch(&p->polls, 1, __ATOMIC_SEQ_CST);
    return get(&p->answer);
}

static void done_fn(struct hx_coll_req *r, const MPI_Status *st, int ok)
{
    struct polled *p = (struct polled *)r;
    p->done_ok = ok;
    p->done_status_null = st == NULL;
    __atomic_add_fetch(&p->done_calls, 1, __ATOMIC_SEQ_CST);
}

/* The task's CPU function: post a polled request and return, as an NCCL codelet does. */
static void post_polled(void *buffers[], void *cl_arg)
{
    struct polled *p = cl_arg;
    (void)buffers;
    p->r.req = MPI_REQUEST_NULL;
    p->r.poll = poll_fn;
    p->r.done = done_fn;
    p->r.task = starpu_task_get_current();
    p->r.channel = HX_GROUP_WORLD;
    p->r.seq = (int)(p - P);
    p->r.op = "polled";
    p->r.bytes = 1000;
    p->r.started = hx_comm_count_start();
    starpu_task_end_dep_add(p->r.task, 1);
    hx_comm_post(&p->r);
}

static struct starpu_codelet post_cl = {
    .name = "post_polled",
    .cpu_funcs = { post_polled },
    .nbuffers = 0,
};

static void ended(void *arg)
{
    set(&((struct polled *)arg)->ended, 1);
}

static void submit(struct polled *p)
{
    struct starpu_task *t = starpu_task_create();
    t->cl = &post_cl;
    t->cl_arg = p;
    t->callback_func = ended;
    t->callback_arg = p;
    if (starpu_task_submit(t) != 0) {
        tap_diag("starpu_task_submit failed");
        exit(1);
    }
}

/* Wait up to 5 s for @p x to reach at least @p v. */
static int wait_for(const int *x, int v)
{
    for (int i = 0; i < 5000 && get(x) < v; i++) {
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    return get(x) >= v;
}

static void backend_names(void)
{
    enum hx_comm_backend b = HX_COMM_NCCL;
    char why[512];
    int ok = hx_comm_backend_from_name("mpi", &b) == HX_OK && b == HX_COMM_MPI;
    ok = ok && hx_comm_backend_from_name("nccl", &b) == HX_OK && b == HX_COMM_NCCL;
    ok = ok && hx_comm_backend_from_name("gloo", &b) == HX_EINVAL && b == HX_COMM_NCCL;
    ok = ok && hx_comm_backend_from_name(NULL, &b) == HX_EINVAL;
    ok = ok && strcmp(hx_comm_backend_name(HX_COMM_MPI), "mpi") == 0 &&
         strcmp(hx_comm_backend_name(HX_COMM_NCCL), "nccl") == 0;
    tap_ok(ok, "backend names: mpi and nccl parse and print back, others are refused");
    tap_ok(hx_comm_backend_usable(HX_COMM_MPI, why, sizeof why) == HX_OK && why[0] == '\0',
           "the MPI backend is usable everywhere");
    int usable = hx_comm_backend_usable(HX_COMM_NCCL, why, sizeof why);
#if HX_HAVE_CUDA && defined(STARPU_USE_CUDA)
    tap_ok(usable == HX_OK, "NCCL usable: helix has CUDA and NCCL, StarPU has CUDA");
#elif HX_HAVE_CUDA
    tap_ok(usable == HX_EUNSUPPORTED && strstr(why, "has no CUDA workers") != NULL &&
           strstr(why, "scripts/setup --cuda") != NULL && strstr(why, "README") != NULL,
           "NCCL refused (StarPU without CUDA), saying why and how to get one: %s", why);
#elif defined(STARPU_USE_CUDA)
    tap_ok(usable == HX_EUNSUPPORTED && strstr(why, "built without CUDA and NCCL") != NULL,
           "NCCL refused (helix without CUDA), saying why: %s", why);
#else
    tap_ok(usable == HX_EUNSUPPORTED && strstr(why, "built without CUDA and NCCL") != NULL &&
           strstr(why, "has no CUDA workers") != NULL &&
           strstr(why, "scripts/setup --cuda") != NULL,
           "NCCL refused (helix and StarPU without CUDA), saying both: %s", why);
#endif
}

static void nccl_mapping(void)
{
#if HX_HAVE_CUDA
    tap_ok(hx_nccl_type(HX_F32) == (int)ncclFloat32 && hx_nccl_type(HX_I32) == (int)ncclInt32 &&
           hx_nccl_type(HX_F64) == (int)ncclFloat64 && hx_nccl_type(HX_F64 + 1) == -1 &&
           hx_nccl_type(-1) == -1,
           "NCCL types: f32, i32, f64 map to ncclFloat32, ncclInt32, ncclFloat64; others -1");
    tap_ok(hx_nccl_op(HX_SUM) == (int)ncclSum && hx_nccl_op(HX_MAX) == (int)ncclMax &&
           hx_nccl_op(HX_MAX + 1) == -1 && hx_nccl_op(-1) == -1,
           "NCCL reductions: sum and max map to ncclSum and ncclMax; others -1");
#else
    tap_skip("NCCL types: helix built without CUDA and NCCL");
    tap_skip("NCCL reductions: helix built without CUDA and NCCL");
#endif
}

/* Opening NCCL where it cannot run fails and leaves the channels closed. */
static void nccl_open_refused(const struct hx_mesh *m)
{
    struct hx_comm_opts co = { .timeout = 30, .backend = HX_COMM_NCCL };
    tap_diag("an error about the NCCL backend follows (expected)");
    int ret = hx_comm_open(m, &co);
    tap_ok(ret != HX_OK && !hx_comm_is_open() && hx_comm_backend() == HX_COMM_MPI,
           "hx_comm_open on NCCL without a CUDA worker fails (status %d) and opens nothing",
           ret);
    hx_run_status_reset();
}

static void codelet_choice(void)
{
    int ok = 1;
    for (int op = 0; op < HX_OP_COUNT; op++) {
        ok = ok && hx_op_codelet((enum hx_op)op) == hx_op_info((enum hx_op)op)->cl;
    }
    tap_ok(ok, "on the MPI backend every op's tasks get the table's codelet");
}

static void polled_tasks(void)
{
    struct hx_comm_stats before, after;
    hx_comm_get_stats(&before);
    submit(&P[0]);
    int polled = wait_for(&P[0].polls, 3);
    struct timespec ts = { 0, 50000000 };
    nanosleep(&ts, NULL);
    tap_ok(polled && !get(&P[0].ended) && get(&P[0].done_calls) == 0,
           "a polled task does not end while its poll says not yet (%d polls so far)",
           get(&P[0].polls));

    /* a host MPI request beside the pending polled one: both sit in the tested set */
    struct hx_coll_req h;
    memset(&h, 0, sizeof h);
    h.channel = HX_GROUP_WORLD;
    h.op = "barrier";
    int rc = MPI_Ibarrier(MPI_COMM_SELF, &h.req);
    int host = rc == MPI_SUCCESS ? hx_comm_wait_host(&h) : HX_ERUNTIME;
    tap_ok(host == HX_OK && !get(&P[0].ended),
           "a host MPI request completes while the polled one is still pending");

    set(&P[0].answer, 1);
    P[1].answer = -1;
    submit(&P[1]);
    starpu_task_wait_for_all();
    tap_ok(get(&P[0].ended) && P[0].done_calls == 1 && P[0].done_ok && P[0].done_status_null,
           "once its poll says finished the task ends: done() once, ok, no MPI status");
    tap_ok(get(&P[1].ended) && P[1].done_calls == 1 && !P[1].done_ok,
           "a failed poll ends its task too, with ok = 0");

    P[2].answer = 1; /* finished at the first poll */
    submit(&P[2]);
    starpu_task_wait_for_all();
    hx_comm_get_stats(&after);
    tap_ok(after.collectives - before.collectives == 3 && after.bytes - before.bytes == 3000,
           "the engine counts the 3 polled tasks and their bytes (%ld, %.0f)",
           after.collectives - before.collectives, after.bytes - before.bytes);
}

int main(int argc, char **argv)
{
    struct hx_runtime_opts ro;
    tap_plan(12);
    if (hx_mpi_init(&argc, &argv) != HX_OK) {
        return 1;
    }
    hx_runtime_opts_init(&ro);
    ro.mpi = 1;
    if (hx_runtime_init(&ro) != HX_OK) {
        hx_mpi_abort(1);
    }
    struct hx_mesh mesh;
    struct hx_mesh_request req = { .world_size = hx_mpi_world_size(),
                                   .world_rank = hx_mpi_world_rank() };
    if (hx_mesh_init(&mesh, &req, 0) != HX_OK) {
        hx_mpi_abort(1);
    }
    backend_names();
    nccl_mapping();
    nccl_open_refused(&mesh);
    struct hx_comm_opts co = { .timeout = 30 };
    if (hx_comm_open(&mesh, &co) != HX_OK) {
        hx_mpi_abort(1);
    }
    codelet_choice();
    polled_tasks();
    hx_comm_close();
    hx_runtime_shutdown();
    hx_mpi_finalize();
    return tap_exit();
}
