/* SPDX-License-Identifier: MIT */
/* graphs/gpt_params.c: the model at run time: realize, GPT-2 initialisation, loading a batch,
 * and running a step (set lr and t on the AdamW nodes, submit, wait, read loss and norm).
 * Initialisation draws every parameter from one generator in parameter order, so a seed
 * means the same model on every machine and worker count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graphs/gpt_internal.h"
#include "helix/comm.h"
#include "helix/error.h"
#include "helix/runtime.h"
#include "runtime/rng.h"

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
    return m->first_opt_node;
}

int hx_gpt_realize(hx_gpt_t m)
{
    return hx_graph_realize(m->base.g);
}

/* ---- shards of a parameter's state ---- */

/* The serial index along tp_dim of tp rank @p t's local index @p r: the local extent is each
 * block's 1/tp part in block order, rank t's part of block b sitting at t * block[b] / tp
 * inside it (q|k|v split separately, so heads stay whole). */
static int tp_index(const struct hx_param_dist *d, int tp, int t, int r)
{
    int full0 = 0; /* the block's first serial index */
    for (int b = 0; b < d->nblocks; b++) {
        int lb = d->block[b] / tp; /* local extent of block b */
        if (r < lb) {
            return full0 + t * lb + r;
        }
        r -= lb;
        full0 += d->block[b];
    }
    HX_ASSERT(0, "parameter %s: local index beyond its blocks", d->name);
    return -1;
}

/* Copy between the serial (rows, cols) tensor and tp rank @p t's part (tp_index).
 * to_local: full -> local, else local -> full. */
static void tp_copy(const struct hx_param_dist *d, int tp, int t, float *full, float *local,
                    int to_local)
{
    for (int r = 0; r < d->lrows; r++) {
        int fr = d->tp_dim == 0 ? tp_index(d, tp, t, r) : r;
        for (int c = 0; c < d->lcols; c++) {
            int fc = d->tp_dim == 1 ? tp_index(d, tp, t, c) : c;
            float *f = full + (size_t)fr * d->cols + fc, *l = local + (size_t)r * d->lcols + c;
            if (to_local) {
                *l = *f;
            } else {
                *f = *l;
            }
        }
    }
}

static hx_tensor_t state_tensor(hx_gpt_t m, int i, enum hx_state_kind k)
{
    return k == HX_STATE_PARAM ? m->base.params[i]
         : k == HX_STATE_ADAM_M ? m->base.adam_m[i] : m->base.adam_v[i];
}

int hx_gpt_scatter_state(hx_gpt_t m, int i, enum hx_state_kind k, const float *src)
{
    const struct hx_param_dist *d = &m->base.pd[i];
    hx_tensor_t t = state_tensor(m, i, k);
    if (t == NULL) { /* another rank of the OS group keeps it */
        return HX_OK;
    }
    float *local = malloc(sizeof(float) * (size_t)d->lrows * d->lcols);
    if (local == NULL) {
        return HX_ERR(HX_ENOMEM, "%zu bytes for parameter %s", sizeof(float) *
                      (size_t)d->lrows * d->lcols, d->name);
    }
    tp_copy(d, m->base.mesh.tp, m->base.mesh.tp_rank, (float *)src, local, 1);
    int ret = hx_tensor_write(t, local + d->piece_off);
    free(local);
    return ret;
}

static int gather_in_stage(hx_gpt_t m, int i, enum hx_state_kind k, float *dst);

/* Every rank gets the whole tensor: the stage that keeps it gathers it from its tp ranks and
 * shards, then (pipeline) its ranks broadcast it along their pipeline group. */
int hx_gpt_gather_state(hx_gpt_t m, int i, enum hx_state_kind k, float *dst)
{
    const struct hx_param_dist *d = &m->base.pd[i];
    int ret = d->held ? gather_in_stage(m, i, k, dst) : HX_OK;
    if (ret == HX_OK && m->base.mesh.pp > 1) {
        ret = hx_comm_host_bcast(HX_GROUP_PP, dst, (long)sizeof(float) * d->rows * d->cols,
                                 d->stage);
    }
    return ret;
}

static int gather_in_stage(hx_gpt_t m, int i, enum hx_state_kind k, float *dst)
{
    const struct hx_mesh *ms = &m->base.mesh;
    const struct hx_param_dist *d = &m->base.pd[i];
    long n = (long)d->lrows * d->lcols;
    int p = ms->sp.s, tp = ms->tp;
    float *piece = malloc(sizeof(float) * (size_t)d->piece_cnt);
    float *local = malloc(sizeof(float) * (size_t)n * (size_t)tp);
    long *bytes = malloc(sizeof(long) * (size_t)(p > tp ? p : tp));
    int ret = piece && local && bytes ? HX_OK : HX_ERR(HX_ENOMEM, "gathering %s (%ld elements)",
                                                       d->name, n);
    hx_tensor_t t = state_tensor(m, i, k);
    if (ret == HX_OK && t != NULL) {
        ret = hx_tensor_read(t, piece);
    }
    /* Adam states live with the piece's OS owner */
    if (ret == HX_OK && k != HX_STATE_PARAM && ms->groups[HX_GROUP_SHARD_OS].size > 1) {
        ret = hx_comm_host_bcast(HX_GROUP_SHARD_OS, piece, (long)sizeof(float) * d->piece_cnt,
                                 d->os_owner);
    }
    float *mine = local + (size_t)n * (size_t)ms->tp_rank * (tp > 1);
    if (ret == HX_OK && p > 1) { /* the pieces of the P group make the tp-local tensor */
        for (int j = 0; j < p; j++) {
            bytes[j] = (long)sizeof(float) * hx_split_count(n, p, j);
        }
        ret = hx_comm_host_allgatherv(HX_GROUP_SHARD_P, piece, (long)sizeof(float) *
                                      d->piece_cnt, mine, bytes);
    } else if (ret == HX_OK) {
        memcpy(mine, piece, sizeof(float) * (size_t)n);
    }
    if (ret == HX_OK && d->tp_dim < 0) {
        memcpy(dst, mine, sizeof(float) * (size_t)n);
    } else if (ret == HX_OK) { /* every tp rank's part into the serial layout */
        for (int j = 0; j < tp; j++) {
            bytes[j] = (long)sizeof(float) * n;
        }
        float *sendbuf = malloc(sizeof(float) * (size_t)n);
        ret = sendbuf != NULL ? HX_OK : HX_ERR(HX_ENOMEM, "gathering %s", d->name);
        if (ret == HX_OK) {
            memcpy(sendbuf, mine, sizeof(float) * (size_t)n);
            ret = hx_comm_host_allgatherv(HX_GROUP_TP, sendbuf, (long)sizeof(float) * n, local,
                                          bytes);
        }
        free(sendbuf);
        for (int j = 0; ret == HX_OK && j < tp; j++) {
            tp_copy(d, tp, j, dst, local + (size_t)n * j, 0);
        }
    }
    free(piece);
    free(local);
    free(bytes);
    return ret;
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
    if (hx_runtime_simulated()) { /* no kernel reads them; drawing a 10B model's would take
                                   * minutes of real time per simulated rank */
        return;
    }
    struct hx_rng rng;
    hx_rng_seed(&rng, seed);
    /* As each parameter's spec says (GPT-2's: graphs/gpt_spec.c).  Every rank draws every
     * value of the serial model in order and keeps its shard, so a seed means the same model
     * on every mesh. */
    for (int i = 0; i < m->base.nparams; i++) {
        const struct hx_param_dist *d = &m->base.pd[i];
        const struct hx_param_spec *s = &m->base.spec[i];
        size_t n = (size_t)d->rows * d->cols;
        float *x = malloc(sizeof(float) * n);
        HX_ASSERT(x != NULL, "out of memory initialising %s (%zu floats)", d->name, n);
        for (size_t j = 0; j < n; j++) {
            x[j] = s->init == HX_INIT_ONE ? 1.0f : s->init == HX_INIT_ZERO ? 0.0f
                 : (float)(hx_rng_normal(&rng) * s->init_std);
        }
        hx_gpt_scatter_state(m, i, HX_STATE_PARAM, x);
        memset(x, 0, sizeof(float) * n);
        hx_gpt_scatter_state(m, i, HX_STATE_ADAM_M, x);
        hx_gpt_scatter_state(m, i, HX_STATE_ADAM_V, x);
        free(x);
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
    int ret = hx_graph_submit(m->base.g, 0, last);
    int wret = hx_graph_wait(m->base.g);
    if (ret == HX_OK) {
        ret = wret;
    }
    if (ret != HX_OK) {
        return ret;
    }
    if (hx_runtime_simulated()) { /* no kernel ran: the sums hold nothing to read */
        r->loss = r->grad_norm = NAN;
        return HX_OK;
    }
    double tokens = (double)m->N * m->cfg.num_micro_batches;
    r->loss = read_scalar(m->base.loss_sum) / tokens;
    r->grad_norm = sqrt(read_scalar(m->base.gnorm_sumsq));
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
    ret = ret == HX_OK ? hx_graph_submit(m->base.g, m->zero_loss_node, m->zero_loss_node + 1) : ret;
    for (int k = 0; k < m->base.nfwd0; k++) {
        const int *r = m->base.fwd0[k];
        ret = ret == HX_OK ? hx_graph_submit(m->base.g, r[0], r[1]) : ret;
    }
    ret = ret == HX_OK ? hx_graph_submit(m->base.g, m->eval_begin, m->base.g->nnodes) : ret;
    int wret = hx_graph_wait(m->base.g);
    ret = ret == HX_OK ? wret : ret;
    *loss = ret == HX_OK && !hx_runtime_simulated() ? read_scalar(m->base.loss_sum) / m->N : NAN;
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
    return run(m, m->first_opt_node, 0, r);
}

int hx_gpt_step(hx_gpt_t m, int step, struct hx_step_result *r)
{
    float lr = hx_lr_at(&m->opt, step);
    for (int i = m->first_opt_node; i < m->base.g->nnodes; i++) {
        struct hx_node *n = &m->base.g->nodes[i];
        if (n->op == HX_OP_ADAMW) {
            n->args.adamw.lr = lr;
            n->args.adamw.t = step + 1;
        }
    }
    r->lr = lr;
    return run(m, m->eval_begin, step + 1, r);
}
