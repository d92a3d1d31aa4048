/* SPDX-License-Identifier: MIT */
/* examples/policies/comm_first.c: "inter-comm-first", a scheduling policy as a plug-in.
 * What: a worker takes, of the ready tasks it can run, the collectives of the inter-node lane
 * first, then those of the intra-node lane, each lane in the order they became ready; then
 * compute, the highest IR node priority first (critical_path.c's order), ties to the lower
 * node id.  Three of StarPU's task lists, one per lane, where critical_path.c keeps a heap
 * (a scan of the compute list at each pop: fine for an example, O(ready tasks)).
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

enum { INTER, INTRA, COMPUTE, NLISTS }; /* the order a worker looks in */

/* Per sched ctx: the ready tasks by lane, guarded by lock. */
struct cf_state {
    starpu_pthread_mutex_t lock;
    struct starpu_task_list ready[NLISTS];
    int n; /* ready tasks; also read without the lock (cf_pop's peek): atomics */
};

/* NULL sched_data: a task outside a graph (a collective's reduction), counted as compute */
static int list_of(const struct starpu_task *t)
{
    const struct hx_node *node = t->sched_data;
    return node == NULL ? COMPUTE
           : node->lane == HX_LANE_COMM_INTER ? INTER
           : node->lane == HX_LANE_COMM_INTRA ? INTRA : COMPUTE;
}

/* compute order: a runs before b */
static int before(const struct starpu_task *a, const struct starpu_task *b)
{
    const struct hx_node *x = a->sched_data, *y = b->sched_data;
    int pa = x ? x->priority : a->priority, pb = y ? y->priority : b->priority;
    return pa != pb ? pa > pb : (x ? x->id : -1) < (y ? y->id : -1);
}

static void cf_init(unsigned ctx)
{
    struct cf_state *s = calloc(1, sizeof *s);
    HX_ASSERT(s != NULL, "inter-comm-first: out of memory");
    STARPU_PTHREAD_MUTEX_INIT(&s->lock, NULL);
    for (int l = 0; l < NLISTS; l++) {
        starpu_task_list_init(&s->ready[l]);
    }
    starpu_sched_ctx_set_policy_data(ctx, s); /* state per context, no globals */
    /* The priority range it orders, hx-prio's (settable only here): helix gives the tasks of
     * its collectives STARPU_MAX_PRIO, which stays 0, below most compute, unless set. */
    starpu_sched_ctx_set_min_priority(ctx, -1000);
    starpu_sched_ctx_set_max_priority(ctx, 1000);
}

static void cf_deinit(unsigned ctx)
{
    struct cf_state *s = starpu_sched_ctx_get_policy_data(ctx);
    HX_ASSERT(s->n == 0, "inter-comm-first: %d tasks left at shutdown", s->n);
    STARPU_PTHREAD_MUTEX_DESTROY(&s->lock);
    free(s);
}

/* A task became ready (the submitting thread, or a worker releasing successors). */
static int cf_push(struct starpu_task *task)
{
    struct cf_state *s = starpu_sched_ctx_get_policy_data(task->sched_ctx);
    int l = list_of(task);
    starpu_worker_relax_on(); /* StarPU may act on this worker while it waits for the lock */
    STARPU_PTHREAD_MUTEX_LOCK(&s->lock);
    starpu_worker_relax_off();
    starpu_task_list_push_back(&s->ready[l], task); /* pop chooses among compute */
    __atomic_store_n(&s->n, s->n + 1, __ATOMIC_RELAXED);
    starpu_push_task_end(task); /* before unlocking: no worker has taken the task yet */
    STARPU_PTHREAD_MUTEX_UNLOCK(&s->lock);
    hx_sched_wake_worker_for(task); /* (the SimGrid StarPU: its idle workers sleep) */
    return 0;
}

/* An idle worker asks for a task: the first it can run, inter-node lane first, or NULL. */
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
    struct starpu_task *task = NULL;
    for (int l = 0; l < NLISTS && task == NULL; l++) {
        struct starpu_task_list *list = &s->ready[l];
        for (struct starpu_task *t = starpu_task_list_begin(list);
             t != starpu_task_list_end(list); t = starpu_task_list_next(t)) {
            /* a lane's first it can run; of compute, the best it can run */
            if ((task == NULL || before(t, task)) &&
                starpu_worker_can_execute_task_first_impl(worker, t, NULL)) {
                task = t;
                if (l != COMPUTE) {
                    break;
                }
            }
        }
        if (task != NULL) {
            starpu_task_list_erase(list, task);
            __atomic_store_n(&s->n, s->n - 1, __ATOMIC_RELAXED);
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
