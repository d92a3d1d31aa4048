/* SPDX-License-Identifier: MIT */
/* codelets/kernels/rope.cl: rotary position embeddings on the device, the math of the CPU
 * form (codelets/rope.c) with the same angle (codelets/rope.h: each step one correct rounding
 * to float32, cos and sin in double), so the backends agree to an ulp of cos and sin.
 * qkv (rows, (NH + 2 KV) hs) ld, in place: the NH q heads and the KV k heads right after them
 * turn, v does not.  Row r is position r mod T.  One item per (row, pair i < hs/2): it forms
 * cos and sin once and turns pair i of the row's NH + KV heads; no item shares an element.
 * sign = 1 (forward) or -1 (backward: the transpose, sin -> -sin, exactly since
 * sin(-a) = -sin(a) in IEEE arithmetic).  pow, cos and sin on doubles are spelt alike in
 * OpenCL C (cl_khr_fp64, dialect.h) and CUDA.
 * Launch: global rows * hs/2 (rounded up to HX_BLOCK).  Backends: codelets/opencl/rope.c,
 * codelets/cuda/rope.cu. */

HX_KERNEL void hx_rope(HX_GLOBAL float *HX_RESTRICT qkv, long qkv_off, long rows, int T, int NH,
                       int KV, int hs, int ld, float base, float sign)
{
    const long gid = HX_GID();
    const int npair = hs / 2;
    qkv += qkv_off;
    if (gid < rows * npair) {
        const long r = gid / npair;
        const int i = (int)(gid % npair);
        const int pos = (int)(r % T);
        /* codelets/rope.h: hx_rope_inv_freq, hx_rope_angle */
        const float e = (float)((double)(2 * i) / hs);
        const float p = (float)pow((double)base, (double)e);
        const float inv_freq = (float)(1.0 / (double)p);
        const float angle = (float)pos * inv_freq;
        const float c = (float)cos((double)angle);
        const float s = sign * (float)sin((double)angle);
        HX_GLOBAL float *x = qkv + r * ld + i;
        for (int h = 0; h < NH + KV; h++) {
            const float x0 = x[(long)h * hs], x1 = x[(long)h * hs + npair];
            x[(long)h * hs] = x0 * c - x1 * s;
            x[(long)h * hs + npair] = x1 * c + x0 * s;
        }
    }
}
