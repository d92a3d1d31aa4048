/* SPDX-License-Identifier: MIT */
/* codelets/embedding.c: token + position embedding and its backward.
 * tokens (N,1) int32 in [0,V); wte, dwte (V,C) and wpe, dwpe (maxT,C) contiguous; out, dout
 * (N,C) row stride ld, N = nseq*T rows of whole sequences, so row r has position r % T.
 * Forward writes out (=); backward accumulates dwte, dwpe (+=) rows in order, so a token
 * repeated in the tile always sums in the same order.  A token outside [0,V) is reported.
 * Reference: codelets/ref/embedding_ref.c.  Test: tests/codelets/embedding.c. */
#include "codelets/codelets.h"
#include "codelets/cpu.h"

void hx_cpu_embed_fwd(float *out, int ld, const int32_t *tokens, const float *wte,
                      const float *wpe, int N, int T, int C)
{
    for (int r = 0; r < N; r++) {
        const float *te = wte + (size_t)tokens[r] * C;
        const float *pe = wpe + (size_t)(r % T) * C;
        float *o = out + (size_t)r * ld;
        for (int i = 0; i < C; i++) {
            o[i] = te[i] + pe[i];
        }
    }
}

void hx_cpu_embed_bwd(float *dwte, float *dwpe, const float *dout, int ld,
                      const int32_t *tokens, int N, int T, int C)
{
    for (int r = 0; r < N; r++) {
        const float *d = dout + (size_t)r * ld;
        float *dte = dwte + (size_t)tokens[r] * C;
        float *dpe = dwpe + (size_t)(r % T) * C;
        for (int i = 0; i < C; i++) {
            dte[i] += d[i];
            dpe[i] += d[i];
        }
    }
}

/* Tokens come from the data loader: a bad one is reported (HX_EINVAL), never indexed. */
static int check_tokens(const int32_t *tokens, int N, int V)
{
    for (int r = 0; r < N; r++) {
        if (tokens[r] < 0 || tokens[r] >= V) {
            HX_TASK_ERR(HX_EINVAL, "embedding: row %d token %d outside [0,%d) (bad token "
                        "file?)", r, (int)tokens[r], V);
            return 0;
        }
    }
    return 1;
}

/* The tables are whole tensors (ld == C); the activation tile is rows x C. */
static void check_shapes(void *buffers[], const struct hx_embed_args *a, int act, int wte,
                         int wpe, const char *op)
{
    HX_ASSERT(HX_BUF_ROWS(buffers, act) == a->rows && HX_BUF_COLS(buffers, act) == a->C,
              "%s: args (%d,%d) but tile (%d,%d)", op, a->rows, a->C, HX_BUF_ROWS(buffers, act),
              HX_BUF_COLS(buffers, act));
    HX_ASSERT(HX_BUF_ROWS(buffers, wte) == a->V && HX_BUF_LD(buffers, wte) == a->C &&
                  HX_BUF_COLS(buffers, wte) == a->C,
              "%s: wte is (%d,%d) ld %d, expected (%d,%d) contiguous", op,
              HX_BUF_ROWS(buffers, wte), HX_BUF_COLS(buffers, wte), HX_BUF_LD(buffers, wte),
              a->V, a->C);
    HX_ASSERT(HX_BUF_ROWS(buffers, wpe) >= a->T && HX_BUF_LD(buffers, wpe) == a->C &&
                  HX_BUF_COLS(buffers, wpe) == a->C,
              "%s: wpe is (%d,%d) ld %d, expected (>=%d,%d) contiguous", op,
              HX_BUF_ROWS(buffers, wpe), HX_BUF_COLS(buffers, wpe), HX_BUF_LD(buffers, wpe),
              a->T, a->C);
}

/* buffers: tokens, wte, wpe, out */
static void embed_fwd_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_embed_args *a = &node->args.emb;
    if (hx_run_failed()) {
        return;
    }
    check_shapes(buffers, a, 3, 1, 2, "embed_fwd");
    const int32_t *tokens = HX_BUF_I32(buffers, 0);
    if (!check_tokens(tokens, a->rows, a->V)) {
        return;
    }
    hx_cpu_embed_fwd(HX_BUF_F32(buffers, 3), HX_BUF_LD(buffers, 3), tokens,
                     HX_BUF_F32(buffers, 1), HX_BUF_F32(buffers, 2), a->rows, a->T, a->C);
}

/* buffers: dout, tokens, dwte, dwpe */
static void embed_bwd_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_embed_args *a = &node->args.emb;
    if (hx_run_failed()) {
        return;
    }
    check_shapes(buffers, a, 0, 2, 3, "embed_bwd");
    const int32_t *tokens = HX_BUF_I32(buffers, 1);
    if (!check_tokens(tokens, a->rows, a->V)) {
        return;
    }
    hx_cpu_embed_bwd(HX_BUF_F32(buffers, 2), HX_BUF_F32(buffers, 3), HX_BUF_F32(buffers, 0),
                     HX_BUF_LD(buffers, 0), tokens, a->rows, a->T, a->C);
}

HX_CODELET(embed_fwd, "embed_fwd", embed_fwd_cpu);
HX_CODELET(embed_bwd, "embed_bwd", embed_bwd_cpu);
