/* SPDX-License-Identifier: MIT */
/* codelets/ref/xent_vp_ref.c: reference vocabulary-parallel cross-entropy (Megatron).  Shard t
 * holds the logits columns [v0, v0+Vl) of (N, V); each computes per-row stats (N,2) = { its
 * log-sum-exp, the target's logit if the target is in the shard else 0 }; the stats of all
 * shards, rows t*N + r, give lse = log sum_t exp(lse_t) and loss = lse - sum_t logit_t, equal
 * to hx_ref_xent_fwd on the whole row; the gradient of the shard is its columns of
 * hx_ref_xent_bwd.  Test: tests/codelets/xent_vp.c (against hx_ref_xent_fwd/bwd, V = 257). */
#include <math.h>
#include <stddef.h>

#include "codelets/ref/ref.h"

/* log sum_i exp(x[i * stride]) relative to the max, so no exp() overflows */
static double log_sum_exp(const double *x, int n, int stride)
{
    double mx = -INFINITY;
    for (int i = 0; i < n; i++) {
        mx = fmax(mx, x[(long)i * stride]);
    }
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        sum += exp(x[(long)i * stride] - mx);
    }
    return mx + log(sum);
}

void hx_ref_xent_vp_stats(double *stats, const double *logits, const int *targets, int N, int Vl,
                          int v0)
{
    for (int r = 0; r < N; r++) {
        const double *x = logits + (long)r * Vl;
        long j = (long)targets[r] - v0;
        stats[2 * r] = log_sum_exp(x, Vl, 1);
        stats[2 * r + 1] = j >= 0 && j < Vl ? x[j] : 0.0;
    }
}

void hx_ref_xent_vp(double *losses, double *lse, double *dlogits, const double *logits,
                    const int *targets, const double *all, int N, int Vl, int v0, int parts,
                    double scale)
{
    for (int r = 0; r < N; r++) {
        /* column 0 of rows r, N + r, ..., (parts-1) N + r */
        double l = log_sum_exp(all + 2L * r, parts, 2 * N);
        double target_logit = 0.0;
        for (int t = 0; t < parts; t++) {
            target_logit += all[2 * ((long)t * N + r) + 1];
        }
        lse[r] = l;
        losses[r] = l - target_logit;
        if (dlogits == NULL) {
            continue;
        }
        const double *x = logits + (long)r * Vl;
        double *dx = dlogits + (long)r * Vl;
        for (int j = 0; j < Vl; j++) {
            double onehot = v0 + j == targets[r] ? 1.0 : 0.0;
            dx[j] = scale * (exp(x[j] - l) - onehot);
        }
    }
}
