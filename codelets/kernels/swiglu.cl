/* SPDX-License-Identifier: MIT */
/* codelets/kernels/swiglu.cl: SwiGLU on contiguous row tiles, one item per element of out
 * (codelets/swiglu.c is the CPU form; the same formula).  inp, dinp (N,2F) = [gate | up] per
 * row, out, dout (N,F); element i = r F + c of out pairs gate inp[r 2F + c] with up
 * inp[r 2F + F + c]:
 *   out = silu(g) u,  silu(g) = g s(g),  s(g) = 1/(1 + exp(-g))
 *   dinp = [dout u s(g) (1 + g (1 - s(g))) | dout silu(g)]
 * Launch: global n = N F (rounded up to HX_BLOCK).  Backends: codelets/opencl/swiglu.c,
 * codelets/cuda/swiglu.cu. */

HX_KERNEL void hx_swiglu_fwd(HX_GLOBAL float *HX_RESTRICT out, long out_off,
                             HX_GLOBAL const float *HX_RESTRICT inp, long inp_off, long n, int F)
{
    long i = HX_GID();
    out += out_off;
    inp += inp_off;
    if (i < n) {
        long gi = i / F * 2 * F + i % F;
        float g = inp[gi];
        float s = 1.0f / (1.0f + HX_EXP(-g));
        out[i] = g * s * inp[gi + F];
    }
}

HX_KERNEL void hx_swiglu_bwd(HX_GLOBAL float *HX_RESTRICT dinp, long dinp_off,
                             HX_GLOBAL const float *HX_RESTRICT inp, long inp_off,
                             HX_GLOBAL const float *HX_RESTRICT dout, long dout_off, long n,
                             int F)
{
    long i = HX_GID();
    dinp += dinp_off;
    inp += inp_off;
    dout += dout_off;
    if (i < n) {
        long gi = i / F * 2 * F + i % F;
        float g = inp[gi];
        float u = inp[gi + F];
        float dy = dout[i];
        float s = 1.0f / (1.0f + HX_EXP(-g));
        dinp[gi] = dy * u * s * (1.0f + g * (1.0f - s));
        dinp[gi + F] = dy * g * s;
    }
}
