/* SPDX-License-Identifier: MIT */
/* runtime/error.c: the error convention of design/style.md.  One message per failure,
 * "helix: error: [rank R/S] file:line func: what (sizes)", and a sticky run status that
 * later tasks read to skip their work (Chameleon's failed sequence).  Thread-safe: codelets
 * report from worker threads.  Test: tests/graphs/ir_topology.c (error paths). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "helix/error.h"

static int first_status = HX_OK;   /* guarded by lock; read racily on the hot path */
static int failed;
static int err_rank = 0, err_size = 1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

const char *hx_status_str(int status)
{
    switch (status) {
    case HX_OK: return "ok";
    case HX_EINVAL: return "invalid argument";
    case HX_ENOMEM: return "out of memory";
    case HX_EIO: return "i/o error";
    case HX_ERUNTIME: return "runtime error";
    case HX_ENONFINITE: return "non-finite value";
    case HX_EFORMAT: return "bad file format";
    case HX_EUNSUPPORTED: return "unsupported";
    default: return "unknown status";
    }
}

void hx_error_get_rank(int *rank, int *size)
{
    *rank = err_rank;
    *size = err_size;
}

void hx_error_set_rank(int rank, int size)
{
    err_rank = rank;
    err_size = size;
}

static int report(const char *file, int line, const char *func, int status, int first_only,
                  const char *fmt, va_list ap)
{
    pthread_mutex_lock(&lock);
    if (failed && first_only) {
        pthread_mutex_unlock(&lock);
        return status;
    }
    if (!failed) {
        __atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
        first_status = status;
    }
    fprintf(stderr, "helix: error: [rank %d/%d] %s:%d %s: ", err_rank, err_size, file, line, func);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    fflush(stderr);
    pthread_mutex_unlock(&lock);
    return status;
}

int hx_error_at(const char *file, int line, const char *func, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(file, line, func, status, 0, fmt, ap);
    va_end(ap);
    return status;
}

int hx_task_error_at(const char *file, int line, const char *func, int status, const char *fmt,
                     ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(file, line, func, status, 1, fmt, ap);
    va_end(ap);
    return status;
}

void hx_assert_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "helix: internal error (a bug in helix): [rank %d/%d] %s:%d: assertion '%s' "
            "failed: ", err_rank, err_size, file, line, cond);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    abort();
}

int hx_run_failed(void)
{
    return __atomic_load_n(&failed, __ATOMIC_RELAXED);
}

int hx_run_status(void)
{
    pthread_mutex_lock(&lock);
    int s = first_status;
    pthread_mutex_unlock(&lock);
    return s;
}

void hx_run_status_reset(void)
{
    pthread_mutex_lock(&lock);
    failed = 0;
    first_status = HX_OK;
    pthread_mutex_unlock(&lock);
}
