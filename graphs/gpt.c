/* SPDX-License-Identifier: MIT */
/* graphs/gpt.c: the GPT-2 training step as a graph, and its forward pass.
 *   x0 = wte[tok] + wpe[pos]                                       (N,C)
 *   per layer: a = LN1(x); qkv = a Wqkv^T + bqkv; y = attn(qkv); x1 = x + y Wo^T + bo
 *              h = gelu(LN2(x1) Wfc^T + bfc); x' = x1 + h Wp^T + bp
 *   logits = LNf(xL) wte^T (tied head, (N,V)); loss = mean cross-entropy over M*B*T tokens
 * The step: zero grads; per micro-batch forward, loss sum, backward; norm; AdamW.
 * Test: tests/graphs/torch_parity.c (against PyTorch), tests/graphs/gpt_grad_fd.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphs/gpt_internal.h"
#include "helix/collectives.h"
#include "helix/error.h"
#include "helix/layers.h"
#include "helix/pipeline.h"

void hx_optim_config_default(struct hx_optim_config *o, int train_iters)
{
    o->lr = 6e-4f;
    o->min_lr = 6e-5f;
    o->warmup_iters = 0;
    o->decay_iters = train_iters;
    o->beta1 = 0.9f;
    o->beta2 = 0.95f;
    o->eps = 1e-8f;
    o->weight_decay = 0.1f;
    o->clip_grad = 1.0f;
}

int hx_gpt_config_check(const struct hx_gpt_config *c)
{
    struct { const char *name; int v; } pos[] = {
        { "vocab-size", c->vocab_size }, { "num-layers", c->num_layers },
        { "num-attention-heads", c->num_heads }, { "hidden-size", c->hidden_size },
        { "seq-length", c->seq_len }, { "micro-batch-size", c->micro_batch_size },
        { "micro-batches", c->num_micro_batches },
    };
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++) {
        if (pos[i].v < 1) {
            return HX_ERR(HX_EINVAL, "--%s is %d; it must be a positive integer", pos[i].name,
                          pos[i].v);
        }
    }
    if (c->hidden_size % c->num_heads != 0) {
        return HX_ERR(HX_EINVAL, "--hidden-size %d is not divisible by --num-attention-heads %d; "
                      "choose heads that divide the hidden size (e.g. %d)", c->hidden_size,
                      c->num_heads, c->hidden_size % 4 == 0 ? 4 : 1);
    }
    if (c->max_seq_len != 0 && c->max_seq_len < c->seq_len) {
        return HX_ERR(HX_EINVAL, "--seq-length %d exceeds the %d positions of the model; lower "
                      "--seq-length or raise --max-position-embeddings", c->seq_len,
                      c->max_seq_len);
    }
    if (c->tile_seqs < 0 || c->attn_block < 0 || c->ln_eps < 0) {
        return HX_ERR(HX_EINVAL, "tile_seqs (%d), attn_block (%d) and ln_eps (%g) must not be "
                      "negative", c->tile_seqs, c->attn_block, (double)c->ln_eps);
    }
    long long rows = (long long)c->seq_len * c->micro_batch_size;
    if (rows * c->vocab_size > (1LL << 31) || rows * 4 * c->hidden_size > (1LL << 31)) {
        return HX_ERR(HX_EINVAL, "micro-batch of %lld tokens makes a logits tensor of %lld "
                      "elements (limit 2^31); lower --micro-batch-size or --seq-length", rows,
                      rows * c->vocab_size);
    }
    return HX_OK;
}

static hx_tensor_t act(struct hx_gpt *m, const char *name, int cols)
{
    int tile = m->cfg.seq_len * m->cfg.tile_seqs;
    return hx_graph_tensor(m->g, name, HX_F32, HX_ROLE_ACTIVATION, m->N, cols, tile);
}

static hx_tensor_t actf(struct hx_gpt *m, int cols, const char *fmt, int l)
{
    char name[HX_NAME_MAX];
    snprintf(name, sizeof name, fmt, l);
    return act(m, name, cols);
}

/* A tensor of the sequence-parallel region: Ns rows, every tile 1/tp of the full tile, so
 * tile i of the shard gathers into tile i of the full tensor. */
static hx_tensor_t actf_s(struct hx_gpt *m, int cols, const char *fmt, int l)
{
    if (!m->mesh.sequence_parallel) {
        return actf(m, cols, fmt, l);
    }
    char name[HX_NAME_MAX];
    snprintf(name, sizeof name, fmt, l);
    int tile = m->cfg.seq_len * m->cfg.tile_seqs / m->mesh.tp;
    return hx_graph_tensor(m->g, name, HX_F32, HX_ROLE_ACTIVATION, m->Ns, cols, tile);
}

/* The full (N rows) companion of shard @p s: its own tensor under SP, else @p s itself. */
static hx_tensor_t full_of(struct hx_gpt *m, hx_tensor_t s, const char *suffix)
{
    if (!m->mesh.sequence_parallel) {
        return s;
    }
    char name[HX_NAME_MAX];
    snprintf(name, sizeof name, "%.32s%s", s->name, suffix);
    return act(m, name, s->cols);
}

/* Parameters with their gradient and Adam moments, in the documented order: this rank's
 * pieces (graphs/gpt_dist.c), the gradient only where this rank accumulates it and the Adam
 * states only where it runs AdamW. */
static void make_params(struct hx_gpt *m)
{
    const struct hx_gpt_config *c = &m->cfg;
    int L = c->num_layers, flat = m->mesh.sp.s > 1;
    m->nparams = 2 + L * P_PER_LAYER + 2;
    m->params = calloc((size_t)m->nparams, sizeof(hx_tensor_t));
    m->grads = calloc((size_t)m->nparams, sizeof(hx_tensor_t));
    m->adam_m = calloc((size_t)m->nparams, sizeof(hx_tensor_t));
    m->adam_v = calloc((size_t)m->nparams, sizeof(hx_tensor_t));
    HX_ASSERT(m->params && m->grads && m->adam_m && m->adam_v, "out of memory");
    hx_gpt_dist_layout(m);
    for (int i = 0; i < m->nparams; i++) {
        const struct gpt_param_dist *d = &m->pd[i];
        const char *name = d->name;
        if (!d->held) { /* another pipeline stage keeps it: no tensors here */
            continue;
        }
        /* a piece under s_p > 1 is flat; otherwise the tp-local matrix */
        int r = flat ? 1 : d->lrows;
        int k = flat ? (int)d->piece_cnt : d->lcols;
        char gname[HX_NAME_MAX + 8];
        m->params[i] = hx_graph_tensor(m->g, name, HX_F32, HX_ROLE_PARAM, r, k, 0);
        m->params[i]->weight_decay = d->rows > 1; /* 2-D weights decay; biases, LN do not */
        if (d->owns_grad) {
            snprintf(gname, sizeof gname, "%s.grad", name);
            m->grads[i] = hx_graph_tensor(m->g, gname, HX_F32, HX_ROLE_GRAD, r, k, 0);
            m->grads[i]->grad_of = m->params[i]->id;
        }
        if (d->owns_optim) {
            snprintf(gname, sizeof gname, "%s.adam_m", name);
            m->adam_m[i] = hx_graph_tensor(m->g, gname, HX_F32, HX_ROLE_OPTIM, r, k, 0);
            snprintf(gname, sizeof gname, "%s.adam_v", name);
            m->adam_v[i] = hx_graph_tensor(m->g, gname, HX_F32, HX_ROLE_OPTIM, r, k, 0);
            m->adam_m[i]->grad_of = m->adam_v[i]->grad_of = m->params[i]->id;
        }
    }
}

/* Slot k's name of activation @p name: slot 0 keeps the plain name (the one-slot graph is
 * unchanged), others get ".s<k>". */
static const char *slot_name(char *buf, size_t len, const char *name, int k)
{
    char suffix[16] = "";
    if (k > 0) {
        snprintf(suffix, sizeof suffix, ".s%d", k % 10000);
    }
    snprintf(buf, len, "%.*s%s", (int)(len - 1 - strlen(suffix)), name, suffix);
    return buf;
}

/* One micro-batch's activations, for this stage's layers */
static void make_slot(struct hx_gpt *m, int k)
{
    const struct hx_gpt_config *c = &m->cfg;
    struct gpt_slot *S = &m->slots[k];
    int C = c->hidden_size, L = c->num_layers, tp = m->mesh.tp, Cl = C / tp;
    char b[HX_NAME_MAX], n[HX_NAME_MAX];
#define SNAME(...) (snprintf(n, sizeof n, __VA_ARGS__), slot_name(b, sizeof b, n, k))
    S->res_out = calloc((size_t)L, sizeof(hx_tensor_t));
    S->layers = calloc((size_t)L, sizeof(struct gpt_layer_acts));
    HX_ASSERT(S->res_out && S->layers, "out of memory");
    S->emb = actf_s(m, C, SNAME(m->first_stage ? "emb" : "stage_in"), 0);
    S->emb_part = m->first_stage ? full_of(m, S->emb, ".part") : NULL;
    S->in2 = m->nchunks > 1 ? actf_s(m, C, SNAME("stage_in2"), 0) : NULL;
    for (int l = 0; l < L; l++) {
        struct gpt_layer_acts *a = &S->layers[l];
        if (!(l >= m->clo[0] && l < m->chi[0]) &&
            !(m->nchunks > 1 && l >= m->clo[1] && l < m->chi[1])) {
            continue; /* another stage's layer */
        }
        a->ln1 = actf_s(m, C, SNAME("h%d.ln1", l), 0);
        a->ln1_mean = actf_s(m, 1, SNAME("h%d.ln1_mean", l), 0);
        a->ln1_rstd = actf_s(m, 1, SNAME("h%d.ln1_rstd", l), 0);
        a->ln1g = full_of(m, a->ln1, ".full");
        a->qkv = actf(m, 3 * Cl, SNAME("h%d.qkv", l), 0);
        a->atty = actf(m, Cl, SNAME("h%d.atty", l), 0);
        a->att_lse = actf(m, c->num_heads / tp, SNAME("h%d.att_lse", l), 0);
        a->res_mid = actf_s(m, C, SNAME("h%d.res_mid", l), 0);
        a->ln2 = actf_s(m, C, SNAME("h%d.ln2", l), 0);
        a->ln2_mean = actf_s(m, 1, SNAME("h%d.ln2_mean", l), 0);
        a->ln2_rstd = actf_s(m, 1, SNAME("h%d.ln2_rstd", l), 0);
        a->ln2g = full_of(m, a->ln2, ".full");
        a->fch = actf(m, 4 * Cl, SNAME("h%d.fch", l), 0);
        a->fch_gelu = actf(m, 4 * Cl, SNAME("h%d.fch_gelu", l), 0);
        S->res_out[l] = actf_s(m, C, SNAME("h%d.out", l), 0);
        /* gradients of the layer's input and middle: backward-only, one set serves every
         * slot (a micro-batch's backward runs start to end before the next one's) */
        if (k == 0) {
            a->dres = actf_s(m, C, "h%d.dres", l);
            a->dres_mid = actf_s(m, C, "h%d.dres_mid", l);
        } else {
            a->dres = m->slots[0].layers[l].dres;
            a->dres_mid = m->slots[0].layers[l].dres_mid;
        }
    }
    if (m->last_stage) {
        S->lnf = actf_s(m, C, SNAME("lnf"), 0);
        S->lnf_mean = actf_s(m, 1, SNAME("lnf_mean"), 0);
        S->lnf_rstd = actf_s(m, 1, SNAME("lnf_rstd"), 0);
        S->lnfg = full_of(m, S->lnf, ".full");
        S->logits = act(m, SNAME("logits"), m->V);
        S->losses = act(m, SNAME("losses"), 1);
        S->xent_lse = act(m, SNAME("xent_lse"), 1);
    }
#undef SNAME
}

/* Point the model's activation fields at micro-batch @p mb's slot */
static void use_slot(struct hx_gpt *m, int mb)
{
    const struct gpt_slot *S = &m->slots[mb % m->nslots];
    m->emb = S->emb;
    m->emb_part = S->emb_part;
    m->res_out = S->res_out;
    m->layers = S->layers;
    m->lnf = S->lnf, m->lnf_mean = S->lnf_mean, m->lnf_rstd = S->lnf_rstd, m->lnfg = S->lnfg;
    m->logits = S->logits, m->losses = S->losses, m->xent_lse = S->xent_lse;
}

static void make_activations(struct hx_gpt *m)
{
    const struct hx_gpt_config *c = &m->cfg;
    int C = c->hidden_size;
    m->tokens = calloc((size_t)m->Ml, sizeof(hx_tensor_t));
    m->targets = calloc((size_t)m->Ml, sizeof(hx_tensor_t));
    m->slots = calloc((size_t)m->nslots, sizeof(struct gpt_slot));
    HX_ASSERT(m->tokens && m->targets && m->slots, "out of memory");
    int tile = c->seq_len * c->tile_seqs;
    for (int mb = 0; mb < m->Ml; mb++) {
        char name[HX_NAME_MAX];
        snprintf(name, sizeof name, "tokens.mb%d", mb);
        m->tokens[mb] = hx_graph_tensor(m->g, name, HX_I32, HX_ROLE_INPUT, m->N, 1, tile);
        snprintf(name, sizeof name, "targets.mb%d", mb);
        m->targets[mb] = hx_graph_tensor(m->g, name, HX_I32, HX_ROLE_INPUT, m->N, 1, tile);
    }
    int tp = m->mesh.tp, Cl = C / tp;          /* tp-local columns of the split GEMMs */
    for (int k = 0; k < m->nslots; k++) {
        make_slot(m, k);
    }
    use_slot(m, 0);
    for (int p = 0; p < 2; p++) {
        m->bwd[p].dfch_gelu = actf(m, 4 * Cl, "bwd%d.dfch_gelu", p);
        m->bwd[p].dfch = actf(m, 4 * Cl, "bwd%d.dfch", p);
        m->bwd[p].dln2 = actf_s(m, C, "bwd%d.dln2", p);
        m->bwd[p].dln1 = actf_s(m, C, "bwd%d.dln1", p);
        m->bwd[p].dln2_part = full_of(m, m->bwd[p].dln2, ".part");
        m->bwd[p].dln1_part = full_of(m, m->bwd[p].dln1, ".part");
        m->bwd[p].datty = actf(m, Cl, "bwd%d.datty", p);
        m->bwd[p].dqkv = actf(m, 3 * Cl, "bwd%d.dqkv", p);
    }
    m->branch_out = act(m, "branch_out", C);
    m->branch_s = m->mesh.sequence_parallel ? actf_s(m, C, "branch_s", 0) : m->branch_out;
    if (m->last_stage) {
        m->dlnf = actf_s(m, C, "dlnf", 0);
        m->dlnf_part = full_of(m, m->dlnf, ".part");
    }
    /* the gradient of the stage's output: from the head, or received from the next stage */
    m->dtop = actf_s(m, C, "dtop", 0);
    if (m->mesh.sequence_parallel) {
        m->dy_full = act(m, "dy.full", C);
        m->dmid_full = act(m, "dres_mid.full", C);
    }
    if (tp > 1 && m->last_stage) { /* every vocabulary shard's (lse, target logit) per row */
        m->xent_stats = act(m, "xent_stats", 2);
        m->xent_all = hx_graph_tensor(m->g, "xent_stats.all", HX_F32, HX_ROLE_ACTIVATION,
                                      tp * m->N, 2, tp * tile);
    }
    m->loss_sum = hx_graph_tensor(m->g, "loss_sum", HX_F64, HX_ROLE_SCALAR, 1, 1, 0);
    m->gnorm_sumsq = hx_graph_tensor(m->g, "gnorm_sumsq", HX_F64, HX_ROLE_SCALAR, 1, 1, 0);
}

/* The loss of the logits in place: the serial cross-entropy, or under tensor parallelism
 * the vocabulary-parallel one (each shard's log-sum-exp and target logit, gathered over tp,
 * combined the same way on every tp rank).  With @p grad the logits become dlogits. */
static void emit_loss(struct hx_gpt *m, hx_tensor_t targets, int grad)
{
    const struct hx_gpt_config *c = &m->cfg;
    hx_graph_t g = m->g;
    /* scale 1/(M*B*T) over the whole global batch: accumulated gradients are its mean */
    float scale = 1.0f / ((float)c->num_micro_batches * (float)m->N);
    if (m->mesh.tp == 1) {
        if (grad) {
            hx_xent_fused(g, m->losses, m->xent_lse, m->logits, targets, scale);
        } else {
            hx_xent_fwd(g, m->losses, m->xent_lse, m->logits, targets);
        }
    } else {
        int v0 = m->mesh.tp_rank * m->V;
        hx_xent_vp_stats(g, m->xent_stats, m->logits, targets, v0);
        hx_allgather_tiles(g, HX_GROUP_TP, m->xent_all, m->xent_stats);
        hx_xent_vp(g, m->losses, m->xent_lse, m->logits, targets, m->xent_all, v0, m->mesh.tp,
                   grad, scale);
    }
    hx_reduce(g, m->loss_sum, m->losses, 0);
}

int hx_gpt_vstage_rank(const struct hx_gpt *m, int v)
{
    return hx_pipeline_stage_of(m->par.pipeline_schedule, m->mesh.pp, v);
}

/* Virtual stages v and v+1 talk on the down channels (pp, pp_bwd) while v+1 < p, and on the
 * channels of the way back up a folded pipeline (fold_f, fold_b) after the turn: one channel
 * per stream, so no stream waits behind another on a token. */
int hx_gpt_edge_channel(const struct hx_gpt *m, int v, int backward)
{
    if (v + 1 < m->mesh.pp) {
        return backward ? HX_GROUP_PP_BWD : HX_GROUP_PP;
    }
    return backward ? HX_GROUP_FOLD_B : HX_GROUP_FOLD_F;
}

/* The forward of chunk c of micro-batch mb: its input (the embedding, or the previous
 * virtual stage's output received tile by tile), its layers, and its output (sent on, or
 * the head and the loss after the last virtual stage). */
static void emit_forward(struct hx_gpt *m, int mb, int c)
{
    const struct hx_gpt_config *cf = &m->cfg;
    hx_graph_t g = m->g;
    hx_tensor_t *P = m->pfull;
    int tp0 = m->mesh.tp_rank == 0, heads = cf->num_heads / m->mesh.tp;
    int a = m->cv[c], b = a + m->cvn[c] - 1, lo = m->clo[c], hi = m->chi[c];
    use_slot(m, mb);
    g->cur.phase = HX_PHASE_FORWARD;
    g->cur.microbatch = mb;
    g->cur.layer = -1;
    hx_tensor_t x = c == 0 ? m->emb : m->slots[mb % m->nslots].in2;
    if (a == 0) {
        if (mb == 0) { /* embedding and head parameters stay gathered for the whole step */
            hx_gpt_dist_gather_params(m, -1);
        }
        hx_gpt_dist_gather_params(m, 0);
        if (m->mesh.tp == 1) {
            hx_embed_fwd(g, m->emb_part, m->tokens[mb], P[P_WTE], P[P_WPE], cf->seq_len);
        } else { /* each tp rank looks up its vocabulary rows; tp rank 0 adds the positions */
            hx_embed_fwd_vp(g, m->emb_part, m->tokens[mb], P[P_WTE], P[P_WPE], cf->seq_len,
                            m->mesh.tp_rank * m->V, cf->vocab_size, tp0);
        }
        hx_gpt_tp_reduce(m, m->emb, m->emb_part);
    } else { /* the previous virtual stage's output, tile by tile (sequence shards under SP) */
        hx_recv_tiles(g, hx_gpt_edge_channel(m, a - 1, 0), x, hx_gpt_vstage_rank(m, a - 1));
    }
    g->cur.layer = lo;
    struct gpt_layer_acts *a0 = &m->layers[lo];
    hx_layernorm_fwd(g, a0->ln1, a0->ln1_mean, a0->ln1_rstd, x, P[P_LAYER(lo, P_LN1_W)],
                     P[P_LAYER(lo, P_LN1_B)], cf->ln_eps);
    for (int l = lo; l < hi; l++) {
        struct gpt_layer_acts *al = &m->layers[l];
        g->cur.layer = l;
        if (l + 1 < cf->num_layers) { /* the next layer's parameters, during this one */
            hx_gpt_dist_gather_params(m, l + 1);
        }
        hx_tensor_t ln1 = hx_gpt_tp_gather(m, al->ln1g, al->ln1);
        hx_linear_fwd(g, al->qkv, ln1, P[P_LAYER(l, P_QKV_W)], P[P_LAYER(l, P_QKV_B)]);
        hx_attention_fwd(g, al->atty, al->att_lse, al->qkv, cf->seq_len, heads, cf->attn_block);
        /* row-parallel: partial sums over tp, the bias added once */
        hx_linear_fwd(g, m->branch_out, al->atty, P[P_LAYER(l, P_PROJ_W)],
                      tp0 ? P[P_LAYER(l, P_PROJ_B)] : NULL);
        hx_gpt_tp_reduce(m, m->branch_s, m->branch_out);
        /* x1 = x + attention branch, and LN2(x1), in one pass */
        hx_add_layernorm_fwd(g, al->res_mid, al->ln2, al->ln2_mean, al->ln2_rstd, x,
                             m->branch_s, P[P_LAYER(l, P_LN2_W)], P[P_LAYER(l, P_LN2_B)],
                             cf->ln_eps);
        hx_tensor_t ln2 = hx_gpt_tp_gather(m, al->ln2g, al->ln2);
        hx_linear_gelu_fwd(g, al->fch, al->fch_gelu, ln2, P[P_LAYER(l, P_FC_W)],
                           P[P_LAYER(l, P_FC_B)]);
        hx_linear_fwd(g, m->branch_out, al->fch_gelu, P[P_LAYER(l, P_FCPROJ_W)],
                      tp0 ? P[P_LAYER(l, P_FCPROJ_B)] : NULL);
        hx_gpt_tp_reduce(m, m->branch_s, m->branch_out);
        /* the block's output x1 + MLP branch, fused with the LayerNorm that reads it next:
         * the next block's LN1, or the final LN; at the end of a chunk that is not the
         * model's last the next LN is another chunk's, so only the sum */
        int last = l + 1 == cf->num_layers;
        if (l + 1 == hi && !last) {
            hx_add(g, m->res_out[l], al->res_mid, m->branch_s);
        } else {
            struct gpt_layer_acts *n = last ? NULL : &m->layers[l + 1];
            hx_add_layernorm_fwd(g, m->res_out[l], last ? m->lnf : n->ln1,
                                 last ? m->lnf_mean : n->ln1_mean,
                                 last ? m->lnf_rstd : n->ln1_rstd, al->res_mid, m->branch_s,
                                 P[last ? m->nparams - 2 : P_LAYER(l + 1, P_LN1_W)],
                                 P[last ? m->nparams - 1 : P_LAYER(l + 1, P_LN1_B)],
                                 cf->ln_eps);
        }
        x = m->res_out[l];
    }
    g->cur.layer = -1;
    if (b + 1 < m->nvs) {
        hx_send_tiles(g, hx_gpt_edge_channel(m, b, 0), x, hx_gpt_vstage_rank(m, b + 1));
        return;
    }
    hx_tensor_t lnf = hx_gpt_tp_gather(m, m->lnfg, m->lnf);
    hx_linear_fwd(g, m->logits, lnf, P[P_WTE], NULL); /* the tied head: a vocabulary shard */
}

/* What the mesh asks of the model, checked again here because a mesh can be built without
 * the model's shape (hx_mesh_init reports the same problems from the command line). */
static int check_mesh(const struct hx_gpt_config *c, const struct hx_mesh *ms, int sched)
{
    struct hx_mesh_request r = {
        .world_size = ms->world_size, .world_rank = ms->world_rank, .tp = ms->tp, .pp = ms->pp,
        .ranks_per_node = ms->ranks_per_node, .sequence_parallel = ms->sequence_parallel,
        .shard_p = ms->sp.s, .shard_g = ms->sg.s, .shard_os = ms->sos.s,
        .num_heads = c->num_heads, .hidden_size = c->hidden_size, .vocab_size = c->vocab_size,
        .num_layers = c->num_layers, .seq_len = c->seq_len,
        .micro_batches = c->num_micro_batches,
    };
    struct hx_mesh check;
    int ret = hx_mesh_init(&check, &r, 0);
    int nvs = hx_pipeline_virtual_stages(sched, ms->pp);
    if (ret == HX_OK && sched == HX_PIPE_FOLD && c->num_layers % nvs != 0) {
        ret = HX_ERR(HX_EINVAL, "--pipeline-fold cuts --num-layers %d into 2 x %d = %d equal "
                     "chunks; choose a layer count divisible by %d", c->num_layers, ms->pp,
                     nvs, nvs);
    }
    if (ret == HX_OK && (sched < HX_PIPE_1F1B || sched > HX_PIPE_FOLD)) {
        ret = HX_ERR(HX_EINVAL, "pipeline schedule %d is not an enum hx_pipeline_schedule",
                     sched);
    }
    return ret;
}

int hx_gpt_build_parallel(hx_gpt_t *out, const struct hx_gpt_config *cfg,
                          const struct hx_optim_config *o, const struct hx_parallel_config *par)
{
    int ret = hx_gpt_config_check(cfg);
    struct hx_mesh serial;
    hx_mesh_serial(&serial);
    const struct hx_mesh *mesh = par != NULL && par->mesh != NULL ? par->mesh : &serial;
    if (ret == HX_OK) {
        ret = check_mesh(cfg, mesh, par != NULL ? par->pipeline_schedule : HX_PIPE_1F1B);
    }
    if (ret != HX_OK) {
        return ret;
    }
    struct hx_gpt *m = calloc(1, sizeof *m);
    if (m == NULL || (m->g = hx_graph_create()) == NULL) {
        free(m);
        return HX_ERR(HX_ENOMEM, "GPT model struct");
    }
    m->cfg = *cfg;
    m->opt = *o;
    m->mesh = *mesh;
    if (par != NULL) {
        m->par = *par;
    }
    m->par.mesh = &m->mesh;
    if (m->cfg.max_seq_len == 0) {
        m->cfg.max_seq_len = cfg->seq_len;
    }
    if (m->cfg.tile_seqs == 0) {
        /* the larger the tile the better OpenBLAS does (measured on configs B and C: 512 and
         * 1024 rows are 5-10% faster than 128 or 256), up to 1024 rows, but at least two tiles
         * per micro-batch keep both cores busy.  A function of the configuration only, never
         * of the worker count or the mesh. */
        int want = (1024 + cfg->seq_len - 1) / cfg->seq_len;
        int half = (cfg->micro_batch_size + 1) / 2;
        m->cfg.tile_seqs = want < half ? want : half;
    }
    if (m->cfg.tile_seqs > cfg->micro_batch_size) {
        m->cfg.tile_seqs = cfg->micro_batch_size;
    }
    if (m->cfg.ln_eps == 0) {
        m->cfg.ln_eps = 1e-5f;
    }
    m->N = cfg->seq_len * cfg->micro_batch_size;
    m->Ns = m->mesh.sequence_parallel ? m->N / m->mesh.tp : m->N;
    m->Ml = cfg->num_micro_batches / m->mesh.dp;
    m->V = cfg->vocab_size / m->mesh.tp;
    int s = m->mesh.pp_rank, p = m->mesh.pp, sched = m->par.pipeline_schedule;
    m->nvs = hx_pipeline_virtual_stages(sched, p);
    m->Lc = cfg->num_layers / m->nvs;
    m->nchunks = hx_pipeline_chunks(sched, p, s, m->cv, m->cvn);
    for (int c = 0; c < m->nchunks; c++) {
        m->clo[c] = m->cv[c] * m->Lc;
        m->chi[c] = (m->cv[c] + m->cvn[c]) * m->Lc;
    }
    m->first_stage = hx_gpt_vstage_rank(m, 0) == s;
    m->last_stage = hx_gpt_vstage_rank(m, m->nvs - 1) == s;
    m->wte_copies = hx_gpt_vstage_rank(m, 0) != hx_gpt_vstage_rank(m, m->nvs - 1) ? 2 : 1;
    /* micro-batches in flight, each with its activations (1F1B: p - s) */
    m->nslots = hx_pipeline_in_flight(sched, p, s, m->Ml);
    int lanes[HX_GROUP_COUNT];
    for (int k = 0; k < HX_GROUP_COUNT; k++) { /* a group inside one node talks intra-node */
        lanes[k] = m->mesh.groups[k].intra_node ? HX_LANE_COMM_INTRA : HX_LANE_COMM_INTER;
    }
    hx_collectives_set_lanes(m->g, lanes, HX_GROUP_COUNT);
    make_params(m);
    make_activations(m);
    hx_gpt_dist_tensors(m);

    hx_gpt_emit_zero(m);
    struct hx_pipe_task *tasks = malloc(sizeof *tasks * 4 * (size_t)m->Ml);
    HX_ASSERT(tasks != NULL, "out of memory");
    int ntasks = hx_pipeline_tasks(sched, p, s, m->Ml, tasks);
    for (int k = 0; k < ntasks; k++) {
        const struct hx_pipe_task *t = &tasks[k];
        if (t->fwd) {
            int begin = m->g->nnodes;
            emit_forward(m, t->mb, t->chunk);
            if (t->mb == 0) { /* evaluation reruns micro-batch 0's forward, loss aside */
                m->fwd0[m->nfwd0][0] = begin;
                m->fwd0[m->nfwd0++][1] = m->g->nnodes;
            }
            if (m->cv[t->chunk] + m->cvn[t->chunk] == m->nvs) {
                /* training needs the loss and its gradient: one pass over the logits */
                emit_loss(m, m->targets[t->mb], 1);
            }
        } else {
            use_slot(m, t->mb);
            hx_gpt_emit_backward(m, t->mb, t->chunk);
        }
    }
    free(tasks);
    use_slot(m, 0);
    hx_gpt_dist_after_backward(m);
    hx_gpt_emit_grad_norm(m);
    m->first_opt_node = m->g->nnodes;
    hx_gpt_emit_adamw(m);
    hx_gpt_dist_after_adamw(m);
    /* evaluation's tail, never part of a training step: the loss of micro-batch 0 with the
     * logits left intact (sampling reads them) */
    m->eval_begin = m->g->nnodes;
    m->g->cur.phase = HX_PHASE_FORWARD;
    m->g->cur.microbatch = 0;
    m->g->cur.layer = -1;
    if (m->last_stage) {
        emit_loss(m, m->targets[0], 0);
    }
    if (p > 1) { /* the loss lives on the last stage; every rank reports it */
        hx_allreduce(m->g, HX_GROUP_PP, 1, &m->loss_sum, HX_SUM);
    }
    /* critical path first: a priority policy (hx-prio, prio) then starts the long chains
     * (the backward's data path) before work that can wait (weight gradients); collectives
     * go before everything, so a ready one is posted at once and its transfer overlaps */
    struct hx_deps d;
    if (hx_graph_deps(m->g, &d) == HX_OK) {
        hx_graph_prioritize(m->g, &d, 1000);
        hx_deps_free(&d);
    }
    for (int i = 0; i < m->g->nnodes; i++) {
        if (m->g->nodes[i].kind == HX_KIND_COMM) {
            m->g->nodes[i].priority = 1001;
        }
    }
    *out = m;
    return HX_OK;
}

int hx_gpt_build(hx_gpt_t *out, const struct hx_gpt_config *cfg, const struct hx_optim_config *o)
{
    return hx_gpt_build_parallel(out, cfg, o, NULL);
}

void hx_gpt_destroy(hx_gpt_t m)
{
    if (m == NULL) {
        return;
    }
    hx_graph_destroy(m->g);
    free(m->params);
    free(m->grads);
    free(m->adam_m);
    free(m->adam_v);
    free(m->tokens);
    free(m->targets);
    for (int k = 0; m->slots != NULL && k < m->nslots; k++) {
        free(m->slots[k].res_out);
        free(m->slots[k].layers);
    }
    free(m->slots);
    hx_gpt_dist_free(m);
    free(m);
}
