/* SPDX-License-Identifier: MIT */
/* codelets/kernels/rmsnorm.cl: RMSNorm (Llama) over the last dimension on the device, the
 * formulas and output rules of the CPU form (codelets/rmsnorm.c):
 *   fwd:        rstd = 1/sqrt(sum(x^2)/C + eps) (the sum and the sqrt in double, as on the
 *               CPU), out = x rstd w;  out, rstd written (=).
 *   add_fwd:    sum = a + b (written), then fwd of sum.
 *   bwd_data:   xhat = x rstd, g = dout w,
 *               dinp = [resid +] rstd (g - xhat mean(g xhat))  (=); the row mean in double,
 *               as on the CPU, because dinp is its small difference from g.
 *   bwd_weight: dw += sum_r dout xhat  (+=, rows in order).
 * Shapes: inp, out, dout, dinp, resid, a, b, sum (N, C) with rows ld floats apart (one ld for
 * all of them, checked by the launchers); w, dw C floats; rstd N floats.
 * Launch, as codelets/kernels/layernorm.cl and for the same reasons: fwd, add_fwd, bwd_data
 * run exactly N work-groups of HX_BLOCK items, one per row, with no `r < N` guard; item l
 * takes columns l, l + HX_BLOCK, ..., the row sums are per-item partials then a fixed tree
 * (bitwise repeatable), and an item only reads back elements it wrote itself (add_fwd's sum;
 * resid, which may alias dinp).  bwd_weight runs one item per column (global C), adding the
 * rows in the CPU's order 0..N-1.
 * Backends: codelets/opencl/rmsnorm.c, codelets/cuda/rmsnorm.cu. */

/* One row of the forward, by the calling work-group: y, x the row (C floats); *rstd the row's
 * statistic.  x may be a row this item just wrote (add_fwd): same columns. */
HX_INLINE void hx_rmsnorm_row(HX_GLOBAL float *y, HX_GLOBAL float *rstd,
                              HX_GLOBAL const float *x, HX_GLOBAL const float *w, int C,
                              float eps, HX_LOCAL_PTR double *red)
{
    int l = HX_LID();
    double part = 0.0;
    for (int i = l; i < C; i += HX_BLOCK) {
        part += (double)x[i] * x[i];
    }
    double ms = hx_block_sum_f64(red, part) / C;
    /* plain sqrt of a double: correctly rounded in OpenCL C and CUDA alike (the CPU's rstd) */
    float rsf = (float)(1.0 / sqrt(ms + (double)eps));
    for (int i = l; i < C; i += HX_BLOCK) {
        y[i] = x[i] * rsf * w[i];
    }
    if (l == 0) {
        *rstd = rsf;
    }
}

HX_KERNEL void hx_rmsnorm_fwd(HX_GLOBAL float *HX_RESTRICT out, long out_off,
                              HX_GLOBAL float *HX_RESTRICT rstd, long rstd_off,
                              HX_GLOBAL const float *HX_RESTRICT inp, long inp_off,
                              HX_GLOBAL const float *HX_RESTRICT w, long w_off, int C, int ld,
                              float eps)
{
    HX_LOCAL double red[HX_BLOCK];
    long r = HX_GROUP(); /* exactly N groups run (see the top) */
    out += out_off + r * ld;
    inp += inp_off + r * ld;
    rstd += rstd_off;
    w += w_off;
    hx_rmsnorm_row(out, rstd + r, inp, w, C, eps, red);
}

/* sum = a + b, then the forward of sum (add_rmsnorm_fwd) */
HX_KERNEL void hx_add_rmsnorm_fwd(HX_GLOBAL float *HX_RESTRICT sum, long sum_off,
                                  HX_GLOBAL float *HX_RESTRICT out, long out_off,
                                  HX_GLOBAL float *HX_RESTRICT rstd, long rstd_off,
                                  HX_GLOBAL const float *HX_RESTRICT a, long a_off,
                                  HX_GLOBAL const float *HX_RESTRICT b, long b_off,
                                  HX_GLOBAL const float *HX_RESTRICT w, long w_off, int C, int ld,
                                  float eps)
{
    HX_LOCAL double red[HX_BLOCK];
    long r = HX_GROUP(); /* exactly N groups run (see the top) */
    sum += sum_off + r * ld;
    out += out_off + r * ld;
    a += a_off + r * ld;
    b += b_off + r * ld;
    rstd += rstd_off;
    w += w_off;
    for (int i = HX_LID(); i < C; i += HX_BLOCK) {
        sum[i] = a[i] + b[i];
    }
    hx_rmsnorm_row(out, rstd + r, sum, w, C, eps, red);
}

/* dinp and resid carry no restrict: resid may alias dinp (each element is read, then written,
 * by the same item) */
HX_KERNEL void hx_rmsnorm_bwd_data(HX_GLOBAL float *dinp, long dinp_off,
                                   HX_GLOBAL const float *dout, long dout_off,
                                   HX_GLOBAL const float *inp, long inp_off,
                                   HX_GLOBAL const float *w, long w_off,
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
    float rs = rstd[rstd_off + r];
    double gx_part = 0.0;
    for (int i = l; i < C; i += HX_BLOCK) {
        float xhat = inp[i] * rs;
        float g = dout[i] * w[i];
        gx_part += (double)g * xhat;
    }
    float gx_mean = (float)(hx_block_sum_f64(red, gx_part) / C);
    for (int i = l; i < C; i += HX_BLOCK) {
        float xhat = inp[i] * rs;
        float g = dout[i] * w[i];
        float v = rs * (g - xhat * gx_mean);
        dinp[i] = has_resid ? resid[i] + v : v;
    }
}

/* one item per column c: dw[c] += the rows 0..N-1 in order */
HX_KERNEL void hx_rmsnorm_bwd_weight(HX_GLOBAL float *HX_RESTRICT dw, long dw_off,
                                     HX_GLOBAL const float *HX_RESTRICT dout, long dout_off,
                                     HX_GLOBAL const float *HX_RESTRICT inp, long inp_off,
                                     HX_GLOBAL const float *HX_RESTRICT rstd, long rstd_off,
                                     int N, int C, int ld)
{
    long c = HX_GID();
    if (c >= C) {
        return;
    }
    dw += dw_off;
    dout += dout_off;
    inp += inp_off;
    rstd += rstd_off;
    float acc = dw[c];
    for (long r = 0; r < N; r++) {
        acc += dout[r * ld + c] * (inp[r * ld + c] * rstd[r]);
    }
    dw[c] = acc;
}
