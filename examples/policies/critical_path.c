/* SPDX-License-Identifier: MIT */
/* examples/policies/critical_path.c: "critical-path-first", a scheduling policy as a plug-in.
 * What: a worker takes, of the ready tasks it can run, the one whose IR node has the highest
 * priority, ties to the lower node id (submission order).
 * Why: helix's graph builder sets node->priority to the node's bottom level (graphs/topo.c,
 * hx_graph_prioritize): the longest path from the node to the end of the step, in flops (a
 * collective counts the flops a worker could do while its bytes cross the link), scaled to
 * 0..1000; collectives then get 1001, and a pipeline puts each of its items in a band of its
 * own (graphs/schedule.c).  So the long chains (the backward's data path) start before work
 * that can wait (weight gradients).  It only orders tasks: the losses are any policy's, bit
 * for bit.
 * Build: make (./Makefile), or  cc -shared -fPIC -Wall -o critical_path.so critical_path.c
 *        $(pkg-config --cflags --libs helix);  make sim: critical_path-sim.so (helix-sim).
 * Run:   helix train --sched-plugin ./critical_path.so --sched critical-path-first ...
 *        helix simulate --sched-plugin ./critical_path-sim.so --sched critical-path-first ... */
#include <sched.h>
#include <stdlib.h>
#include <starpu.h>

#include <helix/error.h>
#include <helix/sched_plugin.h>

struct entry {
    struct starpu_task *task;
    int prio, id;
};

/* Per sched ctx: a binary heap of the ready tasks, the best at [0], guarded by lock. */
struct cp_state {
    starpu_pthread_mutex_t lock;
    struct entry *heap;
    size_t n, cap; /* n is also read without the lock (cp_pop's peek): atomics */
};

static struct entry entry_of(struct starpu_task *t)
{
    const struct hx_node *node = t->sched_data; /* NULL: outside a graph (a collective's
                                                 * reduction), first among equals */
    return (struct entry){ t, node ? node->priority : t->priority, node ? node->id : -1 };
}

/* a runs before b */
static int before(const struct entry *a, const struct entry *b)
{
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

static void cp_init(unsigned ctx)
{
    struct cp_state *s = calloc(1, sizeof *s);
    HX_ASSERT(s != NULL, "critical-path-first: out of memory");
    STARPU_PTHREAD_MUTEX_INIT(&s->lock, NULL);
    starpu_sched_ctx_set_policy_data(ctx, s); /* state per context, no globals */
    /* The priority range it orders, hx-prio's (settable only here): helix gives the tasks of
     * its collectives STARPU_MAX_PRIO, which stays 0, below most compute, unless set. */
    starpu_sched_ctx_set_min_priority(ctx, -1000);
    starpu_sched_ctx_set_max_priority(ctx, 1000);
}

static void cp_deinit(unsigned ctx)
{
    struct cp_state *s = starpu_sched_ctx_get_policy_data(ctx);
    HX_ASSERT(s->n == 0, "critical-path-first: %zu tasks left at shutdown", s->n);
    STARPU_PTHREAD_MUTEX_DESTROY(&s->lock);
    free(s->heap);
    free(s);
}

/* A task became ready (the submitting thread, or a worker releasing successors). */
static int cp_push(struct starpu_task *task)
{
    struct cp_state *s = starpu_sched_ctx_get_policy_data(task->sched_ctx);
    starpu_worker_relax_on(); /* StarPU may act on this worker while it waits for the lock */
    STARPU_PTHREAD_MUTEX_LOCK(&s->lock);
    starpu_worker_relax_off();
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->heap = realloc(s->heap, s->cap * sizeof *s->heap);
        HX_ASSERT(s->heap != NULL, "critical-path-first: out of memory");
    }
    s->heap[s->n] = entry_of(task);
    fix(s->heap, s->n + 1, s->n);
    __atomic_store_n(&s->n, s->n + 1, __ATOMIC_RELAXED);
    starpu_push_task_end(task); /* before unlocking: no worker has taken the task yet */
    STARPU_PTHREAD_MUTEX_UNLOCK(&s->lock);
    hx_sched_wake_worker_for(task); /* (the SimGrid StarPU: its idle workers sleep) */
    return 0;
}

/* An idle worker asks for a task: the best one it can run, or NULL. */
static struct starpu_task *cp_pop(unsigned ctx)
{
    struct cp_state *s = starpu_sched_ctx_get_policy_data(ctx);
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

static struct starpu_sched_policy critical_path_first = {
    .init_sched = cp_init,
    .deinit_sched = cp_deinit,
    .push_task = cp_push,
    .pop_task = cp_pop,
    .policy_name = "critical-path-first",
    .policy_description = "highest IR priority (bottom level) first, then submission order",
    .worker_type = STARPU_WORKER_LIST,
};

HX_SCHED_PLUGIN_ABI;

int hx_sched_plugin_init(void)
{
    return hx_sched_register(&critical_path_first, 0); /* needs nothing from the graph */
}
