/* SPDX-License-Identifier: MIT */
/* codelets/kernels/xent_lse.cl: the row log-sum-exp that the cross-entropy kernels
 * (crossentropy.cl) and the vocabulary-parallel ones (xent_vp.cl) share, as their CPU forms
 * share hx_row_lse (codelets/vecmath.h), so both see the same rounding.  Helpers only (no
 * kernels, static inline): each CUDA file of the two families includes this file before its
 * own .cl; the OpenCL program holds it once, before both (codelets/Makefile.am, KERNELS). */

/* log sum_j exp(x[j]) over a row of V floats, by the calling work-group of HX_BLOCK items
 * (item l takes columns l, l + HX_BLOCK, ...): the row max (fixed tree) is subtracted so
 * every exp() is <= 1, the terms are summed in double (fixed tree), and the result is
 * max + log(sum) in double, as hx_row_lse.  Every item gets it; all must call it (barriers).
 * sf: HX_BLOCK floats, sd: HX_BLOCK doubles of local memory.  `log` is spelled plainly: it
 * is the double overload in OpenCL C and in CUDA alike (HX_LOG is logf in CUDA). */
HX_INLINE double hx_xent_row_lse(HX_GLOBAL const float *x, int V, HX_LOCAL_PTR float *sf,
                                 HX_LOCAL_PTR double *sd)
{
    int l = HX_LID();
    float mx = -INFINITY;
    for (int j = l; j < V; j += HX_BLOCK) {
        mx = HX_FMAX(mx, x[j]);
    }
    mx = hx_block_max(sf, mx);
    double sum = 0.0;
    for (int j = l; j < V; j += HX_BLOCK) {
        sum += (double)HX_EXP(x[j] - mx);
    }
    sum = hx_block_sum_f64(sd, sum);
    return (double)mx + log(sum);
}
