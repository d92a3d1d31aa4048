/* SPDX-License-Identifier: MIT */
/**
 * @file helix/error.h
 * @brief Status codes, error reporting and logging (the convention of design/style.md).
 *
 * Failures caused by the world (bad input, OOM, MPI/CUDA errors, NaN) become a negative
 * ::hx_status returned upward; library code never exits.  HX_ERR prints one message
 *   "helix: error: [rank R] file.c:LINE func: <what failed, with sizes>"
 * remembers the first failure of the run (hx_run_failed()) and returns the status, so
 * `return HX_ERR(HX_EINVAL, "...")` both reports and propagates.  Our own bugs go to
 * HX_ASSERT, which prints the values and aborts.
 */
#ifndef HELIX_ERROR_H
#define HELIX_ERROR_H

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Status codes: 0 is success, failures are negative. */
enum hx_status {
    HX_OK = 0,
    HX_EINVAL = -1,     /**< invalid argument, flag, shape or configuration */
    HX_ENOMEM = -2,     /**< allocation failed */
    HX_EIO = -3,        /**< file could not be read or written */
    HX_ERUNTIME = -4,   /**< StarPU, MPI, BLAS or CUDA call failed */
    HX_ENONFINITE = -5, /**< NaN or Inf where a finite value was required */
    HX_EFORMAT = -6,    /**< file has a wrong magic, version, size or checksum */
    HX_EUNSUPPORTED = -7, /**< feature not built in or not available on this machine */
};

/** Short name of a status ("invalid argument", ...). */
const char *hx_status_str(int status);

/**
 * Report a failure and return @p status.  Thread-safe; called from codelets too.
 * Records the first failure of the run so later tasks can skip their work.
 */
int hx_error_at(const char *file, int line, const char *func, int status, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#define HX_ERR(status, ...) hx_error_at(__FILE__, __LINE__, __func__, (status), __VA_ARGS__)

/**
 * The same from inside a task: several tasks running at once may hit the same problem (every
 * AdamW task sees one non-finite norm), so only the run's first failure is printed and the
 * others return their status silently.
 */
int hx_task_error_at(const char *file, int line, const char *func, int status, const char *fmt,
                     ...) __attribute__((format(printf, 5, 6)));

#define HX_TASK_ERR(status, ...) \
    hx_task_error_at(__FILE__, __LINE__, __func__, (status), __VA_ARGS__)

/** Abort on a broken internal invariant (a helix bug), printing the values. */
void hx_assert_fail(const char *file, int line, const char *cond, const char *fmt, ...)
    __attribute__((format(printf, 4, 5), noreturn));

#define HX_ASSERT(cond, ...)                                                  \
    do {                                                                      \
        if (!(cond)) {                                                        \
            hx_assert_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);           \
        }                                                                     \
    } while (0)

/** Nonzero once any HX_ERR was reported in this process (Chameleon's failed sequence). */
int hx_run_failed(void);
/** First status reported in this run, or HX_OK. */
int hx_run_status(void);
/** Forget earlier failures (tests that provoke errors on purpose). */
void hx_run_status_reset(void);

/** Rank printed in messages; set by the runtime once MPI is up (default 0 of 1). */
void hx_error_set_rank(int rank, int size);
void hx_error_get_rank(int *rank, int *size);

enum hx_log_level { HX_LOG_ERROR = 0, HX_LOG_WARN = 1, HX_LOG_INFO = 2, HX_LOG_DEBUG = 3 };

/** Messages above @p level are dropped.  Default HX_LOG_INFO, or HX_LOG (error|warn|info|debug). */
void hx_log_set_level(enum hx_log_level level);
enum hx_log_level hx_log_get_level(void);
/** Log one line to stderr, prefixed "helix: [rank R] " when more than one rank runs. */
void hx_log(enum hx_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define hx_warn(...) hx_log(HX_LOG_WARN, __VA_ARGS__)
#define hx_info(...) hx_log(HX_LOG_INFO, __VA_ARGS__)
#define hx_debug(...) hx_log(HX_LOG_DEBUG, __VA_ARGS__)

#ifdef __cplusplus
}
#endif

#endif /* HELIX_ERROR_H */
