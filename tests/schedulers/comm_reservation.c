/* SPDX-License-Identifier: MIT */
/* tests/schedulers/comm_reservation.c: hx-prio's comm lane on 2 workers.
 * With HX_SCHED_PRIO_COMM_WORKERS=1, tasks whose node (task->sched_data) has kind HX_KIND_COMM
 * run only on the highest-numbered worker and compute tasks never do, while a comm task and
 * a compute task can run at the same time.  With the variable unset, or invalid ("abc", or
 * "2", which would leave no compute worker), nothing is reserved: two compute tasks that wait
 * for each other run at once, so both workers run compute tasks.  Placement is read with
 * starpu_worker_get_id() in the codelet; waits have a 10 s guard and no timing is asserted. */
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "helix/error.h"
#include "helix/graph.h"
#include "helix/runtime.h"
#include "helix/sched.h"
#include "tap.h"

#define NEACH 32 /* comm and compute tasks of the mixed run */

struct rec {
    int worker;  /* who ran it, -1 before */
    int meet;    /* wait until this many meet tasks have started (0: spin ~100 us instead) */
};

static struct hx_node comm_node = { .kind = HX_KIND_COMM, .lane = HX_LANE_COMM_INTRA };
static struct hx_node compute_node = { .kind = HX_KIND_COMPUTE, .lane = HX_LANE_COMPUTE };
static int arrived; /* meet tasks started so far */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void work_cpu(void *buffers[], void *arg)
{
    struct rec *r = arg;
    r->worker = starpu_worker_get_id();
    double t0 = now();
    if (r->meet > 0) {
        __atomic_fetch_add(&arrived, 1, __ATOMIC_ACQ_REL);
        while (__atomic_load_n(&arrived, __ATOMIC_ACQUIRE) < r->meet && now() - t0 < 10.0) {
        }
    } else {
        while (now() - t0 < 1e-4) { /* keep the worker busy so both workers take tasks */
        }
    }
}

static struct starpu_codelet work_cl = { .name = "work", .cpu_funcs = { work_cpu } };

static int submit(struct rec *r, struct hx_node *node)
{
    struct starpu_task *task = starpu_task_create();
    task->cl = &work_cl;
    task->cl_arg = r;
    task->sched_data = node; /* what graphs/submit.c does with a graph's node */
    r->worker = -1;
    return starpu_task_submit(task);
}

/* Start hx-prio on 2 workers with HX_SCHED_PRIO_COMM_WORKERS = @p env (NULL: unset). */
static int start(const char *env)
{
    if (env) {
        setenv("HX_SCHED_PRIO_COMM_WORKERS", env, 1);
    } else {
        unsetenv("HX_SCHED_PRIO_COMM_WORKERS");
    }
    struct hx_runtime_opts o;
    hx_runtime_opts_init(&o);
    o.workers = 2;
    o.sched = "hx-prio";
    if (hx_runtime_init(&o) != HX_OK) {
        return -1;
    }
    if (starpu_worker_get_count() != 2) {
        hx_runtime_shutdown();
        return -1;
    }
    __atomic_store_n(&arrived, 0, __ATOMIC_RELAXED);
    return 0;
}

/* Two tasks of the given nodes that each wait for the other; 1 if they ran on 2 workers. */
static int meet(struct hx_node *a, struct hx_node *b, int *wa, int *wb)
{
    struct rec r[2] = { { -1, 2 }, { -1, 2 } };
    int ok = submit(&r[0], a) == 0 && submit(&r[1], b) == 0;
    starpu_task_wait_for_all();
    *wa = r[0].worker;
    *wb = r[1].worker;
    return ok && __atomic_load_n(&arrived, __ATOMIC_ACQUIRE) == 2 && r[0].worker >= 0 &&
           r[1].worker >= 0 && r[0].worker != r[1].worker;
}

static void unreserved(const char *env, const char *label)
{
    int wa = -1, wb = -1;
    if (start(env) != 0) {
        tap_ok(0, "%s: hx-prio did not start on 2 workers", label);
        return;
    }
    int ok = meet(&compute_node, &compute_node, &wa, &wb);
    hx_runtime_shutdown();
    tap_ok(ok, "%s: nothing reserved, two compute tasks ran at once on workers %d and %d", label,
           wa, wb);
}

int main(void)
{
    setenv("STARPU_NCPU", "2", 1); /* 2 workers even if the runtime lets STARPU_NCPU win */
    tap_plan(6);

    /* ---- one worker reserved ---- */
    static struct rec recs[2 * NEACH];
    int wa = -1, wb = -1;
    if (start("1") != 0) {
        for (int i = 0; i < 3; i++) {
            tap_ok(0, "HX_SCHED_PRIO_COMM_WORKERS=1: hx-prio did not start on 2 workers");
        }
    } else {
        int reserved = (int)starpu_worker_get_count() - 1, bad_submit = 0;
        for (int i = 0; i < 2 * NEACH; i++) { /* comm, compute, comm, ... */
            recs[i].meet = 0;
            bad_submit += submit(&recs[i], i % 2 ? &compute_node : &comm_node) != 0;
        }
        starpu_task_wait_for_all();
        int comm_elsewhere = 0, compute_on_reserved = 0, notrun = bad_submit;
        for (int i = 0; i < 2 * NEACH; i++) {
            notrun += recs[i].worker < 0;
            if (i % 2 == 0) {
                comm_elsewhere += recs[i].worker != reserved;
            } else {
                compute_on_reserved += recs[i].worker == reserved;
            }
        }
        tap_ok(notrun == 0 && comm_elsewhere == 0,
               "COMM_WORKERS=1: all %d comm tasks ran on worker %d (%d elsewhere, %d not run)",
               NEACH, reserved, comm_elsewhere, notrun);
        tap_ok(notrun == 0 && compute_on_reserved == 0,
               "COMM_WORKERS=1: none of %d compute tasks ran on worker %d (%d did)", NEACH,
               reserved, compute_on_reserved);
        int ok = meet(&comm_node, &compute_node, &wa, &wb);
        tap_ok(ok && wa == reserved,
               "COMM_WORKERS=1: a comm task (worker %d) and a compute task (worker %d) ran at once",
               wa, wb);
        hx_runtime_shutdown();
    }

    /* ---- nothing reserved ---- */
    unreserved(NULL, "HX_SCHED_PRIO_COMM_WORKERS unset");
    unreserved("abc", "HX_SCHED_PRIO_COMM_WORKERS=abc (warned, uses 0)");
    unreserved("2", "HX_SCHED_PRIO_COMM_WORKERS=2 of 2 workers (warned, uses 0)");
    hx_run_status_reset();
    return tap_exit();
}
