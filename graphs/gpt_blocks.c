/* SPDX-License-Identifier: MIT */
/* graphs/gpt_blocks.c: the pieces of a layer that the Llama settings switch (helix/gpt.h,
 * Megatron's --normalization, --position-embedding-type rope, --num-query-groups, --swiglu):
 *   norm        LayerNorm(x) w + b, or RMSNorm(x) w (Llama: no shift, no mean)
 *   attention   causal attention over heads/tp query heads and kv_heads/tp key/value heads,
 *               q and k rotated by RoPE in place right after the qkv GEMM (so what the layer
 *               keeps, and what a selective recomputation reads, is the rotated qkv)
 *   MLP input   gelu(fc(x)) in one task, or fc(x) = [gate | up] then silu(gate) * up
 * GPT-2 (every switch 0) emits exactly the tasks it did before these existed. */
#include "graphs/gpt_internal.h"
#include "helix/layers.h"

static int rms(const struct hx_gpt *m)
{
    return m->cfg.normalization == HX_NORM_RMSNORM;
}

/* Under --tp-grid with Gy > 1 the hidden size is split over Y: the *_split builders
 * all-reduce each row's statistics over Y (hx_model_norm_split; NULL otherwise). */
void hx_gpt_norm_fwd(struct hx_gpt *m, hx_tensor_t out, hx_tensor_t mean, hx_tensor_t rstd,
                     hx_tensor_t x, int wi, int bi)
{
    hx_tensor_t *P = m->base.pfull;
    const struct hx_norm_split *sp = hx_model_norm_split(&m->base, x);
    if (rms(m) && sp != NULL) {
        hx_rmsnorm_fwd_split(m->base.g, out, rstd, x, P[wi], m->cfg.ln_eps, sp);
    } else if (rms(m)) {
        hx_rmsnorm_fwd(m->base.g, out, rstd, x, P[wi], m->cfg.ln_eps);
    } else if (sp != NULL) {
        hx_layernorm_fwd_split(m->base.g, out, mean, rstd, x, P[wi], P[bi], m->cfg.ln_eps, sp);
    } else {
        hx_layernorm_fwd(m->base.g, out, mean, rstd, x, P[wi], P[bi], m->cfg.ln_eps);
    }
}

void hx_gpt_add_norm_fwd(struct hx_gpt *m, hx_tensor_t sum, hx_tensor_t out, hx_tensor_t mean,
                         hx_tensor_t rstd, hx_tensor_t a, hx_tensor_t b, int wi, int bi)
{
    hx_tensor_t *P = m->base.pfull;
    if (m->base.mesh.tpy > 1) { /* the sum, then the split norm (statistics over Y) */
        hx_add(m->base.g, sum, a, b);
        hx_gpt_norm_fwd(m, out, mean, rstd, sum, wi, bi);
    } else if (rms(m)) {
        hx_add_rmsnorm_fwd(m->base.g, sum, out, rstd, a, b, P[wi], m->cfg.ln_eps);
    } else {
        hx_add_layernorm_fwd(m->base.g, sum, out, mean, rstd, a, b, P[wi], P[bi], m->cfg.ln_eps);
    }
}

void hx_gpt_norm_bwd_data(struct hx_gpt *m, hx_tensor_t dinp, hx_tensor_t dout, hx_tensor_t inp,
                          hx_tensor_t mean, hx_tensor_t rstd, hx_tensor_t resid, int wi)
{
    hx_tensor_t w = m->base.pfull[wi];
    const struct hx_norm_split *sp = hx_model_norm_split(&m->base, inp);
    if (rms(m) && sp != NULL) {
        hx_rmsnorm_bwd_data_split(m->base.g, dinp, dout, inp, w, rstd, resid, sp);
    } else if (rms(m)) {
        hx_rmsnorm_bwd_data(m->base.g, dinp, dout, inp, w, rstd, resid);
    } else if (sp != NULL) {
        hx_layernorm_bwd_data_split(m->base.g, dinp, dout, inp, w, mean, rstd, resid, sp);
    } else {
        hx_layernorm_bwd_data(m->base.g, dinp, dout, inp, w, mean, rstd, resid);
    }
}

void hx_gpt_norm_bwd_weight(struct hx_gpt *m, hx_tensor_t dout, hx_tensor_t inp,
                            hx_tensor_t mean, hx_tensor_t rstd, int wi, int bi)
{
    hx_tensor_t *G = m->base.gfull;
    if (rms(m)) {
        hx_rmsnorm_bwd_weight(m->base.g, G[wi], dout, inp, rstd);
    } else {
        hx_layernorm_bwd_weight(m->base.g, G[wi], G[bi], dout, inp, mean, rstd);
    }
}

/* RoPE on the q and k heads of this rank's qkv (N, qkv_cols), in place */
void hx_gpt_rope_fwd(struct hx_gpt *m, hx_tensor_t qkv)
{
    const struct hx_gpt_config *c = &m->cfg;
    if (c->position_embedding == HX_POS_ROPE) {
        hx_rope_fwd(m->base.g, qkv, c->seq_len, m->heads, m->kv_heads, m->rope_base);
    }
}

void hx_gpt_attention_fwd(struct hx_gpt *m, hx_tensor_t out, hx_tensor_t lse, hx_tensor_t qkv)
{
    const struct hx_gpt_config *c = &m->cfg;
    if (m->kv_heads == m->heads) {
        hx_attention_fwd(m->base.g, out, lse, qkv, c->seq_len, m->heads, c->attn_block);
    } else {
        hx_gqa_attention_fwd(m->base.g, out, lse, qkv, c->seq_len, m->heads, m->kv_heads,
                             c->attn_block);
    }
}

/* dqkv from the attention's output gradient, then RoPE's transpose on its q and k heads */
void hx_gpt_attention_bwd(struct hx_gpt *m, hx_tensor_t dqkv, hx_tensor_t qkv, hx_tensor_t out,
                          hx_tensor_t dout, hx_tensor_t lse)
{
    const struct hx_gpt_config *c = &m->cfg;
    if (m->kv_heads == m->heads) {
        hx_attention_bwd(m->base.g, dqkv, qkv, out, dout, lse, c->seq_len, m->heads, c->attn_block);
    } else {
        hx_gqa_attention_bwd(m->base.g, dqkv, qkv, out, dout, lse, c->seq_len, m->heads,
                             m->kv_heads, c->attn_block);
    }
    if (c->position_embedding == HX_POS_ROPE) {
        hx_rope_bwd(m->base.g, dqkv, c->seq_len, m->heads, m->kv_heads, m->rope_base);
    }
}

/* The MLP up to its activation: fch = fc(x) (kept for the backward), act = its activation */
void hx_gpt_mlp_in_fwd(struct hx_gpt *m, int l, hx_tensor_t fch, hx_tensor_t act, hx_tensor_t x)
{
    hx_tensor_t *P = m->base.pfull;
    hx_tensor_t w = P[hx_gpt_pi(m, l, P_FC_W)], b = hx_gpt_pt(P, hx_gpt_pi(m, l, P_FC_B));
    if (m->base.mesh.tpy > 1) { /* fc's output is partial over Y: summed before the act */
        hx_linear_fwd(m->base.g, fch, x, w, hx_model_tp_adds_bias(&m->base, HX_TP_COLUMN) ? b : NULL);
        hx_model_tp_reduce_y(&m->base, fch);
        hx_gpt_mlp_act_fwd(m, act, fch);
    } else if (m->cfg.swiglu) {
        hx_linear_fwd(m->base.g, fch, x, w, b);
        hx_swiglu_fwd(m->base.g, act, fch);
    } else {
        hx_linear_gelu_fwd(m->base.g, fch, act, x, w, b);
    }
}

/* The activation again from the kept fch (selective recomputation) */
void hx_gpt_mlp_act_fwd(struct hx_gpt *m, hx_tensor_t act, hx_tensor_t fch)
{
    if (m->cfg.swiglu) {
        hx_swiglu_fwd(m->base.g, act, fch);
    } else {
        hx_gelu_fwd(m->base.g, act, fch);
    }
}

void hx_gpt_mlp_act_bwd(struct hx_gpt *m, hx_tensor_t dfch, hx_tensor_t fch, hx_tensor_t dact)
{
    if (m->cfg.swiglu) {
        hx_swiglu_bwd(m->base.g, dfch, fch, dact);
    } else {
        hx_gelu_bwd(m->base.g, dfch, fch, dact);
    }
}
