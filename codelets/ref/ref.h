/* SPDX-License-Identifier: MIT */
/* codelets/ref/ref.h: double-precision reference kernels, plain C, no StarPU.
 * They are the oracle of tests/codelets/ (fp32 codelets against these, rel. error <= 1e-5)
 * and are themselves checked by tests/ref/ (hand values, finite differences).
 * Row-major everywhere.  Shapes: N rows (tokens), C channels, V vocabulary, T sequence
 * length, NH heads, hs = C / NH.  Rule (llm.c): parameter gradients (dw, db, dwte, dwpe,
 * dbias) accumulate with +=; activation gradients are written with =.
 * Clarity over speed: these loops are the math, written once. */
#ifndef HX_REF_H
#define HX_REF_H

/* C(m,n) = alpha * op(A) op(B) + beta * C [+ bias(n) on every row when bias != NULL].
 * op(A) is (m,k): A is (m,k) if !transa else (k,m); op(B) is (k,n): B is (k,n) or (n,k). */
void hx_ref_matmul(double *C, const double *A, const double *B, const double *bias, int transa,
                   int transb, int m, int n, int k, double alpha, double beta);
/* dbias(n) += sum over rows of dout(m,n) */
void hx_ref_bias_bwd(double *dbias, const double *dout, int m, int n);

/* out = (inp - mean) * rstd * w + b per row; mean(N), rstd(N) = 1/sqrt(var + eps), biased var */
void hx_ref_layernorm_fwd(double *out, double *mean, double *rstd, const double *inp,
                          const double *w, const double *b, int N, int C, double eps);
/* dinp = (resid ? resid : 0) + dLN/dinp; dw += sum dout*xhat; db += sum dout.
 * dw/db may be NULL (data part only); dinp may be NULL (weight part only). */
void hx_ref_layernorm_bwd(double *dinp, double *dw, double *db, const double *dout,
                          const double *inp, const double *w, const double *mean,
                          const double *rstd, const double *resid, int N, int C);

/* RMSNorm (Llama): out = inp * rstd * w per row, rstd(N) = 1/sqrt(mean(inp^2) + eps); no bias */
void hx_ref_rmsnorm_fwd(double *out, double *rstd, const double *inp, const double *w, int N,
                        int C, double eps);
/* dinp = (resid ? resid : 0) + dRMSNorm/dinp; dw += sum dout*xhat (xhat = inp rstd).
 * dw may be NULL (data part only); dinp may be NULL (weight part only). */
void hx_ref_rmsnorm_bwd(double *dinp, double *dw, const double *dout, const double *inp,
                        const double *w, const double *rstd, const double *resid, int N, int C);

/* The column-split norms' partial row sums (HX_OP_NORM_PART) of the C columns of a slice of
 * rows cols_total wide, the slice's rows ld apart, into s (N,1) or (N,2) by mode (enum
 * hx_norm_part_mode of include/helix/ops.h): LN_SUM sum x; LN_VAR { sum d^2, sum d },
 * d = x - stat/cols_total (stat: LN_SUM's whole-row sums); RMS_SQ sum x^2; LN_BWD
 * { sum g, sum g xhat }, g = dout w, xhat = (x - stat) rstd (stat: the mean); RMS_BWD
 * sum g xhat, xhat = x rstd.  Unused pointers may be NULL. */
void hx_ref_norm_part(double *s, int mode, const double *inp, const double *dout,
                      const double *w, const double *stat, const double *rstd, int N, int C,
                      int ld, int cols_total);

/* GPT-2 GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
void hx_ref_gelu_fwd(double *out, const double *inp, int n);
/* dinp = gelu'(inp) * dout */
void hx_ref_gelu_bwd(double *dinp, const double *inp, const double *dout, int n);

/* SwiGLU: inp (N,2F) = [gate | up] per row, out (N,F) = silu(gate) up, silu(x) = x/(1+e^-x) */
void hx_ref_swiglu_fwd(double *out, const double *inp, int N, int F);
/* dinp (N,2F) = [dout up silu'(gate) | dout silu(gate)] */
void hx_ref_swiglu_bwd(double *dinp, const double *inp, const double *dout, int N, int F);

/* Causal self-attention, full softmax (not blocked).  qkv (nseq*T, 3C) = [q | k | v], head h
 * uses columns h*hs..(h+1)*hs of each part; scale 1/sqrt(hs).
 * out (nseq*T, C): head h in columns h*hs..; lse (nseq*T, NH): log-sum-exp of the scaled,
 * masked scores of each query row and head. */
void hx_ref_attention_fwd(double *out, double *lse, const double *qkv, int nseq, int T, int C,
                          int NH);
/* dqkv (nseq*T, 3C) = gradient of sum(out * dout) w.r.t. qkv (written, not accumulated). */
void hx_ref_attention_bwd(double *dqkv, const double *dout, const double *qkv, int nseq, int T,
                          int C, int NH);
/* Grouped-query attention: NH query heads, KV key/value heads (KV divides NH; KV = NH is the
 * above), hs = C/NH.  qkv, dqkv (nseq*T, C + 2 KV hs) = [q (NH heads) | k (KV) | v (KV)];
 * query head h reads kv head h / (NH/KV); out, lse as above.  dk, dv of a kv head are the
 * sums over its query heads. */
void hx_ref_gqa_attention_fwd(double *out, double *lse, const double *qkv, int nseq, int T,
                              int C, int NH, int KV);
void hx_ref_gqa_attention_bwd(double *dqkv, const double *dout, const double *qkv, int nseq,
                              int T, int C, int NH, int KV);

/* Rotary position embeddings in place on x (rows, (NH + 2 KV) hs): the NH q and KV k heads
 * turn, v does not; row r is position r mod T.  For i < hs/2, with the float32 angle
 * a = pos inv_freq_i of codelets/rope.h and cos, sin in double:
 *   (x_i, x_{i+hs/2}) <- (x_i cos a - x_{i+hs/2} sin a, x_{i+hs/2} cos a + x_i sin a).
 * inverse = 1 turns by -a: the transpose, hence the backward (on dqkv). */
void hx_ref_rope(double *x, int rows, int T, int NH, int KV, int hs, float base, int inverse);

/* losses(N) = logsumexp(logits[r]) - logits[r][target[r]]; lse(N) kept */
void hx_ref_xent_fwd(double *losses, double *lse, const double *logits, const int *targets,
                     int N, int V);
/* dlogits = scale * (softmax(logits) - onehot(target)) */
void hx_ref_xent_bwd(double *dlogits, const double *logits, const int *targets, int N, int V,
                     double scale);

/* out[r] = wte[tokens[r]] + wpe[r % T]  (N = nseq*T rows) */
void hx_ref_embed_fwd(double *out, const int *tokens, const double *wte, const double *wpe,
                      int N, int T, int C);
/* dwte[tokens[r]] += dout[r]; dwpe[r % T] += dout[r] */
void hx_ref_embed_bwd(double *dwte, double *dwpe, const double *dout, const int *tokens, int N,
                      int T, int C);
/* One vocabulary shard: wte (Vl,C) holds rows [v0, v0+Vl); a token outside it gives a zero
 * row (fwd) or no dwte update (bwd); wpe / dwpe NULL: no position term */
void hx_ref_embed_fwd_vp(double *out, const int *tokens, const double *wte, int v0, int Vl,
                         const double *wpe, int N, int T, int C);
void hx_ref_embed_bwd_vp(double *dwte, double *dwpe, const double *dout, const int *tokens,
                         int v0, int Vl, int N, int T, int C);

/* Vocabulary-parallel cross-entropy (Megatron) over the shard logits (N,Vl) holding columns
 * [v0, v0+Vl): stats (N,2) = { log sum_j exp(logits[r][j]), logits[r][target - v0] if the
 * target is in the shard else 0 }. */
void hx_ref_xent_vp_stats(double *stats, const double *logits, const int *targets, int N, int Vl,
                          int v0);
/* From every shard's stats, all (parts*N, 2) with row t*N + r for shard t: lse[r] = log sum_t
 * exp(all[t*N+r][0]), losses[r] = lse[r] - sum_t all[t*N+r][1]; dlogits (N,Vl) = scale
 * (exp(logits - lse) - onehot(target - v0)) of this shard, unless NULL. */
void hx_ref_xent_vp(double *losses, double *lse, double *dlogits, const double *logits,
                    const int *targets, const double *all, int N, int Vl, int v0, int parts,
                    double scale);

/* out = a + b */
void hx_ref_add(double *out, const double *a, const double *b, int n);

/* sum of squares */
double hx_ref_sumsq(const double *x, int n);
/* Global-norm clip factor as PyTorch's clip_grad_norm_: min(1, max_norm / (norm + 1e-6));
 * max_norm <= 0 gives 1. */
double hx_ref_clip_coef(double sumsq, double max_norm);
/* One AdamW step (PyTorch's torch.optim.AdamW semantics) on a gradient scaled by clip_coef:
 * g = clip_coef * grad; param *= 1 - lr*wd; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 * param -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps).  t is 1-based. */
void hx_ref_adamw(double *param, double *m, double *v, const double *grad, int n, double lr,
                  double b1, double b2, double eps, double wd, double clip_coef, int t);

/* Warmup + cosine learning rate at 0-based step s (Megatron shape):
 * s < warmup: max_lr * (s+1) / warmup; else min_lr + (max_lr - min_lr) * 0.5 *
 * (1 + cos(pi * min(1, (s - warmup) / max(1, decay_iters - warmup)))). */
double hx_ref_lr(int s, double max_lr, double min_lr, int warmup, int decay_iters);

#endif /* HX_REF_H */
