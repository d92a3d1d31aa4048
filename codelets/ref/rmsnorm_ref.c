/* SPDX-License-Identifier: MIT */
/* codelets/ref/rmsnorm_ref.c: reference RMSNorm (Llama) over the last dimension, fwd then bwd.
 * inp, out, dout, dinp, resid (N,C); w, dw (C); rstd (N), kept by the forward.  No mean is
 * subtracted and there is no bias: rstd = 1/sqrt(mean(x^2) + eps), out = x rstd w.  dinp is
 * written (=) as resid + dRMSNorm/dinp; dw accumulates (+=).  dinp == NULL skips the data
 * part, dw == NULL the weight; resid may alias dinp (each element is read before it is
 * written).  Tests: tests/ref/hand_values.c, tests/ref/finite_diff.c (with and without resid). */
#include <math.h>
#include <stddef.h>

#include "codelets/ref/ref.h"

void hx_ref_rmsnorm_fwd(double *out, double *rstd, const double *inp, const double *w, int N,
                        int C, double eps)
{
    for (int r = 0; r < N; r++) {
        const double *x = inp + (long)r * C;
        double *y = out + (long)r * C;
        double ms = 0.0;
        for (int i = 0; i < C; i++) {
            ms += x[i] * x[i];
        }
        ms /= C;
        double rs = 1.0 / sqrt(ms + eps);
        for (int i = 0; i < C; i++) {
            y[i] = x[i] * rs * w[i];
        }
        /* cache the row statistic for the backward pass */
        rstd[r] = rs;
    }
}

/* Per row, with xhat = x rstd and g = dout * w (the gradient w.r.t. xhat): d rstd / dx_i =
 * -rstd^3 x_i / C, so dx = rstd g - x rstd^3 sum(g x) / C = rstd (g - xhat mean(g xhat));
 * dw += dout xhat. */
void hx_ref_rmsnorm_bwd(double *dinp, double *dw, const double *dout, const double *inp,
                        const double *w, const double *rstd, const double *resid, int N, int C)
{
    for (int r = 0; r < N; r++) {
        const double *x = inp + (long)r * C;
        const double *dy = dout + (long)r * C;
        double rs = rstd[r];
        if (dw != NULL) {
            for (int i = 0; i < C; i++) {
                dw[i] += dy[i] * x[i] * rs;
            }
        }
        if (dinp == NULL) {
            continue;
        }
        double gx_mean = 0.0;
        for (int i = 0; i < C; i++) {
            gx_mean += dy[i] * w[i] * x[i] * rs;
        }
        gx_mean /= C;
        double *dx = dinp + (long)r * C;
        for (int i = 0; i < C; i++) {
            double xhat = x[i] * rs;
            double g = dy[i] * w[i];
            double res = resid != NULL ? resid[(long)r * C + i] : 0.0;
            dx[i] = res + rs * (g - xhat * gx_mean);
        }
    }
}
