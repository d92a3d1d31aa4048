/* SPDX-License-Identifier: MIT */
/* codelets/ref/gelu_ref.c: reference GPT-2 GELU (tanh approximation), forward and backward.
 * Elementwise on n values: out = gelu(inp); dinp = gelu'(inp) * dout (written, not accumulated).
 * Tests: tests/ref/hand_values.c (gelu(0), gelu(+-1), gelu'(0)), tests/ref/finite_diff.c. */
#include <math.h>

#include "codelets/ref/ref.h"

#define GELU_K 0.044715

/* sqrt(2/pi), written out so that no M_PI (not in strict C11) is needed */
static const double gelu_s = 0.79788456080286535588;

void hx_ref_gelu_fwd(double *out, const double *inp, int n)
{
    for (int i = 0; i < n; i++) {
        double x = inp[i];
        double u = gelu_s * (x + GELU_K * x * x * x);
        out[i] = 0.5 * x * (1.0 + tanh(u));
    }
}

/* gelu(x) = 0.5 x (1 + tanh u),  u = s (x + K x^3),  du/dx = s (1 + 3 K x^2),
 * gelu'(x) = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) du/dx */
void hx_ref_gelu_bwd(double *dinp, const double *inp, const double *dout, int n)
{
    for (int i = 0; i < n; i++) {
        double x = inp[i];
        double u = gelu_s * (x + GELU_K * x * x * x);
        double th = tanh(u);
        double du = gelu_s * (1.0 + 3.0 * GELU_K * x * x);
        double d = 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * du;
        dinp[i] = d * dout[i];
    }
}
