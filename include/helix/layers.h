/* SPDX-License-Identifier: MIT */
/**
 * @file helix/layers.h
 * @brief Graph builders for the layers of a transformer: each call appends the tasks of one
 *        operation on whole tensors to a graph, one task per row tile, so a model reads like
 *        its math.  None of them touches StarPU; hx_graph_submit does.
 *
 * Tensors passed together must share their row tiling (same rows and tile_rows); weights
 * and biases are single-tile tensors.  Shapes: inp (N,C), w (OC,C) as in PyTorch's Linear,
 * b (1,OC), out (N,OC).  Parameter gradients accumulate (+=) in tile order; activation
 * gradients are written (=).  Nodes take the graph's cursor (phase, layer, micro-batch).
 */
#ifndef HELIX_LAYERS_H
#define HELIX_LAYERS_H

#include "helix/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/** out = inp w^T [+ b]  (b may be NULL) */
void hx_linear_fwd(hx_graph_t g, hx_tensor_t out, hx_tensor_t inp, hx_tensor_t w, hx_tensor_t b);
/** pre = inp w^T + b and out = gelu(pre) in one task per tile (pre is kept for the
 *  backward's gelu'(pre)) */
void hx_linear_gelu_fwd(hx_graph_t g, hx_tensor_t pre, hx_tensor_t out, hx_tensor_t inp,
                        hx_tensor_t w, hx_tensor_t b);
/** dinp = dout w */
void hx_linear_bwd_data(hx_graph_t g, hx_tensor_t dinp, hx_tensor_t dout, hx_tensor_t w);
/** dw += dout^T inp; db += column sums of dout (db may be NULL) */
void hx_linear_bwd_weight(hx_graph_t g, hx_tensor_t dw, hx_tensor_t db, hx_tensor_t dout,
                          hx_tensor_t inp);

/** out = LayerNorm(inp) w + b; mean, rstd (N,1) kept for the backward */
void hx_layernorm_fwd(hx_graph_t g, hx_tensor_t out, hx_tensor_t mean, hx_tensor_t rstd,
                      hx_tensor_t inp, hx_tensor_t w, hx_tensor_t b, float eps);
/** sum = a + b (a residual connection), then out = LayerNorm(sum) w + bias: one task per tile */
void hx_add_layernorm_fwd(hx_graph_t g, hx_tensor_t sum, hx_tensor_t out, hx_tensor_t mean,
                          hx_tensor_t rstd, hx_tensor_t a, hx_tensor_t b, hx_tensor_t w,
                          hx_tensor_t bias, float eps);
/** dinp = [resid +] LayerNorm backward of dout (resid may be NULL: the residual stream's
 *  gradient that flows around the block is added here, saving a separate add) */
void hx_layernorm_bwd_data(hx_graph_t g, hx_tensor_t dinp, hx_tensor_t dout, hx_tensor_t inp,
                           hx_tensor_t w, hx_tensor_t mean, hx_tensor_t rstd, hx_tensor_t resid);
/** dw += sum over rows of dout * xhat; db += sum over rows of dout */
void hx_layernorm_bwd_weight(hx_graph_t g, hx_tensor_t dw, hx_tensor_t db, hx_tensor_t dout,
                             hx_tensor_t inp, hx_tensor_t mean, hx_tensor_t rstd);

/** out = RMSNorm(inp) w (Llama: rstd = 1/sqrt(mean(inp^2) + eps) per row, no mean
 *  subtraction, no bias); rstd (N,1) kept for the backward */
void hx_rmsnorm_fwd(hx_graph_t g, hx_tensor_t out, hx_tensor_t rstd, hx_tensor_t inp,
                    hx_tensor_t w, float eps);
/** sum = a + b (a residual connection), then out = RMSNorm(sum) w: one task per tile */
void hx_add_rmsnorm_fwd(hx_graph_t g, hx_tensor_t sum, hx_tensor_t out, hx_tensor_t rstd,
                        hx_tensor_t a, hx_tensor_t b, hx_tensor_t w, float eps);
/** dinp = [resid +] RMSNorm backward of dout (resid may be NULL: the residual stream's
 *  gradient that flows around the block is added here, as in hx_layernorm_bwd_data) */
void hx_rmsnorm_bwd_data(hx_graph_t g, hx_tensor_t dinp, hx_tensor_t dout, hx_tensor_t inp,
                         hx_tensor_t w, hx_tensor_t rstd, hx_tensor_t resid);
/** dw += sum over rows of dout * xhat, xhat = inp * rstd */
void hx_rmsnorm_bwd_weight(hx_graph_t g, hx_tensor_t dw, hx_tensor_t dout, hx_tensor_t inp,
                           hx_tensor_t rstd);

/** Norms over rows whose C_total columns are split over the ranks of collective channel
 *  `channel` (AxoNN's Y axis, papers.md §1.4): inp, out, dout, dinp, resid are this rank's
 *  (N, C) column slice (C_total = cols_total; uneven slices allowed), w and b (1, C); the row
 *  statistics are partial sums over the slice, all-reduced over the channel's group of
 *  group_size ranks (no collective when it is 1: the sums are then whole).  Scratch s1 (N,1)
 *  and s2 (N,2) f32, tiled as inp, written and read by every call (so calls that share them
 *  are ordered); mean, rstd (N,1) are whole-row statistics, the same on every rank.  With
 *  one rank the results are those of the whole-row builders up to the float rounding of the
 *  sums.  The weight gradients need no split form: hx_layernorm_bwd_weight and
 *  hx_rmsnorm_bwd_weight on the slices, with these mean and rstd, give the slices of the
 *  whole-row dw, db.  Ops: include/helix/ops.h, HX_OP_NORM_*. */
struct hx_norm_split {
    int channel;       /**< enum hx_group_kind of the all-reduces */
    int group_size;    /**< ranks over which the columns are split */
    int cols_total;    /**< C_total, the whole row's width */
    hx_tensor_t s1, s2;
};
/** LayerNorm: s1 = partial sum x, all-reduced; s2 = partial { sum (x - m)^2, sum (x - m) }
 *  about m = s1/C_total, all-reduced (the two-pass variance, its centre corrected by the
 *  second sum); then out = (x - mean) rstd w + b */
void hx_layernorm_fwd_split(hx_graph_t g, hx_tensor_t out, hx_tensor_t mean, hx_tensor_t rstd,
                            hx_tensor_t inp, hx_tensor_t w, hx_tensor_t b, float eps,
                            const struct hx_norm_split *sp);
/** dinp = [resid +] LayerNorm backward of dout: s2 = partial { sum g, sum g xhat },
 *  all-reduced, g = dout w */
void hx_layernorm_bwd_data_split(hx_graph_t g, hx_tensor_t dinp, hx_tensor_t dout,
                                 hx_tensor_t inp, hx_tensor_t w, hx_tensor_t mean,
                                 hx_tensor_t rstd, hx_tensor_t resid,
                                 const struct hx_norm_split *sp);
/** RMSNorm: s1 = partial sum x^2, all-reduced; then out = x rstd w */
void hx_rmsnorm_fwd_split(hx_graph_t g, hx_tensor_t out, hx_tensor_t rstd, hx_tensor_t inp,
                          hx_tensor_t w, float eps, const struct hx_norm_split *sp);
/** dinp = [resid +] RMSNorm backward of dout: s1 = partial sum g xhat, all-reduced */
void hx_rmsnorm_bwd_data_split(hx_graph_t g, hx_tensor_t dinp, hx_tensor_t dout,
                               hx_tensor_t inp, hx_tensor_t w, hx_tensor_t rstd,
                               hx_tensor_t resid, const struct hx_norm_split *sp);

/** out = gelu(inp) (tanh approximation) */
void hx_gelu_fwd(hx_graph_t g, hx_tensor_t out, hx_tensor_t inp);
/** dinp = gelu'(inp) dout */
void hx_gelu_bwd(hx_graph_t g, hx_tensor_t dinp, hx_tensor_t inp, hx_tensor_t dout);
/** out (N,F) = silu(gate) * up, inp (N,2F) = [gate | up] per row (Megatron's --swiglu: the
 *  two halves of one fc1 of 2F outputs); silu(x) = x / (1 + exp(-x)) */
void hx_swiglu_fwd(hx_graph_t g, hx_tensor_t out, hx_tensor_t inp);
/** dinp (N,2F) = [dgate | dup] of dout (N,F): dgate = dout up silu'(gate),
 *  dup = dout silu(gate) */
void hx_swiglu_bwd(hx_graph_t g, hx_tensor_t dinp, hx_tensor_t inp, hx_tensor_t dout);

/** Causal self-attention of NH heads over sequences of T rows: qkv (N,3C) -> out (N,C),
 *  lse (N,NH).  Row tiles must hold whole sequences.  block: query/key block (0 = 64). */
void hx_attention_fwd(hx_graph_t g, hx_tensor_t out, hx_tensor_t lse, hx_tensor_t qkv, int T,
                      int NH, int block);
/** dqkv = attention backward (uses the forward's out and lse) */
void hx_attention_bwd(hx_graph_t g, hx_tensor_t dqkv, hx_tensor_t qkv, hx_tensor_t out,
                      hx_tensor_t dout, hx_tensor_t lse, int T, int NH, int block);
/** Grouped-query attention (GQA): NH query heads share KV key/value heads (NH % KV == 0,
 *  else an assertion names both; KV = NH is hx_attention_fwd).  qkv (N, (NH + 2 KV) hs) =
 *  q (NH heads) | k (KV heads) | v (KV heads), query head h reads kv head h / (NH/KV);
 *  out (N, NH hs), lse (N,NH). */
void hx_gqa_attention_fwd(hx_graph_t g, hx_tensor_t out, hx_tensor_t lse, hx_tensor_t qkv, int T,
                          int NH, int KV, int block);
/** dqkv (qkv's shape) = its backward; dk, dv of a kv head sum its query heads in head order */
void hx_gqa_attention_bwd(hx_graph_t g, hx_tensor_t dqkv, hx_tensor_t qkv, hx_tensor_t out,
                          hx_tensor_t dout, hx_tensor_t lse, int T, int NH, int KV, int block);

/** Rotary position embeddings (Llama's "rotate_half") in place on the NH q and KV k heads of
 *  qkv (N, (NH + 2 KV) hs), hs even; row r is position r mod T (row tiles hold whole
 *  sequences); base: 10000 (Llama 2) or 500000 (Llama 3).  The angle is PyTorch's float32
 *  pos * inv_freq (include/helix/ops.h, struct hx_rope_args). */
void hx_rope_fwd(hx_graph_t g, hx_tensor_t qkv, int T, int NH, int KV, float base);
/** the transpose on the gradient: dqkv's q and k heads turn back by the same angles */
void hx_rope_bwd(hx_graph_t g, hx_tensor_t dqkv, int T, int NH, int KV, float base);

/** out = a + b */
void hx_add(hx_graph_t g, hx_tensor_t out, hx_tensor_t a, hx_tensor_t b);
/** acc += x (same shapes and tiling) */
void hx_accumulate(hx_graph_t g, hx_tensor_t acc, hx_tensor_t x);

/** losses (N,1) = cross-entropy of logits (N,V) against targets (N,1) i32; lse (N,1) kept */
void hx_xent_fwd(hx_graph_t g, hx_tensor_t losses, hx_tensor_t lse, hx_tensor_t logits,
                 hx_tensor_t targets);
/** logits := scale (softmax(logits) - onehot(targets)), in place */
void hx_xent_bwd(hx_graph_t g, hx_tensor_t logits, hx_tensor_t lse, hx_tensor_t targets,
                 float scale);

/** Training's loss and its gradient together: losses, lse as hx_xent_fwd, then logits :=
 *  scale (softmax(logits) - onehot(targets)) in place, one task per tile */
void hx_xent_fused(hx_graph_t g, hx_tensor_t losses, hx_tensor_t lse, hx_tensor_t logits,
                   hx_tensor_t targets, float scale);
/** out = wte[tokens] + wpe[position], positions 0..T-1 within each sequence */
void hx_embed_fwd(hx_graph_t g, hx_tensor_t out, hx_tensor_t tokens, hx_tensor_t wte,
                  hx_tensor_t wpe, int T);
/** dwte[tokens] += dout; dwpe[position] += dout */
void hx_embed_bwd(hx_graph_t g, hx_tensor_t dwte, hx_tensor_t dwpe, hx_tensor_t dout,
                  hx_tensor_t tokens, int T);

/** acc (1,1) f64 += sum(x) or sum(x^2), tile by tile in order */
void hx_reduce(hx_graph_t g, hx_tensor_t acc, hx_tensor_t x, int sumsq);
/** every element of t = value */
void hx_fill(hx_graph_t g, hx_tensor_t t, float value);
/** AdamW step of one parameter, clipped by the global norm whose square is in gnorm_sumsq.
 *  args->n is filled in; lr and t are set per step by the training loop. */
void hx_adamw(hx_graph_t g, hx_tensor_t param, hx_tensor_t grad, hx_tensor_t m, hx_tensor_t v,
              hx_tensor_t gnorm_sumsq, const struct hx_adamw_args *args);

/* ---- vocabulary parallel (Megatron; issue 5): rank t of tp holds the vocabulary rows
 * [v0, v0 + Vl) of wte, so the tied LM head gives it the logits columns of its shard only,
 * (N, Vl).  The shards' embeddings sum to the whole one (an all-reduce over tp); the loss
 * needs only the per-row stats of every shard (an all-gather of (N,2) per shard). ---- */

/** out = (v0 <= token < v0+Vl ? wte_shard[token - v0] : 0) [+ wpe[position] when add_pos]:
 *  with add_pos on exactly one shard, the sum over shards is hx_embed_fwd's out, bit for
 *  bit.  wte_shard (Vl,C); wpe (replicated) is not read without add_pos and may be NULL
 *  (a model with rotary positions has none).  With v0 = 0 and the whole table it is the
 *  plain lookup.  A token outside [0, vocab_total) is reported when the task runs. */
void hx_embed_fwd_vp(hx_graph_t g, hx_tensor_t out, hx_tensor_t tokens, hx_tensor_t wte_shard,
                     hx_tensor_t wpe, int T, int v0, int vocab_total, int add_pos);
/** dwte_shard[token - v0] += dout for the shard's tokens; dwpe[position] += dout unless
 *  dwpe_or_null is NULL.  The shards' dwte concatenate to hx_embed_bwd's, bit for bit. */
void hx_embed_bwd_vp(hx_graph_t g, hx_tensor_t dwte_shard, hx_tensor_t dwpe_or_null,
                     hx_tensor_t dout, hx_tensor_t tokens, int T, int v0, int vocab_total);
/** stats (N,2) = per row of the logits shard (N,Vl) { its log-sum-exp, the target's logit if
 *  v0 <= target < v0+Vl else 0 }; targets (N,1) i32 global ids; tiled as logits */
void hx_xent_vp_stats(hx_graph_t g, hx_tensor_t stats, hx_tensor_t logits, hx_tensor_t targets,
                      int v0);
/** losses, lse (N,1) from all_stats, every shard's stats gathered rank-major per tile:
 *  all_stats has parts*N rows in tiles of parts*tile_rows, rows t*n + r of tile i holding
 *  shard t's stats of row r of logits tile i (n rows).  With grad, the logits shard becomes
 *  scale (softmax - onehot) in place (its columns of hx_xent_fused's gradient); without, it
 *  is only read. */
void hx_xent_vp(hx_graph_t g, hx_tensor_t losses, hx_tensor_t lse, hx_tensor_t logits,
                hx_tensor_t targets, hx_tensor_t all_stats, int v0, int parts, int grad,
                float scale);

#ifdef __cplusplus
}
#endif

#endif /* HELIX_LAYERS_H */
