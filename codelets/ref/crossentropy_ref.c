/* SPDX-License-Identifier: MIT */
/* codelets/ref/crossentropy_ref.c: reference softmax cross-entropy, forward then backward.
 * logits, dlogits (N,V); targets, losses, lse (N), 0 <= targets[r] < V.
 * losses[r] = lse[r] - logits[r][targets[r]]; dlogits = scale (softmax - onehot), written (=),
 * i.e. the gradient of scale * sum_r losses[r] (scale is 1/N for a mean loss).
 * Tests: tests/ref/hand_values.c, tests/ref/finite_diff.c (V = 257). */
#include <math.h>

#include "codelets/ref/ref.h"

/* Softmax and losses are formed relative to the row max mx: exp(x_i - mx) cannot overflow,
 * and loss = log sum_i exp(x_i - mx) - (x_t - mx) keeps full precision even when the logits
 * are large (lse = mx + log sum rounds to the ulp of mx). */
static double row_max(const double *x, int V)
{
    double mx = -INFINITY;
    for (int i = 0; i < V; i++) {
        mx = fmax(mx, x[i]);
    }
    return mx;
}

static double sum_exp(const double *x, int V, double mx)
{
    double sum = 0.0;
    for (int i = 0; i < V; i++) {
        sum += exp(x[i] - mx);
    }
    return sum;
}

void hx_ref_xent_fwd(double *losses, double *lse, const double *logits, const int *targets,
                     int N, int V)
{
    for (int r = 0; r < N; r++) {
        const double *x = logits + (long)r * V;
        double mx = row_max(x, V);
        double log_sum = log(sum_exp(x, V, mx));
        lse[r] = mx + log_sum;
        losses[r] = log_sum - (x[targets[r]] - mx);
    }
}

void hx_ref_xent_bwd(double *dlogits, const double *logits, const int *targets, int N, int V,
                     double scale)
{
    for (int r = 0; r < N; r++) {
        const double *x = logits + (long)r * V;
        double *dx = dlogits + (long)r * V;
        double mx = row_max(x, V);
        double sum = sum_exp(x, V, mx);
        for (int i = 0; i < V; i++) {
            double p = exp(x[i] - mx) / sum;
            double onehot = i == targets[r] ? 1.0 : 0.0;
            dx[i] = scale * (p - onehot);
        }
    }
}
