/* SPDX-License-Identifier: MIT */
/* tests/mpi/slow_fsync.c: an LD_PRELOAD library that makes checkpoint writes slow, for
 * tests/mpi/watchdog.sh: fsync of a file named ckpt-*.bin.tmp first sleeps HX_SLOW_FSYNC_S
 * seconds (default 3), as a slow or busy disk would.  Every other fsync is the system's. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int fsync(int fd)
{
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    path[n > 0 ? n : 0] = '\0';
    const char *base = strrchr(path, '/');
    base = base != NULL ? base + 1 : path;
    size_t len = strlen(base);
    if (strncmp(base, "ckpt-", 5) == 0 && len > 8 && strcmp(base + len - 8, ".bin.tmp") == 0) {
        const char *s = getenv("HX_SLOW_FSYNC_S");
        double secs = s != NULL ? atof(s) : 3;
        struct timespec ts = { (time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9) };
        while (nanosleep(&ts, &ts) != 0) {
        }
    }
    return (int)syscall(SYS_fsync, fd);
}
