/* SPDX-License-Identifier: MIT */
/* graphs/optimizer.c: the step's bookends.  Before the first micro-batch every gradient and
 * accumulator is zeroed; after the last, the squared global norm is reduced gradient by
 * gradient in parameter order (a fixed order, so the norm is bitwise reproducible), and one
 * AdamW task per parameter reads it to compute the clip factor itself, so no host round trip
 * sits between backward and update.  Learning rate: linear warmup, then cosine or linear decay
 * to min_lr, or constant (Megatron's --lr-decay-style).  Any model: it reads the parameters
 * and their distribution from struct hx_model (graphs/model_internal.h). */
#include <math.h>

#include "graphs/model_internal.h"
#include "helix/layers.h"

int hx_optim_emit_zero(struct hx_model *m)
{
    hx_graph_t g = m->g;
    g->cur.phase = HX_PHASE_OPTIMIZER;
    g->cur.layer = -1;
    g->cur.microbatch = 0;
    for (int i = 0; i < m->nparams; i++) {
        if (m->grads[i] != NULL) { /* accumulators this rank keeps (graphs/dist.c) */
            hx_fill(g, m->grads[i], 0.0f);
        }
    }
    hx_fill(g, m->gnorm_sumsq, 0.0f);
    int zero_loss = g->nnodes; /* evaluation runs this node, then micro-batch 0's forward */
    hx_fill(g, m->loss_sum, 0.0f);
    return zero_loss;
}

void hx_optim_emit_grad_norm(struct hx_model *m)
{
    hx_graph_t g = m->g;
    g->cur.phase = HX_PHASE_OPTIMIZER;
    g->cur.layer = -1;
    for (int i = 0; i < m->nparams; i++) {
        if (hx_dist_counts_in_norm(m, i)) { /* each element once in the job */
            hx_reduce(g, m->gnorm_sumsq, m->gfinal[i], 1);
        }
    }
    hx_dist_norm_reduce(m);
}

void hx_optim_emit_adamw(struct hx_model *m, const struct hx_optim_config *o)
{
    hx_graph_t g = m->g;
    g->cur.phase = HX_PHASE_OPTIMIZER;
    g->cur.layer = -1;
    for (int i = 0; i < m->nparams; i++) {
        if (!m->pd[i].owns_optim) { /* another member of the OS group updates this piece */
            continue;
        }
        struct hx_adamw_args a = {
            .lr = o->lr, .beta1 = o->beta1, .beta2 = o->beta2, .eps = o->eps,
            .weight_decay = m->params[i]->weight_decay ? o->weight_decay : 0.0f,
            .max_norm = o->clip_grad, .t = 1,
        };
        hx_adamw(g, m->params[i], m->gfinal[i], m->adam_m[i], m->adam_v[i], m->gnorm_sumsq, &a);
    }
}

float hx_lr_at(const struct hx_optim_config *o, int s)
{
    if (s < o->warmup_iters) {
        return o->lr * (float)(s + 1) / (float)o->warmup_iters;
    }
    if (o->decay_style == HX_LR_CONSTANT) {
        return o->lr;
    }
    int span = o->decay_iters - o->warmup_iters;
    double progress = (double)(s - o->warmup_iters) / (double)(span > 1 ? span : 1);
    if (progress > 1.0) {
        progress = 1.0;
    }
    double coeff = o->decay_style == HX_LR_LINEAR ? 1.0 - progress
                                                  : 0.5 * (1.0 + cos(M_PI * progress));
    return (float)(o->min_lr + coeff * (o->lr - o->min_lr));
}
