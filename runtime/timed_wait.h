/* SPDX-License-Identifier: MIT */
/* runtime/timed_wait.h: wait on a StarPU condition variable for at most a number of
 * microseconds.  starpu_pthread_cond_timedwait takes an absolute CLOCK_REALTIME deadline;
 * the idle workers of hx-prio (schedulers/hx_prio.c, idle_wait) and the collective engine's
 * lanes (runtime/comm_engine.c, progress_main) both want "at most this long from now". */
#ifndef HX_RUNTIME_TIMED_WAIT_H
#define HX_RUNTIME_TIMED_WAIT_H

#include <time.h>

#include <starpu.h>

/* Wait on @p cond (with @p mutex held) until signalled or @p us microseconds have passed; a
 * timeout is not an error (the caller looks again either way). */
static inline void hx_cond_wait_us(starpu_pthread_cond_t *cond, starpu_pthread_mutex_t *mutex,
                                   long us)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += us * 1000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    starpu_pthread_cond_timedwait(cond, mutex, &until);
}

#endif /* HX_RUNTIME_TIMED_WAIT_H */
