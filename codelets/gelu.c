/* SPDX-License-Identifier: MIT */
/* codelets/gelu.c: GPT-2 GELU (tanh approximation), elementwise on a contiguous tile
 * (ld == cols, so a tile of rows x cols is n = rows*cols floats):
 *   out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)));  dinp = gelu'(inp) * dout (=).
 * Device forms: codelets/kernels/gelu.cl.  Reference: codelets/ref/gelu_ref.c.
 * Test: tests/codelets/gelu.c, tests/device/codelets.sh. */
#include <math.h>

#include "codelets/codelets.h"
#include "codelets/cpu.h"
#include "codelets/vecmath.h"

#define GELU_K 0.044715f

/* sqrt(2/pi), written out so that no M_PI (not in strict C11) is needed */
static const float gelu_s = 0.7978845608f;

HX_VECTOR_CLONES void hx_cpu_gelu_fwd(float *out, const float *inp, long n)
{
    for (long i = 0; i < n; i++) {
        float x = inp[i];
        float u = gelu_s * (x + GELU_K * x * x * x);
        out[i] = 0.5f * x * (1.0f + hx_tanhf(u));
    }
}

/* gelu'(x) = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) s (1 + 3 K x^2),  u = s (x + K x^3) */
HX_VECTOR_CLONES void hx_cpu_gelu_bwd(float *dinp, const float *inp, const float *dout, long n)
{
    for (long i = 0; i < n; i++) {
        float x = inp[i];
        float u = gelu_s * (x + GELU_K * x * x * x);
        float th = hx_tanhf(u);
        float du = gelu_s * (1.0f + 3.0f * GELU_K * x * x);
        float d = 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du;
        dinp[i] = d * dout[i];
    }
}

/* buffers: inp, out */
static void gelu_fwd_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    if (hx_run_failed()) {
        return;
    }
    long n = hx_buf_flat(buffers, 0, -1, "gelu_fwd");
    hx_buf_flat(buffers, 1, n, "gelu_fwd");
    hx_cpu_gelu_fwd(HX_BUF_F32(buffers, 1), HX_BUF_F32(buffers, 0), n);
}

/* buffers: inp, dout, dinp */
static void gelu_bwd_cpu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    if (hx_run_failed()) {
        return;
    }
    long n = hx_buf_flat(buffers, 0, -1, "gelu_bwd");
    hx_buf_flat(buffers, 1, n, "gelu_bwd");
    hx_buf_flat(buffers, 2, n, "gelu_bwd");
    hx_cpu_gelu_bwd(HX_BUF_F32(buffers, 2), HX_BUF_F32(buffers, 0), HX_BUF_F32(buffers, 1), n);
}

HX_CODELET_DEV(gelu_fwd, "gelu_fwd", gelu_fwd_cpu);
HX_CODELET_DEV(gelu_bwd, "gelu_bwd", gelu_bwd_cpu);
