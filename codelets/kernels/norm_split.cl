/* SPDX-License-Identifier: MIT */
/* codelets/kernels/norm_split.cl: LayerNorm and RMSNorm over rows whose C_total columns are
 * split over a group of ranks, on the device; the formulas and output rules of the CPU form
 * (codelets/norm_split.c), buffers as include/helix/ops.h (HX_OP_NORM_*):
 *   hx_norm_part:  this slice's partial row sums in double, stored as float, by mode
 *                  (enum hx_norm_part_mode, the HX_NP_* below):
 *                  LN_SUM sum x; LN_VAR { sum d^2, sum d }, d = x - S/C_total;
 *                  RMS_SQ sum x^2; LN_BWD { sum g, sum g xhat }; RMS_BWD sum g xhat;
 *                  g = dout w, xhat = (x - mean) rstd (LN) or x rstd (RMS), in float.
 *   *_fwd_apply:   the statistics in double from the all-reduced float sums, rounded to
 *                  float as codelets/kernels/layernorm.cl and rmsnorm.cl round theirs:
 *                  LN: m = S1/C_total, c = S2[1]/C_total, mean = m + c,
 *                  rstd = 1/sqrt(max(S2[0]/C_total - c^2, 0) + eps),
 *                  out = (x - mean) rstd w + b;  RMS: rstd = 1/sqrt(S/C_total + eps),
 *                  out = x rstd w;  out, mean, rstd written (=).
 *   *_bwd_apply:   dinp = [resid +] rstd (g - S[0]/C_total - xhat S[1]/C_total) (LN),
 *                  [resid +] rstd (g - xhat S/C_total) (RMS), the means rounded to float
 *                  as in the whole-row bwd_data;  (=).
 * Shapes: inp, out, dout, dinp, resid (N, C) with rows ld floats apart (one ld, checked by
 * the launchers), w, b C floats; mean, rstd, (N,1) sums N floats; (N,2) sums 2N floats, row r
 * at 2r, 2r + 1.
 * Launch, as codelets/kernels/layernorm.cl and for the same reasons: exactly N work-groups of
 * HX_BLOCK items, one per row, with no `r < N` guard; item l takes columns l, l + HX_BLOCK,
 * ...; hx_norm_part's sums are per-item partials then a fixed tree (bitwise repeatable), and
 * every item runs both trees whatever the mode (no barrier under a branch: see the PoCL 3.1
 * crash noted in layernorm.cl).  An item only reads back elements it wrote itself (resid,
 * which may alias dinp).
 * Backends: codelets/opencl/norm_split.c, codelets/cuda/norm_split.cu. */

/* enum hx_norm_part_mode of include/helix/ops.h (codelets/cuda/norm_split.cu checks them) */
#define HX_NP_LN_SUM 0
#define HX_NP_LN_VAR 1
#define HX_NP_RMS_SQ 2
#define HX_NP_LN_BWD 3
#define HX_NP_RMS_BWD 4

/* s (N,1) or (N,2) = the partial sums of mode; stat is LN_VAR's S or LN_BWD's mean.  The
 * buffers a mode does not read are stand-ins (the launchers pass inp): never read. */
HX_KERNEL void hx_norm_part(HX_GLOBAL float *HX_RESTRICT s, long s_off,
                            HX_GLOBAL const float *HX_RESTRICT inp, long inp_off,
                            HX_GLOBAL const float *HX_RESTRICT dout, long dout_off,
                            HX_GLOBAL const float *HX_RESTRICT w, long w_off,
                            HX_GLOBAL const float *HX_RESTRICT stat, long stat_off,
                            HX_GLOBAL const float *HX_RESTRICT rstd, long rstd_off, int mode,
                            int C, int ld, int cols_total)
{
    HX_LOCAL double red[HX_BLOCK];
    long r = HX_GROUP(); /* exactly N groups run (see the top) */
    int l = HX_LID();
    s += s_off;
    inp += inp_off + r * ld;
    dout += dout_off + r * ld;
    w += w_off;
    stat += stat_off;
    rstd += rstd_off;
    double a = 0.0, c = 0.0;
    if (mode == HX_NP_LN_SUM) {
        for (int i = l; i < C; i += HX_BLOCK) {
            a += inp[i];
        }
    } else if (mode == HX_NP_LN_VAR) {
        double m = (double)stat[r] / cols_total;
        for (int i = l; i < C; i += HX_BLOCK) {
            double d = inp[i] - m;
            a += d * d;
            c += d;
        }
    } else if (mode == HX_NP_RMS_SQ) {
        for (int i = l; i < C; i += HX_BLOCK) {
            a += (double)inp[i] * inp[i];
        }
    } else if (mode == HX_NP_LN_BWD) {
        float mu = stat[r];
        float rs = rstd[r];
        for (int i = l; i < C; i += HX_BLOCK) {
            float xhat = (inp[i] - mu) * rs;
            float g = dout[i] * w[i];
            a += g;
            c += (double)g * xhat;
        }
    } else { /* HX_NP_RMS_BWD */
        float rs = rstd[r];
        for (int i = l; i < C; i += HX_BLOCK) {
            float xhat = inp[i] * rs;
            float g = dout[i] * w[i];
            a += (double)g * xhat;
        }
    }
    a = hx_block_sum_f64(red, a);
    c = hx_block_sum_f64(red, c);
    if (l == 0) {
        if (mode == HX_NP_LN_VAR || mode == HX_NP_LN_BWD) {
            s[2 * r] = (float)a;
            s[2 * r + 1] = (float)c;
        } else {
            s[r] = (float)a;
        }
    }
}

HX_KERNEL void hx_layernorm_fwd_apply(HX_GLOBAL float *HX_RESTRICT out, long out_off,
                                      HX_GLOBAL float *HX_RESTRICT mean, long mean_off,
                                      HX_GLOBAL float *HX_RESTRICT rstd, long rstd_off,
                                      HX_GLOBAL const float *HX_RESTRICT inp, long inp_off,
                                      HX_GLOBAL const float *HX_RESTRICT w, long w_off,
                                      HX_GLOBAL const float *HX_RESTRICT b, long b_off,
                                      HX_GLOBAL const float *HX_RESTRICT s1, long s1_off,
                                      HX_GLOBAL const float *HX_RESTRICT s2, long s2_off, int C,
                                      int ld, int cols_total, float eps)
{
    long r = HX_GROUP(); /* exactly N groups run (see the top) */
    int l = HX_LID();
    out += out_off + r * ld;
    inp += inp_off + r * ld;
    w += w_off;
    b += b_off;
    s1 += s1_off;
    s2 += s2_off;
    double m = (double)s1[r] / cols_total;
    double c = (double)s2[2 * r + 1] / cols_total;
    double var = (double)s2[2 * r] / cols_total - c * c;
    /* plain sqrt of a double: correctly rounded in OpenCL C and CUDA alike (the CPU's rstd) */
    double rs = 1.0 / sqrt((var > 0.0 ? var : 0.0) + (double)eps);
    float muf = (float)(m + c);
    float rsf = (float)rs;
    for (int i = l; i < C; i += HX_BLOCK) {
        out[i] = (inp[i] - muf) * rsf * w[i] + b[i];
    }
    if (l == 0) {
        mean[mean_off + r] = muf;
        rstd[rstd_off + r] = rsf;
    }
}

HX_KERNEL void hx_rmsnorm_fwd_apply(HX_GLOBAL float *HX_RESTRICT out, long out_off,
                                    HX_GLOBAL float *HX_RESTRICT rstd, long rstd_off,
                                    HX_GLOBAL const float *HX_RESTRICT inp, long inp_off,
                                    HX_GLOBAL const float *HX_RESTRICT w, long w_off,
                                    HX_GLOBAL const float *HX_RESTRICT s, long s_off, int C,
                                    int ld, int cols_total, float eps)
{
    long r = HX_GROUP(); /* exactly N groups run (see the top) */
    int l = HX_LID();
    out += out_off + r * ld;
    inp += inp_off + r * ld;
    w += w_off;
    float rsf = (float)(1.0 / sqrt((double)s[s_off + r] / cols_total + (double)eps));
    for (int i = l; i < C; i += HX_BLOCK) {
        out[i] = inp[i] * rsf * w[i];
    }
    if (l == 0) {
        rstd[rstd_off + r] = rsf;
    }
}

/* dinp and resid carry no restrict: resid may alias dinp (each element is read, then written,
 * by the same item) */
HX_KERNEL void hx_layernorm_bwd_apply(HX_GLOBAL float *dinp, long dinp_off,
                                      HX_GLOBAL const float *dout, long dout_off,
                                      HX_GLOBAL const float *inp, long inp_off,
                                      HX_GLOBAL const float *w, long w_off,
                                      HX_GLOBAL const float *mean, long mean_off,
                                      HX_GLOBAL const float *rstd, long rstd_off,
                                      HX_GLOBAL const float *s, long s_off,
                                      HX_GLOBAL const float *resid, long resid_off,
                                      int has_resid, int C, int ld, int cols_total)
{
    long r = HX_GROUP(); /* exactly N groups run (see the top) */
    int l = HX_LID();
    dinp += dinp_off + r * ld;
    dout += dout_off + r * ld;
    inp += inp_off + r * ld;
    resid += resid_off + r * ld;
    w += w_off;
    s += s_off;
    float mu = mean[mean_off + r];
    float rs = rstd[rstd_off + r];
    float g_mean = (float)((double)s[2 * r] / cols_total);
    float gx_mean = (float)((double)s[2 * r + 1] / cols_total);
    for (int i = l; i < C; i += HX_BLOCK) {
        float xhat = (inp[i] - mu) * rs;
        float g = dout[i] * w[i];
        float v = rs * (g - g_mean - xhat * gx_mean);
        dinp[i] = has_resid ? resid[i] + v : v;
    }
}

HX_KERNEL void hx_rmsnorm_bwd_apply(HX_GLOBAL float *dinp, long dinp_off,
                                    HX_GLOBAL const float *dout, long dout_off,
                                    HX_GLOBAL const float *inp, long inp_off,
                                    HX_GLOBAL const float *w, long w_off,
                                    HX_GLOBAL const float *rstd, long rstd_off,
                                    HX_GLOBAL const float *s, long s_off,
                                    HX_GLOBAL const float *resid, long resid_off, int has_resid,
                                    int C, int ld, int cols_total)
{
    long r = HX_GROUP(); /* exactly N groups run (see the top) */
    int l = HX_LID();
    dinp += dinp_off + r * ld;
    dout += dout_off + r * ld;
    inp += inp_off + r * ld;
    resid += resid_off + r * ld;
    w += w_off;
    float rs = rstd[rstd_off + r];
    float gx_mean = (float)((double)s[s_off + r] / cols_total);
    for (int i = l; i < C; i += HX_BLOCK) {
        float xhat = inp[i] * rs;
        float g = dout[i] * w[i];
        float v = rs * (g - xhat * gx_mean);
        dinp[i] = has_resid ? resid[i] + v : v;
    }
}
