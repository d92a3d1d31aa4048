/* SPDX-License-Identifier: MIT */
/* codelets/ref/norm_split_ref.c: reference partial row sums of the column-split norms
 * (include/helix/ops.h, HX_OP_NORM_PART), in double: over the C columns of a slice of rows
 * cols_total wide, by mode (enum hx_norm_part_mode).  Summed over the slices of a row they
 * give the whole row's sums, from which hx_ref_layernorm_* and hx_ref_rmsnorm_* are the
 * norms themselves (the split changes no math).  Test: tests/codelets/norm_split.c. */
#include <stddef.h>

#include "codelets/ref/ref.h"
#include "helix/ops.h"

void hx_ref_norm_part(double *s, int mode, const double *inp, const double *dout,
                      const double *w, const double *stat, const double *rstd, int N, int C,
                      int ld, int cols_total)
{
    int two = mode == HX_NORM_LN_VAR || mode == HX_NORM_LN_BWD;
    for (int r = 0; r < N; r++) {
        const double *x = inp + (long)r * ld;
        const double *dy = dout != NULL ? dout + (long)r * ld : NULL;
        double a = 0.0, c = 0.0;
        for (int i = 0; i < C; i++) {
            switch (mode) {
            case HX_NORM_LN_SUM:
                a += x[i];
                break;
            case HX_NORM_LN_VAR: {
                double d = x[i] - stat[r] / cols_total;
                a += d * d;
                c += d;
                break;
            }
            case HX_NORM_RMS_SQ:
                a += x[i] * x[i];
                break;
            case HX_NORM_LN_BWD: {
                double g = dy[i] * w[i];
                a += g;
                c += g * (x[i] - stat[r]) * rstd[r];
                break;
            }
            default: /* HX_NORM_RMS_BWD */
                a += dy[i] * w[i] * x[i] * rstd[r];
                break;
            }
        }
        s[two ? 2 * r : r] = a;
        if (two) {
            s[2 * r + 1] = c;
        }
    }
}
