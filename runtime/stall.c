/* SPDX-License-Identifier: MIT */
/* runtime/stall.c: the task watchdog.  A scheduling policy that never hands a task it was
 * pushed to a worker (a plug-in's bug) leaves starpu_task_wait_for_all blocked for ever, and
 * on one rank, with no collective in flight, the collective engine's watchdog
 * (runtime/comm_engine.c) has nothing to watch.  So while a thread waits here, a watchdog
 * thread reads StarPU's counts of submitted and of ready tasks every TICK (at most 0.2 s, a
 * tenth of the timeout); a termination changes them, and when they stay the same for the
 * timeout while tasks are submitted, it prints what is stuck and ends the process with
 * HX_EXIT_COMM_TIMEOUT, as the engine's watchdog does.  The waiting thread itself blocks in
 * starpu_task_wait_for_all as before: no per-task callback, no added latency.
 * The timeout is --comm-timeout's (hx_runtime_opts.stall_timeout, or the engine's); a single
 * task running longer than it is taken for a stall, as a collective is.  Where the engine
 * watches too, this one waits COMM_GRACE_S more, so a lost peer is reported by the engine,
 * which names the collective.  Not in the simulation flavour: SimGrid reports deadlocks
 * itself, and a sleeping thread would move simulated time.  The counts are sampled: a
 * termination whose callback submits one task that is ready at once leaves both counts as
 * they were, so a chain of such tasks lasting the whole timeout would pass for a stall;
 * helix's callbacks submit no task.  Test: tests/schedulers/stall.c. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <starpu.h>

#include "helix/comm.h"
#include "helix/error.h"
#include "helix/runtime.h"
#include "runtime/stall.h"

#define TICK_MAX_S 0.2
#define TICK_MIN_S 0.01
#define COMM_GRACE_S 0.5

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;  /* to the thread: a wait began, or stop (CLOCK_MONOTONIC) */
    int cond_ready, started, stop;
    pthread_t thread;
    double configured;    /* hx_stall_configure's */
    int waiters;          /* threads in hx_stall_wait_for_all */
    long waits;           /* waits begun: a new one restarts the clock */
    double timeout, grace; /* of the current waits */
} S = { .lock = PTHREAD_MUTEX_INITIALIZER };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void hx_stall_configure(double timeout)
{
    pthread_mutex_lock(&S.lock);
    S.configured = timeout;
    pthread_mutex_unlock(&S.lock);
}

/* Nothing changed for the timeout: say what is stuck, then end the process (S.lock held). */
static void fire(double idle, int nsubmitted, int nready)
{
    int rank = hx_mpi_world_rank();
    fflush(stdout);
    fprintf(stderr, "helix: error: [rank %d] no task terminated for %.1f s (--comm-timeout %g): "
            "%d task%s submitted and not finished, %d of them ready (pushed to the scheduling "
            "policy '%s': never handed to a worker, or still running)\n", rank, idle, S.timeout,
            nsubmitted, nsubmitted == 1 ? "" : "s", nready, hx_runtime_sched_name());
    if (nready > 0) {
        fprintf(stderr, "helix: error: [rank %d] hint: a scheduling policy must hand every "
                "task it is pushed to a worker (pop_task); raise --comm-timeout if a single "
                "task can legitimately run longer (exiting with status %d)\n", rank,
                HX_EXIT_COMM_TIMEOUT);
    } else {
        fprintf(stderr, "helix: error: [rank %d] hint: no task is ready or running: each "
                "waits on a dependency that never ends (a StarPU tag never released, a task "
                "never submitted) (exiting with status %d)\n", rank, HX_EXIT_COMM_TIMEOUT);
    }
    fflush(stderr);
    _exit(HX_EXIT_COMM_TIMEOUT);
}

static void *watch(void *arg)
{
    (void)arg;
    long seen = -1;
    int nsubmitted = -1, nready = -1;
    double last = 0;
    pthread_mutex_lock(&S.lock);
    while (!S.stop) {
        if (S.waiters == 0) {
            pthread_cond_wait(&S.wake, &S.lock);
            continue;
        }
        double t = now_s();
        int s = starpu_task_nsubmitted(), r = starpu_task_nready();
        if (S.waits != seen || s != nsubmitted || r != nready || s == 0) {
            seen = S.waits;
            nsubmitted = s;
            nready = r;
            last = t;
        } else if (t - last > S.timeout + S.grace) {
            fire(t - last, s, r);
        }
        double tick = S.timeout / 10 > TICK_MAX_S ? TICK_MAX_S : S.timeout / 10;
        tick = tick < TICK_MIN_S ? TICK_MIN_S : tick;
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        long ns = until.tv_nsec + (long)(tick * 1e9);
        until.tv_sec += ns / 1000000000L;
        until.tv_nsec = ns % 1000000000L;
        pthread_cond_timedwait(&S.wake, &S.lock, &until);
    }
    pthread_mutex_unlock(&S.lock);
    return NULL;
}

/* Start the thread once (S.lock held): 0, or nonzero (said once; waits go unwatched). */
static int start_locked(void)
{
    static int refused;
    if (S.started) {
        return 0;
    }
    if (!S.cond_ready) {
        pthread_condattr_t a;
        pthread_condattr_init(&a);
        pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
        pthread_cond_init(&S.wake, &a);
        pthread_condattr_destroy(&a);
        S.cond_ready = 1;
    }
    S.stop = 0;
    int rc = pthread_create(&S.thread, NULL, watch, NULL);
    if (rc != 0) {
        if (!refused) {
            hx_warn("cannot start the task watchdog's thread: %s; a stuck task will not be "
                    "reported", strerror(rc));
        }
        refused = 1;
        return rc;
    }
    S.started = 1;
    return 0;
}

void hx_stall_wait_for_all(void)
{
    double timeout = 0, comm = 0;
    if (!hx_runtime_simulated()) {
        pthread_mutex_lock(&S.lock);
        timeout = S.configured;
        pthread_mutex_unlock(&S.lock);
        comm = timeout >= 0 ? hx_comm_timeout() : 0; /* (takes the engine's lock) */
        timeout = timeout > 0 ? timeout : comm;
    }
    pthread_mutex_lock(&S.lock);
    int watched = timeout > 0 && start_locked() == 0;
    if (watched) {
        S.waiters++;
        S.waits++;
        S.timeout = timeout;
        S.grace = comm > 0 ? COMM_GRACE_S : 0;
        pthread_cond_signal(&S.wake);
    }
    pthread_mutex_unlock(&S.lock);
    starpu_task_wait_for_all();
    if (watched) {
        pthread_mutex_lock(&S.lock);
        S.waiters--;
        pthread_mutex_unlock(&S.lock);
    }
}

void hx_stall_stop(void)
{
    pthread_mutex_lock(&S.lock);
    if (!S.started) {
        pthread_mutex_unlock(&S.lock);
        return;
    }
    S.stop = 1;
    pthread_cond_signal(&S.wake);
    pthread_mutex_unlock(&S.lock);
    pthread_join(S.thread, NULL);
    pthread_mutex_lock(&S.lock);
    S.started = 0;
    S.stop = 0;
    pthread_mutex_unlock(&S.lock);
}
