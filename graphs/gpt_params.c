/* SPDX-License-Identifier: MIT */
/* graphs/gpt_params.c: the model at run time: realize, GPT-2 initialisation, loading a batch,
 * and running a step (set lr and t on the AdamW nodes, submit, wait, read loss and norm).
 * Initialisation draws every parameter from one generator in parameter order, so a seed
 * means the same model on every machine and worker count. */
#include <math.h>
#include <string.h>

#include "graphs/gpt_internal.h"
#include "helix/error.h"
#include "runtime/rng.h"

hx_graph_t hx_gpt_graph(hx_gpt_t m)
{
    return m->g;
}

const struct hx_gpt_config *hx_gpt_config_of(hx_gpt_t m)
{
    return &m->cfg;
}

int hx_gpt_num_param_tensors(hx_gpt_t m)
{
    return m->nparams;
}

size_t hx_gpt_num_params(hx_gpt_t m)
{
    size_t n = 0;
    for (int i = 0; i < m->nparams; i++) {
        n += hx_tensor_numel(m->params[i]);
    }
    return n;
}

hx_tensor_t hx_gpt_param(hx_gpt_t m, int i)
{
    return i >= 0 && i < m->nparams ? m->params[i] : NULL;
}

hx_tensor_t hx_gpt_grad(hx_gpt_t m, int i)
{
    return i >= 0 && i < m->nparams ? m->grads[i] : NULL;
}

hx_tensor_t hx_gpt_adam_m(hx_gpt_t m, int i)
{
    return i >= 0 && i < m->nparams ? m->adam_m[i] : NULL;
}

hx_tensor_t hx_gpt_adam_v(hx_gpt_t m, int i)
{
    return i >= 0 && i < m->nparams ? m->adam_v[i] : NULL;
}

int hx_gpt_first_optimizer_node(hx_gpt_t m)
{
    return m->first_opt_node;
}

int hx_gpt_realize(hx_gpt_t m)
{
    return hx_graph_realize(m->g);
}

void hx_gpt_init_params(hx_gpt_t m, uint64_t seed)
{
    struct hx_rng rng;
    hx_rng_seed(&rng, seed);
    /* GPT-2: residual projections scaled by 1/sqrt(2L) so the stream's variance stays put */
    double resid_std = 0.02 / sqrt(2.0 * m->cfg.num_layers);
    for (int i = 0; i < m->nparams; i++) {
        hx_tensor_t p = m->params[i];
        int k = i >= 2 && i < m->nparams - 2 ? (i - 2) % P_PER_LAYER : -1;
        int is_ln_w = k == P_LN1_W || k == P_LN2_W || i == m->nparams - 2;
        int is_resid = k == P_PROJ_W || k == P_FCPROJ_W;
        float *x = hx_f32(p);
        size_t n = hx_tensor_numel(p);
        hx_tensor_begin_access(p, 'w');
        for (size_t j = 0; j < n; j++) {
            if (is_ln_w) {
                x[j] = 1.0f;
            } else if (p->rows == 1) {
                x[j] = 0.0f;   /* biases and LayerNorm shifts */
            } else {
                x[j] = (float)(hx_rng_normal(&rng) * (is_resid ? resid_std : 0.02));
            }
        }
        hx_tensor_end_access(p);
        hx_tensor_t s[2] = { m->adam_m[i], m->adam_v[i] };
        for (int q = 0; q < 2; q++) {
            hx_tensor_begin_access(s[q], 'w');
            memset(s[q]->data, 0, hx_tensor_bytes(s[q]));
            hx_tensor_end_access(s[q]);
        }
    }
}

int hx_gpt_set_batch(hx_gpt_t m, const int32_t *tokens, const int32_t *targets)
{
    const struct hx_gpt_config *c = &m->cfg;
    size_t n = (size_t)m->N;
    for (size_t i = 0; i < n * (size_t)c->num_micro_batches; i++) {
        if (tokens[i] < 0 || tokens[i] >= c->vocab_size || targets[i] < 0 ||
            targets[i] >= c->vocab_size) {
            return HX_ERR(HX_EINVAL, "batch position %zu: token %d / target %d outside the "
                          "vocabulary [0, %d); check --vocab-size against the data", i,
                          tokens[i], targets[i], c->vocab_size);
        }
    }
    for (int mb = 0; mb < c->num_micro_batches; mb++) {
        int ret = hx_tensor_write(m->tokens[mb], tokens + n * mb);
        if (ret == HX_OK) {
            ret = hx_tensor_write(m->targets[mb], targets + n * mb);
        }
        if (ret != HX_OK) {
            return ret;
        }
    }
    return HX_OK;
}

static double read_scalar(hx_tensor_t t)
{
    double v = NAN;
    hx_tensor_read(t, &v);
    return v;
}

/* Submit nodes [0, last), wait, read loss and norm.  @p step (1-based, 0 = not a training
 * step) names the step in the message of a non-finite loss. */
static int run(hx_gpt_t m, int last, int step, struct hx_step_result *r)
{
    int ret = hx_graph_submit(m->g, 0, last);
    int wret = hx_graph_wait(m->g);
    if (ret == HX_OK) {
        ret = wret;
    }
    if (ret != HX_OK) {
        return ret;
    }
    double tokens = (double)m->N * m->cfg.num_micro_batches;
    r->loss = read_scalar(m->loss_sum) / tokens;
    r->grad_norm = sqrt(read_scalar(m->gnorm_sumsq));
    if (!isfinite(r->loss)) {
        return HX_ERR(HX_ENONFINITE, "step %d: the loss is %f, not finite (gradient norm %f): "
                      "training diverged; lower --lr or raise --lr-warmup-iters, and restart "
                      "from the last checkpoint", step, r->loss, r->grad_norm);
    }
    return HX_OK;
}

int hx_gpt_eval(hx_gpt_t m, const int32_t *tokens, const int32_t *targets, double *loss)
{
    for (int i = 0; i < m->N; i++) {
        if (tokens[i] < 0 || tokens[i] >= m->cfg.vocab_size || targets[i] < 0 ||
            targets[i] >= m->cfg.vocab_size) {
            return HX_ERR(HX_EINVAL, "evaluation batch position %d: token %d / target %d "
                          "outside the vocabulary [0, %d)", i, tokens[i], targets[i],
                          m->cfg.vocab_size);
        }
    }
    int ret = hx_tensor_write(m->tokens[0], tokens);
    ret = ret == HX_OK ? hx_tensor_write(m->targets[0], targets) : ret;
    ret = ret == HX_OK ? hx_graph_submit(m->g, m->zero_loss_node, m->zero_loss_node + 1) : ret;
    ret = ret == HX_OK ? hx_graph_submit(m->g, m->fwd0_begin, m->fwd0_end) : ret;
    ret = ret == HX_OK ? hx_graph_submit(m->g, m->eval_begin, m->g->nnodes) : ret;
    int wret = hx_graph_wait(m->g);
    ret = ret == HX_OK ? wret : ret;
    *loss = ret == HX_OK ? read_scalar(m->loss_sum) / m->N : NAN;
    if (ret == HX_OK && !isfinite(*loss)) {
        ret = HX_ERR(HX_ENONFINITE, "evaluation loss is %f", *loss);
    }
    return ret;
}

int hx_gpt_read_logits(hx_gpt_t m, float *dst)
{
    return hx_tensor_read(m->logits, dst);
}

int hx_gpt_forward_backward(hx_gpt_t m, struct hx_step_result *r)
{
    r->lr = 0.0f;
    return run(m, m->first_opt_node, 0, r);
}

int hx_gpt_step(hx_gpt_t m, int step, struct hx_step_result *r)
{
    float lr = hx_lr_at(&m->opt, step);
    for (int i = m->first_opt_node; i < m->g->nnodes; i++) {
        struct hx_node *n = &m->g->nodes[i];
        if (n->op == HX_OP_ADAMW) {
            n->args.adamw.lr = lr;
            n->args.adamw.t = step + 1;
        }
    }
    r->lr = lr;
    return run(m, m->eval_begin, step + 1, r);
}
