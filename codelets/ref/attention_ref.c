/* SPDX-License-Identifier: MIT */
/* codelets/ref/attention_ref.c: reference causal self-attention, full softmax, multi-head
 * or grouped-query.  NH query heads, KV key/value heads (KV divides NH), hs = C/NH:
 * qkv, dqkv (nseq*T, C + 2 KV hs) = [q (NH heads) | k (KV heads) | v (KV heads)], head j of a
 * part in its columns j*hs..(j+1)*hs; query head h reads kv head h / (NH/KV).
 * out, dout (nseq*T, C); lse (nseq*T, NH); scale = 1/sqrt(hs).
 * Per sequence, query head h and query t: S_tj = scale q_t.k_j (j <= t), lse_t = log sum_j
 * exp S_tj, P_tj = exp(S_tj - lse_t), out_t = sum_j P_tj v_j.  The backward recomputes P from
 * qkv and writes dqkv (=); dk, dv of a kv head sum the terms of all its query heads.  No
 * scratch memory: scores are recomputed, which is slow but obvious.
 * Tests: tests/ref/hand_values.c (T=1, T=2 by hand), tests/ref/finite_diff.c. */
#include <math.h>

#include "codelets/ref/ref.h"

static double dot(const double *a, const double *b, int n)
{
    double acc = 0.0;
    for (int i = 0; i < n; i++) {
        acc += a[i] * b[i];
    }
    return acc;
}

/* log sum_{j<=t} exp(scale q.k_j), k_j = k0 + j*ld, shifted by the max for stability */
static double row_lse(const double *q, const double *k0, long ld, int t, int hs, double scale)
{
    double mx = -INFINITY;
    for (int j = 0; j <= t; j++) {
        mx = fmax(mx, scale * dot(q, k0 + j * ld, hs));
    }
    double sum = 0.0;
    for (int j = 0; j <= t; j++) {
        sum += exp(scale * dot(q, k0 + j * ld, hs) - mx);
    }
    return mx + log(sum);
}

void hx_ref_gqa_attention_fwd(double *out, double *lse, const double *qkv, int nseq, int T,
                              int C, int NH, int KV)
{
    int hs = C / NH, group = NH / KV;
    long ld = C + 2L * KV * hs; /* row stride of qkv */
    double scale = 1.0 / sqrt((double)hs);
    for (int b = 0; b < nseq; b++) {
        for (int h = 0; h < NH; h++) {
            /* q of token 0 of sequence b, head h, and k, v of its kv head; token j is j*ld
             * further */
            const double *q0 = qkv + (long)b * T * ld + h * hs;
            const double *k0 = qkv + (long)b * T * ld + C + (h / group) * hs;
            const double *v0 = k0 + KV * hs;
            for (int t = 0; t < T; t++) {
                const double *q = q0 + t * ld;
                double l = row_lse(q, k0, ld, t, hs, scale);
                double *o = out + ((long)b * T + t) * C + h * hs;
                for (int i = 0; i < hs; i++) {
                    o[i] = 0.0;
                }
                for (int j = 0; j <= t; j++) {
                    double p = exp(scale * dot(q, k0 + j * ld, hs) - l);
                    for (int i = 0; i < hs; i++) {
                        o[i] += p * v0[j * ld + i];
                    }
                }
                lse[((long)b * T + t) * NH + h] = l;
            }
        }
    }
}

/* Chain rule through out_t = sum_j P_tj v_j and the softmax, per query row t:
 *   dv_j += P_tj dout_t,   dP_tj = dout_t.v_j,   D_t = sum_j P_tj dP_tj,
 *   dS_tj = P_tj (dP_tj - D_t),   dq_t += scale dS_tj k_j,   dk_j += scale dS_tj q_t. */
void hx_ref_attention_fwd(double *out, double *lse, const double *qkv, int nseq, int T, int C,
                          int NH)
{
    hx_ref_gqa_attention_fwd(out, lse, qkv, nseq, T, C, NH, NH);
}

void hx_ref_gqa_attention_bwd(double *dqkv, const double *dout, const double *qkv, int nseq,
                              int T, int C, int NH, int KV)
{
    int hs = C / NH, group = NH / KV;
    long ld = C + 2L * KV * hs;
    double scale = 1.0 / sqrt((double)hs);
    for (long i = 0; i < (long)nseq * T * ld; i++) {
        dqkv[i] = 0.0; /* written, not accumulated: start from zero, then sum the terms */
    }
    for (int b = 0; b < nseq; b++) {
        for (int h = 0; h < NH; h++) {
            const double *q0 = qkv + (long)b * T * ld + h * hs;
            const double *k0 = qkv + (long)b * T * ld + C + (h / group) * hs;
            const double *v0 = k0 + KV * hs;
            double *dq0 = dqkv + (long)b * T * ld + h * hs;
            double *dk0 = dqkv + (long)b * T * ld + C + (h / group) * hs;
            double *dv0 = dk0 + KV * hs;
            for (int t = 0; t < T; t++) {
                const double *q = q0 + t * ld;
                const double *dy = dout + ((long)b * T + t) * C + h * hs;
                double l = row_lse(q, k0, ld, t, hs, scale);
                double D = 0.0;
                for (int j = 0; j <= t; j++) {
                    double p = exp(scale * dot(q, k0 + j * ld, hs) - l);
                    D += p * dot(dy, v0 + j * ld, hs);
                }
                for (int j = 0; j <= t; j++) {
                    const double *k = k0 + j * ld;
                    double p = exp(scale * dot(q, k, hs) - l);
                    double dS = p * (dot(dy, v0 + j * ld, hs) - D);
                    for (int i = 0; i < hs; i++) {
                        dq0[t * ld + i] += scale * dS * k[i];
                        dk0[j * ld + i] += scale * dS * q[i];
                        dv0[j * ld + i] += p * dy[i];
                    }
                }
            }
        }
    }
}

void hx_ref_attention_bwd(double *dqkv, const double *dout, const double *qkv, int nseq, int T,
                          int C, int NH)
{
    hx_ref_gqa_attention_bwd(dqkv, dout, qkv, nseq, T, C, NH, NH);
}
