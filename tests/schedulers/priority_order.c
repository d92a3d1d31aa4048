/* SPDX-License-Identifier: MIT */
/* tests/schedulers/priority_order.c: on 1 worker, tasks that are ready together run highest
 * priority first.  A blocker task holds the worker until NTASKS tasks with shuffled priorities
 * (-4..3, each twice) are queued, then lets them run.  Under hx-prio they must run in
 * priority order with ties in submission order; StarPU's prio is the cross-check for the
 * priority order (its tie order is not promised).  Under hx-strand the same tasks are
 * collectives (kind COMM), alternately of the inter-node and the intra-node lane, the
 * inter-node one submitted first in each pair of equal priority: at equal priority the
 * intra-node lane's must run first.  No timing is asserted: the blocker waits on a flag, with
 * a 10 s guard so a broken policy fails instead of hanging. */
#include <starpu.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "helix/error.h"
#include "helix/graph.h"
#include "helix/runtime.h"
#include "helix/sched.h"
#include "tap.h"

#define NTASKS 16

static int started, released; /* blocker handshake, accessed atomically */
static int order[NTASKS];     /* task indices in the order they ran */
static int nran;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Wait until *flag is set; 0 if the 10 s guard expired first. */
static int wait_flag(int *flag)
{
    double t0 = now();
    while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE)) {
        if (now() - t0 > 10.0) {
            return 0;
        }
        struct timespec nap = { 0, 100000 };
        nanosleep(&nap, NULL);
    }
    return 1;
}

static void blocker_cpu(void *buffers[], void *arg)
{
    __atomic_store_n(&started, 1, __ATOMIC_RELEASE);
    wait_flag(&released);
}

static void record_cpu(void *buffers[], void *arg)
{
    order[__atomic_fetch_add(&nran, 1, __ATOMIC_RELAXED)] = (int)(intptr_t)arg;
}

static struct starpu_codelet blocker_cl = { .name = "blocker", .cpu_funcs = { blocker_cpu } };
static struct starpu_codelet record_cl = { .name = "record", .cpu_funcs = { record_cpu } };

/* Runs the 16 tasks under @p policy, task i with IR node nodes[i] (NULL: none); fills
 * order[]; 0 on success, else a message in why. */
static int run(const char *policy, const int *prio, struct hx_node *nodes, char *why,
               size_t len)
{
    struct hx_runtime_opts o;
    hx_runtime_opts_init(&o);
    o.workers = 1;
    o.sched = policy;
    if (hx_runtime_init(&o) != HX_OK) {
        snprintf(why, len, "hx_runtime_init(%s, 1 worker) failed", policy);
        return -1;
    }
    int ret = 0;
    if (starpu_worker_get_count() != 1) {
        snprintf(why, len, "%s: %u workers started, wanted 1", policy, starpu_worker_get_count());
        ret = -1;
    }
    __atomic_store_n(&started, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&released, 0, __ATOMIC_RELAXED);
    nran = 0;
    if (ret == 0 && starpu_task_insert(&blocker_cl, 0) != 0) {
        snprintf(why, len, "%s: submitting the blocker failed", policy);
        ret = -1;
    }
    if (ret == 0 && !wait_flag(&started)) {
        snprintf(why, len, "%s: the blocker did not start within 10 s", policy);
        ret = -1;
    }
    for (int i = 0; i < NTASKS && ret == 0; i++) {
        struct starpu_task *t = starpu_task_create();
        t->cl = &record_cl;
        t->cl_arg = (void *)(intptr_t)i;
        t->priority = prio[i];
        t->sched_data = nodes != NULL ? &nodes[i] : NULL; /* as graphs/submit.c sets it */
        if (starpu_task_submit(t) != 0) {
            snprintf(why, len, "%s: submitting task %d failed", policy, i);
            ret = -1;
        }
    }
    __atomic_store_n(&released, 1, __ATOMIC_RELEASE);
    starpu_task_wait_for_all();
    hx_runtime_shutdown();
    if (ret == 0 && nran != NTASKS) {
        snprintf(why, len, "%s: %d of %d tasks ran", policy, nran, NTASKS);
        ret = -1;
    }
    return ret;
}

static void show(const char *policy, const int *prio)
{
    char line[NTASKS * 12] = "", *p = line;
    for (int i = 0; i < nran && i < NTASKS; i++) {
        p += sprintf(p, " %d(p%d)", order[i], prio[order[i]]);
    }
    tap_diag("%s ran task(priority):%s", policy, line);
}

int main(void)
{
    /* 1 worker even if the runtime lets STARPU_NCPU win over opts.workers */
    setenv("STARPU_NCPU", "1", 1);

    /* priorities -4..3, each twice, shuffled with a fixed seed (Fisher-Yates) */
    int prio[NTASKS];
    uint32_t s = 2024;
    for (int i = 0; i < NTASKS; i++) {
        prio[i] = i / 2 - 4;
    }
    for (int i = NTASKS - 1; i > 0; i--) {
        s = s * 1664525u + 1013904223u;
        int j = (int)((s >> 8) % (uint32_t)(i + 1)), t = prio[i];
        prio[i] = prio[j];
        prio[j] = t;
    }

    tap_plan(5);
    char why[256] = "";

    if (run("hx-prio", prio, NULL, why, sizeof why) != 0) {
        tap_ok(0, "%s", why);
        tap_ok(0, "%s", why);
    } else {
        show("hx-prio", prio);
        int inversions = 0, ties_swapped = 0;
        for (int i = 1; i < NTASKS; i++) {
            int a = order[i - 1], b = order[i];
            inversions += prio[a] < prio[b];
            ties_swapped += prio[a] == prio[b] && a > b;
        }
        tap_ok(inversions == 0, "hx-prio: %d tasks ran highest priority first (%d inversions)",
               NTASKS, inversions);
        tap_ok(inversions == 0 && ties_swapped == 0,
               "hx-prio: equal priorities ran in submission order (%d pairs swapped)",
               ties_swapped);
    }

    if (run("prio", prio, NULL, why, sizeof why) != 0) {
        tap_ok(0, "%s", why);
    } else {
        show("prio", prio);
        int inversions = 0;
        for (int i = 1; i < NTASKS; i++) {
            inversions += prio[order[i - 1]] < prio[order[i]];
        }
        tap_ok(inversions == 0, "StarPU prio: %d tasks ran highest priority first (%d inversions)",
               NTASKS, inversions);
    }

    /* hx-strand: collectives; of each pair of equal priority, the first submitted is on the
     * inter-node lane and the second on the intra-node lane */
    struct hx_node nodes[NTASKS];
    int seen[8] = { 0 };
    for (int i = 0; i < NTASKS; i++) {
        int k = prio[i] + 4;
        nodes[i] = (struct hx_node){ .kind = HX_KIND_COMM, .strand = HX_STRAND_NONE,
                                     .block = -1,
                                     .lane = seen[k]++ == 0 ? HX_LANE_COMM_INTER
                                                            : HX_LANE_COMM_INTRA };
    }
    if (run("hx-strand", prio, nodes, why, sizeof why) != 0) {
        tap_ok(0, "%s", why);
        tap_ok(0, "%s", why);
    } else {
        show("hx-strand", prio);
        int inversions = 0, lane_swapped = 0;
        for (int i = 1; i < NTASKS; i++) {
            int a = order[i - 1], b = order[i];
            inversions += prio[a] < prio[b];
            lane_swapped += prio[a] == prio[b] && nodes[a].lane == HX_LANE_COMM_INTER;
        }
        tap_ok(inversions == 0, "hx-strand: %d collectives ran highest priority first (%d "
               "inversions)", NTASKS, inversions);
        tap_ok(inversions == 0 && lane_swapped == 0, "hx-strand: at equal priority the "
               "intra-node lane's collective ran first, though submitted second (%d pairs "
               "the other way)", lane_swapped);
    }
    return tap_exit();
}
