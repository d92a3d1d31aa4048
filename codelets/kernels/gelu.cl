/* SPDX-License-Identifier: MIT */
/* codelets/kernels/gelu.cl: GPT-2's tanh GELU on a contiguous tile of n floats, one item
 * per element (codelets/gelu.c is the CPU form; the same formula):
 *   out = 0.5 x (1 + tanh(s (x + K x^3))),  s = sqrt(2/pi), K = 0.044715
 *   dinp = (0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) s (1 + 3 K x^2)) dout,  u = s (x + K x^3)
 * Launch: global n (rounded up to HX_BLOCK).  Backends: codelets/opencl/gelu.c,
 * codelets/cuda/gelu.cu. */

#define HX_GELU_S 0.7978845608f
#define HX_GELU_K 0.044715f

HX_KERNEL void hx_gelu_fwd(HX_GLOBAL float *HX_RESTRICT out, long out_off,
                           HX_GLOBAL const float *HX_RESTRICT inp, long inp_off, long n)
{
    long i = HX_GID();
    out += out_off;
    inp += inp_off;
    if (i < n) {
        float x = inp[i];
        float u = HX_GELU_S * (x + HX_GELU_K * x * x * x);
        out[i] = 0.5f * x * (1.0f + HX_TANH(u));
    }
}

HX_KERNEL void hx_gelu_bwd(HX_GLOBAL float *HX_RESTRICT dinp, long dinp_off,
                           HX_GLOBAL const float *HX_RESTRICT inp, long inp_off,
                           HX_GLOBAL const float *HX_RESTRICT dout, long dout_off, long n)
{
    long i = HX_GID();
    dinp += dinp_off;
    inp += inp_off;
    dout += dout_off;
    if (i < n) {
        float x = inp[i];
        float u = HX_GELU_S * (x + HX_GELU_K * x * x * x);
        float th = HX_TANH(u);
        float du = HX_GELU_S * (1.0f + 3.0f * HX_GELU_K * x * x);
        dinp[i] = (0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du) * dout[i];
    }
}
