/* SPDX-License-Identifier: MIT */
/* graphs/gpt_order.c: the order in which a stage emits its micro-batches' work.  The stage's
 * tasks (a chunk's forward F or backward B of one micro-batch) come from its pipeline
 * schedule (include/helix/pipeline.h); each is emitted whole, or, with two strands, a B
 * and an F of another micro-batch next to each other in that order form an SI block
 * (papers.md §2.6): emitted interleaved layer by layer, B's layer first, so the forward
 * takes the activation set the backward just gave back and a scheduler finds the two ready
 * side by side.  An SI block never pairs a micro-batch with itself (its B needs its F's
 * results), and interleaving two independent tasks keeps the step's numbers: their only
 * shared data are the recycled sets, whose reuse StarPU orders.
 * Test: tests/graphs/strands.c (interleaving, strand marks, memory), parity_strands.sh. */
#include <stdlib.h>

#include "graphs/gpt_internal.h"
#include "helix/error.h"
#include "helix/pipeline.h"

static void forward_whole(struct hx_gpt *m, const struct hx_pipe_task *t, int with_loss)
{
    int c = t->chunk, begin = m->g->nnodes;
    hx_gpt_forward_begin(m, t->mb, c);
    for (int l = m->clo[c]; l < m->chi[c]; l++) {
        hx_gpt_forward_layer(m, t->mb, c, l);
    }
    hx_gpt_forward_end(m, t->mb, c);
    if (t->mb == 0) { /* evaluation reruns micro-batch 0's forward, loss aside */
        HX_ASSERT(m->nfwd0 < 2, "micro-batch 0's forward in more than two chunks");
        m->fwd0[m->nfwd0][0] = begin;
        m->fwd0[m->nfwd0++][1] = m->g->nnodes;
    }
    if (with_loss && m->cv[c] + m->cvn[c] == m->nvs) {
        /* training needs the loss and its gradient: one pass over the logits */
        hx_gpt_emit_loss(m, m->targets[t->mb], 1);
    }
}

static void backward_whole(struct hx_gpt *m, const struct hx_pipe_task *t)
{
    int c = t->chunk;
    hx_gpt_backward_begin(m, t->mb, c);
    for (int l = m->chi[c] - 1; l >= m->clo[c]; l--) {
        hx_gpt_backward_layer(m, t->mb, c, l);
    }
    hx_gpt_backward_end(m, t->mb, c);
}

/* B of one micro-batch and F of another, layer by layer: B begin, B's top layer, F begin,
 * then B and F layers alternating, then their ends.  Each forward layer also takes the set
 * of the layer after it (its last op writes that layer's LayerNorm), so every take follows
 * a give: two strands need no more layer sets than one. */
static void si_block(struct hx_gpt *m, const struct hx_pipe_task *b, const struct hx_pipe_task *f)
{
    int bl = m->chi[b->chunk] - 1, blo = m->clo[b->chunk];
    int fl = m->clo[f->chunk], fhi = m->chi[f->chunk];
    HX_ASSERT(f->mb != 0, "micro-batch 0's forward in an SI block");
    hx_gpt_backward_begin(m, b->mb, b->chunk);
    if (bl >= blo) {
        hx_gpt_backward_layer(m, b->mb, b->chunk, bl--);
    }
    hx_gpt_forward_begin(m, f->mb, f->chunk);
    while (bl >= blo || fl < fhi) {
        if (bl >= blo) {
            hx_gpt_backward_layer(m, b->mb, b->chunk, bl--);
        }
        if (fl < fhi) {
            hx_gpt_forward_layer(m, f->mb, f->chunk, fl++);
        }
    }
    hx_gpt_backward_end(m, b->mb, b->chunk);
    hx_gpt_forward_end(m, f->mb, f->chunk);
    if (m->cv[f->chunk] + m->cvn[f->chunk] == m->nvs) {
        hx_gpt_emit_loss(m, m->targets[f->mb], 1);
    }
}

void hx_gpt_emit_micro_batches(struct hx_gpt *m)
{
    struct hx_pipe_task *t = malloc(sizeof *t * 4 * (size_t)m->Ml);
    HX_ASSERT(t != NULL, "out of memory");
    int n = hx_pipeline_tasks(m->par.pipeline_schedule, m->mesh.pp, m->mesh.pp_rank, m->Ml, t);
    for (int k = 0; k < n; k++) {
        int pair = m->strands && k + 1 < n && t[k].fwd != t[k + 1].fwd &&
                   t[k].mb != t[k + 1].mb && t[t[k].fwd ? k : k + 1].mb != 0;
        if (pair) {
            const struct hx_pipe_task *f = t[k].fwd ? &t[k] : &t[k + 1];
            const struct hx_pipe_task *b = t[k].fwd ? &t[k + 1] : &t[k];
            si_block(m, b, f);
            k++;
        } else if (t[k].fwd) {
            forward_whole(m, &t[k], 1);
        } else {
            backward_whole(m, &t[k]);
        }
    }
    free(t);
}
