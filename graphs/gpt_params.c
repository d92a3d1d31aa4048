/* SPDX-License-Identifier: MIT */
/* graphs/gpt_params.c: GPT-2 and Llama at run time: the accessors of helix/gpt.h, loading a
 * batch, evaluation and the logits; states, initialisation and the step are any model's
 * (graphs/model_state.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graphs/gpt_internal.h"
#include "helix/error.h"
#include "helix/runtime.h"

hx_model_t hx_gpt_model(hx_gpt_t m)
{
    return &m->base;
}

hx_graph_t hx_gpt_graph(hx_gpt_t m)
{
    return m->base.g;
}

const struct hx_gpt_config *hx_gpt_config_of(hx_gpt_t m)
{
    return &m->cfg;
}

int hx_gpt_num_param_tensors(hx_gpt_t m)
{
    return m->base.nparams;
}

size_t hx_gpt_num_params(hx_gpt_t m)
{
    size_t n = 0; /* the whole model's, whatever this rank keeps */
    for (int i = 0; i < m->base.nparams; i++) {
        n += (size_t)m->base.pd[i].rows * (size_t)m->base.pd[i].cols;
    }
    return n;
}

hx_tensor_t hx_gpt_param(hx_gpt_t m, int i)
{
    return i >= 0 && i < m->base.nparams ? m->base.params[i] : NULL;
}

hx_tensor_t hx_gpt_grad(hx_gpt_t m, int i)
{
    return i >= 0 && i < m->base.nparams ? m->base.grads[i] : NULL;
}

hx_tensor_t hx_gpt_adam_m(hx_gpt_t m, int i)
{
    return i >= 0 && i < m->base.nparams ? m->base.adam_m[i] : NULL;
}

hx_tensor_t hx_gpt_adam_v(hx_gpt_t m, int i)
{
    return i >= 0 && i < m->base.nparams ? m->base.adam_v[i] : NULL;
}

int hx_gpt_first_optimizer_node(hx_gpt_t m)
{
    return m->base.first_opt_node;
}

int hx_gpt_realize(hx_gpt_t m)
{
    return hx_graph_realize(m->base.g);
}

int hx_gpt_scatter_state(hx_gpt_t m, int i, enum hx_state_kind k, const float *src)
{
    return hx_model_scatter_state(&m->base, i, k, src);
}

int hx_gpt_gather_state(hx_gpt_t m, int i, enum hx_state_kind k, float *dst)
{
    return hx_model_gather_state(&m->base, i, k, dst);
}

void hx_gpt_param_shape(hx_gpt_t m, int i, int *rows, int *cols)
{
    *rows = m->base.pd[i].rows;
    *cols = m->base.pd[i].cols;
}

const char *hx_gpt_param_name(hx_gpt_t m, int i)
{
    return m->base.pd[i].name;
}

const struct hx_mesh *hx_gpt_mesh(hx_gpt_t m)
{
    return &m->base.mesh;
}

void hx_gpt_memory(hx_gpt_t m, struct hx_gpt_memory *mem)
{
    memset(mem, 0, sizeof *mem);
    for (int i = 0; i < m->base.g->ntensors; i++) {
        const struct hx_tensor *t = m->base.g->tensors[i];
        double b = (double)hx_tensor_bytes(t);
        switch (t->role) {
        case HX_ROLE_PARAM: mem->params += b; break;
        case HX_ROLE_GRAD: mem->grads += b; break;
        case HX_ROLE_OPTIM: mem->optim += b; break;
        case HX_ROLE_COMM: mem->comm += b; break;
        case HX_ROLE_INPUT: mem->inputs += b; break;
        default: mem->activations += b; break;
        }
    }
    double phi = 0;
    for (int i = 0; i < m->base.nparams; i++) { /* this stage's parameters, as AMSP counts them */
        phi += m->base.pd[i].held ? (double)m->base.pd[i].lrows * m->base.pd[i].lcols : 0.0;
    }
    mem->formula_model_state = 4 * phi / m->base.mesh.sp.s + 4 * phi / m->base.mesh.sg.s +
                               8 * phi / m->base.mesh.sos.s;
}

int hx_gpt_prefetch_depth(hx_gpt_t m)
{
    return m->base.mesh.sp.s > 1 ? m->base.pf_depth : 0;
}

void hx_gpt_strand_stats(hx_gpt_t m, int *pairs, int *planned, int *uncoupled)
{
    *pairs = m->base.si_pairs;
    *planned = m->base.planned;
    *uncoupled = m->base.si_uncoupled;
}

void hx_gpt_init_params(hx_gpt_t m, uint64_t seed)
{
    hx_model_init_params(&m->base, seed);
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
    /* data-parallel rank d takes micro-batches d*Ml .. (d+1)*Ml-1 of the global batch */
    for (int mb = 0; mb < m->base.Ml; mb++) {
        size_t at = n * (size_t)(m->base.mesh.dp_rank * m->base.Ml + mb);
        int ret = hx_tensor_write(m->tokens[mb], tokens + at);
        if (ret == HX_OK) {
            ret = hx_tensor_write(m->targets[mb], targets + at);
        }
        if (ret != HX_OK) {
            return ret;
        }
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
    ret = ret == HX_OK ? hx_graph_submit(m->base.g, m->base.zero_loss_node, m->base.zero_loss_node + 1) : ret;
    for (int k = 0; k < m->base.nfwd0; k++) {
        const int *r = m->base.fwd0[k];
        ret = ret == HX_OK ? hx_graph_submit(m->base.g, r[0], r[1]) : ret;
    }
    ret = ret == HX_OK ? hx_graph_submit(m->base.g, m->base.eval_begin, m->base.g->nnodes) : ret;
    int wret = hx_graph_wait(m->base.g);
    ret = ret == HX_OK ? wret : ret;
    *loss = NAN;
    if (ret == HX_OK && !hx_runtime_simulated()) {
        hx_tensor_read(m->base.loss_sum, loss);
        *loss /= m->N;
    }
    if (ret == HX_OK && !isfinite(*loss) && !hx_runtime_simulated()) {
        ret = HX_ERR(HX_ENONFINITE, "evaluation loss is %f", *loss);
    }
    return ret;
}

int hx_gpt_read_logits(hx_gpt_t m, float *dst)
{
    if (m->base.mesh.pp > 1) {
        return HX_ERR(HX_EUNSUPPORTED, "the logits live on the last of %d pipeline stages; "
                      "sample from a run with --pipeline-model-parallel-size 1", m->base.mesh.pp);
    }
    if (m->base.mesh.tp > 1) {
        return HX_ERR(HX_EUNSUPPORTED, "the logits are split over %d tensor-parallel ranks "
                      "(each holds %d of %d vocabulary columns); sample from a run with "
                      "--tensor-model-parallel-size 1", m->base.mesh.tp, m->V, m->cfg.vocab_size);
    }
    return hx_tensor_read(m->logits, dst);
}

int hx_gpt_forward_backward(hx_gpt_t m, struct hx_step_result *r)
{
    r->lr = 0.0f;
    return hx_model_run(&m->base, m->base.first_opt_node, 0, r);
}

int hx_gpt_step(hx_gpt_t m, int step, struct hx_step_result *r)
{
    return hx_model_step(&m->base, &m->opt, step, r);
}
