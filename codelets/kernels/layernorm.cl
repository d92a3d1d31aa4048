/* SPDX-License-Identifier: MIT */
/* codelets/kernels/layernorm.cl: LayerNorm over the last dimension on the device, the
 * formulas and output rules of the CPU form (codelets/layernorm.c):
 *   fwd:        mean = sum(x)/C, var = sum((x - mean)^2)/C (two passes, sums in double so
 *               that |mean| >> std keeps its variance), rstd = 1/sqrt(var + eps) in double,
 *               out = (x - mean) rstd w + b;  out, mean, rstd written (=).
 *   add_fwd:    sum = a + b (written), then fwd of sum.
 *   bwd_data:   xhat = (x - mean) rstd, g = dout w,
 *               dinp = [resid +] rstd (g - mean(g) - xhat mean(g xhat))  (=); the two row
 *               means in double, as on the CPU, because dinp is their small difference from g.
 *   bwd_weight: dw += sum_r dout xhat, db += sum_r dout  (+=, rows in order).
 * Shapes: inp, out, dout, dinp, resid, a, b, sum (N, C) with rows ld floats apart (one ld for
 * all of them, checked by the launchers); w, bias, dw, db C floats; mean, rstd N floats.
 * Launch: fwd, add_fwd, bwd_data run one work-group of HX_BLOCK items per row (global
 * N * HX_BLOCK).  Item l takes columns l, l + HX_BLOCK, ... in every pass, so any C fits, the
 * row sums are per-item partials then a fixed tree (bitwise repeatable), and an item only reads
 * back elements it wrote itself (add_fwd's sum; resid, which may alias dinp).  bwd_weight runs
 * one item per column (global C), adding the rows in the CPU's order 0..N-1: a fixed order
 * with no cross-item sums.  The row kernels start exactly N groups and have no `r < N` guard:
 * PoCL 3.1 crashed (SIGSEGV inside its generated work-group function) on a uniform early
 * return ahead of the barriers of hx_layernorm_bwd_data, though the code is valid OpenCL and
 * oclgrind ran it clean.  (Splitting the rows over lanes of a work-group with a fixed tree
 * would give a GPU more parallelism when C is small; a possible later optimization.)
 * Backends: codelets/opencl/layernorm.c, codelets/cuda/layernorm.cu. */

/* One row of the forward, by the calling work-group: y, x the row (C floats); *mean, *rstd
 * the row's statistics.  x may be a row this item just wrote (add_fwd): same columns. */
HX_INLINE void hx_layernorm_row(HX_GLOBAL float *y, HX_GLOBAL float *mean, HX_GLOBAL float *rstd,
                                HX_GLOBAL const float *x, HX_GLOBAL const float *w,
                                HX_GLOBAL const float *b, int C, float eps,
                                HX_LOCAL_PTR double *red)
{
    int l = HX_LID();
    double part = 0.0;
    for (int i = l; i < C; i += HX_BLOCK) {
        part += x[i];
    }
    double mu = hx_block_sum_f64(red, part) / C;
    part = 0.0;
    for (int i = l; i < C; i += HX_BLOCK) {
        double d = x[i] - mu;
        part += d * d;
    }
    double var = hx_block_sum_f64(red, part) / C;
    /* plain sqrt of a double: correctly rounded in OpenCL C and CUDA alike (the CPU's rstd) */
    double rs = 1.0 / sqrt(var + (double)eps);
    float muf = (float)mu;
    float rsf = (float)rs;
    for (int i = l; i < C; i += HX_BLOCK) {
        y[i] = (x[i] - muf) * rsf * w[i] + b[i];
    }
    if (l == 0) {
        *mean = muf;
        *rstd = rsf;
    }
}

HX_KERNEL void hx_layernorm_fwd(HX_GLOBAL float *HX_RESTRICT out, long out_off,
                                HX_GLOBAL float *HX_RESTRICT mean, long mean_off,
                                HX_GLOBAL float *HX_RESTRICT rstd, long rstd_off,
                                HX_GLOBAL const float *HX_RESTRICT inp, long inp_off,
                                HX_GLOBAL const float *HX_RESTRICT w, long w_off,
                                HX_GLOBAL const float *HX_RESTRICT b, long b_off, int C, int ld,
                                float eps)
{
    HX_LOCAL double red[HX_BLOCK];
    long r = HX_GROUP(); /* exactly N groups run (see the top) */
    out += out_off + r * ld;
    inp += inp_off + r * ld;
    mean += mean_off;
    rstd += rstd_off;
    w += w_off;
    b += b_off;
    hx_layernorm_row(out, mean + r, rstd + r, inp, w, b, C, eps, red);
}

/* sum = a + b, then the forward of sum (add_layernorm_fwd) */
HX_KERNEL void hx_add_layernorm_fwd(HX_GLOBAL float *HX_RESTRICT sum, long sum_off,
                                    HX_GLOBAL float *HX_RESTRICT out, long out_off,
                                    HX_GLOBAL float *HX_RESTRICT mean, long mean_off,
                                    HX_GLOBAL float *HX_RESTRICT rstd, long rstd_off,
                                    HX_GLOBAL const float *HX_RESTRICT a, long a_off,
                                    HX_GLOBAL const float *HX_RESTRICT b, long b_off,
                                    HX_GLOBAL const float *HX_RESTRICT w, long w_off,
                                    HX_GLOBAL const float *HX_RESTRICT bias, long bias_off, int C,
                                    int ld, float eps)
{
    HX_LOCAL double red[HX_BLOCK];
    long r = HX_GROUP(); /* exactly N groups run (see the top) */
    sum += sum_off + r * ld;
    out += out_off + r * ld;
    a += a_off + r * ld;
    b += b_off + r * ld;
    mean += mean_off;
    rstd += rstd_off;
    w += w_off;
    bias += bias_off;
    for (int i = HX_LID(); i < C; i += HX_BLOCK) {
        sum[i] = a[i] + b[i];
    }
    hx_layernorm_row(out, mean + r, rstd + r, sum, w, bias, C, eps, red);
}

/* dinp and resid carry no restrict: resid may alias dinp (each element is read, then written,
 * by the same item) */
HX_KERNEL void hx_layernorm_bwd_data(HX_GLOBAL float *dinp, long dinp_off,
                                     HX_GLOBAL const float *dout, long dout_off,
                                     HX_GLOBAL const float *inp, long inp_off,
                                     HX_GLOBAL const float *w, long w_off,
                                     HX_GLOBAL const float *mean, long mean_off,
                                     HX_GLOBAL const float *rstd, long rstd_off,
                                     HX_GLOBAL const float *resid, long resid_off, int has_resid,
                                     int C, int ld)
{
    HX_LOCAL double red[HX_BLOCK];
    long r = HX_GROUP(); /* exactly N groups run (see the top) */
    int l = HX_LID();
    dinp += dinp_off + r * ld;
    dout += dout_off + r * ld;
    inp += inp_off + r * ld;
    resid += resid_off + r * ld;
    w += w_off;
    float mu = mean[mean_off + r];
    float rs = rstd[rstd_off + r];
    double g_part = 0.0;
    double gx_part = 0.0;
    for (int i = l; i < C; i += HX_BLOCK) {
        float xhat = (inp[i] - mu) * rs;
        float g = dout[i] * w[i];
        g_part += g;
        gx_part += (double)g * xhat;
    }
    float g_mean = (float)(hx_block_sum_f64(red, g_part) / C);
    float gx_mean = (float)(hx_block_sum_f64(red, gx_part) / C);
    for (int i = l; i < C; i += HX_BLOCK) {
        float xhat = (inp[i] - mu) * rs;
        float g = dout[i] * w[i];
        float v = rs * (g - g_mean - xhat * gx_mean);
        dinp[i] = has_resid ? resid[i] + v : v;
    }
}

/* one item per column c: dw[c], db[c] += the rows 0..N-1 in order */
HX_KERNEL void hx_layernorm_bwd_weight(HX_GLOBAL float *HX_RESTRICT dw, long dw_off,
                                       HX_GLOBAL float *HX_RESTRICT db, long db_off,
                                       HX_GLOBAL const float *HX_RESTRICT dout, long dout_off,
                                       HX_GLOBAL const float *HX_RESTRICT inp, long inp_off,
                                       HX_GLOBAL const float *HX_RESTRICT mean, long mean_off,
                                       HX_GLOBAL const float *HX_RESTRICT rstd, long rstd_off,
                                       int N, int C, int ld)
{
    long c = HX_GID();
    if (c >= C) {
        return;
    }
    dw += dw_off;
    db += db_off;
    dout += dout_off;
    inp += inp_off;
    mean += mean_off;
    rstd += rstd_off;
    float acc_w = dw[c];
    float acc_b = db[c];
    for (long r = 0; r < N; r++) {
        float dy = dout[r * ld + c];
        float xhat = (inp[r * ld + c] - mean[r]) * rstd[r];
        acc_w += dy * xhat;
        acc_b += dy;
    }
    dw[c] = acc_w;
    db[c] = acc_b;
}
