/* SPDX-License-Identifier: MIT */
/* codelets/ref/rope_ref.c: reference rotary position embeddings (Llama's "rotate_half"),
 * double precision but with the float32 angle that defines the op (codelets/rope.h), so it is
 * the oracle of the fp32 codelets at any position.  x (rows, (NH + 2 KV) hs) in place; row r
 * is position r mod T; q heads 0..NH-1 and k heads NH..NH+KV-1 turn, the v heads do not.
 * A rotation's transpose is its inverse, so the backward is the forward by -angle.
 * Tests: tests/ref/finite_diff.c, tests/codelets/rope.c. */
#include <math.h>

#include "codelets/ref/ref.h"
#include "codelets/rope.h"

void hx_ref_rope(double *x, int rows, int T, int NH, int KV, int hs, float base, int inverse)
{
    const int half = hs / 2;
    const long ld = (long)(NH + 2 * KV) * hs;
    for (int r = 0; r < rows; r++) {
        for (int i = 0; i < half; i++) {
            double a = hx_rope_angle(r % T, i, hs, base);
            double c = cos(a), s = inverse ? -sin(a) : sin(a);
            for (int h = 0; h < NH + KV; h++) {
                double *xh = x + r * ld + (long)h * hs;
                double x0 = xh[i], x1 = xh[i + half];
                xh[i] = x0 * c - x1 * s;
                xh[i + half] = x1 * c + x0 * s;
            }
        }
    }
}
