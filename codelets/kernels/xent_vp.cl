/* SPDX-License-Identifier: MIT */
/* codelets/kernels/xent_vp.cl: vocabulary-parallel cross-entropy (Megatron), the device
 * forms of codelets/xent_vp.c (same formulas, same f64 arithmetic).  This shard holds the
 * logits columns [v0, v0+V): logits (N,V) row stride ld; targets (N,1) int32, global ids;
 * stats (N,2) row stride lds; all (parts*N, 2) row stride lda, shard t's stats of row n at
 * row t*N + n; losses, lse (N,1) row strides ldl, ldlse.
 *   hx_xent_vp_stats: stats[n] = { row log-sum-exp over the shard (hx_xent_row_lse, as
 *                     hx_xent_fwd), logits[n][target - v0] if the shard holds it else 0 }
 *   hx_xent_vp:       lse = log sum_t exp(all[t*N+n][0]) (max-shifted, f64), loss = lse -
 *                     sum_t all[t*N+n][1]; with grad, logits := scale (exp(logits - lse) -
 *                     onehot) in place.
 * Launches: one work-group of HX_BLOCK items per row (global N * HX_BLOCK) for both; the
 * stats' reductions are fixed trees (bitwise repeatable); the combine is over `parts`
 * values (the tensor-parallel degree), so every item of the group does it itself, in the
 * CPU's order, instead of sharing it through local memory and a barrier.  The launchers
 * checked no target is negative; a target the shard does not hold is normal.  Backends:
 * codelets/opencl/xent_vp.c, codelets/cuda/xent_vp.cu. */

/* the column of this shard holding global id @p tgt, or -1 (64-bit: tgt - v0 cannot
 * overflow) */
HX_INLINE long hx_xent_vp_col(int tgt, int v0, int V)
{
    long j = (long)tgt - v0;
    return j >= 0 && j < V ? j : -1;
}

HX_KERNEL void hx_xent_vp_stats(HX_GLOBAL float *HX_RESTRICT stats, long stats_off, int lds,
                                HX_GLOBAL const float *HX_RESTRICT logits, long logits_off,
                                int ld, HX_GLOBAL const int *HX_RESTRICT targets,
                                long targets_off, int V, int v0)
{
    HX_LOCAL float sf[HX_BLOCK];
    HX_LOCAL double sd[HX_BLOCK];
    long r = HX_GROUP();
    stats += stats_off;
    logits += logits_off;
    targets += targets_off;
    HX_GLOBAL const float *x = logits + r * ld;
    double l = hx_xent_row_lse(x, V, sf, sd);
    if (HX_LID() == 0) {
        long jt = hx_xent_vp_col(targets[r], v0, V);
        stats[r * lds] = (float)l;
        stats[r * lds + 1] = jt >= 0 ? x[jt] : 0.0f;
    }
}

HX_KERNEL void hx_xent_vp(HX_GLOBAL float *HX_RESTRICT logits, long logits_off, int ld,
                          HX_GLOBAL const int *HX_RESTRICT targets, long targets_off,
                          HX_GLOBAL const float *HX_RESTRICT all, long all_off, int lda,
                          HX_GLOBAL float *HX_RESTRICT losses, long losses_off, int ldl,
                          HX_GLOBAL float *HX_RESTRICT lse, long lse_off, int ldlse, int N,
                          int V, int v0, int parts, int grad, float scale)
{
    long r = HX_GROUP();
    logits += logits_off;
    targets += targets_off;
    all += all_off;
    losses += losses_off;
    lse += lse_off;
    /* combine_row of codelets/xent_vp.c: the max of the shards' lse, then the shifted sum
     * and the target logit (one shard's column 1 is nonzero), all in double */
    double mx = -INFINITY, sum = 0.0, tl = 0.0;
    for (int t = 0; t < parts; t++) {
        mx = fmax(mx, (double)all[((long)t * N + r) * lda]);
    }
    for (int t = 0; t < parts; t++) {
        HX_GLOBAL const float *s = all + ((long)t * N + r) * lda;
        sum += exp((double)s[0] - mx);
        tl += s[1];
    }
    double l = mx + log(sum);
    if (HX_LID() == 0) {
        losses[r * ldl] = (float)(l - tl);
        lse[r * ldlse] = (float)l;
    }
    if (grad) {
        HX_GLOBAL float *x = logits + r * ld;
        long jt = hx_xent_vp_col(targets[r], v0, V);
        float lf = (float)l;
        for (int j = HX_LID(); j < V; j += HX_BLOCK) {
            /* two roundings, as the CPU: the product, then the target's subtraction */
            float v = scale * HX_EXP(x[j] - lf);
            if (j == jt) {
                v -= scale;
            }
            x[j] = v;
        }
    }
}
