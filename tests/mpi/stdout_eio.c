/* SPDX-License-Identifier: MIT */
/* tests/mpi/stdout_eio.c: an LD_PRELOAD library that plays mpirun ending its output
 * forwarding just before its kill, for tests/mpi/sigterm.sh: in rank 0
 * (OMPI_COMM_WORLD_RANK), once HX_STDOUT_EIO_AFTER flushes of stdout have gone through,
 * every later one fails with EIO, as a write to a pty whose reader is gone does; the first
 * failure sends SIGTERM to the rank's parent, mpirun, HX_STDOUT_EIO_KILL_MS (default 300)
 * later.  helix's flushes of stdout go through fflush (tools/output.c), which is what this
 * replaces; stdout that is no longer the original (helix moved it to stderr) flushes as
 * usual. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long flushes;
static int fired;
static dev_t first_dev;
static ino_t first_ino;

static void *kill_launcher(void *arg)
{
    const char *s = getenv("HX_STDOUT_EIO_KILL_MS");
    long ms = s != NULL ? atol(s) : 300;
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0) {
    }
    kill((pid_t)(long)arg, SIGTERM);
    return NULL;
}

/* stdout is still the descriptor it was at the first flush (not moved to stderr) */
static int original_stdout(void)
{
    struct stat st;
    if (fstat(STDOUT_FILENO, &st) != 0) {
        return 0;
    }
    if (flushes == 0) {
        first_dev = st.st_dev;
        first_ino = st.st_ino;
    }
    return st.st_dev == first_dev && st.st_ino == first_ino;
}

int fflush(FILE *f)
{
    static int (*real)(FILE *);
    if (real == NULL) {
        real = (int (*)(FILE *))dlsym(RTLD_NEXT, "fflush");
    }
    const char *rank = getenv("OMPI_COMM_WORLD_RANK"), *after = getenv("HX_STDOUT_EIO_AFTER");
    if (f != stdout || rank == NULL || atoi(rank) != 0 || after == NULL || !original_stdout() ||
        flushes++ < atol(after)) {
        return real(f);
    }
    if (!fired) {
        pthread_t t;
        fired = 1;
        if (pthread_create(&t, NULL, kill_launcher, (void *)(long)getppid()) == 0) {
            pthread_detach(t);
        }
    }
    errno = EIO;
    return EOF;
}
