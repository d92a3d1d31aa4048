/* SPDX-License-Identifier: MIT */
/* runtime/comm_engine.c: the progress thread of the collective engine and its watchdog.
 * Open MPI has no asynchronous progress, so a posted MPI_I* call only moves while someone
 * tests it: this thread does, with MPI_Testsome over every pending request.  Within SPIN_US
 * of the last event (a request posted or finished) it only yields between tests; after that
 * it sleeps 20 us doubling to 200 us while requests are pending and nothing completes; with
 * none pending it blocks on a condition variable, so it costs nothing between steps.
 * Why spin: a message over TCP moves in several protocol steps (rendezvous, fragments), each
 * one waiting for the next test, so with sleeps alone every step of a tp all-reduce waited
 * for the next poll; a yielding thread gives its core to any runnable worker, so the spin
 * costs compute-bound runs nothing measurable.  The measurements (bench/strands.sh and
 * bench/prefetch.sh before and after) are in bench/README.md, "The collective engine's
 * polling".
 *
 *   worker: post MPI_I* -> end_dep_add -> hx_comm_post --incoming--> progress thread:
 *   adopt -> Testsome -> done() (unpack) -> starpu_task_end_dep_release (the task ends)
 *
 * How device data reaches MPI: through StarPU, never around it.  The collective codelets
 * (codelets/collective.c) have CPU implementations only (tests/device/table.c checks it), so
 * a collective task runs on a CPU worker, and before it starts StarPU makes every tile it
 * accesses valid in RAM: a tile last written on an OpenCL or CUDA device is copied back to
 * the host (and its device copy dropped if the collective writes the tile), so buffers[i]
 * and hence every pointer MPI receives is host memory.  The host helpers (hx_comm_host_*)
 * take the caller's own buffers; helix fills those from tensors only with hx_tensor_read or
 * inside hx_tensor_begin_access, which acquire the tiles in RAM (starpu_data_acquire) first.
 * tests/device/parity.sh runs data parallelism with an OpenCL device per rank this way.
 * The NCCL backend (runtime/comm_nccl.c) instead reduces tiles in GPU memory: its requests
 * have no MPI request but a poll function (cudaEventQuery on an event recorded after the
 * NCCL calls), which this thread calls on each pass where it tests MPI's; completion, the
 * task's release, the statistics and the watchdog are the same for both.
 *
 * Watchdog: when requests are pending and none has completed for `timeout` seconds (counted
 * from the later of the last completion and the moment something became pending), every
 * pending request is printed, one line each (comm.h gives the form), and the process ends
 * with HX_EXIT_COMM_TIMEOUT: a dead or stopped peer must not hang the job.
 * Test: tests/mpi/collectives.c, tests/mpi/watchdog.sh. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <starpu.h>

#include "helix/error.h"
#include "runtime/comm_internal.h"

#define POLL_MIN_US 20
#define POLL_MAX_US 200
#define SPIN_US 1000 /* yield-only polling this long after each event */

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;            /* to the progress thread: new request, or stop */
    pthread_cond_t finished;        /* to host waiters and drain */
    struct hx_coll_req *incoming;   /* posted, not yet adopted by the thread */
    int pending;                    /* posted and not finished */
    int stop, running;
    pthread_t thread;
    double timeout;
    long collectives;               /* stats, under lock */
    double bytes, busy_s;
} E = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER,
        .finished = PTHREAD_COND_INITIALIZER };

static long started_count;          /* atomic */

/* The thread's own view of the requests it tests (no lock needed). */
static struct {
    struct hx_coll_req **r;
    MPI_Request *req;
    int *idx;
    MPI_Status *st;
    int n, cap;
    double last_progress;
    double last_event;  /* a request adopted or finished: spin until SPIN_US after it */
} A;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

long hx_comm_count_start(void)
{
    return __atomic_add_fetch(&started_count, 1, __ATOMIC_RELAXED);
}

static void enqueue_locked(struct hx_coll_req *r)
{
    r->t_post = now_s();
    r->next = E.incoming;
    E.incoming = r;
    E.pending++;
    pthread_cond_signal(&E.wake);
}

void hx_comm_post(struct hx_coll_req *r)
{
    pthread_mutex_lock(&E.lock);
    HX_ASSERT(E.running, "%s on channel %d posted while the engine is stopped", r->op,
              r->channel);
    enqueue_locked(r);
    pthread_mutex_unlock(&E.lock);
}

int hx_comm_wait_host(struct hx_coll_req *r)
{
    r->task = NULL;
    r->done = NULL;
    r->finished = 0;
    r->status = HX_OK;
    pthread_mutex_lock(&E.lock);
    HX_ASSERT(E.running, "host %s on channel %d while the engine is stopped", r->op,
              r->channel);
    enqueue_locked(r);
    while (!r->finished) {
        pthread_cond_wait(&E.finished, &E.lock);
    }
    int status = r->status;
    pthread_mutex_unlock(&E.lock);
    return status;
}

void hx_comm_local_done(double bytes)
{
    pthread_mutex_lock(&E.lock);
    E.collectives++;
    E.bytes += bytes;
    pthread_mutex_unlock(&E.lock);
}

/* Move incoming requests into the tested set; called with the lock held. */
static void adopt_locked(void)
{
    for (struct hx_coll_req *r = E.incoming; r != NULL; r = r->next) {
        if (A.n == A.cap) {
            int cap = A.cap ? 2 * A.cap : 64;
            A.r = realloc(A.r, sizeof *A.r * (size_t)cap);
            A.req = realloc(A.req, sizeof *A.req * (size_t)cap);
            A.idx = realloc(A.idx, sizeof *A.idx * (size_t)cap);
            A.st = realloc(A.st, sizeof *A.st * (size_t)cap);
            HX_ASSERT(A.r && A.req && A.idx && A.st, "out of memory for %d pending requests",
                      cap);
            A.cap = cap;
        }
        if (A.n == 0) {
            A.last_progress = now_s(); /* the watchdog's clock starts with the first wait */
        }
        A.r[A.n] = r;
        A.req[A.n] = r->req;
        A.n++;
    }
    E.incoming = NULL;
}

/* One request is over: finish the op, count it, release its task or wake its host.  @p ok:
 * 0 after a failure, already reported; @p st: NULL for a polled request. */
static void finish(int i, const MPI_Status *st, int ok)
{
    struct hx_coll_req *r = A.r[i];
    struct starpu_task *task = r->task;
    double busy = now_s() - r->t_post, bytes = r->bytes;
    if (getenv("HX_COMM_LOG") != NULL && task != NULL) {
        fprintf(stderr, "commlog rank %d %s %s seq %d post %.4f done %.4f bytes %.0f "
                "starpu %.4f\n", hx_mpi_world_rank(), r->op, hx_group_name(r->channel), r->seq,
                r->t_post, now_s(), bytes, starpu_timing_now() / 1e6);
    }
    A.r[i] = NULL;
    A.req[i] = MPI_REQUEST_NULL;
    if (r->done != NULL) {
        r->done(r, st, ok); /* frees r */
    }
    pthread_mutex_lock(&E.lock);
    if (task != NULL) { /* the stats count tasks; host calls are not part of a step */
        E.collectives++;
        E.bytes += bytes;
        E.busy_s += busy;
    } else {
        r->status = ok ? HX_OK : HX_ERUNTIME;
        r->finished = 1; /* the host may return (and free r) once we unlock */
    }
    if (--E.pending == 0 || task == NULL) {
        pthread_cond_broadcast(&E.finished);
    }
    pthread_mutex_unlock(&E.lock);
    if (task != NULL) {
        starpu_task_end_dep_release(task);
    }
}

/* An MPI request is over with status @p rc. */
static void finish_mpi(int i, const MPI_Status *st, int rc)
{
    if (rc != MPI_SUCCESS) {
        hx_comm_report(rc, A.r[i], "completion");
    }
    finish(i, st, rc == MPI_SUCCESS);
}

/* Test every pending request once; @return how many finished.  Polled requests sit in the
 * set as MPI_REQUEST_NULL, which MPI_Testsome skips (with no active request it returns
 * MPI_UNDEFINED). */
static int test_all(void)
{
    int out = 0, done = 0;
    int rc = MPI_Testsome(A.n, A.req, &out, A.idx, A.st);
    if (rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) {
        if (out == MPI_UNDEFINED) {
            out = 0;
        }
        for (int k = 0; k < out; k++) {
            int i = A.idx[k];
            finish_mpi(i, &A.st[k], rc == MPI_SUCCESS ? MPI_SUCCESS : A.st[k].MPI_ERROR);
            done++;
        }
    } else {
        /* the set as a whole failed: find out request by request */
        for (int i = 0; i < A.n; i++) {
            int flag = 0;
            MPI_Status st;
            if (A.r[i]->poll != NULL) {
                continue;
            }
            int rci = MPI_Test(&A.req[i], &flag, &st);
            if (rci != MPI_SUCCESS || flag) {
                finish_mpi(i, &st, rci);
                done++;
            }
        }
    }
    for (int i = 0; i < A.n; i++) { /* NCCL: a cudaEvent after the calls (runtime/comm_nccl.c) */
        int s = A.r[i] != NULL && A.r[i]->poll != NULL ? A.r[i]->poll(A.r[i]) : 0;
        if (s != 0) {
            finish(i, NULL, s > 0);
            done++;
        }
    }
    if (done > 0) {
        int j = 0;
        for (int i = 0; i < A.n; i++) {
            if (A.r[i] != NULL) {
                A.r[j] = A.r[i];
                A.req[j] = A.req[i];
                j++;
            }
        }
        A.n = j;
        A.last_progress = now_s();
    }
    return done;
}

/* No progress for too long: say what this rank waits on, then end the process. */
static void watchdog_fire(double idle)
{
    int rank = hx_mpi_world_rank();
    char peers[256];
    fflush(stdout);
    for (int i = 0; i < A.n; i++) {
        const struct hx_coll_req *r = A.r[i];
        hx_comm_format_members(r->channel, peers, sizeof peers);
        fprintf(stderr, "helix: error: [rank %d] no collective progress for %.0f s "
                "(--comm-timeout): waiting on channel %s seq %d (#%ld started here): %s%s of "
                "%.0f bytes with world ranks %s\n", rank, idle,
                hx_group_name((enum hx_group_kind)r->channel), r->seq, r->started,
                r->task == NULL ? "host " : "", r->op, r->bytes, peers);
    }
    fprintf(stderr, "helix: error: [rank %d] hint: a peer rank died or stopped; raise "
            "--comm-timeout if the network is just slow (exiting with status %d)\n", rank,
            HX_EXIT_COMM_TIMEOUT);
    fflush(stderr);
    _exit(HX_EXIT_COMM_TIMEOUT);
}

static void *progress_main(void *arg)
{
    (void)arg;
    long poll_us = POLL_MIN_US;
    pthread_mutex_lock(&E.lock);
    for (;;) {
        if (E.incoming != NULL) {
            adopt_locked();
            poll_us = POLL_MIN_US;
            A.last_event = now_s();
        }
        if (A.n == 0) {
            if (E.stop) {
                break;
            }
            pthread_cond_wait(&E.wake, &E.lock);
            continue;
        }
        pthread_mutex_unlock(&E.lock);
        if (test_all() > 0) {
            poll_us = POLL_MIN_US;
            A.last_event = now_s();
        } else {
            double t = now_s(), idle = t - A.last_progress;
            if (E.timeout > 0 && idle > E.timeout) {
                watchdog_fire(idle);
            }
            if (t - A.last_event < SPIN_US * 1e-6) {
                sched_yield();
            } else {
                struct timespec ts = { 0, poll_us * 1000 };
                nanosleep(&ts, NULL);
                poll_us = poll_us * 2 > POLL_MAX_US ? POLL_MAX_US : poll_us * 2;
            }
        }
        pthread_mutex_lock(&E.lock);
    }
    pthread_mutex_unlock(&E.lock);
    return NULL;
}

int hx_comm_engine_start(double timeout)
{
    pthread_mutex_lock(&E.lock);
    HX_ASSERT(!E.running, "the collective engine is already running");
    E.timeout = timeout;
    E.stop = 0;
    E.pending = 0;
    E.incoming = NULL;
    int rc = pthread_create(&E.thread, NULL, progress_main, NULL);
    E.running = rc == 0;
    pthread_mutex_unlock(&E.lock);
    if (rc != 0) {
        return HX_ERR(HX_ERUNTIME, "cannot start the collective progress thread: %s; the "
                      "process may be out of threads (ulimit -u)", strerror(rc));
    }
    return HX_OK;
}

void hx_comm_engine_drain(void)
{
    pthread_mutex_lock(&E.lock);
    while (E.pending > 0) {
        pthread_cond_wait(&E.finished, &E.lock);
    }
    pthread_mutex_unlock(&E.lock);
}

void hx_comm_engine_stop(void)
{
    pthread_mutex_lock(&E.lock);
    if (!E.running) {
        pthread_mutex_unlock(&E.lock);
        return;
    }
    E.stop = 1;
    pthread_cond_signal(&E.wake);
    pthread_mutex_unlock(&E.lock);
    pthread_join(E.thread, NULL);
    pthread_mutex_lock(&E.lock);
    E.running = 0;
    pthread_mutex_unlock(&E.lock);
    free(A.r);
    free(A.req);
    free(A.idx);
    free(A.st);
    memset(&A, 0, sizeof A);
}

double hx_comm_timeout(void)
{
    pthread_mutex_lock(&E.lock);
    double t = E.running ? E.timeout : 0;
    pthread_mutex_unlock(&E.lock);
    return t > 0 ? t : 0;
}

void hx_comm_engine_stats(struct hx_comm_stats *s)
{
    pthread_mutex_lock(&E.lock);
    s->collectives = E.collectives;
    s->bytes = E.bytes;
    s->busy_s = E.busy_s;
    pthread_mutex_unlock(&E.lock);
}

void hx_comm_engine_reset_stats(void)
{
    pthread_mutex_lock(&E.lock);
    E.collectives = 0;
    E.bytes = 0;
    E.busy_s = 0;
    pthread_mutex_unlock(&E.lock);
}
