/* SPDX-License-Identifier: MIT */
/* graphs/submit.c: the IR handed to StarPU.  Each node becomes one task whose codelet is the
 * op's, whose buffers are the node's tiles with the node's access modes, and whose cl_arg
 * and sched_data are the node itself, so a codelet reads its arguments and a policy classifies
 * the task in O(1).  StarPU derives the data dependencies of hx_graph_deps from the order;
 * its barriers are declared as tag dependencies.  The timed variant adds a callback that
 * stamps each task's start and termination.  Tests: tests/graphs/two_graphs.c,
 * tests/graphs/control_edges.c. */
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "codelets/codelets.h"
#include "helix/error.h"
#include "helix/graph.h"
#include "helix/runtime.h"
#include "helix/trace.h"
#include "runtime/sim_models.h"
#include "runtime/stall.h"

static enum starpu_data_access_mode starpu_mode(enum hx_access m)
{
    return m == HX_RW ? STARPU_RW : (m == HX_W ? STARPU_W : STARPU_R);
}

static long timed_ended; /* timed tasks terminated in this process (atomic) */

/* Termination callback of a timed task.  A collective's codelet returns as soon as it has
 * posted the transfer (an end-dependency keeps the task alive), so StarPU's end_time is the
 * posting; the task really ends here, when the callback runs (for a collective, once the
 * engine released it: its `order` is the order in which the engine finished them). */
static void timed_done(void *arg)
{
    struct hx_task_time *tt = arg;
    tt->order = __atomic_add_fetch(&timed_ended, 1, __ATOMIC_RELAXED);
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

/* Barriers (hx_graph_barrier_preds: control edges such as serial-comm's, a strand plan's
 * steps) order tasks that share no data, so they become tag dependencies: tags rather than
 * data, because they hold whichever policy runs the tasks.  Every graph has its own range of
 * tag ids, taken from a process-wide counter: 0x48 ('H') in the top byte, the range's number
 * in the next 24 bits, the node id in the low 32, so two graphs in flight (an evaluation
 * beside a training step, two models) never share a tag.  The numbers wrap after 2^24
 * graphs, by which time the first is long done.  A barrier on a node not submitted since the
 * graph's last wait is dropped: that node is not in flight (evaluation submits parts of the
 * graph), and a tag never declared would never be released.  hx_graph_wait removes the
 * graph's tags, so its next submission can declare them again. */
#define TAG_PREFIX (0x48ULL << 56)
#define TAG_RANGES (1ULL << 24)

static unsigned long long next_range; /* atomic: graphs may be created on any thread */

static starpu_tag_t tag_of(const struct hx_graph *g, int i)
{
    return (starpu_tag_t)(g->tags.base + (unsigned long long)i);
}

/* Which nodes of @p g carry a tag: an end of a control edge, or of a strand plan's block
 * (1 in mark[i], nnodes entries). */
static unsigned char *tagged_nodes(const struct hx_graph *g)
{
    unsigned char *mark = calloc((size_t)g->nnodes + 1, 1);
    HX_ASSERT(mark != NULL, "out of memory for the tag marks of %d nodes", g->nnodes);
    for (int e = 0; e < g->nctrl; e++) {
        mark[g->ctrl[e].from] = mark[g->ctrl[e].to] = 1;
    }
    for (int i = 0; i < g->nnodes; i++) {
        mark[i] |= g->nodes[i].block >= 0;
    }
    return mark;
}

/* Give node i's task its tag and make it wait for its barriers' nodes that are in flight. */
static void tag_deps(hx_graph_t g, int i, struct starpu_task *t)
{
    struct hx_graph_tags *tg = &g->tags;
    if (tg->base == 0) {
        unsigned long long r = __atomic_fetch_add(&next_range, 1, __ATOMIC_RELAXED);
        tg->base = TAG_PREFIX | ((r % TAG_RANGES) << 32);
    }
    if (tg->cap_declared < g->nnodes) {
        unsigned char *d = realloc(tg->declared, (size_t)g->nnodes);
        HX_ASSERT(d != NULL, "out of memory for the tags of %d nodes", g->nnodes);
        memset(d + tg->cap_declared, 0, (size_t)(g->nnodes - tg->cap_declared));
        tg->declared = d;
        tg->cap_declared = g->nnodes;
    }
    HX_ASSERT(!tg->declared[i], "node %d (%s) submitted twice without hx_graph_wait: its tag "
              "is still declared", i, hx_op_name(g->nodes[i].op));
    if (tg->n == tg->cap) {
        tg->cap = tg->cap ? 2 * tg->cap : 256;
        tg->nodes = realloc(tg->nodes, sizeof *tg->nodes * (size_t)tg->cap);
        HX_ASSERT(tg->nodes != NULL, "out of memory for %d task tags", tg->cap);
    }
    tg->nodes[tg->n++] = i;
    tg->declared[i] = 1;
    t->use_tag = 1;
    t->tag_id = tag_of(g, i);
    int nb = hx_graph_barrier_preds(g, i, NULL, 0), np = 0;
    if (nb == 0) {
        return;
    }
    int *k = malloc(sizeof(int) * (size_t)nb);
    starpu_tag_t *prev = malloc(sizeof *prev * (size_t)nb);
    HX_ASSERT(k != NULL && prev != NULL, "out of memory");
    hx_graph_barrier_preds(g, i, k, nb);
    for (int q = 0; q < nb; q++) {
        if (tg->declared[k[q]]) {
            prev[np++] = tag_of(g, k[q]);
        }
    }
    if (np > 0) {
        starpu_tag_declare_deps_array(t->tag_id, (unsigned)np, prev);
    }
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
    unsigned char *tagged = tagged_nodes(g);
    for (int i = first; i < last; i++) {
        struct hx_node *n = &g->nodes[i];
        const struct hx_op_info *info = hx_op_info(n->op);
        struct starpu_task *t = starpu_task_create();
        t->cl = hx_op_codelet(n->op); /* a collective's NCCL variant on that backend */
        t->cl_arg = n;
        t->cl_arg_size = 0;
        t->cl_arg_free = 0;
        t->sched_data = n;
        t->priority = n->priority;
        t->name = info->name;
        if (t->cl->opencl_funcs[0] != NULL || t->cl->cuda_funcs[0] != NULL) {
            t->where = hx_runtime_where(); /* compute: --compute-on; collectives: CPU */
        }
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
        if (tagged[i]) { /* barriers as StarPU tag dependencies */
            tag_deps(g, i, t);
        }
        int ret = starpu_task_submit(t);
        if (ret != 0) {
            free(tagged);
            return HX_ERR(HX_ERUNTIME, "starpu_task_submit(node %d: %s, layer %d) failed: %s", i,
                          info->name, n->layer, strerror(-ret));
        }
    }
    free(tagged);
    return HX_OK;
}

int hx_graph_check_sim_models(hx_graph_t g)
{
    for (int i = 0; i < g->nnodes; i++) {
        const struct hx_node *n = &g->nodes[i];
        int ret = hx_sim_model_check(hx_op_codelet(n->op), hx_op_info(n->op)->name);
        if (ret != HX_OK) {
            return ret;
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
    hx_stall_wait_for_all(); /* (the task watchdog: hx_runtime_opts.stall_timeout) */
    for (int k = 0; k < g->tags.n; k++) {
        starpu_tag_remove(tag_of(g, g->tags.nodes[k]));
        g->tags.declared[g->tags.nodes[k]] = 0;
    }
    g->tags.n = 0;
    return hx_run_status();
}
