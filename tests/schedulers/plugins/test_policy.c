/* SPDX-License-Identifier: MIT */
/* tests/schedulers/plugins/test_policy.c: the plug-ins of tests/schedulers/plugins.sh, one
 * source compiled once per variant (-DVARIANT=...):
 *   GOOD       "test-fifo": one FIFO of ready tasks, the oldest first;
 *   BAD_ABI    "test-fifo" built for a plug-in ABI that does not exist (refused, exit 2);
 *   NO_ENTRY   the ABI but no hx_sched_plugin_init (refused);
 *   DUPLICATE  registers "eager", StarPU's (refused, the registry names the plug-in);
 *   DROP       "wrong-drop": never hands its 40th task to a worker, a policy that loses a
 *              task: the watchdog must end the run (exit 3), not hang;
 *   SKIP       "wrong-skip": runs its first AdamW task with a codelet that does nothing, a
 *              policy that loses work: the run goes on, the numbers change, and helix
 *              compare's parity verdict must call it wrong.
 * A policy may do neither: it orders and places tasks, never changes what they compute. */
#include <starpu.h>
#include <stdlib.h>
#include <string.h>

#include <helix/sched_plugin.h>

#define GOOD 1
#define BAD_ABI 2
#define NO_ENTRY 3
#define DUPLICATE 4
#define DROP 5
#define SKIP 6

#if VARIANT == BAD_ABI
const struct hx_sched_plugin_abi hx_sched_plugin_abi = {
    HX_SCHED_PLUGIN_ABI_VERSION + 99, STARPU_MAJOR_VERSION * 100 + STARPU_MINOR_VERSION,
    HX_SCHED_PLUGIN_SIMULATION_
};
#else
HX_SCHED_PLUGIN_ABI;
#endif

struct fifo {
    struct starpu_task_list ready, dropped;
    starpu_pthread_mutex_t lock;
    long pushed;
};

static void fifo_init(unsigned ctx)
{
    struct fifo *s = calloc(1, sizeof *s);
    starpu_task_list_init(&s->ready);
    starpu_task_list_init(&s->dropped);
    STARPU_PTHREAD_MUTEX_INIT(&s->lock, NULL);
    starpu_sched_ctx_set_policy_data(ctx, s);
}

static void fifo_deinit(unsigned ctx)
{
    struct fifo *s = starpu_sched_ctx_get_policy_data(ctx);
    STARPU_PTHREAD_MUTEX_DESTROY(&s->lock);
    free(s);
}

#if VARIANT == SKIP
static void do_nothing(void *buffers[], void *arg)
{
    (void)buffers, (void)arg;
}
static struct starpu_codelet skipped; /* the AdamW codelet with no work in it */
static int skipped_one;
#endif

static int fifo_push(struct starpu_task *task)
{
    struct fifo *s = starpu_sched_ctx_get_policy_data(task->sched_ctx);
    starpu_worker_relax_on();
    STARPU_PTHREAD_MUTEX_LOCK(&s->lock);
    starpu_worker_relax_off();
    int drop = 0;
#if VARIANT == DROP
    drop = ++s->pushed == 40;
#elif VARIANT == SKIP
    if (!skipped_one && task->cl != NULL && task->cl->name != NULL &&
        strstr(task->cl->name, "adamw") != NULL) {
        skipped = *task->cl;
        memset(skipped.cpu_funcs, 0, sizeof skipped.cpu_funcs);
        memset(skipped.cpu_funcs_name, 0, sizeof skipped.cpu_funcs_name);
        memset(skipped.opencl_funcs, 0, sizeof skipped.opencl_funcs);
        memset(skipped.cuda_funcs, 0, sizeof skipped.cuda_funcs);
        skipped.cpu_funcs[0] = do_nothing;
        skipped.where = STARPU_CPU;
        skipped.model = NULL;
        task->cl = &skipped;
        skipped_one = 1;
    }
#endif
    starpu_task_list_push_back(drop ? &s->dropped : &s->ready, task);
    starpu_push_task_end(task);
    STARPU_PTHREAD_MUTEX_UNLOCK(&s->lock);
    hx_sched_wake_worker_for(task); /* (the SimGrid StarPU: its idle workers sleep) */
    return 0;
}

static struct starpu_task *fifo_pop(unsigned ctx)
{
    struct fifo *s = starpu_sched_ctx_get_policy_data(ctx);
    if (starpu_task_list_empty(&s->ready)) {
        return NULL;
    }
    unsigned worker = starpu_worker_get_id_check();
    struct starpu_task *got = NULL;
    starpu_worker_relax_on();
    STARPU_PTHREAD_MUTEX_LOCK(&s->lock);
    starpu_worker_relax_off();
    for (struct starpu_task *t = starpu_task_list_begin(&s->ready);
         t != starpu_task_list_end(&s->ready); t = starpu_task_list_next(t)) {
        if (starpu_worker_can_execute_task_first_impl(worker, t, NULL)) {
            got = t;
            starpu_task_list_erase(&s->ready, t);
            break;
        }
    }
    STARPU_PTHREAD_MUTEX_UNLOCK(&s->lock);
    return got;
}

static struct starpu_sched_policy policy = {
    .init_sched = fifo_init,
    .deinit_sched = fifo_deinit,
    .push_task = fifo_push,
    .pop_task = fifo_pop,
#if VARIANT == DUPLICATE
    .policy_name = "eager",
#elif VARIANT == DROP
    .policy_name = "wrong-drop",
#elif VARIANT == SKIP
    .policy_name = "wrong-skip",
#else
    .policy_name = "test-fifo",
#endif
    .policy_description = "tests/schedulers/plugins/test_policy.c",
    .worker_type = STARPU_WORKER_LIST,
};

#if VARIANT != NO_ENTRY
int hx_sched_plugin_init(void)
{
    return hx_sched_register(&policy, 0);
}
#else
int not_the_entry_point(void);
int not_the_entry_point(void)
{
    return policy.push_task == NULL;
}
#endif
