/* SPDX-License-Identifier: MIT */
/* tests/graphs/recompute.c: --recompute-activations as graph structure, built without
 * running (a 4-layer model, 4 micro-batches; serial, and rank 0 of a ZeRO-3 dp 2 mesh):
 *  - activation memory: full < selective < none;
 *  - recomputed nodes (phase recompute) exist only with recomputation, each after a
 *    backward node of its micro-batch (inside the backward) and before its layer's first
 *    backward node; selective recomputes no GEMM, full recomputes the layer's GEMMs but the
 *    MLP's second one;
 *  - under ZeRO-3 the recomputation adds no all-gather: it reads the parameters gathered for
 *    the layer's backward.
 * The numbers: tests/mpi/parity_recompute.sh (bitwise against no recomputation). */
#include <stdio.h>
#include <string.h>

#include "helix/error.h"
#include "helix/gpt.h"
#include "helix/graph.h"
#include "helix/mesh.h"
#include "tap.h"

struct shape {
    double act;        /* activation bytes */
    int recomputed;    /* nodes of phase recompute */
    int gemms;         /* of them, GEMMs */
    int placed;        /* every one after a backward node of its micro-batch and before its
                        * layer's backward */
    int gathers;       /* all-gathers in the graph */
};

static int is_bwd(const struct hx_node *n)
{
    return n->phase == HX_PHASE_BACKWARD_DATA || n->phase == HX_PHASE_BACKWARD_WEIGHT;
}

static int build(int dp, int recompute, struct shape *s)
{
    struct hx_gpt_config c = { .vocab_size = 256, .num_layers = 4, .num_heads = 4,
                               .hidden_size = 64, .seq_len = 32, .micro_batch_size = 2,
                               .num_micro_batches = 4 };
    struct hx_optim_config o;
    hx_optim_config_default(&o, 10);
    struct hx_mesh_request q = { .world_size = dp, .world_rank = 0, .ranks_per_node = dp,
                                 .zero_stage = dp > 1 ? 3 : 0 };
    struct hx_mesh mesh;
    struct hx_parallel_config par = { .mesh = &mesh, .recompute = recompute };
    hx_gpt_t m;
    if (hx_mesh_init(&mesh, &q, 0) != HX_OK || hx_gpt_build_parallel(&m, &c, &o, &par) != HX_OK) {
        return 0;
    }
    hx_graph_t g = hx_gpt_graph(m);
    struct hx_gpt_memory mem;
    hx_gpt_memory(m, &mem);
    memset(s, 0, sizeof *s);
    s->act = mem.activations;
    s->placed = 1;
    for (int i = 0; i < g->nnodes; i++) {
        const struct hx_node *n = &g->nodes[i];
        s->gathers += n->op == HX_OP_ALLGATHER;
        if (n->phase != HX_PHASE_RECOMPUTE) {
            continue;
        }
        s->recomputed++;
        s->gemms += n->op == HX_OP_MATMUL || n->op == HX_OP_MATMUL_GELU;
        int after = 0, before = 0;
        for (int k = i - 1; k >= 0 && !after; k--) { /* a backward node of its micro-batch */
            after = is_bwd(&g->nodes[k]) && g->nodes[k].microbatch == n->microbatch;
        }
        for (int k = i + 1; k < g->nnodes && !before; k++) { /* then its layer's backward */
            const struct hx_node *b = &g->nodes[k];
            before = is_bwd(b) && b->microbatch == n->microbatch && b->layer == n->layer &&
                     b->kind == HX_KIND_COMPUTE;
        }
        int first_bwd_of_layer = 1; /* no backward compute of its layer before it but the
                                     * zeroing of its per-micro-batch gradient buffers */
        for (int k = i - 1; k >= 0 && first_bwd_of_layer; k--) {
            const struct hx_node *b = &g->nodes[k];
            first_bwd_of_layer = !(is_bwd(b) && b->microbatch == n->microbatch &&
                                   b->layer == n->layer && b->kind == HX_KIND_COMPUTE &&
                                   b->op != HX_OP_FILL);
        }
        s->placed &= after && before && first_bwd_of_layer;
    }
    hx_gpt_destroy(m);
    return 1;
}

int main(void)
{
    tap_plan(2 * 4);
    for (int dp = 1; dp <= 2; dp++) {
        const char *where = dp == 1 ? "serial" : "ZeRO-3 dp 2";
        struct shape none = { 0 }, sel = { 0 }, full = { 0 };
        int ok = build(dp, HX_RECOMPUTE_NONE, &none) &&
                 build(dp, HX_RECOMPUTE_SELECTIVE, &sel) && build(dp, HX_RECOMPUTE_FULL, &full);
        tap_ok(ok && full.act < sel.act && sel.act < none.act,
               "%s: activation memory none %.0f KB, selective %.0f KB (%.2fx), full %.0f KB "
               "(%.2fx)", where, none.act / 1024, sel.act / 1024, sel.act / none.act,
               full.act / 1024, full.act / none.act);
        tap_ok(ok && none.recomputed == 0 && sel.recomputed > 0 &&
                   full.recomputed > sel.recomputed,
               "%s: recomputed nodes: none %d, selective %d, full %d", where, none.recomputed,
               sel.recomputed, full.recomputed);
        tap_ok(ok && sel.placed && full.placed && sel.gemms == 0 && full.gemms > 0,
               "%s: each inside the backward, before its layer's; GEMMs recomputed: selective "
               "%d, full %d", where, sel.gemms, full.gemms);
        tap_ok(ok && sel.gathers == none.gathers && full.gathers == none.gathers,
               "%s: no extra all-gather (%d, %d, %d)", where, none.gathers, sel.gathers,
               full.gathers);
    }
    return tap_exit();
}
