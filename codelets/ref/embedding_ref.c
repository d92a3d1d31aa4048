/* SPDX-License-Identifier: MIT */
/* codelets/ref/embedding_ref.c: reference token + position embedding, forward then backward.
 * tokens (N) with N = nseq*T, 0 <= tokens[r] < V; wte, dwte (V,C); wpe, dwpe (T,C) (at least T
 * rows used); out, dout (N,C).  Row r is token r % T of sequence r / T.
 * out[r] = wte[tokens[r]] + wpe[r % T]; dwte, dwpe accumulate (+=), repeated tokens add up.
 * Tests: tests/ref/hand_values.c, tests/ref/finite_diff.c. */
#include "codelets/ref/ref.h"

void hx_ref_embed_fwd(double *out, const int *tokens, const double *wte, const double *wpe,
                      int N, int T, int C)
{
    for (int r = 0; r < N; r++) {
        const double *te = wte + (long)tokens[r] * C;
        const double *pe = wpe + (long)(r % T) * C;
        double *o = out + (long)r * C;
        for (int i = 0; i < C; i++) {
            o[i] = te[i] + pe[i];
        }
    }
}

void hx_ref_embed_bwd(double *dwte, double *dwpe, const double *dout, const int *tokens, int N,
                      int T, int C)
{
    for (int r = 0; r < N; r++) {
        double *dte = dwte + (long)tokens[r] * C;
        double *dpe = dwpe + (long)(r % T) * C;
        const double *d = dout + (long)r * C;
        for (int i = 0; i < C; i++) {
            dte[i] += d[i];
            dpe[i] += d[i];
        }
    }
}
