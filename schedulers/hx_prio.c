/* SPDX-License-Identifier: MIT */
/* schedulers/hx_prio.c: the heap policies, the flat rtprio shape of design/starpu.md §2.
 * Ready tasks wait in two binary heaps, compute and comm (hx_sched_task_is_comm).
 *   "hx-prio": priority order (higher first), then push order, so equal priorities run FIFO.
 *   "hx-strand": DHelix's executor.  Tasks of SI blocks under a strand plan (node block >= 0)
 *     go first, block by block and segment by segment (the plan's steps; the barrier
 *     between steps is in the graph, a tag dependency at submission), the rest by priority;
 *     a worker then takes the other strand than the last one taken when the heap offers one
 *     as good, so paired forward and backward ops co-run on the two workers.
 *   "hx-wavelet": the baseline of papers.md §2.7 (Wavelet+): priority order, alternating the
 *     two strands round-robin, no plan.
 *   "hx-prefetch": AxoNN's overlap of parameter all-gathers (papers.md §1, O3, IV-B/D):
 *     collectives first, as soon as ready, and compute in submission order (a topological
 *     order: the layer in hand finishes first, which frees the slot the next gather
 *     writes).  Its graph order (gathers depth layers ahead, resident layers not gathered
 *     again, reduce-scatters behind the next gather) is its need HX_SCHED_NEEDS_PREFETCH
 *     (schedulers/registry.c), which the graph builder reads.
 *   "serial-comm": the no-overlap baseline (the reference of Flux's overlap efficiency,
 *     `helix trace summarize --baseline`): hx-prio's order; what serializes is the graph
 *     (its need HX_SCHED_NEEDS_SERIAL_COMM, hx_graph_serialize_comm): runs of compute and
 *     runs of collectives, in submission order, each waiting for the whole run before it
 *     (control edges, tag dependencies at submission).  Ordering at pop time alone cannot
 *     do it: a rank that keeps compute back while its collective is in flight deadlocked
 *     with a peer doing the same on another channel (measured: dp buckets and the loss).
 * None of them changes a number: they only pick among ready tasks.
 * HX_SCHED_PRIO_COMM_WORKERS=K (read once, in init; default 0) reserves the K highest-numbered
 * workers: they pop only comm tasks and the others only compute tasks.  With K = 0 every worker
 * pops both, comm first.  `lock` guards both heaps, `seq` and `sleepers`; pop runs inside the
 * worker's scheduling operation, its sched mutex released (StarPU 1.3, driver_common.c).
 * Invariant: each pushed task is popped exactly once, so both heaps are empty at deinit.  An
 * idle worker sleeps until a push (idle_wait) instead of spinning.
 * Tests: tests/schedulers/every_task_once.c, priority_order.c, comm_reservation.c,
 * idle_sleep.c; hx-strand's order: tests/cli/strands.sh, tests/mpi/parity_hxstrand.sh. */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <starpu.h>

#include "helix/error.h"
#include "helix/graph.h"
#include "helix/sched.h"

/* Advertised range (STARPU_MIN_PRIO/STARPU_MAX_PRIO).  The heaps order any int, so tasks
 * outside it still run in order.  graphs/ stamps node->priority from the builder's cursor:
 * 0 unless a builder raises it, and builders stay inside this range. */
#define PRIO_MIN (-1000)
#define PRIO_MAX 1000

struct entry {
    struct starpu_task *task;
    uint64_t seq; /* push order, breaks priority ties */
};

enum order { ORDER_PRIO, ORDER_STRAND, ORDER_WAVELET, ORDER_TOPO };

struct heap {
    struct entry *v;
    size_t n, cap;
    enum order order;
};

struct prio_state {
    starpu_pthread_mutex_t lock;
    struct heap compute, comm;
    uint64_t seq;
    unsigned ncomm;      /* workers reserved for comm tasks */
    unsigned first_comm; /* the reserved ones are first_comm .. nworkers-1 */
    int last_strand;     /* strand of the last task taken (hx-strand, hx-wavelet) */
    starpu_pthread_cond_t idle; /* idle workers wait here for a push (idle_wait) */
    unsigned sleepers;          /* how many wait on it */
    int one_kind;               /* every worker is a CPU worker */
};

/* ---- the heap: entry a pops before entry b ---- */

static const struct hx_node *node_of(const struct entry *e)
{
    return e->task->sched_data;
}

/* hx-strand: a planned task before any other, then by (block, segment); 0 if equal */
static int plan_cmp(const struct entry *a, const struct entry *b)
{
    const struct hx_node *na = node_of(a), *nb = node_of(b);
    int pa = na != NULL && na->block >= 0, pb = nb != NULL && nb->block >= 0;
    if (pa != pb) {
        return pa ? -1 : 1;
    }
    if (!pa) {
        return 0;
    }
    if (na->block != nb->block) {
        return na->block < nb->block ? -1 : 1;
    }
    return na->segment == nb->segment ? 0 : na->segment < nb->segment ? -1 : 1;
}

static int before(enum order order, const struct entry *a, const struct entry *b)
{
    int c = order == ORDER_STRAND ? plan_cmp(a, b) : 0;
    if (c != 0) {
        return c < 0;
    }
    if (order == ORDER_TOPO && node_of(a) != NULL && node_of(b) != NULL) {
        return node_of(a)->id < node_of(b)->id; /* submission order: a topological order */
    }
    if (a->task->priority != b->task->priority) {
        return a->task->priority > b->task->priority;
    }
    return a->seq < b->seq;
}

static void swap(struct entry *a, struct entry *b)
{
    struct entry t = *a;
    *a = *b;
    *b = t;
}

static void sift_up(struct heap *h, size_t i)
{
    while (i > 0 && before(h->order, &h->v[i], &h->v[(i - 1) / 2])) {
        swap(&h->v[i], &h->v[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
}

static void sift_down(struct heap *h, size_t i)
{
    for (;;) {
        size_t best = i, l = 2 * i + 1, r = 2 * i + 2;
        if (l < h->n && before(h->order, &h->v[l], &h->v[best])) {
            best = l;
        }
        if (r < h->n && before(h->order, &h->v[r], &h->v[best])) {
            best = r;
        }
        if (best == i) {
            return;
        }
        swap(&h->v[i], &h->v[best]);
        i = best;
    }
}

static void heap_push(struct heap *h, struct starpu_task *task, uint64_t seq)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 256;
        struct entry *v = realloc(h->v, cap * sizeof *v);
        /* push cannot fail in StarPU's contract, and losing a task would hang the run */
        HX_ASSERT(v != NULL, "hx-prio: out of memory growing a ready heap to %zu tasks", cap);
        h->v = v;
        h->cap = cap;
    }
    h->v[h->n] = (struct entry){ task, seq };
    sift_up(h, h->n++);
}

static struct starpu_task *heap_remove(struct heap *h, size_t i)
{
    struct starpu_task *task = h->v[i].task;
    h->v[i] = h->v[--h->n];
    if (i < h->n) {
        sift_down(h, i);
        sift_up(h, i);
    }
    return task;
}

static int strand_of(const struct entry *e)
{
    return node_of(e) != NULL ? node_of(e)->strand : HX_STRAND_NONE;
}

/* hx-strand, hx-wavelet: when the top is of the strand taken last, the best task of the
 * other strand that is as good as the top for the order (same plan step for hx-strand; any
 * for hx-wavelet, which alternates round-robin), so the two strands share the workers. */
static size_t other_strand(const struct heap *h, int last, unsigned worker)
{
    if (h->order == ORDER_PRIO || h->n < 2 || last == HX_STRAND_NONE ||
        strand_of(&h->v[0]) != last) {
        return 0;
    }
    size_t best = 0;
    for (size_t i = 1; i < h->n; i++) {
        int s = strand_of(&h->v[i]);
        if (s == HX_STRAND_NONE || s == last ||
            (h->order == ORDER_STRAND && plan_cmp(&h->v[i], &h->v[0]) != 0) ||
            !starpu_worker_can_execute_task_first_impl(worker, h->v[i].task, NULL)) {
            continue;
        }
        if (best == 0 || before(h->order, &h->v[i], &h->v[best])) {
            best = i;
        }
    }
    return best;
}

/* The first task in heap order that @p worker can run.  On CPU-only runs that is the top; a
 * task restricted to other workers (task->where) makes us scan for the best one we can run. */
static struct starpu_task *heap_pop_for(struct heap *h, unsigned worker, int *last_strand)
{
    if (h->n == 0) {
        return NULL;
    }
    size_t alt = other_strand(h, *last_strand, worker);
    if (alt > 0) {
        *last_strand = strand_of(&h->v[alt]);
        return heap_remove(h, alt);
    }
    if (h->order != ORDER_PRIO && strand_of(&h->v[0]) != HX_STRAND_NONE) {
        *last_strand = strand_of(&h->v[0]);
    }
    if (starpu_worker_can_execute_task_first_impl(worker, h->v[0].task, NULL)) {
        return heap_remove(h, 0);
    }
    size_t best = h->n;
    for (size_t i = 1; i < h->n; i++) {
        if ((best == h->n || before(h->order, &h->v[i], &h->v[best])) &&
            starpu_worker_can_execute_task_first_impl(worker, h->v[i].task, NULL)) {
            best = i;
        }
    }
    return best < h->n ? heap_remove(h, best) : NULL;
}

/* ---- the policy ---- */

static unsigned comm_workers_from_env(unsigned nworkers)
{
    const char *v = getenv("HX_SCHED_PRIO_COMM_WORKERS");
    if (v == NULL || v[0] == '\0') {
        return 0;
    }
    char *end;
    errno = 0;
    long k = strtol(v, &end, 10);
    if (errno != 0 || *end != '\0' || k < 0 || k >= (long)nworkers) {
        hx_warn("hx-prio: HX_SCHED_PRIO_COMM_WORKERS=\"%s\" is not accepted: give an integer from "
                "0 to %u (workers reserved for comm tasks, of %u; one must stay for compute); "
                "using 0", v, nworkers - 1, nworkers);
        return 0;
    }
    return (unsigned)k;
}

static void heaps_init(unsigned ctx, enum order order)
{
    struct prio_state *s = calloc(1, sizeof *s);
    HX_ASSERT(s != NULL, "hx-prio: out of memory allocating the policy state");
    STARPU_PTHREAD_MUTEX_INIT(&s->lock, NULL);
    STARPU_PTHREAD_COND_INIT(&s->idle, NULL);
    unsigned nworkers = starpu_worker_get_count();
    s->ncomm = comm_workers_from_env(nworkers);
    s->first_comm = nworkers - s->ncomm;
    s->one_kind = starpu_cpu_worker_get_count() == nworkers;
    if (s->ncomm > 0) {
        hx_debug("hx-prio: workers %u..%u run only comm tasks", s->first_comm, nworkers - 1);
    }
    s->compute.order = s->comm.order = order;
    s->last_strand = HX_STRAND_NONE;
    starpu_sched_ctx_set_policy_data(ctx, s);
    /* only legal inside init; keep a range the application set through StarPU */
    if (!starpu_sched_ctx_min_priority_is_set(ctx)) {
        starpu_sched_ctx_set_min_priority(ctx, PRIO_MIN);
    }
    if (!starpu_sched_ctx_max_priority_is_set(ctx)) {
        starpu_sched_ctx_set_max_priority(ctx, PRIO_MAX);
    }
}

static void prio_init(unsigned ctx)
{
    heaps_init(ctx, ORDER_PRIO);
}

static void topo_init(unsigned ctx)
{
    heaps_init(ctx, ORDER_TOPO);
}

static void strand_init(unsigned ctx)
{
    heaps_init(ctx, ORDER_STRAND);
}

static void wavelet_init(unsigned ctx)
{
    heaps_init(ctx, ORDER_WAVELET);
}

static void prio_deinit(unsigned ctx)
{
    struct prio_state *s = starpu_sched_ctx_get_policy_data(ctx);
    HX_ASSERT(s->compute.n == 0 && s->comm.n == 0,
              "hx-prio: %zu compute and %zu comm tasks left in the queues at shutdown",
              s->compute.n, s->comm.n);
    free(s->compute.v);
    free(s->comm.v);
    STARPU_PTHREAD_COND_DESTROY(&s->idle);
    STARPU_PTHREAD_MUTEX_DESTROY(&s->lock);
    free(s);
}

/* Which heaps @p worker pops from. */
static int pops_comm(const struct prio_state *s, unsigned worker)
{
    return s->ncomm == 0 || worker >= s->first_comm;
}

static int pops_compute(const struct prio_state *s, unsigned worker)
{
    return worker < s->first_comm;
}

static int prio_push(struct starpu_task *task)
{
    struct prio_state *s = starpu_sched_ctx_get_policy_data(task->sched_ctx);
    int comm = hx_sched_task_is_comm(task);

    starpu_worker_relax_on(); /* a worker pushing its successors may block here */
    STARPU_PTHREAD_MUTEX_LOCK(&s->lock);
    starpu_worker_relax_off();
    heap_push(comm ? &s->comm : &s->compute, task, s->seq++);
    starpu_push_task_end(task); /* before unlocking: no worker may have taken the task yet */
    if (s->sleepers > 0) {
        /* one sleeper is enough when any worker may take any task; with comm-reserved
         * workers, or workers of several kinds, the one woken might not: wake all */
        if (s->ncomm == 0 && s->one_kind) {
            STARPU_PTHREAD_COND_SIGNAL(&s->idle);
        } else {
            STARPU_PTHREAD_COND_BROADCAST(&s->idle);
        }
    }
    STARPU_PTHREAD_MUTEX_UNLOCK(&s->lock);

#ifndef STARPU_NON_BLOCKING_DRIVERS
    /* Blocking drivers sleep when pop returns NULL: wake one worker that may take the task.
     * (Debian's build defines STARPU_NON_BLOCKING_DRIVERS: its workers poll pop.) */
    struct starpu_worker_collection *workers =
        starpu_sched_ctx_get_worker_collection(task->sched_ctx);
    struct starpu_sched_ctx_iterator it;
    workers->init_iterator(workers, &it);
    while (workers->has_next(workers, &it)) {
        unsigned w = workers->get_next(workers, &it);
        if ((comm ? pops_comm(s, w) : pops_compute(s, w)) &&
            starpu_worker_can_execute_task_first_impl(w, task, NULL) &&
            starpu_wake_worker_relax_light(w)) {
            break;
        }
    }
#endif
    return 0;
}

/* Debian's StarPU polls pop_task without pause, so an idle worker burns its core.  When
 * ranks share cores (mpirun, several ranks per node) that core is what the progress thread,
 * MPI's copies and the other ranks' workers need.  An idle worker yields for its first polls
 * (another thread is often about to push: the comm engine ending a collective, the other
 * worker releasing successors), then sleeps on the policy's condition variable until a push
 * signals it, at most IDLE_WAIT_US (the driver loop's other duties, and shutdown, get a
 * turn).  It waits with starpu_worker_relax_on: StarPU may act on a worker that is inside
 * pop only while it is relaxed.  Against the old yield-then-nanosleep(20 us) polling, the
 * bench/strands.sh bed ran 1F1B at 0.93x and Wavelet+ at 0.95x its step time, the
 * machine's CPU 92-93% busy instead of 94-95% (bench/README.md). */
#define IDLE_YIELDS 16
#define IDLE_WAIT_US 2000
static __thread unsigned idle_polls;

static int nothing_for(const struct prio_state *s, int want_comm, int want_compute)
{
    return (!want_comm || __atomic_load_n(&s->comm.n, __ATOMIC_RELAXED) == 0) &&
           (!want_compute || __atomic_load_n(&s->compute.n, __ATOMIC_RELAXED) == 0);
}

static void idle_wait(struct prio_state *s, int want_comm, int want_compute)
{
#ifndef STARPU_NON_BLOCKING_DRIVERS
    /* a blocking driver puts the worker to sleep itself when pop returns NULL, and push
     * wakes it (prio_push): waiting here too would only add a second sleep */
    (void)s, (void)want_comm, (void)want_compute;
    return;
#endif
    if (++idle_polls <= IDLE_YIELDS) {
        sched_yield();
        return;
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += IDLE_WAIT_US * 1000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    starpu_worker_relax_on();
    STARPU_PTHREAD_MUTEX_LOCK(&s->lock);
    if (nothing_for(s, want_comm, want_compute)) {
        s->sleepers++;
        starpu_pthread_cond_timedwait(&s->idle, &s->lock, &until); /* a timeout is fine */
        s->sleepers--;
    }
    STARPU_PTHREAD_MUTEX_UNLOCK(&s->lock);
    starpu_worker_relax_off();
}

static struct starpu_task *prio_pop(unsigned ctx)
{
    struct prio_state *s = starpu_sched_ctx_get_policy_data(ctx);
    unsigned worker = starpu_worker_get_id_check();
    int want_comm = pops_comm(s, worker), want_compute = pops_compute(s, worker);

    /* Unlocked fast path for polling workers: idle_wait checks again under the lock, and a
     * push signals under it, so no wake is missed. */
    if (nothing_for(s, want_comm, want_compute)) {
        idle_wait(s, want_comm, want_compute);
        return NULL;
    }
    idle_polls = 0;
    starpu_worker_relax_on();
    STARPU_PTHREAD_MUTEX_LOCK(&s->lock);
    starpu_worker_relax_off();
    struct starpu_task *task = want_comm ? heap_pop_for(&s->comm, worker, &s->last_strand)
                                         : NULL;
    if (task == NULL && want_compute) {
        task = heap_pop_for(&s->compute, worker, &s->last_strand);
    }
    STARPU_PTHREAD_MUTEX_UNLOCK(&s->lock);
    return task;
}

struct starpu_sched_policy hx_sched_prio = {
    .init_sched = prio_init,
    .deinit_sched = prio_deinit,
    .push_task = prio_push,
    .pop_task = prio_pop,
    .policy_name = "hx-prio",
    .policy_description = "priority heaps (FIFO among equals), optional comm-reserved workers",
    .worker_type = STARPU_WORKER_LIST,
};

struct starpu_sched_policy hx_sched_strand = {
    .init_sched = strand_init,
    .deinit_sched = prio_deinit,
    .push_task = prio_push,
    .pop_task = prio_pop,
    .policy_name = "hx-strand",
    .policy_description = "DHelix: a strand plan's steps in order, the two strands co-run",
    .worker_type = STARPU_WORKER_LIST,
};

struct starpu_sched_policy hx_sched_wavelet = {
    .init_sched = wavelet_init,
    .deinit_sched = prio_deinit,
    .push_task = prio_push,
    .pop_task = prio_pop,
    .policy_name = "hx-wavelet",
    .policy_description = "Wavelet+ baseline: priority order, the two strands round-robin",
    .worker_type = STARPU_WORKER_LIST,
};

struct starpu_sched_policy hx_sched_serial_comm = {
    .init_sched = prio_init,
    .deinit_sched = prio_deinit,
    .push_task = prio_push,
    .pop_task = prio_pop,
    .policy_name = "serial-comm",
    .policy_description = "no-overlap baseline: collectives and compute never run at once",
    .worker_type = STARPU_WORKER_LIST,
};

struct starpu_sched_policy hx_sched_prefetch = {
    .init_sched = topo_init,
    .deinit_sched = prio_deinit,
    .push_task = prio_push,
    .pop_task = prio_pop,
    .policy_name = "hx-prefetch",
    .policy_description = "AxoNN: collectives first, compute in topological order; with "
                          "parameter sharding, gathers run depth layers ahead",
    .worker_type = STARPU_WORKER_LIST,
};
