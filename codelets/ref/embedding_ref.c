/* SPDX-License-Identifier: MIT */
/* codelets/ref/embedding_ref.c: reference token + position embedding, forward then backward,
 * whole (hx_ref_embed_*) or one vocabulary shard (hx_ref_embed_*_vp).
 * tokens (N) with N = nseq*T, 0 <= tokens[r] < V; wte, dwte (V,C), or (Vl,C) holding rows
 * [v0, v0+Vl) of a shard; wpe, dwpe (T,C) (at least T rows used; NULL in _vp: no position
 * term); out, dout (N,C).  Row r is token r % T of sequence r / T.
 * out[r] = wte[tokens[r]] + wpe[r % T], a token outside the shard giving a zero row; dwte,
 * dwpe accumulate (+=), repeated tokens add up, tokens outside the shard are skipped.
 * Tests: tests/ref/hand_values.c, tests/ref/finite_diff.c; tests/codelets/embedding.c (_vp). */
#include <limits.h>
#include <stddef.h>

#include "codelets/ref/ref.h"

void hx_ref_embed_fwd_vp(double *out, const int *tokens, const double *wte, int v0, int Vl,
                         const double *wpe, int N, int T, int C)
{
    for (int r = 0; r < N; r++) {
        long id = (long)tokens[r] - v0;
        int in_shard = id >= 0 && id < Vl;
        double *o = out + (long)r * C;
        for (int i = 0; i < C; i++) {
            double te = in_shard ? wte[id * C + i] : 0.0;
            double pe = wpe != NULL ? wpe[(long)(r % T) * C + i] : 0.0;
            o[i] = te + pe;
        }
    }
}

void hx_ref_embed_bwd_vp(double *dwte, double *dwpe, const double *dout, const int *tokens,
                         int v0, int Vl, int N, int T, int C)
{
    for (int r = 0; r < N; r++) {
        long id = (long)tokens[r] - v0;
        const double *d = dout + (long)r * C;
        for (int i = 0; i < C; i++) {
            if (id >= 0 && id < Vl) {
                dwte[id * C + i] += d[i];
            }
            if (dwpe != NULL) {
                dwpe[(long)(r % T) * C + i] += d[i];
            }
        }
    }
}

/* the whole table is the shard [0, INT_MAX): every valid token is in it */
void hx_ref_embed_fwd(double *out, const int *tokens, const double *wte, const double *wpe,
                      int N, int T, int C)
{
    hx_ref_embed_fwd_vp(out, tokens, wte, 0, INT_MAX, wpe, N, T, C);
}

void hx_ref_embed_bwd(double *dwte, double *dwpe, const double *dout, const int *tokens, int N,
                      int T, int C)
{
    hx_ref_embed_bwd_vp(dwte, dwpe, dout, tokens, 0, INT_MAX, N, T, C);
}
