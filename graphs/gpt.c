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
#include "helix/sched.h"

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

int hx_gpt_is_gpt2(const struct hx_gpt_config *c)
{
    int mha = c->num_query_groups == 0 || c->num_query_groups == c->num_heads;
    int ffn = c->ffn_hidden_size == 0 || c->ffn_hidden_size == 4 * c->hidden_size;
    return c->normalization == HX_NORM_LAYERNORM && !c->swiglu &&
           c->position_embedding == HX_POS_LEARNED && !c->untie_embeddings && !c->disable_bias &&
           mha && ffn;
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
    struct { const char *name; int v, max; } sw[] = {
        { "normalization", c->normalization, HX_NORM_RMSNORM },
        { "position-embedding-type", c->position_embedding, HX_POS_ROPE },
        { "swiglu", c->swiglu, 1 }, { "untie-embeddings-and-output-weights",
                                      c->untie_embeddings, 1 },
        { "disable-bias-linear", c->disable_bias, 1 },
    };
    for (size_t i = 0; i < sizeof sw / sizeof sw[0]; i++) {
        if (sw[i].v < 0 || sw[i].v > sw[i].max) {
            return HX_ERR(HX_EINVAL, "--%s is %d; expected 0..%d", sw[i].name, sw[i].v,
                          sw[i].max);
        }
    }
    int G = c->num_query_groups;
    if (G < 0 || (G > 0 && c->num_heads % G != 0)) {
        return HX_ERR(HX_EINVAL, "--num-query-groups %d does not divide --num-attention-heads "
                      "%d: each key/value head serves a whole group of query heads; choose a "
                      "divisor of %d", G, c->num_heads, c->num_heads);
    }
    if (c->position_embedding == HX_POS_ROPE && (c->hidden_size / c->num_heads) % 2 != 0) {
        return HX_ERR(HX_EINVAL, "rotary embeddings rotate pairs of a head's channels, but a "
                      "head has %d (--hidden-size %d / --num-attention-heads %d); choose an "
                      "even head size", c->hidden_size / c->num_heads, c->hidden_size,
                      c->num_heads);
    }
    if (c->ffn_hidden_size < 0 || c->rotary_base < 0) {
        return HX_ERR(HX_EINVAL, "--ffn-hidden-size (%d) and --rotary-base (%g) must not be "
                      "negative", c->ffn_hidden_size, (double)c->rotary_base);
    }
    if (c->tile_seqs < 0 || c->attn_block < 0 || c->ln_eps < 0) {
        return HX_ERR(HX_EINVAL, "tile_seqs (%d), attn_block (%d) and ln_eps (%g) must not be "
                      "negative", c->tile_seqs, c->attn_block, (double)c->ln_eps);
    }
    long long rows = (long long)c->seq_len * c->micro_batch_size;
    long long fc = (c->swiglu ? 2LL : 1LL) * (c->ffn_hidden_size ? c->ffn_hidden_size
                                                                  : 4LL * c->hidden_size);
    long long widest = c->vocab_size > fc ? c->vocab_size : fc; /* logits, or the MLP's fc */
    if (rows * widest > (1LL << 31)) {
        return HX_ERR(HX_EINVAL, "micro-batch of %lld tokens makes a%s tensor of %lld elements "
                      "(limit 2^31); lower --micro-batch-size or --seq-length", rows,
                      widest == fc ? "n MLP" : " logits", rows * widest);
    }
    return HX_OK;
}

/* The loss of the logits in place: the serial cross-entropy, or under tensor parallelism
 * the vocabulary-parallel one (each shard's log-sum-exp and target logit, gathered over tp,
 * combined the same way on every tp rank).  With @p grad the logits become dlogits. */
void hx_gpt_emit_loss(struct hx_gpt *m, hx_tensor_t targets, int grad)
{
    const struct hx_gpt_config *c = &m->cfg;
    hx_graph_t g = m->base.g;
    /* scale 1/(M*B*T) over the whole global batch: accumulated gradients are its mean */
    float scale = 1.0f / ((float)c->num_micro_batches * (float)m->N);
    if (m->base.mesh.tpx == 1) {
        if (grad) {
            hx_xent_fused(g, m->losses, m->xent_lse, m->logits, targets, scale);
        } else {
            hx_xent_fwd(g, m->losses, m->xent_lse, m->logits, targets);
        }
    } else {
        int v0 = m->base.mesh.tpx_rank * m->V;
        hx_xent_vp_stats(g, m->xent_stats, m->logits, targets, v0);
        hx_allgather_tiles(g, hx_model_tp_channel(&m->base), m->xent_all, m->xent_stats);
        hx_xent_vp(g, m->losses, m->xent_lse, m->logits, targets, m->xent_all, v0, m->base.mesh.tpx,
                   grad, scale);
    }
    hx_reduce(g, m->base.loss_sum, m->losses, 0);
}

/* Virtual stages v and v+1 talk on the down channels (pp, pp_bwd) while v+1 < p, and on the
 * channels of the way back up a folded pipeline (fold_f, fold_b) after the turn: one channel
 * per stream, so no stream waits behind another on a token. */
int hx_gpt_edge_channel(const struct hx_gpt *m, int v, int backward)
{
    if (v + 1 < m->base.mesh.pp) {
        return backward ? HX_GROUP_PP_BWD : HX_GROUP_PP;
    }
    return backward ? HX_GROUP_FOLD_B : HX_GROUP_FOLD_F;
}

/* The forward of chunk c of micro-batch mb in three pieces: its input (the embedding, or the
 * previous virtual stage's output received tile by tile) and the first LayerNorm; each
 * layer; its output (sent on, or the head after the last virtual stage). */
void hx_gpt_forward_begin(struct hx_gpt *m, int mb, int c)
{
    const struct hx_gpt_config *cf = &m->cfg;
    hx_graph_t g = m->base.g;
    hx_tensor_t *P = m->base.pfull;
    int tp0 = m->base.mesh.tpx_rank == 0, a = m->base.cv[c], lo = m->base.clo[c];
    hx_gpt_take_layer(m, mb, lo);
    hx_gpt_use_mb(m, mb);
    hx_tensor_t x = c == 0 ? m->emb : m->in2;
    if (a == 0) { /* the schedule pass gathered the embedding's parameters */
        hx_tensor_t wpe = hx_gpt_pt(P, m->p_wpe); /* none with rotary positions */
        if (m->base.mesh.tpx == 1 && wpe != NULL) {
            hx_embed_fwd(g, m->emb_part, m->tokens[mb], P[m->p_wte], wpe, cf->seq_len);
        } else { /* each tp rank looks up its vocabulary rows; tp rank 0 adds the positions */
            hx_embed_fwd_vp(g, m->emb_part, m->tokens[mb], P[m->p_wte], wpe, cf->seq_len,
                            m->base.mesh.tpx_rank * m->V, cf->vocab_size, tp0 && wpe != NULL);
        }
        hx_model_tp_reduce(&m->base, m->emb, m->emb_part);
    } else { /* the previous virtual stage's output, tile by tile (sequence shards under SP) */
        hx_recv_tiles(g, hx_gpt_edge_channel(m, a - 1, 0), x, hx_model_vstage_rank(&m->base, a - 1));
    }
    g->cur.layer = lo;
    struct gpt_layer_acts *a0 = &m->layers[lo];
    hx_gpt_norm_fwd(m, a0->ln1, a0->ln1_mean, a0->ln1_rstd, x, hx_gpt_pi(m, lo, P_LN1_W),
                    hx_gpt_pi(m, lo, P_LN1_B));
}

/* Layer l's forward from its normed input (ln1, in the layer's set) and input @p x up to the
 * MLP's activation: what the backward reads, so also what full recomputation runs again. */
void hx_gpt_layer_to_gelu(struct hx_gpt *m, int l, hx_tensor_t x)
{
    hx_graph_t g = m->base.g;
    hx_tensor_t *P = m->base.pfull;
    int row_bias = hx_model_tp_adds_bias(&m->base, HX_TP_ROW);
    int col_bias = hx_model_tp_adds_bias(&m->base, HX_TP_COLUMN);
    struct gpt_layer_acts *al = &m->layers[l];
    hx_tensor_t ln1 = hx_model_tp_gather(&m->base, al->ln1g, al->ln1);
    hx_linear_fwd(g, al->qkv, ln1, P[hx_gpt_pi(m, l, P_QKV_W)],
                  col_bias ? hx_gpt_pt(P, hx_gpt_pi(m, l, P_QKV_B)) : NULL);
    hx_model_tp_reduce_y(&m->base, al->qkv); /* the grid's normal layer: partial over Y */
    hx_gpt_rope_fwd(m, al->qkv);
    hx_gpt_attention_fwd(m, al->atty, al->att_lse, al->qkv);
    /* row-parallel: partial sums over tp, the bias added once */
    hx_model_tp_partial(&m->base);
    hx_linear_fwd(g, m->branch_out, al->atty, P[hx_gpt_pi(m, l, P_PROJ_W)],
                  row_bias ? hx_gpt_pt(P, hx_gpt_pi(m, l, P_PROJ_B)) : NULL);
    hx_model_tp_reduce(&m->base, m->branch_s, m->branch_out);
    /* x1 = x + attention branch, and LN2(x1), in one pass */
    hx_gpt_add_norm_fwd(m, al->res_mid, al->ln2, al->ln2_mean, al->ln2_rstd, x, m->branch_s,
                        hx_gpt_pi(m, l, P_LN2_W), hx_gpt_pi(m, l, P_LN2_B));
    hx_tensor_t ln2 = hx_model_tp_gather(&m->base, al->ln2g, al->ln2);
    hx_gpt_mlp_in_fwd(m, l, al->fch, al->fch_gelu, ln2);
}

void hx_gpt_forward_layer(struct hx_gpt *m, int mb, int c, int l)
{
    const struct hx_gpt_config *cf = &m->cfg;
    hx_graph_t g = m->base.g;
    hx_tensor_t *P = m->base.pfull;
    int row_bias = hx_model_tp_adds_bias(&m->base, HX_TP_ROW);
    int lo = m->base.clo[c], hi = m->base.chi[c], last = l + 1 == cf->num_layers;
    if (l + 1 < hi) { /* this layer's last op writes the next one's LayerNorm */
        hx_gpt_take_layer(m, mb, l + 1);
    }
    hx_gpt_take_keep(m, mb, l); /* full recompute: the output kept apart */
    hx_gpt_use_mb(m, mb);
    struct gpt_layer_acts *al = &m->layers[l];
    hx_tensor_t x = l == lo ? (c == 0 ? m->emb : m->in2) : m->res_out[l - 1];
    hx_gpt_layer_to_gelu(m, l, x);
    hx_model_tp_partial(&m->base);
    hx_linear_fwd(g, m->branch_out, al->fch_gelu, P[hx_gpt_pi(m, l, P_FCPROJ_W)],
                  row_bias ? hx_gpt_pt(P, hx_gpt_pi(m, l, P_FCPROJ_B)) : NULL);
    hx_model_tp_reduce(&m->base, m->branch_s, m->branch_out);
    /* the block's output x1 + MLP branch, fused with the LayerNorm that reads it next: the
     * next block's LN1, or the final LN; at the end of a chunk that is not the model's last
     * the next LN is another chunk's, so only the sum */
    if (l + 1 == hi && !last) {
        hx_add(g, m->res_out[l], al->res_mid, m->branch_s);
    } else {
        struct gpt_layer_acts *n = last ? NULL : &m->layers[l + 1];
        hx_gpt_add_norm_fwd(m, m->res_out[l], last ? m->lnf : n->ln1,
                            last ? m->lnf_mean : n->ln1_mean, last ? m->lnf_rstd : n->ln1_rstd,
                            al->res_mid, m->branch_s,
                            last ? m->p_lnf_w : hx_gpt_pi(m, l + 1, P_LN1_W),
                            last ? m->p_lnf_b : hx_gpt_pi(m, l + 1, P_LN1_B));
    }
    hx_gpt_recompute_forward_done(m, mb, l);
}

void hx_gpt_forward_end(struct hx_gpt *m, int mb, int c)
{
    hx_graph_t g = m->base.g;
    int b = m->base.cv[c] + m->base.cvn[c] - 1, hi = m->base.chi[c];
    hx_gpt_use_mb(m, mb);
    if (b + 1 < m->base.nvs) {
        hx_send_tiles(g, hx_gpt_edge_channel(m, b, 0), m->res_out[hi - 1],
                      hx_model_vstage_rank(&m->base, b + 1));
        return;
    }
    hx_tensor_t lnf = hx_model_tp_gather(&m->base, m->lnfg, m->lnf);
    /* the output layer (the tied wte, or its own): a vocabulary shard */
    hx_linear_fwd(g, m->logits, lnf, m->base.pfull[m->p_head >= 0 ? m->p_head : m->p_wte], NULL);
    hx_model_tp_reduce_y(&m->base, m->logits); /* a normal layer of the grid */
}

/* What the mesh asks of the model, checked again here because a mesh can be built without
 * the model's shape (hx_mesh_init reports the same problems from the command line). */
static int check_mesh(const struct hx_gpt_config *c, const struct hx_mesh *ms, int sched)
{
    struct hx_mesh_request r = {
        .world_size = ms->world_size, .world_rank = ms->world_rank, .tp = ms->tp, .pp = ms->pp,
        .tp_grid = { ms->tp_grid ? ms->tpx : 0, ms->tpy, ms->tpz },
        .ranks_per_node = ms->ranks_per_node, .sequence_parallel = ms->sequence_parallel,
        .shard_p = ms->sp.s, .shard_g = ms->sg.s, .shard_os = ms->sos.s,
        .num_heads = c->num_heads, .hidden_size = c->hidden_size, .vocab_size = c->vocab_size,
        .num_layers = c->num_layers, .seq_len = c->seq_len,
        .micro_batches = c->num_micro_batches,
    };
    struct hx_mesh check;
    int ret = hx_mesh_init(&check, &r, 0);
    int nvs = hx_pipeline_virtual_stages(sched, ms->pp);
    int G = c->num_query_groups ? c->num_query_groups : c->num_heads;
    int F = c->ffn_hidden_size ? c->ffn_hidden_size : 4 * c->hidden_size;
    if (ret == HX_OK && (G % ms->tpx != 0 || F % ms->tpx != 0)) {
        ret = HX_ERR(HX_EINVAL, "%s %d splits the %d key/value heads (--num-query-groups) and "
                     "the MLP's %d channels (--ffn-hidden-size); choose a %s that divides both",
                     ms->tp_grid ? "--tp-grid's Gx" : "--tensor-model-parallel-size", ms->tpx,
                     G, F, ms->tp_grid ? "Gx" : "tp");
    }
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

/* Rows of a tile --tp-comm-overlap aims for when --tile-seqs is left to helix: the largest
 * whole number of sequences per tile up to this many rows (measured on scripts/netbed,
 * bench/comm_backend.sh; bench/README.md). */
#define TPO_TILE_ROWS 512

/* Sequences per row tile: the configuration's, or helix's choice (0).  The rule for the
 * whole-op collectives is a function of the configuration only, never of the worker count
 * or the mesh; with --tp-comm-overlap the tiles are dealt out to the tp ranks, so their
 * count must be a multiple of tp. */
static int tile_seqs_of(const struct hx_gpt_config *cfg, const struct hx_mesh *mesh, int tpo)
{
    int B = cfg->micro_batch_size, ts = cfg->tile_seqs;
    if (tpo && ts == 0) {
        int per = B / mesh->tp; /* sequences of each rank */
        ts = 1;
        for (int d = 1; d <= per; d++) {
            if (per % d == 0 && (long)d * cfg->seq_len <= TPO_TILE_ROWS) {
                ts = d;
            }
        }
        return ts;
    }
    if (ts == 0) {
        /* the larger the tile the better OpenBLAS does (measured on configs B and C: 512 and
         * 1024 rows are 5-10% faster than 128 or 256), up to 1024 rows, but at least two tiles
         * per micro-batch keep both cores busy */
        int want = (1024 + cfg->seq_len - 1) / cfg->seq_len;
        int half = (B + 1) / 2;
        ts = want < half ? want : half;
    }
    return ts < B ? ts : B;
}

#define TPO_ERR(...) (quiet ? HX_EINVAL : HX_ERR(HX_EINVAL, __VA_ARGS__))

int hx_gpt_check_tp_overlap(const struct hx_gpt_config *cfg, const struct hx_mesh *mesh,
                            int quiet)
{
    if (mesh->tp < 2 || !mesh->sequence_parallel) {
        return TPO_ERR("--tp-comm-overlap overlaps the sequence-parallel all-gathers and "
                       "reduce-scatters with their GEMMs; it needs --tensor-model-parallel-size "
                       "> 1 and --sequence-parallel (tp is %d%s)", mesh->tp,
                       mesh->sequence_parallel ? "" : ", no --sequence-parallel");
    }
    int B = cfg->micro_batch_size, ts = tile_seqs_of(cfg, mesh, 1);
    if (B % mesh->tp != 0) {
        return TPO_ERR("--tp-comm-overlap deals whole sequences to the %d tensor-parallel "
                       "ranks, so --micro-batch-size %d must be a multiple of %d", mesh->tp, B,
                       mesh->tp);
    }
    if (B % (ts * mesh->tp) != 0) {
        return TPO_ERR("--tp-comm-overlap deals whole row tiles of %d sequences (--tile-seqs) "
                       "to the %d tensor-parallel ranks, so --micro-batch-size %d must be a "
                       "multiple of %d; give --tile-seqs a divisor of %d, or 0 for helix's "
                       "choice", ts, mesh->tp, B, ts * mesh->tp, B / mesh->tp);
    }
    return HX_OK;
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
    int tpo = par != NULL && par->tp_comm_overlap;
    if (ret == HX_OK && tpo) {
        ret = hx_gpt_check_tp_overlap(cfg, mesh, 0);
    }
    struct hx_gpt *m = ret == HX_OK ? calloc(1, sizeof *m) : NULL;
    if (ret == HX_OK && m == NULL) {
        ret = HX_ERR(HX_ENOMEM, "GPT model struct");
    }
    if (ret == HX_OK) { /* the layout every model's step has (graphs/model.c) */
        m->base.ops = &hx_gpt_model_ops;
        ret = hx_model_init(&m->base, par, cfg->num_layers, cfg->num_micro_batches);
    }
    if (ret != HX_OK) {
        free(m);
        return ret;
    }
    m->cfg = *cfg;
    m->opt = *o;
    if (m->cfg.max_seq_len == 0) {
        m->cfg.max_seq_len = cfg->seq_len;
    }
    m->cfg.tile_seqs = tile_seqs_of(cfg, &m->base.mesh, tpo);
    if (m->cfg.ln_eps == 0) {
        m->cfg.ln_eps = 1e-5f;
    }
    /* Megatron's defaults, resolved here and kept out of cfg (which checkpoints store as
     * given): F = 4C, multi-head attention, RoPE base 10000 */
    const struct hx_gpt_config *mc = &m->cfg;
    int F = mc->ffn_hidden_size ? mc->ffn_hidden_size : 4 * mc->hidden_size;
    int G = mc->num_query_groups ? mc->num_query_groups : mc->num_heads;
    int tp = m->base.mesh.tpx, hs = mc->hidden_size / mc->num_heads;
    m->rope_base = mc->rotary_base != 0 ? mc->rotary_base : 10000.0f;
    m->heads = mc->num_heads / tp;
    m->kv_heads = G / tp;
    m->qkv_cols = (mc->num_heads + 2 * G) * hs / tp;
    m->ffn_cols = F / tp;
    m->fc_cols = (mc->swiglu ? 2 : 1) * m->ffn_cols;
    m->N = cfg->seq_len * cfg->micro_batch_size;
    m->Ns = m->base.mesh.sequence_parallel ? m->N / m->base.mesh.tp : m->N;
    m->base.loss_count = (double)m->N * cfg->num_micro_batches;
    m->V = cfg->vocab_size / m->base.mesh.tpx;
    m->Cy = mc->hidden_size / m->base.mesh.tpy;
    int s = m->base.mesh.pp_rank, p = m->base.mesh.pp, sched = m->base.par.pipeline_schedule;
    /* micro-batches in flight, each with its slot (1F1B: p - s); interleaving strands lets
     * one more micro-batch start before another ends */
    m->nslots = hx_pipeline_in_flight(sched, p, s, m->base.Ml) + (m->base.strands ? 1 : 0);
    m->nslots = m->nslots < m->base.Ml ? m->nslots : m->base.Ml;
    hx_gpt_param_specs(m);
    hx_model_make_params(&m->base);
    m->recompute = m->base.par.recompute;
    hx_gpt_make_activations(m);
    hx_model_emit(&m->base, &m->opt);
    /* evaluation's tail, never part of a training step: the loss of micro-batch 0 with the
     * logits left intact (sampling reads them) */
    hx_gpt_use_mb(m, 0);
    m->base.g->cur.phase = HX_PHASE_FORWARD;
    m->base.g->cur.microbatch = 0;
    m->base.g->cur.layer = -1;
    m->base.g->cur.strand = HX_STRAND_NONE;
    if (m->base.last_stage) {
        hx_gpt_emit_loss(m, m->targets[0], 0);
    }
    if (p > 1) { /* the loss lives on the last stage; every rank reports it */
        hx_allreduce(m->base.g, HX_GROUP_PP, 1, &m->base.loss_sum, HX_SUM);
    }
    hx_model_finish(&m->base);
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
    hx_model_release(&m->base);
    hx_gpt_free_acts(m);
    free(m->pix);
    free(m);
}
