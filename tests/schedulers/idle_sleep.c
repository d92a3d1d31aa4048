/* SPDX-License-Identifier: MIT */
/* tests/schedulers/idle_sleep.c: the helix policies' idle workers sleep, not poll.
 * Debian's StarPU calls pop_task in a loop; a policy that only returns NULL leaves its idle
 * workers burning cores that other ranks' workers and progress threads need
 * (schedulers/hx_prio.c, idle_wait).  For each helix policy on 2 workers with nothing to do,
 * the process's CPU time over 0.5 s of idleness must stay under IDLE_CPU_MAX: measured
 * 0.011-0.021 s with the wait on the condition variable, 0.204-0.244 s with the old
 * yield-then-20-us-sleep polling (this test against the old library: 5 of 10 fail).  A
 * loaded machine only gives idle threads less CPU, so the bound cannot fail from noise.  Then tasks submitted while the workers sleep must all run
 * (a push wakes a sleeper; no duration is asserted, and an alarm ends a hung run at 60 s). */
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "helix/error.h"
#include "helix/graph.h"
#include "helix/runtime.h"
#include "tap.h"

#define IDLE_CPU_MAX 0.1 /* s of CPU over IDLE_S of idleness, for 2 workers */
#define IDLE_S 0.5
#define NTASKS 64

static const char *const policies[] = { "hx-prio", "hx-strand", "hx-wavelet", "hx-prefetch",
                                        "serial-comm" };
#define NPOLICIES (sizeof policies / sizeof policies[0])

static struct hx_node compute_node = { .kind = HX_KIND_COMPUTE, .lane = HX_LANE_COMPUTE };
static int ran;

static void count_cpu(void *buffers[], void *arg)
{
    (void)buffers;
    (void)arg;
    __atomic_fetch_add(&ran, 1, __ATOMIC_ACQ_REL);
}

static struct starpu_codelet count_cl = { .name = "count", .cpu_funcs = { count_cpu } };

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void sleep_s(double s)
{
    struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };
    while (nanosleep(&ts, &ts) != 0) {
    }
}

int main(void)
{
    setenv("STARPU_NCPU", "2", 1); /* 2 workers even if the runtime lets STARPU_NCPU win */
    alarm(60);                     /* a lost wake-up that hangs fails the test, not CI */
    tap_plan(2 * (int)NPOLICIES);
    for (size_t p = 0; p < NPOLICIES; p++) {
        struct hx_runtime_opts o;
        hx_runtime_opts_init(&o);
        o.workers = 2;
        o.sched = policies[p];
        if (hx_runtime_init(&o) != HX_OK || starpu_worker_get_count() != 2) {
            tap_ok(0, "%s: did not start on 2 workers", policies[p]);
            tap_ok(0, "%s: no tasks run", policies[p]);
            continue;
        }
        sleep_s(0.2); /* past the yields every idle worker makes first */
        double c0 = cpu_s();
        sleep_s(IDLE_S);
        double used = cpu_s() - c0;
        tap_ok(used < IDLE_CPU_MAX, "%s: 2 idle workers used %.3f s of CPU in %.1f s (bound %.1f)",
               policies[p], used, IDLE_S, IDLE_CPU_MAX);

        __atomic_store_n(&ran, 0, __ATOMIC_RELAXED);
        int bad = 0;
        for (int i = 0; i < NTASKS; i++) {
            struct starpu_task *t = starpu_task_create();
            t->cl = &count_cl;
            t->sched_data = &compute_node; /* what graphs/submit.c does with a graph's node */
            bad += starpu_task_submit(t) != 0;
            if (i % 16 == 15) {
                sleep_s(0.01); /* let the workers go back to sleep between bursts */
            }
        }
        starpu_task_wait_for_all();
        tap_ok(bad == 0 && __atomic_load_n(&ran, __ATOMIC_ACQUIRE) == NTASKS,
               "%s: %d of %d tasks submitted to sleeping workers ran", policies[p],
               __atomic_load_n(&ran, __ATOMIC_ACQUIRE), NTASKS);
        hx_runtime_shutdown();
    }
    return tap_exit();
}
