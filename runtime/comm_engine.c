/* SPDX-License-Identifier: MIT */
/* runtime/comm_engine.c: the progress threads of the collective engine and its watchdog.
 * Open MPI has no asynchronous progress, so a posted MPI_I* call only moves while someone
 * tests it: a progress thread does, with MPI_Testsome over the requests it owns.  Within
 * SPIN_US of its last event (a request adopted or finished) it only yields between tests;
 * after that it sleeps 20 us doubling to 200 us while requests are pending and nothing
 * completes; with none pending it blocks on a condition variable, so it costs nothing
 * between steps.  A lane whose pending requests all announce their end (the StarPU-MPI
 * backend's, posted with hx_comm_post_kicked: its last transfer or task kicks the lane) does
 * not poll at all: it sleeps until a kick, at most KICK_WAIT_US (50 ms) so that the watchdog still
 * looks.  Polling a count that a kick announces anyway only took the core from the threads
 * that move the data: on the bed's tp 2 + SP (1+1 ranks, one core each) the step fell from
 * 112.5 to 90.5 ms (bench/README.md, "The StarPU-MPI backend's lanes sleep").
 * Why spin: a message over TCP moves in several protocol steps (rendezvous, fragments), each
 * one waiting for the next test, so with sleeps alone every step of a tp all-reduce waited
 * for the next poll; a yielding thread gives its core to any runnable worker, so the spin
 * costs compute-bound runs nothing measurable.  The measurements (bench/strands.sh and
 * bench/prefetch.sh before and after) are in bench/README.md, "The collective engine's
 * polling".
 *
 * Lanes: the network is two resources, the links inside a node (shared memory) and the link
 * between nodes, so the engine has one progress thread per communication lane (DHelix's
 * streams, enum hx_lane): intra-node and inter-node.  Each owns its requests, its wake-ups
 * and its polling rhythm, so a slow inter-node collective (its unpacking and accumulation in
 * done(), its sleeps while the link is busy) never delays an intra-node one queued behind it.
 * A request's lane is its channel's (hx_comm_lane: the group's intra_node flag, set when
 * hx_comm_open runs, see comm_internal.h for why that and not the IR node's lane).  Both
 * threads call MPI_Testsome at once on disjoint request sets: MPI_THREAD_MULTIPLE, which
 * hx_mpi_init requires, allows it (MPI 3.1 §12.4: concurrent calls on distinct requests are
 * fine; Open MPI 4.1's test_some only reads its own array, and opal_progress and libnbc's
 * progress serialise themselves with their own locks).  HX_COMM_ONE_LANE=1 (read at start,
 * for diagnosis) puts every request on the intra-node thread, the engine before lanes.
 * "Own workers": a collective task on the CPU only posts its call and returns, its end held
 * by an end-dependency, so it occupies a worker for microseconds whatever its lane, and no
 * worker waits on a transfer.  The StarPU-MPI backend's own reduction and copy tasks take
 * their lane's priority (runtime/comm_smpi.c), so the intra-node lane's run first; its
 * transfers themselves move in StarPU-MPI's one progress thread, which tests every detached
 * request on each pass, so a slow one does not hold a fast one there either.  What the lanes
 * do not split is MPI's own progress: either thread's MPI_Testsome runs opal_progress for
 * every pending transfer of the process.
 *
 *   worker: post MPI_I* -> end_dep_add -> hx_comm_post --lane's incoming--> its thread:
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
 * NCCL calls), which the lane's thread calls on each pass where it tests MPI's; completion,
 * the task's release, the statistics and the watchdog are the same for both; so for the
 * StarPU-MPI backend (runtime/comm_smpi.c), whose poll reads a count of finished transfers.
 *
 * Watchdog, one for both lanes: when requests are pending and none has completed, on either
 * lane, for `timeout` seconds (counted from the later of the last completion and the moment
 * something became pending), every pending request of every lane is printed, one line each
 * (comm.h gives the form; it names the lane), and the process ends with HX_EXIT_COMM_TIMEOUT:
 * a dead or stopped peer must not hang the job.  Either lane's thread may be the one that
 * notices; the list of pending requests it prints is the engine's, under its lock.
 * Test: tests/mpi/collectives.c, tests/mpi/watchdog.sh; the lanes: tests/mpi/lanes.sh. */
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
#include "helix/graph.h"
#include "helix/runtime.h"
#include "runtime/comm_internal.h"
#include "runtime/timed_wait.h"

#define POLL_MIN_US 20
#define POLL_MAX_US 200
#define SPIN_US 1000 /* yield-only polling this long after each event */
#define KICK_WAIT_US 50000 /* longest sleep of a lane holding only kicked requests */
#define NLANES 2     /* the comm lanes: index lane - HX_LANE_COMM_INTRA */

/* One lane: its progress thread and the requests it owns. */
struct lane {
    /* under E.lock */
    starpu_pthread_cond_t wake;     /* to the thread: new request, a kick, or stop */
    long kicks;                     /* hx_comm_engine_kick calls: a polled request may be done */
    struct hx_coll_req *incoming;   /* posted, not yet adopted by the thread */
    starpu_pthread_t thread;
    int started;
    long collectives;               /* stats of this lane */
    double bytes;
    /* the thread's own view of the requests it tests (no lock needed) */
    struct hx_coll_req **r;
    MPI_Request *req;
    int *idx;
    MPI_Status *st;
    int n, cap;
    double last_event;  /* a request adopted or finished: spin until SPIN_US after it */
};

static struct {
    starpu_pthread_mutex_t lock;
    starpu_pthread_cond_t finished;        /* to host waiters and drain */
    struct hx_coll_req *waiting;    /* every posted, unfinished request (the watchdog's list) */
    int pending;                    /* how many */
    double last_progress;           /* a completion on any lane, or pending went 0 -> 1 */
    int stop, running, one_lane;
    double timeout;
    long collectives;               /* stats, totals over the lanes */
    double bytes, busy_s;
    struct lane lane[NLANES];
} E = { .lock = STARPU_PTHREAD_MUTEX_INITIALIZER,
        .finished = STARPU_PTHREAD_COND_INITIALIZER,
        .lane = { { .wake = STARPU_PTHREAD_COND_INITIALIZER },
                  { .wake = STARPU_PTHREAD_COND_INITIALIZER } } };

static long started_count;          /* atomic */

static double now_s(void)
{
    return hx_clock_ms() / 1e3; /* (simulated time in the simulation flavour) */
}

static const char *lane_words(int lane)
{
    return lane == HX_LANE_COMM_INTER ? "inter-node" : "intra-node";
}

/* Index in E.lane of @p lane's thread (0 for every lane with HX_COMM_ONE_LANE). */
static int lane_index(int lane)
{
    return !E.one_lane && lane == HX_LANE_COMM_INTER ? 1 : 0;
}

long hx_comm_count_start(void)
{
    return __atomic_add_fetch(&started_count, 1, __ATOMIC_RELAXED);
}

static void enqueue_locked(struct hx_coll_req *r)
{
    struct lane *L = &E.lane[lane_index(r->lane)];
    r->t_post = now_s();
    r->next = L->incoming;
    L->incoming = r;
    r->wprev = NULL;
    r->wnext = E.waiting;
    if (E.waiting != NULL) {
        E.waiting->wprev = r;
    }
    E.waiting = r;
    if (E.pending++ == 0) {
        E.last_progress = r->t_post; /* the watchdog's clock starts with the first wait */
    }
    starpu_pthread_cond_signal(&L->wake);
}

void hx_comm_engine_kick(int lane)
{
    starpu_pthread_mutex_lock(&E.lock);
    struct lane *L = &E.lane[lane_index(lane)];
    L->kicks++;
    starpu_pthread_cond_signal(&L->wake);
    starpu_pthread_mutex_unlock(&E.lock);
}

static void post(struct hx_coll_req *r)
{
    r->lane = hx_comm_lane(r->channel);
    starpu_pthread_mutex_lock(&E.lock);
    HX_ASSERT(E.running, "%s on channel %d posted while the engine is stopped", r->op,
              r->channel);
    enqueue_locked(r);
    starpu_pthread_mutex_unlock(&E.lock);
}

void hx_comm_post(struct hx_coll_req *r)
{
    r->kicked = 0;
    post(r);
}

void hx_comm_post_kicked(struct hx_coll_req *r)
{
    r->kicked = 1;
    post(r);
}

int hx_comm_wait_host(struct hx_coll_req *r)
{
    r->task = NULL;
    r->done = NULL;
    r->describe = NULL;
    r->kicked = 0;
    r->finished = 0;
    r->status = HX_OK;
    r->lane = hx_comm_lane(r->channel);
    starpu_pthread_mutex_lock(&E.lock);
    HX_ASSERT(E.running, "host %s on channel %d while the engine is stopped", r->op,
              r->channel);
    enqueue_locked(r);
    while (!r->finished) {
        starpu_pthread_cond_wait(&E.finished, &E.lock);
    }
    int status = r->status;
    starpu_pthread_mutex_unlock(&E.lock);
    return status;
}

/* Count a finished collective task of @p bytes on @p lane; called with the lock held. */
static void count_locked(int lane, double bytes)
{
    int k = lane == HX_LANE_COMM_INTER ? 1 : 0; /* the stats keep the real lane */
    E.collectives++;
    E.bytes += bytes;
    E.lane[k].collectives++;
    E.lane[k].bytes += bytes;
}

void hx_comm_local_done(const struct hx_coll_req *r)
{
    int lane = hx_comm_lane(r->channel);
    starpu_pthread_mutex_lock(&E.lock);
    count_locked(lane, r->bytes);
    starpu_pthread_mutex_unlock(&E.lock);
}

/* Move @p L's incoming requests into its tested set; called with the lock held. */
static void adopt_locked(struct lane *L)
{
    for (struct hx_coll_req *r = L->incoming; r != NULL; r = r->next) {
        if (L->n == L->cap) {
            int cap = L->cap ? 2 * L->cap : 64;
            L->r = realloc(L->r, sizeof *L->r * (size_t)cap);
            L->req = realloc(L->req, sizeof *L->req * (size_t)cap);
            L->idx = realloc(L->idx, sizeof *L->idx * (size_t)cap);
            L->st = realloc(L->st, sizeof *L->st * (size_t)cap);
            HX_ASSERT(L->r && L->req && L->idx && L->st, "out of memory for %d pending "
                      "requests", cap);
            L->cap = cap;
        }
        L->r[L->n] = r;
        L->req[L->n] = r->req;
        L->n++;
    }
    L->incoming = NULL;
}

/* One request of @p L is over: finish the op, count it, release its task or wake its host.
 * @p ok: 0 after a failure, already reported; @p st: NULL for a polled request. */
static void finish(struct lane *L, int i, const MPI_Status *st, int ok)
{
    struct hx_coll_req *r = L->r[i];
    struct starpu_task *task = r->task;
    double busy = now_s() - r->t_post, bytes = r->bytes;
    int lane = r->lane;
    if (getenv("HX_COMM_LOG") != NULL && task != NULL) {
        fprintf(stderr, "commlog rank %d %s %s seq %d post %.4f done %.4f bytes %.0f "
                "starpu %.4f lane %s\n", hx_mpi_world_rank(), r->op,
                hx_group_name((enum hx_group_kind)r->channel), r->seq, r->t_post, now_s(),
                bytes, starpu_timing_now() / 1e6, lane_words(lane));
    }
    L->r[i] = NULL;
    L->req[i] = MPI_REQUEST_NULL;
    starpu_pthread_mutex_lock(&E.lock); /* off the watchdog's list before done() frees r */
    if (r->wprev != NULL) {
        r->wprev->wnext = r->wnext;
    } else {
        E.waiting = r->wnext;
    }
    if (r->wnext != NULL) {
        r->wnext->wprev = r->wprev;
    }
    starpu_pthread_mutex_unlock(&E.lock);
    if (r->done != NULL) {
        r->done(r, st, ok); /* frees r */
    }
    starpu_pthread_mutex_lock(&E.lock);
    E.last_progress = now_s();
    if (task != NULL) { /* the stats count tasks; host calls are not part of a step */
        count_locked(lane, bytes);
        E.busy_s += busy;
    } else {
        r->status = ok ? HX_OK : HX_ERUNTIME;
        r->finished = 1; /* the host may return (and free r) once we unlock */
    }
    if (--E.pending == 0 || task == NULL) {
        starpu_pthread_cond_broadcast(&E.finished);
    }
    starpu_pthread_mutex_unlock(&E.lock);
    if (task != NULL) {
        starpu_task_end_dep_release(task);
    }
}

/* An MPI request of @p L is over with status @p rc. */
static void finish_mpi(struct lane *L, int i, const MPI_Status *st, int rc)
{
    if (rc != MPI_SUCCESS) {
        hx_comm_report(rc, L->r[i], "completion");
    }
    finish(L, i, st, rc == MPI_SUCCESS);
}

/* Test every pending request of @p L once; @return how many finished.  Polled requests sit
 * in the set as MPI_REQUEST_NULL, which MPI_Testsome skips (with no active request it
 * returns MPI_UNDEFINED). */
static int test_all(struct lane *L)
{
    int out = 0, done = 0;
    /* (a simulation holds no MPI request: SMPI runs no MPI call of ours) */
    int rc = hx_runtime_simulated() ? MPI_SUCCESS
                                    : MPI_Testsome(L->n, L->req, &out, L->idx, L->st);
    if (rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) {
        if (out == MPI_UNDEFINED) {
            out = 0;
        }
        for (int k = 0; k < out; k++) {
            int i = L->idx[k];
            finish_mpi(L, i, &L->st[k], rc == MPI_SUCCESS ? MPI_SUCCESS : L->st[k].MPI_ERROR);
            done++;
        }
    } else {
        /* the set as a whole failed: find out request by request */
        for (int i = 0; i < L->n; i++) {
            int flag = 0;
            MPI_Status st;
            if (L->r[i]->poll != NULL) {
                continue;
            }
            int rci = MPI_Test(&L->req[i], &flag, &st);
            if (rci != MPI_SUCCESS || flag) {
                finish_mpi(L, i, &st, rci);
                done++;
            }
        }
    }
    for (int i = 0; i < L->n; i++) { /* NCCL, StarPU-MPI: their own completion (poll) */
        int s = L->r[i] != NULL && L->r[i]->poll != NULL ? L->r[i]->poll(L->r[i]) : 0;
        if (s != 0) {
            finish(L, i, NULL, s > 0);
            done++;
        }
    }
    if (done > 0) {
        int j = 0;
        for (int i = 0; i < L->n; i++) {
            if (L->r[i] != NULL) {
                L->r[j] = L->r[i];
                L->req[j] = L->req[i];
                j++;
            }
        }
        L->n = j;
    }
    return done;
}

/* No progress on either lane for too long: say what this rank waits on, then end the
 * process.  Called with the lock held, which keeps every listed request alive. */
static void watchdog_fire_locked(double idle)
{
    int rank = hx_mpi_world_rank();
    char peers[256];
    fflush(stdout);
    for (const struct hx_coll_req *r = E.waiting; r != NULL; r = r->wnext) {
        hx_comm_format_members(r->channel, peers, sizeof peers);
        fprintf(stderr, "helix: error: [rank %d] no collective progress for %.0f s "
                "(--comm-timeout): waiting on channel %s seq %d (#%ld started here): %s%s of "
                "%.0f bytes with world ranks %s (%s lane)\n", rank, idle,
                hx_group_name((enum hx_group_kind)r->channel), r->seq, r->started,
                r->task == NULL ? "host " : "", r->op, r->bytes, peers, lane_words(r->lane));
        if (r->describe != NULL) {
            char prefix[64];
            snprintf(prefix, sizeof prefix, "helix: error: [rank %d]   ", rank);
            r->describe(r, stderr, prefix);
        }
    }
    fprintf(stderr, "helix: error: [rank %d] hint: a peer rank died or stopped; raise "
            "--comm-timeout if the network is just slow (exiting with status %d)\n", rank,
            HX_EXIT_COMM_TIMEOUT);
    fflush(stderr);
    _exit(HX_EXIT_COMM_TIMEOUT);
}

/* Whether every request @p L tests announces its end with a kick (hx_comm_post_kicked). */
static int all_kicked(const struct lane *L)
{
    for (int i = 0; i < L->n; i++) {
        if (!L->r[i]->kicked) {
            return 0;
        }
    }
    return 1;
}

static void *progress_main(void *arg)
{
    struct lane *L = arg;
    long poll_us = POLL_MIN_US;
    if (!hx_runtime_simulated()) { /* (a simulation's threads are SimGrid actors) */
        /* named for helix/threads.h, top and gdb: the lane the thread serves */
        pthread_setname_np(pthread_self(), L == &E.lane[1] ? "hx-lane-inter" : "hx-lane-intra");
    }
    starpu_pthread_mutex_lock(&E.lock);
    for (;;) {
        if (L->incoming != NULL) {
            adopt_locked(L);
            poll_us = POLL_MIN_US;
            L->last_event = now_s();
        }
        if (L->n == 0) {
            if (E.stop) {
                break;
            }
            starpu_pthread_cond_wait(&L->wake, &E.lock);
            continue;
        }
        long kicks = L->kicks;
        starpu_pthread_mutex_unlock(&E.lock);
        int done = test_all(L);
        starpu_pthread_mutex_lock(&E.lock);
        if (done > 0) {
            poll_us = POLL_MIN_US;
            L->last_event = now_s();
            continue;
        }
        double t = now_s(), idle = t - E.last_progress;
        if (E.timeout > 0 && idle > E.timeout) {
            watchdog_fire_locked(idle);
        }
        if (hx_runtime_simulated() || all_kicked(L)) {
            /* Sleep until a request of ours may have finished (its last StarPU-MPI transfer
             * or reduction task kicks this lane), or a new one comes.  In a simulation
             * because SimGrid runs an actor until it blocks, so polling would spin in zero
             * simulated time; in a real run because polling a count that a kick announces
             * anyway only takes the core from the threads that move the data (StarPU-MPI's
             * progress thread, the worker running the reductions): KICK_WAIT_US bounds the
             * sleep so that the watchdog still looks. */
            if (L->kicks == kicks && L->incoming == NULL) {
                if (hx_runtime_simulated()) {
                    starpu_pthread_cond_wait(&L->wake, &E.lock);
                } else {
                    hx_cond_wait_us(&L->wake, &E.lock, KICK_WAIT_US);
                }
            }
            continue;
        }
        starpu_pthread_mutex_unlock(&E.lock);
        if (t - L->last_event < SPIN_US * 1e-6) {
            sched_yield();
        } else {
            struct timespec ts = { 0, poll_us * 1000 };
            nanosleep(&ts, NULL);
            poll_us = poll_us * 2 > POLL_MAX_US ? POLL_MAX_US : poll_us * 2;
        }
        starpu_pthread_mutex_lock(&E.lock);
    }
    starpu_pthread_mutex_unlock(&E.lock);
    return NULL;
}

static void free_lane(struct lane *L)
{
    free(L->r);
    free(L->req);
    free(L->idx);
    free(L->st);
    L->r = NULL;
    L->req = NULL;
    L->idx = NULL;
    L->st = NULL;
    L->n = L->cap = 0;
}

/* Stop and join every started lane thread; called without the lock. */
static void join_lanes(void)
{
    starpu_pthread_mutex_lock(&E.lock);
    E.stop = 1;
    for (int k = 0; k < NLANES; k++) {
        starpu_pthread_cond_signal(&E.lane[k].wake);
    }
    starpu_pthread_mutex_unlock(&E.lock);
    for (int k = 0; k < NLANES; k++) {
        if (E.lane[k].started) {
            starpu_pthread_join(E.lane[k].thread, NULL);
            E.lane[k].started = 0;
        }
        free_lane(&E.lane[k]);
    }
}

int hx_comm_engine_start(double timeout)
{
    const char *one = getenv("HX_COMM_ONE_LANE");
    starpu_pthread_mutex_lock(&E.lock);
    HX_ASSERT(!E.running, "the collective engine is already running");
    E.timeout = timeout;
    E.stop = 0;
    E.pending = 0;
    E.waiting = NULL;
    E.one_lane = one != NULL && strcmp(one, "1") == 0;
    int rc = 0, k = 0;
    for (; k < (E.one_lane ? 1 : NLANES); k++) {
        struct lane *L = &E.lane[k];
        L->incoming = NULL;
        L->last_event = 0;
        rc = starpu_pthread_create(&L->thread, NULL, progress_main, L);
        L->started = rc == 0;
        if (rc != 0) {
            break;
        }
    }
    E.running = rc == 0;
    starpu_pthread_mutex_unlock(&E.lock);
    if (rc != 0) {
        join_lanes();
        return HX_ERR(HX_ERUNTIME, "cannot start the collective progress thread of the %s "
                      "lane: %s; the process may be out of threads (ulimit -u)",
                      lane_words(k == 1 ? HX_LANE_COMM_INTER : HX_LANE_COMM_INTRA),
                      strerror(rc));
    }
    return HX_OK;
}

void hx_comm_engine_drain(void)
{
    starpu_pthread_mutex_lock(&E.lock);
    while (E.pending > 0) {
        starpu_pthread_cond_wait(&E.finished, &E.lock);
    }
    starpu_pthread_mutex_unlock(&E.lock);
}

void hx_comm_engine_stop(void)
{
    starpu_pthread_mutex_lock(&E.lock);
    if (!E.running) {
        starpu_pthread_mutex_unlock(&E.lock);
        return;
    }
    starpu_pthread_mutex_unlock(&E.lock);
    join_lanes();
    starpu_pthread_mutex_lock(&E.lock);
    E.running = 0;
    starpu_pthread_mutex_unlock(&E.lock);
}

double hx_comm_timeout(void)
{
    starpu_pthread_mutex_lock(&E.lock);
    double t = E.running ? E.timeout : 0;
    starpu_pthread_mutex_unlock(&E.lock);
    return t > 0 ? t : 0;
}

void hx_comm_engine_stats(struct hx_comm_stats *s)
{
    starpu_pthread_mutex_lock(&E.lock);
    s->collectives = E.collectives;
    s->bytes = E.bytes;
    s->busy_s = E.busy_s;
    for (int k = 0; k < NLANES; k++) {
        s->lane_collectives[k] = E.lane[k].collectives;
        s->lane_bytes[k] = E.lane[k].bytes;
    }
    starpu_pthread_mutex_unlock(&E.lock);
}

void hx_comm_engine_reset_stats(void)
{
    starpu_pthread_mutex_lock(&E.lock);
    E.collectives = 0;
    E.bytes = 0;
    E.busy_s = 0;
    for (int k = 0; k < NLANES; k++) {
        E.lane[k].collectives = 0;
        E.lane[k].bytes = 0;
    }
    starpu_pthread_mutex_unlock(&E.lock);
}
