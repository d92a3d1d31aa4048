/* SPDX-License-Identifier: MIT */
/* tests/graphs/strands.c: two strands (DHelix, --strands) as graph structure, built without
 * running (serial, stage 0 of a pp=2 1F1B pipeline, stages 0 and 1 of a folded one):
 *  - every node of a micro-batch carries its strand: alpha for even micro-batches, beta for
 *    odd ones, or in the folded W by groups of p (hx_pipeline_strand; none without strands);
 *  - SI blocks: a forward node of micro-batch j+1 sits between backward nodes of j, so a
 *    scheduler finds them ready side by side; the two are always of different strands (two
 *    of one strand would share its tp channel and run their collectives in lock-step);
 *  - the forward reuses the activation sets the backward gives back: the activation memory
 *    of two strands stays within 1.1x of one strand's (DHelix's target). */
#include <stdio.h>
#include <string.h>

#include "helix/error.h"
#include "helix/gpt.h"
#include "helix/graph.h"
#include "helix/mesh.h"
#include "helix/pipeline.h"
#include "tap.h"

struct shape {
    int marks_ok;     /* strand of every micro-batch node as expected */
    int interleaved;  /* SI blocks found: F(j+1) nodes between B(j) nodes */
    int same_strand;  /* an SI block of two micro-batches of one strand */
    double act_bytes; /* activation memory */
};

static int is_fwd(const struct hx_node *n)
{
    return n->phase == HX_PHASE_FORWARD;
}

static int build(int strands, int pp, int rank, int L, int sched, struct shape *s)
{
    struct hx_gpt_config c = { .vocab_size = 256, .num_layers = L, .num_heads = 4,
                               .hidden_size = 64, .seq_len = 32, .micro_batch_size = 2,
                               .num_micro_batches = 8 };
    struct hx_optim_config o;
    hx_optim_config_default(&o, 10);
    struct hx_mesh_request q = { .world_size = pp, .world_rank = rank, .pp = pp };
    struct hx_mesh mesh;
    struct hx_parallel_config par = { .mesh = &mesh, .strands = strands,
                                      .pipeline_schedule = sched };
    hx_gpt_t m;
    if (hx_mesh_init(&mesh, &q, 0) != HX_OK || hx_gpt_build_parallel(&m, &c, &o, &par) != HX_OK) {
        return 0;
    }
    hx_graph_t g = hx_gpt_graph(m);
    memset(s, 0, sizeof *s);
    s->marks_ok = 1;
    int first_opt = hx_gpt_first_optimizer_node(m);
    for (int i = 0; i < first_opt; i++) {
        const struct hx_node *n = &g->nodes[i];
        if (n->phase == HX_PHASE_OPTIMIZER) { /* zeroing the accumulators: no micro-batch */
            continue;
        }
        int want = !strands ? HX_STRAND_NONE
                   : hx_pipeline_strand(sched, pp, n->microbatch) ? HX_STRAND_BETA
                                                                  : HX_STRAND_ALPHA;
        s->marks_ok &= n->strand == want;
    }
    /* F(j+1) between B(j) nodes of a layer and of the layer below (one chunk) */
    for (int i = 0; i < first_opt; i++) {
        const struct hx_node *b1 = &g->nodes[i];
        if (is_fwd(b1) || b1->layer < 0) {
            continue;
        }
        int saw_f = 0, same = 0;
        for (int k = i + 1; k < first_opt; k++) {
            const struct hx_node *n = &g->nodes[k];
            if (is_fwd(n) && n->microbatch != b1->microbatch && n->layer >= 0) {
                saw_f = 1;
                same |= n->strand == b1->strand;
            } else if (!is_fwd(n) && n->microbatch == b1->microbatch &&
                       n->layer == b1->layer - 1) { /* same chunk */
                s->interleaved |= saw_f;
                s->same_strand |= saw_f && same;
                break;
            }
        }
    }
    struct hx_gpt_memory mem;
    hx_gpt_memory(m, &mem);
    s->act_bytes = mem.activations;
    hx_gpt_destroy(m);
    return 1;
}

int main(void)
{
    static const struct {
        const char *name;
        int pp, L, sched, rank;
    } cases[] = { { "serial", 1, 4, HX_PIPE_1F1B, 0 }, { "pp 2 1F1B, stage 0", 2, 4, HX_PIPE_1F1B, 0 },
                  { "pp 2 folded, stage 0 (8 layers)", 2, 8, HX_PIPE_FOLD, 0 },
                  { "pp 2 folded, stage 1 (8 layers)", 2, 8, HX_PIPE_FOLD, 1 } };
    int ncases = (int)(sizeof cases / sizeof cases[0]);
    tap_plan(ncases * 4);
    for (int k = 0; k < ncases; k++) {
        struct shape one, two;
        int ok = build(0, cases[k].pp, cases[k].rank, cases[k].L, cases[k].sched, &one) &&
                 build(1, cases[k].pp, cases[k].rank, cases[k].L, cases[k].sched, &two);
        tap_ok(ok && one.marks_ok && two.marks_ok, "%s: nodes carry no strand alone, alpha/beta "
               "by micro-batch (hx_pipeline_strand) with strands", cases[k].name);
        tap_ok(ok && two.interleaved && !two.same_strand, "%s: with strands a forward of one "
               "micro-batch sits between the backward nodes of another, always of the other "
               "strand", cases[k].name);
        tap_ok(ok && !one.interleaved, "%s: without strands micro-batches are emitted whole",
               cases[k].name);
        double ratio = ok ? two.act_bytes / one.act_bytes : 0;
        tap_ok(ok && ratio <= 1.1, "%s: activation memory of two strands %.0f KB, one strand "
               "%.0f KB: %.3fx (target <= 1.1x)", cases[k].name, two.act_bytes / 1024,
               one.act_bytes / 1024, ratio);
    }
    return tap_exit();
}
