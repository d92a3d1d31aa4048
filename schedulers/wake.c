/* SPDX-License-Identifier: MIT */
/* schedulers/wake.c: hx_sched_wake_worker_for (helix/sched.h), for policies that keep their
 * own ready tasks.  Where StarPU's drivers block (its SimGrid build: helix simulate), an idle
 * worker sleeps until woken, so a push that does not wake one leaves the task to nobody and
 * SimGrid ends the run ("Deadlock detected"); where they poll (Debian's StarPU defines
 * STARPU_NON_BLOCKING_DRIVERS) the next pop finds it and this does nothing.  Compiled in
 * both flavours, so a plug-in calls it unconditionally.  Used by examples/policies/ and
 * tests/schedulers/plugins/test_policy.c; hx-prio wakes with its own reservations. */
#include <starpu.h>

#include "helix/sched.h"

void hx_sched_wake_worker_for(struct starpu_task *task)
{
#ifndef STARPU_NON_BLOCKING_DRIVERS
    struct starpu_worker_collection *workers =
        starpu_sched_ctx_get_worker_collection(task->sched_ctx);
    struct starpu_sched_ctx_iterator it;
    workers->init_iterator(workers, &it);
    while (workers->has_next(workers, &it)) {
        unsigned w = workers->get_next(workers, &it);
        if (starpu_worker_can_execute_task_first_impl(w, task, NULL) &&
            starpu_wake_worker_relax_light(w)) {
            return;
        }
    }
#else
    (void)task;
#endif
}
