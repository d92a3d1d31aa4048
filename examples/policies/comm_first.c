/* SPDX-License-Identifier: MIT */
/* examples/policies/comm_first.c: "inter-comm-first", a scheduling policy as a plug-in.
 * What: a worker takes, of the ready tasks it can run, the collectives of the inter-node lane
 * first, then those of the intra-node lane, then compute; in each, the highest IR node
 * priority first (critical_path.c's order), ties to the lower node id (submission order).
 * Why: an inter-node collective waits on the slow link (the NIC), so it is posted as early as
 * possible, to hide the most time behind compute; an intra-node one is short.  Each channel's
 * collectives still start in submission order on every rank (its token: design/architecture.md
 * section 3), and it only orders tasks: the losses are any policy's, bit for bit.  On one
 * rank there are no collectives (it is then critical-path-first); on one machine every rank
 * shares a node unless --ranks-per-node 1, which puts dp's all-reduces on the inter lane.
 * Build: make (./Makefile), or  cc -shared -fPIC -Wall -o comm_first.so comm_first.c
 *        $(pkg-config --cflags --libs helix);  make sim: comm_first-sim.so (helix-sim).
 * Run:   mpirun -np 2 helix train --data-parallel-size 2 --ranks-per-node 1 \
 *            --sched-plugin ./comm_first.so --sched inter-comm-first ... */
#include <sched.h>
#include <stdlib.h>
#include <starpu.h>

#include <helix/error.h>
#include <helix/sched_plugin.h>

struct entry {
    struct starpu_task *task;
    int lane, prio, id; /* lane: 2 inter-node collective, 1 intra-node one, 0 compute */
};

/* Per sched ctx: a binary heap of the ready tasks, the best at [0], guarded by lock. */
struct cf_state {
    starpu_pthread_mutex_t lock;
    struct entry *heap;
    size_t n, cap; /* n is also read without the lock (cf_pop's peek): atomics */
};

static struct entry entry_of(struct starpu_task *t)
{
    const struct hx_node *node = t->sched_data; /* NULL: outside a graph (a collective's
                                                 * reduction), compute, first among equals */
    if (node == NULL) {
        return (struct entry){ t, 0, t->priority, -1 };
    }
    int lane = node->lane == HX_LANE_COMM_INTER ? 2 : node->lane == HX_LANE_COMM_INTRA ? 1 : 0;
    return (struct entry){ t, lane, node->priority, node->id };
}

/* a runs before b */
static int before(const struct entry *a, const struct entry *b)
{
    if (a->lane != b->lane) {
        return a->lane > b->lane;
    }
    return a->prio != b->prio ? a->prio > b->prio : a->id < b->id;
}

/* Move h[i] up or down to its place in the heap of n entries. */
static void fix(struct entry *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (i > 0 && before(&h[i], &h[(i - 1) / 2])) {
            m = (i - 1) / 2;
        } else {
            m = l < n && before(&h[l], &h[m]) ? l : m;
            m = r < n && before(&h[r], &h[m]) ? r : m;
        }
        if (m == i) {
            return;
        }
        struct entry e = h[i];
        h[i] = h[m];
        h[m] = e;
        i = m;
    }
}

static void cf_init(unsigned ctx)
{
    struct cf_state *s = calloc(1, sizeof *s);
    HX_ASSERT(s != NULL, "inter-comm-first: out of memory");
    STARPU_PTHREAD_MUTEX_INIT(&s->lock, NULL);
    starpu_sched_ctx_set_policy_data(ctx, s); /* state per context, no globals */
    /* The priority range it orders, hx-prio's (settable only here): helix gives the tasks of
     * its collectives STARPU_MAX_PRIO, which stays 0, below most compute, unless set. */
    starpu_sched_ctx_set_min_priority(ctx, -1000);
    starpu_sched_ctx_set_max_priority(ctx, 1000);
}

static void cf_deinit(unsigned ctx)
{
    struct cf_state *s = starpu_sched_ctx_get_policy_data(ctx);
    HX_ASSERT(s->n == 0, "inter-comm-first: %zu tasks left at shutdown", s->n);
    STARPU_PTHREAD_MUTEX_DESTROY(&s->lock);
    free(s->heap);
    free(s);
}

/* A task became ready (the submitting thread, or a worker releasing successors). */
static int cf_push(struct starpu_task *task)
{
    struct cf_state *s = starpu_sched_ctx_get_policy_data(task->sched_ctx);
    starpu_worker_relax_on(); /* StarPU may act on this worker while it waits for the lock */
    STARPU_PTHREAD_MUTEX_LOCK(&s->lock);
    starpu_worker_relax_off();
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->heap = realloc(s->heap, s->cap * sizeof *s->heap);
        HX_ASSERT(s->heap != NULL, "inter-comm-first: out of memory");
    }
    s->heap[s->n] = entry_of(task);
    fix(s->heap, s->n + 1, s->n);
    __atomic_store_n(&s->n, s->n + 1, __ATOMIC_RELAXED);
    starpu_push_task_end(task); /* before unlocking: no worker has taken the task yet */
    STARPU_PTHREAD_MUTEX_UNLOCK(&s->lock);
#ifndef STARPU_NON_BLOCKING_DRIVERS
    /* Blocking drivers (the SimGrid StarPU's; Debian's polls) sleep when pop finds nothing:
     * wake one worker that can run the task. */
    struct starpu_worker_collection *workers =
        starpu_sched_ctx_get_worker_collection(task->sched_ctx);
    struct starpu_sched_ctx_iterator it;
    workers->init_iterator(workers, &it);
    while (workers->has_next(workers, &it)) {
        unsigned w = workers->get_next(workers, &it);
        if (starpu_worker_can_execute_task_first_impl(w, task, NULL) &&
            starpu_wake_worker_relax_light(w)) {
            break;
        }
    }
#endif
    return 0;
}

/* An idle worker asks for a task: the best one it can run, or NULL. */
static struct starpu_task *cf_pop(unsigned ctx)
{
    struct cf_state *s = starpu_sched_ctx_get_policy_data(ctx);
    unsigned worker = starpu_worker_get_id_check();
    if (__atomic_load_n(&s->n, __ATOMIC_RELAXED) == 0) { /* a miss waits one poll */
        sched_yield(); /* polling drivers: leave the core to MPI and the other ranks */
        return NULL;
    }
    starpu_worker_relax_on();
    STARPU_PTHREAD_MUTEX_LOCK(&s->lock);
    starpu_worker_relax_off();
    size_t best = s->n; /* the top, else (it cannot run the top) the best it can run */
    for (size_t i = 0; i < s->n && best != 0; i++) {
        if ((best == s->n || before(&s->heap[i], &s->heap[best])) &&
            starpu_worker_can_execute_task_first_impl(worker, s->heap[i].task, NULL)) {
            best = i;
        }
    }
    struct starpu_task *task = best < s->n ? s->heap[best].task : NULL;
    if (task != NULL) {
        s->heap[best] = s->heap[s->n - 1];
        __atomic_store_n(&s->n, s->n - 1, __ATOMIC_RELAXED);
        if (best < s->n) {
            fix(s->heap, s->n, best);
        }
    }
    STARPU_PTHREAD_MUTEX_UNLOCK(&s->lock);
    return task;
}

static struct starpu_sched_policy inter_comm_first = {
    .init_sched = cf_init,
    .deinit_sched = cf_deinit,
    .push_task = cf_push,
    .pop_task = cf_pop,
    .policy_name = "inter-comm-first",
    .policy_description = "inter-node collectives, intra-node ones, then compute by priority",
    .worker_type = STARPU_WORKER_LIST,
};

HX_SCHED_PLUGIN_ABI;

int hx_sched_plugin_init(void)
{
    return hx_sched_register(&inter_comm_first, 0); /* needs nothing from the graph */
}
