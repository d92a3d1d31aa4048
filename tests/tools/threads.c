/* SPDX-License-Identifier: MIT */
/* tests/tools/threads.c: helix/threads.h (runtime/threads.c), nothing timed.
 *   - hx_threads_usage finds threads named as StarPU and helix name theirs ("CPU 3",
 *     "OpenCL 0", "MPI", "hx-lane-inter") alive in this process, each under its kind, and
 *     the main thread (with any thread a library started, OpenBLAS's) under "other";
 *   - hx_threads_format writes the line helix train prints, for given figures;
 *   - hx_threads_starved names the communication kind that waited more than it ran and over
 *     a second in all (StarPU-MPI's thread before the lanes), and never the workers. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "helix/threads.h"
#include "tap.h"

static pthread_barrier_t named, counted;

static void *named_thread(void *arg)
{
    pthread_setname_np(pthread_self(), (const char *)arg);
    pthread_barrier_wait(&named);   /* all named: the main thread counts */
    pthread_barrier_wait(&counted); /* counted: end */
    return NULL;
}

int main(void)
{
    tap_plan(9);
    const char *names[] = { "CPU 3", "OpenCL 0", "MPI", "hx-lane-inter" };
    enum { N = 4 };
    pthread_t t[N];
    pthread_barrier_init(&named, NULL, N + 1);
    pthread_barrier_init(&counted, NULL, N + 1);
    for (int i = 0; i < N; i++) {
        pthread_create(&t[i], NULL, named_thread, (void *)names[i]);
    }
    pthread_barrier_wait(&named);
    struct hx_thread_usage u;
    int rc = hx_threads_usage(&u);
    pthread_barrier_wait(&counted);
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
    }
    if (rc != 0) {
        tap_skip("this kernel gives no /proc/self/task/TID/schedstat");
        tap_skip("(the same)");
    } else {
        tap_ok(u.threads[HX_THREADS_WORKERS] == 2 && u.threads[HX_THREADS_MPI] == 1 &&
                   u.threads[HX_THREADS_LANES] == 1 && u.threads[HX_THREADS_OTHER] >= 1,
               "usage: 2 workers, 1 StarPU-MPI thread, 1 lane, the main thread and any other "
               "(OpenBLAS's) under other (got %d %d %d %d)",
               u.threads[0], u.threads[1], u.threads[2], u.threads[3]);
        int sane = 1;
        for (int k = 0; k < HX_THREADS_KINDS; k++) {
            sane = sane && u.run_s[k] >= 0 && u.wait_s[k] >= 0;
        }
        tap_ok(sane && u.run_s[HX_THREADS_OTHER] > 0, "usage: no negative time; the main "
               "thread ran");
    }

    struct hx_thread_usage v = { .threads = { 1, 1, 2, 5 },
                                 .run_s = { 1.56, 0.67, 0.02, 0.5 },
                                 .wait_s = { 0.15, 1.54, 0.86, 0.14 } };
    char line[512];
    hx_threads_format(&v, 1, line, sizeof line);
    const char *want = "threads, rank 1: StarPU workers (1) 1.56 s on a core, 0.15 s waiting for "
                       "one (9%); StarPU-MPI's progress thread (1) 0.67 s on a core, 1.54 s "
                       "waiting for one (70%); comm lane threads (2) 0.02 s on a core, 0.86 s "
                       "waiting for one (98%); other threads (5) 0.50 s on a core, 0.14 s "
                       "waiting for one (22%)";
    tap_ok(strcmp(line, want) == 0, "format: %s", line);
    struct hx_thread_usage w = { .threads = { 2, 0, 0, 1 }, .run_s = { 3, 0, 0, 1 } };
    hx_threads_format(&w, 0, line, sizeof line);
    tap_ok(strstr(line, "StarPU workers (2)") && !strstr(line, "MPI") && !strstr(line, "lane"),
           "format: kinds without a thread are left out: %s", line);
    struct hx_thread_usage z = { { 0 }, { 0 }, { 0 } };
    hx_threads_format(&z, 2, line, sizeof line);
    tap_ok(strstr(line, "threads, rank 2: not measured") == line, "format: nothing measured "
           "says so: %s", line);
    hx_threads_format(&v, 1, line, 24);
    tap_ok(strlen(line) == 23, "format: cut at the buffer's size");

    tap_ok(hx_threads_starved(&v) == HX_THREADS_MPI, "starved: StarPU-MPI's thread waited 1.54 "
           "s against 0.67 s on a core");
    v.wait_s[HX_THREADS_MPI] = 0.9;
    v.wait_s[HX_THREADS_LANES] = 1.2;
    tap_ok(hx_threads_starved(&v) == HX_THREADS_LANES, "starved: under a second is not; then "
           "the lanes (1.2 s against 0.02 s)");
    struct hx_thread_usage x = { .threads = { 1, 1, 2, 1 }, .run_s = { 1, 1, 1, 1 },
                                 .wait_s = { 9, 0.5, 0.5, 9 } };
    tap_ok(hx_threads_starved(&x) == -1, "starved: workers and other threads waiting are not "
           "what it reports");
    return tap_exit();
}
