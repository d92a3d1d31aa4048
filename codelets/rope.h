/* SPDX-License-Identifier: MIT */
/* codelets/rope.h: the rotary angle, one definition for the CPU codelet (codelets/rope.c) and
 * the double reference (codelets/ref/rope_ref.c); codelets/kernels/rope.cl spells the same
 * expressions for OpenCL and CUDA (internal, header-only).
 *
 * The angle of pair i at position pos is the float32 number PyTorch computes (HF Llama's and
 * Megatron's inv_freq = 1 / (base ** (arange(0, hs, 2).float() / hs)), freqs = pos * inv_freq
 * in float32), not the exact pos base^(-2i/hs): at pos ~ 4000 one float32 ulp of the angle
 * is already 2.4e-4 rad, 25x the 1e-5 we promise, so only the same float32 value can match.  Every step is therefore one correct rounding to float32:
 *   e   = fl32(2i / hs)          (double quotients rounded to float: double rounding is
 *   p   = fl32(base^e)            innocuous for + - * / since 53 >= 2*24 + 2, Figueroa 1995;
 *   inv = fl32(1 / p)             pow in double, wrong only within a double ulp of a tie)
 *   angle = fl32(pos * inv)      (a float32 product: correctly rounded on every backend)
 * and cos, sin of that angle in double (rounded to float by the fp32 kernels), so CPU, OpenCL
 * and CUDA get the same angle bit for bit and cos/sin within half an ulp.  PyTorch's float32
 * pow is not always correctly rounded: with torch 1.13 its inv_freq equals ours for every i
 * at hs = 64 and 128, bases 1e4 and 5e5 (Llama's head sizes; tests/codelets/rope_gqa_torch.c
 * compares hs = 64, base 5e5 up to pos 2047), but over hs = 2..256 at those bases 222 of the
 * 16512 (hs, i) pairs (1.3%) differ by an ulp of inv_freq, so there the angles differ by
 * about pos ulp(inv_freq).
 * Doubles on the device: dialect.h already enables cl_khr_fp64; the trig is per (row, pair),
 * shared by all NH + KV heads of the row.
 * Also: the buffer check that the CPU function and the device launchers all run. */
#ifndef HX_CODELETS_ROPE_H
#define HX_CODELETS_ROPE_H

#include <math.h>

#include "helix/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The qkv (or dqkv) buffer 0 of @p op must be the (rows, (NH + 2 KV) hs) tile of the node's
 * args, hs even and rows a multiple of T; otherwise HX_ASSERT aborts with the sizes found and
 * expected (a graph-builder bug). */
void hx_rope_check(void *buffers[], const struct hx_rope_args *a, const char *op);

#ifdef __cplusplus
}
#endif

/* inv_freq_i = base^(-2i/hs) as PyTorch's float32 computes it, correctly rounded (above) */
static inline float hx_rope_inv_freq(int i, int hs, float base)
{
    const float e = (float)((double)(2 * i) / hs);
    const float p = (float)pow((double)base, (double)e);
    return (float)(1.0 / (double)p);
}

/* the float32 angle of pair i at position pos */
static inline float hx_rope_angle(int pos, int i, int hs, float base)
{
    return (float)pos * hx_rope_inv_freq(i, hs, base);
}

#endif /* HX_CODELETS_ROPE_H */
