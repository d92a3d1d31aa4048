/* SPDX-License-Identifier: MIT */
/* codelets/norm_rows.h: the data gradient of one row of LayerNorm and of RMSNorm once its
 * row means are known, shared by the whole-row CPU kernels (codelets/layernorm.c,
 * codelets/rmsnorm.c), which sum the means themselves, and the column-split ones
 * (codelets/norm_split.c), which read them from the all-reduced sums.  dx, dy, x, res are
 * the row's C elements (res may be NULL, and may alias dx: each element is read before it
 * is written); g = dy w, xhat = (x - mu) rs (RMSNorm: x rs). */
#ifndef HX_CODELETS_NORM_ROWS_H
#define HX_CODELETS_NORM_ROWS_H

#include <stddef.h>

/* dx = [res +] rs (g - mean(g) - xhat mean(g xhat)) */
static inline void hx_layernorm_bwd_row(float *dx, const float *dy, const float *x,
                                        const float *w, const float *res, float mu, float rs,
                                        float g_mean, float gx_mean, int C)
{
    for (int i = 0; i < C; i++) {
        float xhat = (x[i] - mu) * rs;
        float g = dy[i] * w[i];
        float v = rs * (g - g_mean - xhat * gx_mean);
        dx[i] = res != NULL ? res[i] + v : v;
    }
}

/* dx = [res +] rs (g - xhat mean(g xhat)) */
static inline void hx_rmsnorm_bwd_row(float *dx, const float *dy, const float *x,
                                      const float *w, const float *res, float rs,
                                      float gx_mean, int C)
{
    for (int i = 0; i < C; i++) {
        float xhat = x[i] * rs;
        float g = dy[i] * w[i];
        float v = rs * (g - xhat * gx_mean);
        dx[i] = res != NULL ? res[i] + v : v;
    }
}

#endif /* HX_CODELETS_NORM_ROWS_H */
