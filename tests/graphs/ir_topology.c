/* SPDX-License-Identifier: MIT */
/* tests/graphs/ir_topology.c: the IR as plain data.  Dependencies follow the sequential task
 * flow on tiles (RAW, WAR, WAW, none between tiles or between readers); critical path and
 * levels; the topological-order check; DOT export; the GPT step graph's metadata (phases,
 * forward GEMM flops = 2 N (12 L C^2 + V C) per micro-batch, backward-weight nodes write only
 * gradients); and bad configurations and batches rejected with HX_EINVAL. No StarPU workers
 * run except for the batch check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/helix.h"
#include "tap.h"

static int has_edge(const struct hx_deps *d, int from, int to)
{
    for (int k = d->off[to]; k < d->off[to + 1]; k++) {
        if (d->pred[k] == from) {
            return 1;
        }
    }
    return 0;
}

static void hand_graph(void)
{
    hx_graph_t g = hx_graph_create();
    hx_tensor_t A = hx_graph_tensor(g, "A", HX_F32, HX_ROLE_ACTIVATION, 4, 3, 2);
    hx_tensor_t B = hx_graph_tensor(g, "B", HX_F32, HX_ROLE_ACTIVATION, 4, 3, 2);
    union hx_op_args a = { .rows = { .rows = 2, .cols = 3 } };
    struct hx_ref w0[1] = { hx_ref_of(A, 0, HX_W) }, w1[1] = { hx_ref_of(A, 1, HX_W) };
    struct hx_ref add0[3] = { hx_ref_of(A, 0, HX_R), hx_ref_of(A, 1, HX_R), hx_ref_of(B, 0, HX_W) };
    struct hx_ref add1[3] = { hx_ref_of(A, 0, HX_R), hx_ref_of(A, 0, HX_R), hx_ref_of(B, 1, HX_W) };
    hx_graph_add(g, HX_OP_FILL, &a, 1, w0, 1, 0);     /* n0: W A0 */
    hx_graph_add(g, HX_OP_FILL, &a, 1, w1, 2, 0);     /* n1: W A1 */
    hx_graph_add(g, HX_OP_ADD, &a, 3, add0, 10, 0);   /* n2: R A0 A1, W B0 */
    hx_graph_add(g, HX_OP_ADD, &a, 3, add1, 5, 0);    /* n3: R A0 (twice), W B1 */
    hx_graph_add(g, HX_OP_FILL, &a, 1, w0, 1, 0);     /* n4: W A0 after two readers */
    struct hx_deps d;
    tap_ok(hx_graph_deps(g, &d) == HX_OK && d.n == 5, "deps of a 5-node graph computed");
    int edges = d.off[5];
    tap_ok(!has_edge(&d, 0, 1), "writers of different tiles are independent");
    tap_ok(has_edge(&d, 0, 2) && has_edge(&d, 1, 2), "read after write on both tiles");
    tap_ok(has_edge(&d, 0, 3) && !has_edge(&d, 1, 3) && !has_edge(&d, 2, 3),
           "readers of the same tile are independent; a duplicate ref gives one edge");
    tap_ok(has_edge(&d, 2, 4) && has_edge(&d, 3, 4) && has_edge(&d, 0, 4),
           "write after read (n2, n3) and write after write (n0)");
    tap_ok(edges == 6, "exactly 6 edges: n2<-n0,n1; n3<-n0; n4<-n0,n2,n3 (got %d)", edges);
    int level[5];
    double cp = hx_graph_critical_path(g, &d, level);
    tap_ok(cp == 13.0 && level[2] == 1 && level[4] == 2,
           "critical path 2 -> 10 -> 1 = 13 flops (got %g), levels n2=%d n4=%d", cp, level[2],
           level[4]);
    int fwd[5] = { 0, 1, 2, 3, 4 }, bad[5] = { 1, 0, 3, 2, 4 }, bad2[5] = { 0, 1, 4, 2, 3 };
    tap_ok(hx_deps_is_topological(&d, fwd) && hx_deps_is_topological(&d, bad) &&
           !hx_deps_is_topological(&d, bad2), "topological check accepts valid orders only");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int ret = hx_graph_write_dot(g, f);
    fclose(f);
    int arrows = 0;
    for (char *p = buf; (p = strstr(p, " -> ")) != NULL; p++) {
        arrows++;
    }
    tap_ok(ret == HX_OK && strncmp(buf, "digraph", 7) == 0 && arrows == edges &&
           strstr(buf, "n4 [label=\"fill") != NULL, "DOT export: header, 5 nodes, %d edges",
           arrows);
    free(buf);
    hx_deps_free(&d);
    hx_graph_destroy(g);
}

static void gpt_graph(void)
{
    struct hx_gpt_config c = { .vocab_size = 257, .num_layers = 3, .num_heads = 3,
                               .hidden_size = 96, .seq_len = 17, .micro_batch_size = 2,
                               .num_micro_batches = 2 };
    struct hx_optim_config o;
    hx_optim_config_default(&o, 10);
    hx_gpt_t m;
    tap_ok(hx_gpt_build(&m, &c, &o) == HX_OK, "GPT step graph builds without StarPU");
    hx_graph_t g = hx_gpt_graph(m);
    double fwd_mm = 0;
    int phases[4] = { 0 }, bad_weight = 0, bad_mb = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const struct hx_node *n = &g->nodes[i];
        phases[n->phase]++;
        if (n->phase == HX_PHASE_FORWARD && n->microbatch == 0 &&
            (n->op == HX_OP_MATMUL || n->op == HX_OP_MATMUL_GELU)) {
            fwd_mm += n->flops;
        }
        if (n->phase == HX_PHASE_BACKWARD_WEIGHT) {
            for (int r = 0; r < n->nrefs; r++) {
                const struct hx_tensor *t = g->tensors[n->refs[r].tensor];
                if ((n->refs[r].mode & HX_W) && t->role != HX_ROLE_GRAD) {
                    bad_weight++;
                }
            }
        }
        if (n->microbatch < 0 || n->microbatch >= c.num_micro_batches) {
            bad_mb++;
        }
    }
    double N = (double)c.seq_len * c.micro_batch_size, C = c.hidden_size;
    double expect = 2.0 * N * (12.0 * c.num_layers * C * C + c.vocab_size * C);
    tap_ok(fwd_mm == expect, "forward GEMM flops per micro-batch %.0f = 2N(12LC^2 + VC) = %.0f",
           fwd_mm, expect);
    tap_ok(phases[0] > 0 && phases[1] > 0 && phases[2] > 0 && phases[3] > 0 && bad_mb == 0,
           "all four phases present (%d/%d/%d/%d nodes), micro-batch tags valid", phases[0],
           phases[1], phases[2], phases[3]);
    tap_ok(bad_weight == 0, "backward-weight nodes write gradients only (%d violations)",
           bad_weight);
    struct hx_deps d;
    hx_graph_deps(g, &d);
    int *order = malloc(sizeof(int) * (size_t)g->nnodes);
    for (int i = 0; i < g->nnodes; i++) {
        order[i] = i;
    }
    tap_ok(hx_deps_is_topological(&d, order) && hx_gpt_first_optimizer_node(m) < g->nnodes,
           "submission order is topological (%d nodes, %d edges)", g->nnodes, d.off[d.n]);
    int bad_prio = 0, top = 0;
    for (int i = 0; i < d.n; i++) {
        top = g->nodes[i].priority > top ? g->nodes[i].priority : top;
        for (int k = d.off[i]; k < d.off[i + 1]; k++) {
            bad_prio += g->nodes[d.pred[k]].priority < g->nodes[i].priority;
        }
    }
    tap_ok(bad_prio == 0 && top == 1000, "critical-path priorities: never lower than a "
           "successor's (%d violations), the longest chain at 1000 (max %d)", bad_prio, top);
    free(order);
    hx_deps_free(&d);
    hx_gpt_destroy(m);
}

static void bad_input(void)
{
    struct hx_gpt_config c = { .vocab_size = 256, .num_layers = 2, .num_heads = 5,
                               .hidden_size = 64, .seq_len = 16, .micro_batch_size = 2,
                               .num_micro_batches = 1 };
    struct hx_optim_config o;
    hx_optim_config_default(&o, 10);
    hx_gpt_t m = NULL;
    tap_ok(hx_gpt_build(&m, &c, &o) == HX_EINVAL && m == NULL,
           "heads not dividing the hidden size is rejected");
    c.num_heads = 4;
    c.max_seq_len = 8;
    tap_ok(hx_gpt_config_check(&c) == HX_EINVAL, "sequence longer than the position table");
    struct hx_runtime_opts ro;
    hx_runtime_opts_init(&ro);
    ro.workers = 99;
    tap_ok(hx_runtime_init(&ro) == HX_EINVAL && !hx_runtime_is_up(), "99 workers rejected "
           "before StarPU starts");
    ro.workers = 1;
    c.max_seq_len = 0;
    int ret = hx_runtime_init(&ro);
    ret = ret == HX_OK ? hx_gpt_build(&m, &c, &o) : ret;
    ret = ret == HX_OK ? hx_gpt_realize(m) : ret;
    int32_t tok[32] = { 0 }, tgt[32] = { 0 };
    tgt[5] = 256;
    tap_ok(ret == HX_OK && hx_gpt_set_batch(m, tok, tgt) == HX_EINVAL,
           "a target outside the vocabulary is rejected before any task runs");
    hx_gpt_destroy(m);
    hx_runtime_shutdown();
    hx_run_status_reset();
}

static void op_names(void)
{
    int distinct = 1;
    for (int i = 0; i < HX_OP_COUNT; i++) {
        for (int j = 0; j < i; j++) {
            distinct &= strcmp(hx_op_name((enum hx_op)i), hx_op_name((enum hx_op)j)) != 0;
        }
    }
    tap_ok(distinct && strcmp(hx_op_name(HX_OP_MATMUL), "matmul") == 0 &&
           strcmp(hx_op_name(HX_OP_ADAMW), "adamw") == 0 &&
           strcmp(hx_op_name(HX_OP_COUNT), "unknown") == 0,
           "%d ops with distinct stable names (perf-model keys)", (int)HX_OP_COUNT);
}

int main(void)
{
    tap_plan(1 + 9 + 6 + 4);
    op_names();
    hand_graph();
    gpt_graph();
    bad_input();
    return tap_exit();
}
