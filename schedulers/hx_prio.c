/* SPDX-License-Identifier: MIT */
/* schedulers/hx_prio.c: the heap policies, the flat rtprio shape of design/starpu.md §2.
 * Ready tasks wait in two binary heaps (schedulers/prio_heap.c), compute and comm
 * (hx_sched_task_is_comm).
 *   "hx-prio": priority order (higher first), then push order, so equal priorities run FIFO.
 *   "hx-strand": DHelix's executor.  Tasks of SI blocks under a strand plan (node block >= 0)
 *     go first, block by block and segment by segment (the plan's steps; the barrier
 *     between steps is in the graph, a tag dependency at submission), the rest by priority;
 *     a worker then takes the other strand than the last one taken when the heap offers one
 *     as good, so paired forward and backward ops co-run on the two workers.  Among ready
 *     collectives of equal priority (graphs/gpt.c gives them all one), the intra-node lane's
 *     is posted first (node->lane): it is short and its peers sit on the fast link, while an
 *     inter-node one waits on the slow link whenever it is posted; posting order changes
 *     nothing else (each channel's order is its token's, each lane has its own progress
 *     thread, runtime/comm_engine.c).
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
 * Placement (all of them): with workers of several kinds (a CPU and an OpenCL or CUDA worker),
 * a worker about to take a compute task leaves it when a worker of another kind would finish
 * it strictly earlier: predicted wait, plus data transfer, plus compute length from StarPU's
 * perf models (dmda's rule, applied at pop time so the heap order stays; "placement across
 * device kinds" below).  Why: with the heap alone, whichever worker popped first took the
 * best task, so an idle OpenCL worker ~20x slower than the CPU (PoCL) took work the CPU
 * would have finished long before.  Fallbacks: an uncalibrated model, an unknown wait or a
 * tie leaves the task to whoever pops it, as before (StarPU calibrates its history models
 * from those runs); a task is never left to a kind that has left it, so none starves.
 * Collectives stay on the CPU communication lane (CPU-only codelets in the comm heap, never
 * weighed); CPU-only runs make no perf-model call and keep the order and cost they had.
 * None of them changes a number: they only pick among ready tasks and workers.
 * HX_SCHED_PRIO_COMM_WORKERS=K (read once, in init; default 0) reserves the K highest-numbered
 * workers: they pop only comm tasks and the others only compute tasks.  With K = 0 every worker
 * pops both, comm first.  `lock` guards both heaps, `seq` and `sleepers`; pop runs inside the
 * worker's scheduling operation, its sched mutex released (StarPU 1.3, driver_common.c).
 * Invariant: each pushed task is popped exactly once, so both heaps are empty at deinit.  An
 * idle worker sleeps until a push (idle_wait) instead of spinning.
 * Tests: tests/schedulers/every_task_once.c, priority_order.c, comm_reservation.c,
 * idle_sleep.c; hx-strand's order: tests/cli/strands.sh, tests/mpi/parity_hxstrand.sh;
 * placement: tests/device/placement.sh. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <starpu.h>

#include "helix/error.h"
#include "helix/graph.h"
#include "helix/runtime.h"
#include "helix/sched.h"
#include "runtime/timed_wait.h"
#include "schedulers/prio_heap.h"

/* Advertised range (STARPU_MIN_PRIO/STARPU_MAX_PRIO).  The heaps order any int, so tasks
 * outside it still run in order.  graphs/ stamps node->priority from the builder's cursor:
 * 0 unless a builder raises it, and builders stay inside this range. */
#define PRIO_MIN (-1000)
#define PRIO_MAX 1000

struct prio_state {
    starpu_pthread_mutex_t lock;
    struct hx_heap compute, comm;
    uint64_t seq;
    unsigned ncomm;      /* workers reserved for comm tasks */
    unsigned first_comm; /* the reserved ones are first_comm .. nworkers-1 */
    int last_strand;     /* strand of the last task taken (hx-strand, hx-wavelet) */
    starpu_pthread_cond_t idle; /* idle workers wait here for a push (idle_wait) */
    unsigned sleepers;          /* how many wait on it */
    int one_kind;               /* every worker is a CPU worker: no placement (place_pop) */
    /* Placement, used only when workers are of several kinds (!one_kind): */
    unsigned nworkers;
    unsigned kind[STARPU_NMAXWORKERS]; /* workers of one type and memory node share a kind:
                                        * 0, 1, ... in the order of their first worker */
    double end[STARPU_NMAXWORKERS]; /* predicted end (starpu_timing_now, us) of the compute
                                     * tasks a worker took; 0 at start, NaN when unknown */
    uint64_t taken;                 /* compute tasks taken (place_pop) */
    uint64_t left_at[STARPU_NMAXWORKERS]; /* 1 + seq + taken when the worker last left every
                                           * task it weighed; 0 after it took one */
};

/* Which heaps @p worker pops from. */
static int pops_comm(const struct prio_state *s, unsigned worker)
{
    return s->ncomm == 0 || worker >= s->first_comm;
}

static int pops_compute(const struct prio_state *s, unsigned worker)
{
    return worker < s->first_comm;
}

/* ---- placement across device kinds: dmda's rule at pop time ----
 * A worker w about to take compute task t that a worker of another kind could also run
 * (a CPU worker and an OpenCL or CUDA one) weighs, for itself and for each such rival v,
 *     finish(v) = avail(v) + transfer(t, v) + length(t, v)                      (us)
 * avail(v): when v is free, max(now, end[v]), end[v] the predicted finish of the compute
 * task v took last (recorded here, at pop time; w itself counts as free now when its end
 * is unknown: it asks for work); transfer: starpu_task_expected_data_transfer_time_for (the
 * bus model; 0 for data already on v's memory node); length: starpu_task_expected_length on
 * v's perf arch (the codelets' history models, codelets/codelets.h).  That is dmda's
 * completion time (deque_modeling_policy_data_aware.c), with the transfer after the wait
 * rather than overlapping it: here v fetches t's data only once it has popped t.
 * If a rival finishes t strictly earlier, w leaves t to it and weighs the next task in heap
 * order, t now counted in that rival's avail: the k-th task left to a rival waits behind the
 * k-1 before it, so a slow worker takes the first task a fast one would reach too late.
 * Heap order (priorities, strands, plans) is kept: w takes the first task, in that order,
 * that it is best for, weighing at most PLACE_SCAN per pop.  Why: with a central heap,
 * whichever worker popped first took the top, so an idle OpenCL worker on PoCL, ~20x slower
 * than the CPU per matmul (shared/design/devices.md), took work the CPU would have finished
 * long before.  A worker of w's own kind is not weighed: it shares w's perf model and memory
 * node and is free no sooner than w, so it never finishes t strictly earlier.
 * Fallbacks, all "w takes t", as before placement existed:
 *   - unknown: a length that is NaN or 0 (the history model has fewer than
 *     STARPU_CALIBRATE_MINIMUM samples of t's size on that arch), a NaN transfer, or a
 *     rival whose avail is unknown (it runs a task of unknown length).  Asking StarPU for an
 *     uncalibrated length makes it record samples for the rest of the run (its warning
 *     "not calibrated enough ... forcing calibration"), and whoever pops first running the
 *     task is what spreads those samples over the kinds, as dmda's greedy fallback does;
 *   - ties: no rival strictly earlier;
 *   - the bound against starvation: a task is never left to a kind that has left it
 *     (left_by).  w takes t when the rival it would leave t to has left t itself, so two
 *     workers that each judge the other faster (avail, transfers and models change between
 *     their pops) cannot pass a task back and forth: with a CPU and a device kind, once the
 *     one t was left to leaves it too, the other takes it on its next look.  A task is
 *     left only to a worker that pops compute tasks and can run it, which pops again as soon
 *     as it is free, so a left task waits only for heap order to bring it up there, as any
 *     task waits in a central heap.  The bound counts decisions, not time: a time limit
 *     would fire whenever a loaded machine deschedules the fast worker for a few
 *     milliseconds, and hand its work to the slow device for no reason of placement
 *     (measured on this 2-core machine under CI load: a limit of twice the predicted wait
 *     put a fifth of the matmuls on PoCL).
 * A worker that left every task it weighed does not weigh them again until something moved
 * (nothing_moved: a push, or a compute task taken).
 * On CPU-only runs (one_kind) none of this runs: no perf-model call, the same order and
 * cost as without it.  A policy never changes numbers: it only picks the worker. */
#define PLACE_SCAN 8      /* tasks weighed per pop (each costs 2 model calls per kind): a
                           * device more than ~8x slower per task than an idle rival gets
                           * none of them */
#define PLACE_VISIT 64    /* heap entries walked to find them (tasks w cannot run passed) */

struct placing {
    double now;
    double avail[STARPU_NMAXWORKERS]; /* when each worker is free, with the tasks left to it */
    unsigned left;                    /* tasks this pop left to rivals */
    unsigned char left_to[STARPU_NMAXWORKERS]; /* and to which workers */
};

/* left_by's bit of kind @p k (kinds past 63 share the last bit: a task such a kind left is
 * then taken sooner, never held longer) */
static uint64_t kind_bit(unsigned k)
{
    return UINT64_C(1) << (k < 63 ? k : 63);
}

/* When worker @p v, free at @p avail, would finish @p task run with implementation
 * @p impl; NaN when unknown. */
static double finish_on(struct starpu_task *task, unsigned v, unsigned impl, double avail)
{
    double len = starpu_task_expected_length(
        task, starpu_worker_get_perf_archtype((int)v, task->sched_ctx), impl);
    if (isnan(avail) || isnan(len) || !(len > 0.0)) {
        return NAN;
    }
    double xfer = starpu_task_expected_data_transfer_time_for(task, v);
    return isnan(xfer) ? NAN : avail + xfer + len;
}

/* Whether worker @p w takes @p e (1), or leaves it to a rival that finishes it strictly
 * earlier (0; that rival's avail grows by it); *fin_w gets w's predicted finish (NaN when
 * unknown), w's end if it takes the task. */
static int takes_here(const struct prio_state *s, struct placing *p, struct hx_heap_entry *e,
                      unsigned w, unsigned impl_w, double *fin_w)
{
    struct starpu_task *t = e->task;
    unsigned impl[STARPU_NMAXWORKERS];
    int rivals = 0;
    for (unsigned v = 0; v < s->nworkers; v++) {
        if (s->kind[v] != s->kind[w] && pops_compute(s, v) &&
            starpu_worker_can_execute_task_first_impl(v, t, &impl[v])) {
            rivals = 1;
        } else {
            impl[v] = UINT_MAX; /* not a rival */
        }
    }
    /* No rival (--compute-on, or an op with one implementation): no model call; w's end is
     * then unknown, and a rival weighing a task they share takes it (the fallback). */
    *fin_w = rivals ? finish_on(t, w, impl_w, p->avail[w]) : NAN;
    if (isnan(*fin_w)) {
        return 1;
    }
    unsigned best = w;
    double best_fin = *fin_w;
    for (unsigned v = 0; v < s->nworkers; v++) {
        if (impl[v] == UINT_MAX) {
            continue;
        }
        double fin = finish_on(t, v, impl[v], p->avail[v]);
        if (isnan(fin)) {
            return 1;
        }
        if (fin < best_fin) {
            best = v;
            best_fin = fin;
        }
    }
    if (best == w || (e->left_by & kind_bit(s->kind[best])) != 0) {
        return 1;
    }
    e->left_by |= kind_bit(s->kind[w]);
    p->avail[best] = best_fin;
    p->left++;
    p->left_to[best] = 1;
    return 0;
}

/* The entries of a heap in its order, best first, without sorting it: a walk from the root
 * in which each entry visited offers its two children.  At most PLACE_VISIT visits, so the
 * frontier holds at most PLACE_VISIT + 1. */
struct walk {
    size_t front[PLACE_VISIT + 1];
    size_t nf, visited;
};

/* The next index of @p h in heap order, or h->n when the walk is over. */
static size_t walk_next(const struct hx_heap *h, struct walk *it)
{
    if (it->nf == 0 || it->visited == PLACE_VISIT) {
        return h->n;
    }
    size_t b = 0;
    for (size_t i = 1; i < it->nf; i++) {
        if (hx_heap_before(h->order, &h->v[it->front[i]], &h->v[it->front[b]])) {
            b = i;
        }
    }
    size_t k = it->front[b];
    it->front[b] = it->front[--it->nf];
    it->visited++;
    for (size_t c = 2 * k + 1; c <= 2 * k + 2 && c < h->n; c++) {
        it->front[it->nf++] = c;
    }
    return k;
}

/* The compute pop when workers are of several kinds: the task hx_heap_pick_for gives, unless a
 * rival would finish it earlier; then the next ones in heap order (the rule above).  NULL
 * when @p w can run none, or left every task it weighed (then p->left > 0). */
static struct starpu_task *place_pop(struct prio_state *s, unsigned w, struct placing *p)
{
    struct hx_heap *h = &s->compute;
    int last = s->last_strand;
    size_t first = hx_heap_pick_for(h, w, &last);
    if (first == h->n) {
        s->last_strand = last; /* as hx_heap_pop_for */
        return NULL;
    }
    memset(p->left_to, 0, sizeof p->left_to);
    p->now = starpu_timing_now();
    for (unsigned v = 0; v < s->nworkers; v++) {
        p->avail[v] = isnan(s->end[v]) ? NAN : fmax(p->now, s->end[v]);
    }
    if (isnan(p->avail[w])) {
        p->avail[w] = p->now;
    }
    unsigned impl = 0;
    double fin = NAN;
    size_t take = h->n;
    starpu_worker_can_execute_task_first_impl(w, h->v[first].task, &impl);
    if (takes_here(s, p, &h->v[first], w, impl, &fin)) {
        take = first;
        s->last_strand = last;
    } else {
        struct walk it; /* from the root */
        it.front[0] = 0;
        it.nf = 1;
        it.visited = 0;
        unsigned weighed = 1;
        for (size_t k = walk_next(h, &it); k < h->n && weighed < PLACE_SCAN;
             k = walk_next(h, &it)) {
            if (k == first ||
                !starpu_worker_can_execute_task_first_impl(w, h->v[k].task, &impl)) {
                continue;
            }
            weighed++;
            if (takes_here(s, p, &h->v[k], w, impl, &fin)) {
                take = k;
                if (h->order != HX_ORDER_PRIO && hx_heap_strand(&h->v[k]) != HX_STRAND_NONE) {
                    s->last_strand = hx_heap_strand(&h->v[k]);
                }
                break;
            }
        }
    }
    if (take == h->n) {
        return NULL;
    }
    s->end[w] = fin;
    s->taken++;
    return hx_heap_remove(h, take);
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

static void heaps_init(unsigned ctx, enum hx_heap_order order)
{
    struct prio_state *s = calloc(1, sizeof *s);
    HX_ASSERT(s != NULL, "hx-prio: out of memory allocating the policy state");
    STARPU_PTHREAD_MUTEX_INIT(&s->lock, NULL);
    STARPU_PTHREAD_COND_INIT(&s->idle, NULL);
    unsigned nworkers = starpu_worker_get_count();
    s->ncomm = comm_workers_from_env(nworkers);
    s->first_comm = nworkers - s->ncomm;
    s->one_kind = starpu_cpu_worker_get_count() == nworkers;
    s->nworkers = nworkers;
    unsigned nkinds = 0;
    for (unsigned w = 0; w < nworkers; w++) {
        s->kind[w] = nkinds;
        for (unsigned u = 0; u < w; u++) {
            if (starpu_worker_get_type((int)u) == starpu_worker_get_type((int)w) &&
                starpu_worker_get_memory_node(u) == starpu_worker_get_memory_node(w)) {
                s->kind[w] = s->kind[u];
                break;
            }
        }
        nkinds += s->kind[w] == nkinds;
    }
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
    heaps_init(ctx, HX_ORDER_PRIO);
}

static void topo_init(unsigned ctx)
{
    heaps_init(ctx, HX_ORDER_TOPO);
}

static void strand_init(unsigned ctx)
{
    heaps_init(ctx, HX_ORDER_STRAND);
}

static void wavelet_init(unsigned ctx)
{
    heaps_init(ctx, HX_ORDER_WAVELET);
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

static int prio_push(struct starpu_task *task)
{
    struct prio_state *s = starpu_sched_ctx_get_policy_data(task->sched_ctx);
    int comm = hx_sched_task_is_comm(task);

    starpu_worker_relax_on(); /* a worker pushing its successors may block here */
    STARPU_PTHREAD_MUTEX_LOCK(&s->lock);
    starpu_worker_relax_off();
    hx_heap_push(comm ? &s->comm : &s->compute, task, s->seq++);
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

static void idle_wait(struct prio_state *s, unsigned worker, int want_comm, int want_compute)
{
    if ((int)worker == hx_runtime_driven_worker()) {
        /* StarPU-MPI's thread runs this worker between its MPI polls: a sleep here would
         * hold every transfer of the rank (runtime/mpi_driver.c); its loop is the poll */
        return;
    }
#ifndef STARPU_NON_BLOCKING_DRIVERS
    /* a blocking driver puts the worker to sleep itself when pop returns NULL, and push
     * wakes it (prio_push): waiting here too would only add a second sleep */
    (void)s, (void)worker, (void)want_comm, (void)want_compute;
    return;
#endif
    if (++idle_polls <= IDLE_YIELDS) {
        sched_yield();
        return;
    }
    starpu_worker_relax_on();
    STARPU_PTHREAD_MUTEX_LOCK(&s->lock);
    if (nothing_for(s, want_comm, want_compute)) {
        s->sleepers++;
        hx_cond_wait_us(&s->idle, &s->lock, IDLE_WAIT_US);
        s->sleepers--;
    }
    STARPU_PTHREAD_MUTEX_UNLOCK(&s->lock);
    starpu_worker_relax_off();
}

/* Whether @p worker left every task it weighed and nothing has moved since: no push, no
 * compute task taken.  Only those change its choice (time alone does not: as now advances, a
 * busy rival's finish stays and w's grows; with both free, both grow alike), so it need not
 * weigh the same tasks again.  Read without the lock, as nothing_for: a stale value costs
 * one poll. */
static int nothing_moved(const struct prio_state *s, unsigned worker)
{
    uint64_t at = s->left_at[worker];
    return at != 0 && at == 1 + __atomic_load_n(&s->seq, __ATOMIC_RELAXED) +
                                __atomic_load_n(&s->taken, __ATOMIC_RELAXED);
}

static struct starpu_task *prio_pop(unsigned ctx)
{
    struct prio_state *s = starpu_sched_ctx_get_policy_data(ctx);
    unsigned worker = starpu_worker_get_id_check();
    int want_comm = pops_comm(s, worker), want_compute = pops_compute(s, worker);

    /* Unlocked fast path for polling workers: idle_wait checks again under the lock, and a
     * push signals under it, so no wake is missed. */
    if (nothing_for(s, want_comm, want_compute)) {
        idle_wait(s, worker, want_comm, want_compute);
        return NULL;
    }
    if (!s->one_kind && nothing_moved(s, worker)) {
        /* It yields and does not sleep: a device worker's thread also moves its memory
         * node's data (StarPU 1.3 drivers), which a CPU task on its way may be waiting for. */
        sched_yield();
        return NULL;
    }
    idle_polls = 0;
    starpu_worker_relax_on();
    STARPU_PTHREAD_MUTEX_LOCK(&s->lock);
    starpu_worker_relax_off();
    struct starpu_task *task = want_comm ? hx_heap_pop_for(&s->comm, worker, &s->last_strand)
                                         : NULL;
    struct placing p; /* filled by place_pop only: CPU-only runs pay nothing for it */
    p.left = 0;
    if (task == NULL && want_compute) {
        /* collectives (above) stay on the CPU lane: only compute tasks are placed */
        task = s->one_kind ? hx_heap_pop_for(&s->compute, worker, &s->last_strand)
                           : place_pop(s, worker, &p);
    }
    if (!s->one_kind && want_compute) {
        s->left_at[worker] = task == NULL && p.left > 0 ? 1 + s->seq + s->taken : 0;
    }
    STARPU_PTHREAD_MUTEX_UNLOCK(&s->lock);
#ifndef STARPU_NON_BLOCKING_DRIVERS
    /* A blocking driver may sleep with nothing to wake it: wake the rivals tasks were left
     * to, or a task could wait for a worker asleep (with polling drivers they pop anyway). */
    if (p.left > 0) {
        for (unsigned v = 0; v < s->nworkers; v++) {
            if (p.left_to[v]) {
                starpu_wake_worker_relax_light(v);
            }
        }
    }
#endif
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
