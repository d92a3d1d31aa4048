/* SPDX-License-Identifier: MIT */
/* codelets/ref/layernorm_ref.c: reference LayerNorm over the last dimension, fwd then bwd.
 * inp, out, dout, dinp, resid (N,C); w, b, dw, db (C); mean, rstd (N), kept by the forward.
 * Biased variance, rstd = 1/sqrt(var + eps).  dinp is written (=) as resid + dLN/dinp;
 * dw, db accumulate (+=).  dinp == NULL skips the data part, dw == db == NULL the weights;
 * resid may alias dinp (each element is read before it is written).
 * Tests: tests/ref/hand_values.c, tests/ref/finite_diff.c (with and without resid). */
#include <math.h>
#include <stddef.h>

#include "codelets/ref/ref.h"

void hx_ref_layernorm_fwd(double *out, double *mean, double *rstd, const double *inp,
                          const double *w, const double *b, int N, int C, double eps)
{
    for (int r = 0; r < N; r++) {
        const double *x = inp + (long)r * C;
        double *y = out + (long)r * C;
        double mu = 0.0;
        for (int i = 0; i < C; i++) {
            mu += x[i];
        }
        mu /= C;
        double var = 0.0;
        for (int i = 0; i < C; i++) {
            var += (x[i] - mu) * (x[i] - mu);
        }
        var /= C;
        double rs = 1.0 / sqrt(var + eps);
        for (int i = 0; i < C; i++) {
            y[i] = (x[i] - mu) * rs * w[i] + b[i];
        }
        /* cache the row statistics for the backward pass */
        mean[r] = mu;
        rstd[r] = rs;
    }
}

/* Per row, with xhat = (x - mean) rstd and g = dout * w (the gradient w.r.t. xhat):
 *   dx = rstd (g - mean(g) - xhat mean(g xhat)),   dw += dout xhat,   db += dout. */
void hx_ref_layernorm_bwd(double *dinp, double *dw, double *db, const double *dout,
                          const double *inp, const double *w, const double *mean,
                          const double *rstd, const double *resid, int N, int C)
{
    for (int r = 0; r < N; r++) {
        const double *x = inp + (long)r * C;
        const double *dy = dout + (long)r * C;
        double mu = mean[r];
        double rs = rstd[r];
        if (dw != NULL || db != NULL) {
            for (int i = 0; i < C; i++) {
                double xhat = (x[i] - mu) * rs;
                if (dw != NULL) {
                    dw[i] += dy[i] * xhat;
                }
                if (db != NULL) {
                    db[i] += dy[i];
                }
            }
        }
        if (dinp == NULL) {
            continue;
        }
        double g_mean = 0.0;
        double gx_mean = 0.0;
        for (int i = 0; i < C; i++) {
            double xhat = (x[i] - mu) * rs;
            double g = dy[i] * w[i];
            g_mean += g;
            gx_mean += g * xhat;
        }
        g_mean /= C;
        gx_mean /= C;
        double *dx = dinp + (long)r * C;
        for (int i = 0; i < C; i++) {
            double xhat = (x[i] - mu) * rs;
            double g = dy[i] * w[i];
            double res = resid != NULL ? resid[(long)r * C + i] : 0.0;
            dx[i] = res + rs * (g - g_mean - xhat * gx_mean);
        }
    }
}
