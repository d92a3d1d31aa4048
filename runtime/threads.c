/* SPDX-License-Identifier: MIT */
/* runtime/threads.c: where this process's threads spent their time (include/helix/threads.h).
 * Linux gives each thread's scheduler statistics in /proc/self/task/TID/schedstat: nanoseconds
 * on a core, nanoseconds runnable on a run queue (waiting for a core), and time slices; its
 * name in .../comm.  A thread that ended before the call is not counted: call it while the
 * StarPU workers and StarPU-MPI still run (before hx_runtime_shutdown).
 * Test: tests/tools/threads.c, tests/mpi/threads.sh. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "helix/threads.h"

const char *hx_threads_kind_name(enum hx_thread_kind k)
{
    static const char *const names[HX_THREADS_KINDS] = {
        "StarPU workers", "StarPU-MPI's progress thread", "comm lane threads", "other threads"
    };
    return k >= 0 && k < HX_THREADS_KINDS ? names[k] : "?";
}

/* The kind of a thread named @p name (StarPU 1.3's drivers name their workers "CPU %d",
 * "CUDA %u.%u", "OpenCL %d"; StarPU-MPI its thread "MPI"; comm_engine.c its lanes). */
static enum hx_thread_kind kind_of(const char *name)
{
    if (strncmp(name, "CPU ", 4) == 0 || strncmp(name, "CUDA ", 5) == 0 ||
        strncmp(name, "OpenCL ", 7) == 0) {
        return HX_THREADS_WORKERS;
    }
    if (strcmp(name, "MPI") == 0) {
        return HX_THREADS_MPI;
    }
    if (strncmp(name, "hx-lane-", 8) == 0) {
        return HX_THREADS_LANES;
    }
    return HX_THREADS_OTHER;
}

/* The first line of /proc/self/task/@p tid/@p what into @p buf (newline cut); 0 or -1. */
static int read_task(const char *tid, const char *what, char *buf, size_t len)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/self/task/%s/%s", tid, what);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (!ok) {
        return -1;
    }
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

int hx_threads_usage(struct hx_thread_usage *u)
{
    memset(u, 0, sizeof *u);
    DIR *d = opendir("/proc/self/task");
    if (d == NULL) {
        return -1;
    }
    int seen = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        char name[64], stat[128];
        unsigned long long run_ns, wait_ns;
        if (e->d_name[0] == '.' || read_task(e->d_name, "comm", name, sizeof name) != 0 ||
            read_task(e->d_name, "schedstat", stat, sizeof stat) != 0 ||
            sscanf(stat, "%llu %llu", &run_ns, &wait_ns) != 2) {
            continue; /* (a thread that just ended, or no scheduler statistics) */
        }
        enum hx_thread_kind k = kind_of(name);
        u->threads[k]++;
        u->run_s[k] += (double)run_ns * 1e-9;
        u->wait_s[k] += (double)wait_ns * 1e-9;
        seen++;
    }
    closedir(d);
    return seen > 0 ? 0 : -1;
}

void hx_threads_format(const struct hx_thread_usage *u, int rank, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "threads, rank %d:", rank);
    if (n >= len) {
        return; /* (cut) */
    }
    const char *sep = "";
    int any = 0;
    for (int k = 0; k < HX_THREADS_KINDS; k++) {
        any += u->threads[k];
    }
    if (any == 0) {
        snprintf(buf + n, len - n, " not measured (this kernel gives no "
                 "/proc/self/task/TID/schedstat)");
        return;
    }
    for (int k = 0; k < HX_THREADS_KINDS && n < len; k++) {
        if (u->threads[k] == 0) {
            continue;
        }
        double busy = u->run_s[k] + u->wait_s[k];
        n += (size_t)snprintf(buf + n, len - n, "%s %s (%d) %.2f s on a core, %.2f s waiting for "
                              "one (%.0f%%)", sep, hx_threads_kind_name((enum hx_thread_kind)k),
                              u->threads[k], u->run_s[k], u->wait_s[k],
                              busy > 0 ? 100.0 * u->wait_s[k] / busy : 0.0);
        sep = ";";
    }
}

int hx_threads_starved(const struct hx_thread_usage *u)
{
    const enum hx_thread_kind comm[] = { HX_THREADS_MPI, HX_THREADS_LANES };
    for (size_t i = 0; i < sizeof comm / sizeof comm[0]; i++) {
        enum hx_thread_kind k = comm[i];
        if (u->threads[k] > 0 && u->wait_s[k] > 1.0 && u->wait_s[k] > u->run_s[k]) {
            return (int)k;
        }
    }
    return -1;
}
