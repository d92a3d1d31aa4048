/* SPDX-License-Identifier: MIT */
/* codelets/kernels/crossentropy.cl: softmax cross-entropy over the vocabulary, the device
 * forms of codelets/crossentropy.c (same formulas, same f64 sum):
 *   logits (N,V) row stride ld; targets (N,1) int32; losses, lse (N,1)
 *   hx_xent_fwd:   lse[r] = log sum_j exp(logits[r][j]) (max-shifted, f64 sum),
 *                  losses[r] = lse[r] - logits[r][target[r]]
 *   hx_xent_bwd:   logits[r][j] := scale exp(logits[r][j] - lse[r]) (- scale at the target)
 *   hx_xent_fused: both per row, the row read from memory for the forward then rewritten.
 * Launches: fwd and fused, one work-group of HX_BLOCK items per row (global N * HX_BLOCK;
 * the row reductions are fixed trees, hx_xent_row_lse in xent_lse.cl, so a run is bitwise
 * repeatable); bwd, one item per logit (global N * V), no reduction.  The launchers checked
 * every target is in [0,V) first; a kernel still never indexes with one outside it (the
 * loss is then NaN, which no check lets pass).  HX_BARRIER fences local memory only, so
 * no item reads a logit another item writes.  Backends: codelets/opencl/crossentropy.c,
 * codelets/cuda/crossentropy.cu. */

HX_KERNEL void hx_xent_fwd(HX_GLOBAL float *HX_RESTRICT losses, long losses_off,
                           HX_GLOBAL float *HX_RESTRICT lse, long lse_off,
                           HX_GLOBAL const float *HX_RESTRICT logits, long logits_off, int ld,
                           HX_GLOBAL const int *HX_RESTRICT targets, long targets_off, int V)
{
    HX_LOCAL float sf[HX_BLOCK];
    HX_LOCAL double sd[HX_BLOCK];
    long r = HX_GROUP();
    losses += losses_off;
    lse += lse_off;
    logits += logits_off;
    targets += targets_off;
    HX_GLOBAL const float *x = logits + r * ld;
    double l = hx_xent_row_lse(x, V, sf, sd);
    if (HX_LID() == 0) {
        int t = targets[r];
        float xt = t >= 0 && t < V ? x[t] : NAN;
        lse[r] = (float)l;
        losses[r] = (float)(l - xt);
    }
}

/* one item per logit: global N * V (rounded up to HX_BLOCK) */
HX_KERNEL void hx_xent_bwd(HX_GLOBAL float *HX_RESTRICT logits, long logits_off, int ld,
                           HX_GLOBAL const float *HX_RESTRICT lse, long lse_off,
                           HX_GLOBAL const int *HX_RESTRICT targets, long targets_off, int N,
                           int V, float scale)
{
    long i = HX_GID();
    logits += logits_off;
    lse += lse_off;
    targets += targets_off;
    if (i < (long)N * V) {
        long r = i / V;
        int j = (int)(i - r * V);
        HX_GLOBAL float *x = logits + r * ld + j;
        /* two roundings, as the CPU: the product, then the target's subtraction */
        float v = scale * HX_EXP(*x - lse[r]);
        if (j == targets[r]) {
            v -= scale;
        }
        *x = v;
    }
}

/* one work-group per row: the forward's lse, then the row rewritten as the gradient with
 * the lse rounded to float, as the CPU's fused form (which stores lse, then reads it back) */
HX_KERNEL void hx_xent_fused(HX_GLOBAL float *HX_RESTRICT logits, long logits_off, int ld,
                             HX_GLOBAL const int *HX_RESTRICT targets, long targets_off,
                             HX_GLOBAL float *HX_RESTRICT losses, long losses_off,
                             HX_GLOBAL float *HX_RESTRICT lse, long lse_off, int V, float scale)
{
    HX_LOCAL float sf[HX_BLOCK];
    HX_LOCAL double sd[HX_BLOCK];
    long r = HX_GROUP();
    logits += logits_off;
    targets += targets_off;
    losses += losses_off;
    lse += lse_off;
    HX_GLOBAL float *x = logits + r * ld;
    int t = targets[r];
    int l = HX_LID();
    double lv = hx_xent_row_lse(x, V, sf, sd);
    float lf = (float)lv;
    /* The loss is written by the item owning column t, from its own read of x[t] before
     * its own write below: another item reading x[t] would race with that write, as
     * HX_BARRIER orders local memory only (oclgrind --data-races reports it). */
    int valid = t >= 0 && t < V;
    if (l == (valid ? t % HX_BLOCK : 0)) {
        losses[r] = (float)(lv - (valid ? x[t] : NAN));
    }
    if (l == 0) {
        lse[r] = lf;
    }
    /* each item rewrites only the columns it read in hx_xent_row_lse */
    for (int j = l; j < V; j += HX_BLOCK) {
        float v = scale * HX_EXP(x[j] - lf);
        if (j == t) {
            v -= scale;
        }
        x[j] = v;
    }
}
