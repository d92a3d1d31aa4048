/* SPDX-License-Identifier: MIT */
/* codelets/ref/residual_ref.c: reference residual add, out (n) = a (n) + b (n).
 * out may alias a or b.  Its backward is the identity on both inputs (no kernel).
 * Test: tests/ref/hand_values.c. */
#include "codelets/ref/ref.h"

void hx_ref_add(double *out, const double *a, const double *b, int n)
{
    for (int i = 0; i < n; i++) {
        out[i] = a[i] + b[i];
    }
}
