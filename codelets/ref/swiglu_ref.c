/* SPDX-License-Identifier: MIT */
/* codelets/ref/swiglu_ref.c: reference SwiGLU (Llama's MLP activation), forward and backward.
 * inp, dinp (N,2F) hold [gate | up] per row (Megatron's --swiglu: the halves of one fc1 of 2F
 * outputs); out, dout (N,F).  out = silu(gate) up, silu(x) = x s(x), s(x) = 1/(1 + e^-x);
 * dinp = [dout up silu'(gate) | dout silu(gate)] (written, not accumulated).
 * Tests: tests/ref/hand_values.c, tests/ref/finite_diff.c. */
#include <math.h>

#include "codelets/ref/ref.h"

static double sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

void hx_ref_swiglu_fwd(double *out, const double *inp, int N, int F)
{
    for (int r = 0; r < N; r++) {
        const double *gate = inp + (long)r * 2 * F, *up = gate + F;
        for (int i = 0; i < F; i++) {
            out[(long)r * F + i] = gate[i] * sigmoid(gate[i]) * up[i];
        }
    }
}

/* silu'(g) = s + g s (1 - s) = s (1 + g (1 - s)), since s' = s (1 - s) */
void hx_ref_swiglu_bwd(double *dinp, const double *inp, const double *dout, int N, int F)
{
    for (int r = 0; r < N; r++) {
        const double *gate = inp + (long)r * 2 * F, *up = gate + F;
        const double *dy = dout + (long)r * F;
        double *dgate = dinp + (long)r * 2 * F, *dup = dgate + F;
        for (int i = 0; i < F; i++) {
            double g = gate[i], s = sigmoid(g);
            dgate[i] = dy[i] * up[i] * s * (1.0 + g * (1.0 - s));
            dup[i] = dy[i] * g * s;
        }
    }
}
