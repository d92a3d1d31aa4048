/* SPDX-License-Identifier: MIT */
/* codelets/cpu.h: the fp32 CPU kernels behind the codelets, StarPU-free so tests and later
 * fused kernels can call them directly.  Same shapes and accumulation rules as
 * codelets/ref/ref.h (the double-precision oracle), except that every matrix takes a
 * leading dimension because a tile lives inside a larger row-major tensor (ld = its cols). */
#ifndef HX_CODELETS_CPU_H
#define HX_CODELETS_CPU_H

#include <stdint.h>

/* C(m,n) = alpha op(A) op(B) + beta C [+ bias]; cblas_sgemm, row-major */
void hx_cpu_matmul(float *C, int ldc, const float *A, int lda, const float *B, int ldb,
                   const float *bias, int transa, int transb, int m, int n, int k, float alpha,
                   float beta);
/* dbias(n) += column sums of dout(m,n) */
void hx_cpu_bias_bwd(float *dbias, const float *dout, int ld, int m, int n);

void hx_cpu_layernorm_fwd(float *out, float *mean, float *rstd, const float *inp, const float *w,
                          const float *b, int N, int C, int ld, float eps);
/* dinp = [resid +] dLN/dinp (resid may be NULL) */
void hx_cpu_layernorm_bwd_data(float *dinp, const float *dout, const float *inp, const float *w,
                               const float *mean, const float *rstd, const float *resid, int N,
                               int C, int ld);
/* dw += sum_rows dout * xhat; db += sum_rows dout */
void hx_cpu_layernorm_bwd_weight(float *dw, float *db, const float *dout, const float *inp,
                                 const float *mean, const float *rstd, int N, int C, int ld);

/* RMSNorm (Llama): out = inp rstd w, no mean, no bias */
void hx_cpu_rmsnorm_fwd(float *out, float *rstd, const float *inp, const float *w, int N, int C,
                        int ld, float eps);
/* dinp = [resid +] dRMSNorm/dinp (resid may be NULL) */
void hx_cpu_rmsnorm_bwd_data(float *dinp, const float *dout, const float *inp, const float *w,
                             const float *rstd, const float *resid, int N, int C, int ld);
/* dw += sum_rows dout * xhat */
void hx_cpu_rmsnorm_bwd_weight(float *dw, const float *dout, const float *inp, const float *rstd,
                               int N, int C, int ld);

/* The norms over column-split rows (codelets/norm_split.c; include/helix/ops.h, HX_OP_NORM_*):
 * inp, dout, out, dinp, resid this rank's (N,C) slice with row stride ld, w, b (1,C), rows
 * C_total = cols_total wide.  Row sums s, s1 (N,1) and s2 (N,2) contiguous.
 * Partial sums of the slice by mode (enum hx_norm_part_mode), written to s (N,1) or (N,2):
 * stat is LN_VAR's S (the all-reduced LN_SUM) or LN_BWD's mean; unused pointers may be NULL. */
void hx_cpu_norm_part(float *s, const float *inp, const float *dout, const float *w,
                      const float *stat, const float *rstd, int mode, int N, int C, int ld,
                      int cols_total);
/* From the all-reduced sums: s1 = LN_SUM's, s2 = LN_VAR's; out, mean, rstd written (=) */
void hx_cpu_layernorm_fwd_apply(float *out, float *mean, float *rstd, const float *inp,
                                const float *w, const float *b, const float *s1,
                                const float *s2, int N, int C, int ld, int cols_total,
                                float eps);
/* s = RMS_SQ's all-reduced sums; out, rstd written (=) */
void hx_cpu_rmsnorm_fwd_apply(float *out, float *rstd, const float *inp, const float *w,
                              const float *s, int N, int C, int ld, int cols_total, float eps);
/* s2 = LN_BWD's all-reduced sums; dinp = [resid +] ... (resid may be NULL or alias dinp) */
void hx_cpu_layernorm_bwd_apply(float *dinp, const float *dout, const float *inp,
                                const float *w, const float *mean, const float *rstd,
                                const float *s2, const float *resid, int N, int C, int ld,
                                int cols_total);
/* s = RMS_BWD's all-reduced sums */
void hx_cpu_rmsnorm_bwd_apply(float *dinp, const float *dout, const float *inp, const float *w,
                              const float *rstd, const float *s, const float *resid, int N,
                              int C, int ld, int cols_total);

void hx_cpu_gelu_fwd(float *out, const float *inp, long n);
void hx_cpu_gelu_bwd(float *dinp, const float *inp, const float *dout, long n);

/* SwiGLU on contiguous rows: inp, dinp (N,2F) = [gate | up], out, dout (N,F) */
void hx_cpu_swiglu_fwd(float *out, const float *inp, int N, int F);
void hx_cpu_swiglu_bwd(float *dinp, const float *inp, const float *dout, int N, int F);

/* RoPE in place on the NH q and KV k heads (hs columns each) of qkv (rows, (NH + 2 KV) hs)
 * ld; row r is position r mod T.  inverse = 1: the transpose (backward, on dqkv). */
void hx_cpu_rope(float *qkv, int ld, int rows, int T, int NH, int KV, int hs, float base,
                 int inverse);

/* Blocked causal attention (flash-attention): q, k, v blocks of `block` rows; scores never
 * exceed one (block x block) tile.  NH query heads, KV key/value heads (KV divides NH; query
 * head h reads kv head h / (NH/KV)), C = NH hs.  qkv (nseq*T, C + 2 KV hs) ld_qkv;
 * out (nseq*T, C) ld_out; lse (nseq*T, NH) ld NH. */
void hx_cpu_attention_fwd(float *out, int ld_out, float *lse, const float *qkv, int ld_qkv,
                          int nseq, int T, int C, int NH, int KV, int block);
/* dqkv (nseq*T, C + 2 KV hs) written (=); dk, dv of a kv head sum its query heads in head
 * order.  Uses the forward's out and lse (no recomputation of the softmax normaliser). */
void hx_cpu_attention_bwd(float *dqkv, int ld_dqkv, const float *dout, int ld_dout,
                          const float *qkv, int ld_qkv, const float *out, int ld_out,
                          const float *lse, int nseq, int T, int C, int NH, int KV, int block);

void hx_cpu_xent_fwd(float *losses, float *lse, const float *logits, int ld,
                     const int32_t *targets, int N, int V);
/* logits := scale * (softmax(logits) - onehot(target)) in place */
void hx_cpu_xent_bwd(float *logits, int ld, const float *lse, const int32_t *targets, int N,
                     int V, float scale);

/* wte, dwte: vocabulary rows [v0, v0+V) (v0 = 0, V = vocab unsharded); a token outside
 * them gives a zero row.  wpe, dwpe NULL: no position term.  Tokens already checked. */
void hx_cpu_embed_fwd(float *out, int ld, const int32_t *tokens, const float *wte, int v0,
                      int V, const float *wpe, int N, int T, int C);
void hx_cpu_embed_bwd(float *dwte, int v0, int V, float *dwpe, const float *dout, int ld,
                      const int32_t *tokens, int N, int T, int C);

void hx_cpu_add(float *out, const float *a, const float *b, long n);
/* acc += sum(x) or sum(x^2), accumulated in double in index order */
void hx_cpu_reduce(double *acc, const float *x, long n, int sumsq);
void hx_cpu_fill(float *x, long n, float value);

/* PyTorch AdamW on g = clip_coef * grad (see ref.h) */
void hx_cpu_adamw(float *param, float *m, float *v, const float *grad, long n, float lr,
                  float b1, float b2, float eps, float wd, float clip_coef, int t);

#endif /* HX_CODELETS_CPU_H */
