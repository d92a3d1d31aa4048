/* SPDX-License-Identifier: MIT */
/* graphs/submit.c: the IR handed to StarPU.  Each node becomes one task whose codelet is the
 * op's, whose buffers are the node's tiles with the node's access modes, and whose cl_arg
 * and sched_data are the node itself, so a codelet reads its arguments and a policy classifies
 * the task in O(1).  StarPU derives the same dependencies as hx_graph_deps from the order.
 * The timed variant adds a callback that stamps each task's start and termination. */
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "codelets/codelets.h"
#include "helix/error.h"
#include "helix/sched.h"
#include "helix/graph.h"
#include "helix/trace.h"

static enum starpu_data_access_mode starpu_mode(enum hx_access m)
{
    return m == HX_RW ? STARPU_RW : (m == HX_W ? STARPU_W : STARPU_R);
}

/* Termination callback of a timed task.  A collective's codelet returns as soon as it has
 * posted the transfer (an end-dependency keeps the task alive), so StarPU's end_time is the
 * posting; the task really ends here, when the callback runs. */
static void timed_done(void *arg)
{
    struct hx_task_time *tt = arg;
    double now = starpu_timing_now();
    struct starpu_task *task = starpu_task_get_current();
    struct starpu_profiling_task_info *pi = task ? task->profiling_info : NULL;
    if (pi != NULL) {
        tt->start_us = starpu_timing_timespec_to_us(&pi->start_time);
        tt->end_us = tt->node->kind == HX_KIND_COMM
                         ? now
                         : starpu_timing_timespec_to_us(&pi->end_time);
        tt->worker = pi->workerid;
    } else {
        tt->start_us = tt->end_us = now;
        tt->worker = -1;
    }
    if (hx_trace_active()) {
        hx_trace_record((void *)tt->node);
    }
    __atomic_store_n(&tt->done, 1, __ATOMIC_RELEASE);
}

/* Tag dependencies, for orders that share no data.  Node i's task has tag TAG_BASE + i.
 *  - An SI block under a strand plan (graphs/gpt_order.c): a node waits for every node of
 *    the block's previous segment (the two strands: they share no data).
 *  - serial-comm, the no-overlap baseline (schedulers/hx_prio.c): the submitted range is cut
 *    into runs of compute nodes and runs of collectives, in submission order, and every
 *    node waits for every node of the run before its own: a collective starts after all
 *    earlier compute and compute after the collectives before it.  Collectives of one run
 *    post together, so a pipeline's send and recv emitted side by side still meet.
 * Tags rather than data, because they hold whichever policy runs the tasks.  hx_graph_wait
 * removes them, so the next submission of the graph can declare them again. */
#define TAG_BASE ((starpu_tag_t)0x4858000000000000ULL)

/* Tags declared since the last hx_graph_wait (the main thread submits and waits) */
static starpu_tag_t *tags_used;
static size_t ntags_used, cap_tags_used;

/* Give node i's task its tag and make it wait for the plan's previous segment and for the
 * nodes [run0, run1) (serial-comm's previous run; empty when run0 == run1). */
static void tag_deps(const struct hx_graph *g, int i, int run0, int run1, struct starpu_task *t)
{
    t->use_tag = 1;
    t->tag_id = TAG_BASE + (starpu_tag_t)i;
    if (ntags_used == cap_tags_used) {
        cap_tags_used = cap_tags_used ? 2 * cap_tags_used : 256;
        tags_used = realloc(tags_used, sizeof *tags_used * cap_tags_used);
        HX_ASSERT(tags_used != NULL, "out of memory for %zu task tags", cap_tags_used);
    }
    tags_used[ntags_used++] = t->tag_id;
    int nplan = hx_graph_barrier_preds(g, i, NULL, 0), np = 0;
    if (nplan + run1 - run0 == 0) {
        return;
    }
    int *k = malloc(sizeof(int) * (size_t)(nplan + 1));
    starpu_tag_t *prev = malloc(sizeof *prev * (size_t)(nplan + run1 - run0));
    HX_ASSERT(k != NULL && prev != NULL, "out of memory");
    hx_graph_barrier_preds(g, i, k, nplan);
    for (int q = 0; q < nplan; q++) { /* a tag listed twice would be waited for twice */
        if (k[q] < run0 || k[q] >= run1) {
            prev[np++] = TAG_BASE + (starpu_tag_t)k[q];
        }
    }
    for (int q = run0; q < run1; q++) {
        prev[np++] = TAG_BASE + (starpu_tag_t)q;
    }
    starpu_tag_declare_deps_array(t->tag_id, (unsigned)np, prev);
    free(k);
    free(prev);
}

static int submit_range(hx_graph_t g, int first, int last, struct hx_task_time *times)
{
    if (first < 0) {
        first = 0;
    }
    if (last < 0 || last > g->nnodes) {
        last = g->nnodes;
    }
    int serial = hx_sched_serial_comm_active(), run = first, prev_run = first;
    for (int i = first; i < last; i++) {
        struct hx_node *n = &g->nodes[i];
        const struct hx_op_info *info = hx_op_info(n->op);
        if (i > first && (n->kind == HX_KIND_COMM) != (n[-1].kind == HX_KIND_COMM)) {
            prev_run = run, run = i; /* serial-comm: a new run begins */
        }
        struct starpu_task *t = starpu_task_create();
        t->cl = info->cl;
        t->cl_arg = n;
        t->cl_arg_size = 0;
        t->cl_arg_free = 0;
        t->sched_data = n;
        t->priority = n->priority;
        t->name = info->name;
        t->nbuffers = n->nrefs;
        if (n->nrefs > STARPU_NMAXBUFS) { /* a DDP bucket: StarPU frees these with the task */
            t->dyn_handles = malloc(sizeof(starpu_data_handle_t) * (size_t)n->nrefs);
            t->dyn_modes = malloc(sizeof(enum starpu_data_access_mode) * (size_t)n->nrefs);
            HX_ASSERT(t->dyn_handles != NULL && t->dyn_modes != NULL, "out of memory");
        }
        if (times != NULL) {
            struct hx_task_time *tt = &times[i - first];
            memset(tt, 0, sizeof *tt);
            tt->node = n;
            t->callback_func = timed_done;
            t->callback_arg = tt;
        } else if (hx_trace_active()) {
            t->callback_func = hx_trace_record;
            t->callback_arg = n;
        }
        for (int r = 0; r < n->nrefs; r++) {
            const struct hx_tensor *tensor = g->tensors[n->refs[r].tensor];
            HX_ASSERT(tensor->handles != NULL, "node %d (%s) uses tensor %s before "
                      "hx_graph_realize", i, info->name, tensor->name);
            STARPU_TASK_SET_HANDLE(t, (starpu_data_handle_t)tensor->handles[n->refs[r].tile], r);
            STARPU_TASK_SET_MODE(t, starpu_mode(n->refs[r].mode), r);
        }
        if (serial || n->block >= 0) { /* barriers as StarPU tag dependencies */
            tag_deps(g, i, serial ? prev_run : 0, serial ? run : 0, t);
        }
        int ret = starpu_task_submit(t);
        if (ret != 0) {
            return HX_ERR(HX_ERUNTIME, "starpu_task_submit(node %d: %s, layer %d) failed: %s", i,
                          info->name, n->layer, strerror(-ret));
        }
    }
    return HX_OK;
}

int hx_graph_submit(hx_graph_t g, int first, int last)
{
    return submit_range(g, first, last, NULL);
}

int hx_graph_submit_timed(hx_graph_t g, int first, int last, struct hx_task_time *times)
{
    return submit_range(g, first, last, times);
}

int hx_graph_wait(hx_graph_t g)
{
    (void)g;
    starpu_task_wait_for_all();
    for (size_t k = 0; k < ntags_used; k++) {
        starpu_tag_remove(tags_used[k]);
    }
    ntags_used = 0;
    return hx_run_status();
}
