/* SPDX-License-Identifier: MIT */
/* tests/schedulers/every_task_once.c: under every policy of hx_sched_names() (helix's, then
 * StarPU's), on 2 workers, NTASKS tasks with random dependencies through NHANDLES shared
 * handles each run exactly once, and each task sees on every handle it accesses exactly the
 * number of writers submitted before it (so no dependency was broken either way).
 * One TAP line per policy; a policy that cannot start (hx_runtime_init fails) is a SKIP.
 * StarPU's own test execute_all_tasks.c (in its sched_policies tests) checks the same for
 * its own policies. */
#include <starpu.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "helix/error.h"
#include "helix/runtime.h"
#include "helix/sched.h"
#include "tap.h"

#define NTASKS 200
#define NHANDLES 8
#define MAXBUF 2

struct rec {
    int nbuf;
    int writes[MAXBUF]; /* 1 if the buffer is accessed STARPU_RW */
    int expect[MAXBUF]; /* writers of that handle submitted before this task */
    int seen[MAXBUF];   /* the handle's value when the task ran */
    int ran;            /* times the codelet ran */
};

static void count_cpu(void *buffers[], void *arg)
{
    struct rec *r = arg;
    __atomic_fetch_add(&r->ran, 1, __ATOMIC_RELAXED);
    for (int b = 0; b < r->nbuf; b++) {
        int *v = (int *)STARPU_VARIABLE_GET_PTR(buffers[b]);
        r->seen[b] = *v;
        if (r->writes[b]) {
            *v += 1;
        }
    }
}

static struct starpu_codelet count_cl = {
    .name = "count",
    .cpu_funcs = { count_cpu },
    .nbuffers = STARPU_VARIABLE_NBUFFERS, /* 1 or 2 buffers, modes set per task */
};

/* Same pseudo-random DAG for every policy. */
static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* 1 pass, 0 fail (message in why); -1: the runtime did not start (skip, reason in why) */
static int run_policy(const char *name, char *why, size_t len)
{
    static struct rec recs[NTASKS];
    static int values[NHANDLES];
    int writers[NHANDLES] = { 0 };
    starpu_data_handle_t h[NHANDLES];
    struct hx_runtime_opts o;

    hx_runtime_opts_init(&o);
    o.workers = 2;
    o.sched = name;
    int ret = hx_runtime_init(&o);
    if (ret != HX_OK) {
        snprintf(why, len, "%s: hx_runtime_init failed (%s)", name, hx_status_str(ret));
        hx_run_status_reset();
        return -1;
    }
    const char *in_use = starpu_sched_ctx_get_sched_policy(0)->policy_name;
    int ok = strcmp(in_use, name) == 0;
    if (!ok) {
        snprintf(why, len, "asked for %s but StarPU runs %s", name, in_use);
    }

    memset(recs, 0, sizeof recs);
    memset(values, 0, sizeof values);
    for (int i = 0; i < NHANDLES; i++) {
        starpu_variable_data_register(&h[i], STARPU_MAIN_RAM, (uintptr_t)&values[i], sizeof(int));
    }
    uint32_t seed = 12345;
    for (int t = 0; t < NTASKS && ok; t++) {
        struct rec *r = &recs[t];
        struct starpu_task *task = starpu_task_create();
        task->cl = &count_cl;
        task->cl_arg = r;
        r->nbuf = 1 + (int)(lcg(&seed) % MAXBUF);
        int first = (int)(lcg(&seed) % NHANDLES);
        for (int b = 0; b < r->nbuf; b++) {
            int hi = (first + b * (1 + (int)(lcg(&seed) % (NHANDLES - 1)))) % NHANDLES;
            r->writes[b] = lcg(&seed) % 2;
            r->expect[b] = writers[hi];
            writers[hi] += r->writes[b];
            task->handles[b] = h[hi];
            task->modes[b] = r->writes[b] ? STARPU_RW : STARPU_R;
        }
        task->nbuffers = r->nbuf;
        ret = starpu_task_submit(task);
        if (ret != 0) {
            snprintf(why, len, "starpu_task_submit of task %d returned %d", t, ret);
            ok = 0;
        }
    }
    starpu_task_wait_for_all();
    for (int i = 0; i < NHANDLES; i++) {
        starpu_data_unregister(h[i]);
    }
    hx_runtime_shutdown();

    int twice = 0, never = 0, badorder = 0, first_bad = -1;
    for (int t = 0; t < NTASKS && ok; t++) {
        never += recs[t].ran == 0;
        twice += recs[t].ran > 1;
        for (int b = 0; b < recs[t].nbuf && recs[t].ran == 1; b++) {
            if (recs[t].seen[b] != recs[t].expect[b]) {
                badorder++;
                first_bad = first_bad < 0 ? t : first_bad;
            }
        }
    }
    for (int i = 0; i < NHANDLES && ok; i++) {
        if (values[i] != writers[i]) {
            badorder++;
        }
    }
    if (ok && (never || twice || badorder)) {
        snprintf(why, len, "%d tasks never ran, %d more than once, %d saw a wrong count of "
                 "earlier writers (first: task %d)", never, twice, badorder, first_bad);
        ok = 0;
    }
    return ok;
}

int main(void)
{
    const char *const *names = hx_sched_names();
    int n = 0;
    while (names[n] != NULL) {
        n++;
    }
    tap_plan(n);
    for (int i = 0; i < n; i++) {
        char why[256] = "";
        int r = run_policy(names[i], why, sizeof why);
        if (r < 0) {
            tap_skip(why);
        } else {
            tap_ok(r, "%s: %d tasks each ran once, in dependency order%s%s", names[i], NTASKS,
                   r ? "" : ": ", why);
        }
    }
    return tap_exit();
}
