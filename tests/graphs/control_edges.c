/* SPDX-License-Identifier: MIT */
/* tests/graphs/control_edges.c: barriers as IR edges (include/helix/graph.h).
 *  - hx_graph_control keeps edges sorted and once, refuses edges against the node order;
 *  - hx_graph_serialize_comm (serial-comm's need) cuts a range into runs of compute and of
 *    collectives and makes every node wait for the whole run before it; hx_graph_deps and
 *    the DOT export list exactly those edges; a strand plan's barrier on the same pair is
 *    listed once;
 *  - the GPT builder takes a policy's needs, not its name: HX_SCHED_NEEDS_SERIAL_COMM adds
 *    the barriers (each joins a compute node and a collective) and changes no node,
 *    HX_SCHED_NEEDS_PREFETCH gives the graph of
 *    hx_parallel_config.prefetch (ZeRO-3 on rank 0 of dp 2, built without running);
 *  - submission makes control edges StarPU tag dependencies, in each graph's own tag range:
 *    two graphs in flight, a fast high-priority product that must wait for slow ones, and
 *    the graph's tags released by its wait. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/error.h"
#include "helix/gpt.h"
#include "helix/graph.h"
#include "helix/mesh.h"
#include "helix/runtime.h"
#include "helix/sched.h"
#include "tap.h"

/* A graph of n products, each on its own tensors: no node depends on another by data. */
static hx_graph_t products(int n, int rows, int inner)
{
    hx_graph_t g = hx_graph_create();
    struct hx_tensor *b = hx_graph_tensor(g, "b", HX_F32, HX_ROLE_INPUT, inner, 16, 0);
    for (int p = 0; p < n; p++) {
        char an[16], cn[16];
        snprintf(an, sizeof an, "a%d", p);
        snprintf(cn, sizeof cn, "c%d", p);
        struct hx_tensor *a = hx_graph_tensor(g, an, HX_F32, HX_ROLE_INPUT, rows, inner, 0);
        struct hx_tensor *c = hx_graph_tensor(g, cn, HX_F32, HX_ROLE_ACTIVATION, rows, 16, 0);
        union hx_op_args args = { .mm = { .m = rows, .n = 16, .k = inner, .alpha = 1.0f } };
        struct hx_ref refs[3] = { hx_ref_of(a, 0, HX_R), hx_ref_of(b, 0, HX_R),
                                  hx_ref_of(c, 0, HX_W) };
        hx_graph_add(g, HX_OP_MATMUL, &args, 3, refs, 2.0 * rows * 16 * inner, 0);
    }
    return g;
}

static int has_edge(const struct hx_deps *d, int from, int to)
{
    for (int k = d->off[to]; k < d->off[to + 1]; k++) {
        if (d->pred[k] == from) {
            return 1;
        }
    }
    return 0;
}

static int count_arrows(const hx_graph_t g)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    int n = -1;
    if (f != NULL && hx_graph_write_dot(g, f) == HX_OK && fclose(f) == 0) {
        n = 0;
        for (const char *p = text; (p = strstr(p, " -> ")) != NULL; p++) {
            n++;
        }
    }
    free(text);
    return n;
}

static void test_ir(void)
{
    /* 0 1 2: compute, 3 4: collectives (the kind is plain data), 5 6: compute */
    hx_graph_t g = products(7, 4, 4);
    g->nodes[3].kind = g->nodes[4].kind = HX_KIND_COMM;
    int ret = hx_graph_serialize_comm(g, 0, 7);
    struct hx_deps d;
    int dret = hx_graph_deps(g, &d);
    int want = 1;
    for (int to = 0; to < 7 && dret == HX_OK; to++) {
        for (int from = 0; from < to; from++) {
            int expect = (to >= 3 && to <= 4 && from <= 2) || (to >= 5 && from >= 3 && from <= 4);
            want &= has_edge(&d, from, to) == expect;
        }
    }
    tap_ok(ret == HX_OK && dret == HX_OK && g->nctrl == 10 && d.off[7] == 10 && want,
           "serialize_comm: runs 0-2 | 3-4 | 5-6, every node waits for the run before: %d "
           "control edges, hx_graph_deps lists exactly them (%d)", g->nctrl,
           dret == HX_OK ? d.off[7] : -1);
    if (dret == HX_OK) {
        hx_deps_free(&d);
    }
    tap_ok(count_arrows(g) == 10, "--dump-dot draws the 10 barrier edges (%d arrows)",
           count_arrows(g));

    int bad = hx_graph_control(g, 3, 3) == HX_EINVAL && hx_graph_control(g, 4, 2) == HX_EINVAL &&
              hx_graph_control(g, -1, 2) == HX_EINVAL && hx_graph_control(g, 0, 7) == HX_EINVAL;
    hx_run_status_reset();
    int again = hx_graph_control(g, 0, 3) == HX_OK && g->nctrl == 10;
    int added = hx_graph_control(g, 1, 6) == HX_OK && hx_graph_control(g, 0, 2) == HX_OK &&
                g->nctrl == 12;
    int sorted = 1;
    for (int e = 1; e < g->nctrl; e++) {
        const struct hx_edge *p = &g->ctrl[e - 1], *q = &g->ctrl[e];
        sorted &= p->to < q->to || (p->to == q->to && p->from < q->from);
    }
    int preds[8], n2 = hx_graph_barrier_preds(g, 2, preds, 8);
    tap_ok(bad && again && added && sorted && n2 == 1 && preds[0] == 0,
           "hx_graph_control: edges against the node order refused, one given twice kept once, "
           "any order of adding kept sorted by (to, from); node 2 waits for node %d",
           n2 == 1 ? preds[0] : -1);

    /* a strand plan's barrier over the same pairs: 3 4 segment 0, 5 6 segment 1 */
    for (int i = 3; i < 7; i++) {
        g->nodes[i].block = 0;
        g->nodes[i].segment = i >= 5;
    }
    int n5 = hx_graph_barrier_preds(g, 5, preds, 8), n6 = hx_graph_barrier_preds(g, 6, NULL, 0);
    int s5 = n5 == 2 && ((preds[0] == 3 && preds[1] == 4) || (preds[0] == 4 && preds[1] == 3));
    tap_ok(s5 && n6 == 3, "a control edge and a plan barrier on one pair count once: node 5 "
           "waits for %d nodes (3, 4), node 6 for %d (1 by control, 3, 4)", n5, n6);
    hx_graph_destroy(g);
}

/* Rank 0 of dp 2 under ZeRO-3, built with @p needs and @p prefetch. */
static hx_gpt_t zero3(unsigned needs, int prefetch)
{
    struct hx_gpt_config c = { .vocab_size = 256, .num_layers = 4, .num_heads = 4,
                               .hidden_size = 64, .seq_len = 32, .micro_batch_size = 2,
                               .num_micro_batches = 4 };
    struct hx_optim_config o;
    hx_optim_config_default(&o, 10);
    struct hx_mesh_request q = { .world_size = 2, .world_rank = 0, .tp = 1, .ranks_per_node = 2,
                                 .zero_stage = 3 };
    static struct hx_mesh mesh;
    struct hx_parallel_config par = { .mesh = &mesh, .sched_needs = needs, .prefetch = prefetch };
    hx_gpt_t m = NULL;
    if (hx_mesh_init(&mesh, &q, 0) != HX_OK || hx_gpt_build_parallel(&m, &c, &o, &par) != HX_OK) {
        return NULL;
    }
    return m;
}

/* Same nodes (op, kind, layer, micro-batch) in the same order? */
static int same_nodes(hx_graph_t a, hx_graph_t b)
{
    if (a->nnodes != b->nnodes) {
        return 0;
    }
    for (int i = 0; i < a->nnodes; i++) {
        const struct hx_node *x = &a->nodes[i], *y = &b->nodes[i];
        if (x->op != y->op || x->kind != y->kind || x->layer != y->layer ||
            x->microbatch != y->microbatch) {
            return 0;
        }
    }
    return 1;
}

static void test_builder(void)
{
    hx_gpt_t plain = zero3(0, 0), serial = zero3(HX_SCHED_NEEDS_SERIAL_COMM, 0);
    hx_gpt_t by_need = zero3(HX_SCHED_NEEDS_PREFETCH, 0), by_flag = zero3(0, 1);
    if (plain == NULL || serial == NULL || by_need == NULL || by_flag == NULL) {
        tap_ok(0, "ZeRO-3 graphs built");
        tap_ok(0, "ZeRO-3 graphs built");
    } else {
        hx_graph_t g = hx_gpt_graph(serial);
        int cross = 0, ncomm = 0;
        for (int e = 0; e < g->nctrl; e++) {
            cross += g->nodes[g->ctrl[e].from].kind != g->nodes[g->ctrl[e].to].kind;
        }
        for (int i = 0; i < g->nnodes; i++) {
            ncomm += g->nodes[i].kind == HX_KIND_COMM;
        }
        tap_ok(hx_gpt_graph(plain)->nctrl == 0 && g->nctrl > 0 && cross == g->nctrl &&
                   ncomm > 0 && same_nodes(g, hx_gpt_graph(plain)),
               "HX_SCHED_NEEDS_SERIAL_COMM: %d barrier edges, each between a compute node and "
               "a collective (%d), the nodes unchanged; none without the need", g->nctrl, cross);
        tap_ok(same_nodes(hx_gpt_graph(by_need), hx_gpt_graph(by_flag)) &&
                   !same_nodes(hx_gpt_graph(by_need), hx_gpt_graph(plain)) &&
                   hx_gpt_prefetch_depth(by_need) == hx_gpt_prefetch_depth(by_flag),
               "HX_SCHED_NEEDS_PREFETCH builds hx-prefetch's order: the graph of .prefetch = 1 "
               "(%d nodes), not the default order's (%d)", hx_gpt_graph(by_need)->nnodes,
               hx_gpt_graph(plain)->nnodes);
    }
    hx_gpt_destroy(plain);
    hx_gpt_destroy(serial);
    hx_gpt_destroy(by_need);
    hx_gpt_destroy(by_flag);
}

/* Nodes 0..3 slow products, node 4 a fast one with the highest priority, waiting for all
 * four by control edges only. */
#define SLOW 4
static void test_submit(void)
{
    struct hx_runtime_opts ro;
    hx_runtime_opts_init(&ro);
    ro.workers = 2;
    ro.sched = "hx-prio";
    ro.profiling = 1;
    if (hx_runtime_init(&ro) != HX_OK) {
        tap_skip("StarPU did not start");
        tap_skip("StarPU did not start");
        return;
    }
    hx_graph_t g[2];
    struct hx_task_time t[2][SLOW + 1];
    int ret = HX_OK;
    for (int k = 0; k < 2; k++) {
        g[k] = products(SLOW + 1, 64, 256);
        g[k]->nodes[SLOW].priority = 100;
        for (int p = 0; p < SLOW; p++) {
            ret = ret == HX_OK ? hx_graph_control(g[k], p, SLOW) : ret;
        }
        ret = ret == HX_OK ? hx_graph_realize(g[k]) : ret;
        for (int i = 0; ret == HX_OK && i < g[k]->ntensors; i++) {
            memset(hx_f32(g[k]->tensors[i]), 0, sizeof(float) * (size_t)g[k]->tensors[i]->rows *
                                                     (size_t)g[k]->tensors[i]->cols);
        }
    }
    int bad = 0, rounds = 0, released = 1;
    for (int round = 0; round < 2 && ret == HX_OK; round++, rounds++) {
        ret = hx_graph_submit_timed(g[0], 0, -1, t[0]);
        ret = ret == HX_OK ? hx_graph_submit_timed(g[1], 0, -1, t[1]) : ret;
        int w0 = hx_graph_wait(g[0]), w1 = hx_graph_wait(g[1]);
        ret = ret == HX_OK ? (w0 != HX_OK ? w0 : w1) : ret;
        released &= g[0]->tags.n == 0 && g[1]->tags.n == 0;
        for (int k = 0; k < 2; k++) {
            for (int p = 0; p < SLOW; p++) {
                bad += t[k][SLOW].start_us < t[k][p].end_us;
            }
        }
    }
    unsigned long long b0 = g[0]->tags.base, b1 = g[1]->tags.base;
    tap_ok(ret == HX_OK && rounds == 2 && bad == 0,
           "two graphs in flight, twice: each one's fast high-priority product started after "
           "its four slow ones ended, by control edges alone (%d violations)", bad);
    tap_ok(b0 != 0 && b1 != 0 && (b0 >> 32) != (b1 >> 32) && released,
           "each graph has its own tag range (0x%llx, 0x%llx), released by its wait", b0, b1);
    hx_graph_destroy(g[0]);
    hx_graph_destroy(g[1]);
    hx_runtime_shutdown();
}

int main(void)
{
    tap_plan(8);
    test_ir();
    test_builder();
    test_submit();
    return tap_exit();
}
