/* SPDX-License-Identifier: MIT */
/* tests/tap.h: the Test Anything Protocol for automake's tap-driver.sh, header-only.
 * tap_plan(n); tap_ok(cond, fmt, ...); tap_skip(why); tap_skip_all(why); return tap_exit();
 * tap_exit() is nonzero when any "not ok" was printed, so the exit status agrees with TAP. */
#ifndef HX_TAP_H
#define HX_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int tap_count_, tap_failed_;

static inline void tap_plan(int n)
{
    printf("1..%d\n", n);
    fflush(stdout);
}

static inline int tap_ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int tap_ok(int cond, const char *fmt, ...)
{
    va_list ap;
    tap_count_++;
    if (!cond) {
        tap_failed_++;
    }
    printf("%sok %d - ", cond ? "" : "not ", tap_count_);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    return cond;
}

static inline void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void tap_diag(const char *fmt, ...)
{
    va_list ap;
    printf("# ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

static inline void tap_skip(const char *why)
{
    tap_count_++;
    printf("ok %d # SKIP %s\n", tap_count_, why);
    fflush(stdout);
}

static inline void tap_skip_all(const char *why)
{
    printf("1..0 # SKIP %s\n", why);
    fflush(stdout);
    exit(0);
}

static inline int tap_exit(void)
{
    return tap_failed_ ? 1 : 0;
}

#endif /* HX_TAP_H */
