/* SPDX-License-Identifier: MIT */
/* codelets/embedding.c: token + position embedding and its backward, whole or one vocabulary
 * shard of it (Megatron's vocabulary-parallel embedding).  tokens (N,1) int32 in [0,vocab);
 * wte, dwte (V,C) hold vocabulary rows [v0, v0+V) and wpe, dwpe (maxT,C), contiguous; out,
 * dout (N,C) row stride ld, N = nseq*T rows of whole sequences, so row r has position r % T.
 * A token outside the shard contributes a zero row (another shard holds it: the shards'
 * outputs sum to the whole embedding); no_pos leaves the position term to one shard.
 * Forward writes out (=); backward accumulates dwte, dwpe (+=) rows in order, so a token
 * repeated in the tile always sums in the same order.  A token outside [0,vocab) is reported.
 * Device forms: codelets/kernels/embedding.cl (launchers codelets/opencl/embedding.c,
 * codelets/cuda/embedding.cu).  Reference: codelets/ref/embedding_ref.c.
 * Test: tests/codelets/embedding.c. */
#include "codelets/codelets.h"
#include "codelets/cpu.h"
#include "codelets/ids.h"

/* Row of the shard holding token tok, or -1 when another shard holds it (64-bit: tok - v0
 * cannot overflow). */
static inline int64_t shard_row(int64_t tok, int v0, int V)
{
    int64_t id = tok - v0;
    return id >= 0 && id < V ? id : -1;
}

void hx_cpu_embed_fwd(float *out, int ld, const int32_t *tokens, const float *wte, int v0,
                      int V, const float *wpe, int N, int T, int C)
{
    for (int r = 0; r < N; r++) {
        int64_t id = shard_row(tokens[r], v0, V);
        const float *te = id >= 0 ? wte + id * C : NULL;
        const float *pe = wpe != NULL ? wpe + (size_t)(r % T) * C : NULL;
        float *o = out + (size_t)r * ld;
        /* each case writes its terms alone (no + 0.0f), so the unsharded case rounds exactly
         * as te + pe always did and shard outputs sum to it bit for bit */
        if (te != NULL && pe != NULL) {
            for (int i = 0; i < C; i++) {
                o[i] = te[i] + pe[i];
            }
        } else if (te != NULL || pe != NULL) {
            const float *src = te != NULL ? te : pe;
            for (int i = 0; i < C; i++) {
                o[i] = src[i];
            }
        } else {
            for (int i = 0; i < C; i++) {
                o[i] = 0.0f;
            }
        }
    }
}

void hx_cpu_embed_bwd(float *dwte, int v0, int V, float *dwpe, const float *dout, int ld,
                      const int32_t *tokens, int N, int T, int C)
{
    for (int r = 0; r < N; r++) {
        const float *d = dout + (size_t)r * ld;
        int64_t id = shard_row(tokens[r], v0, V);
        if (id >= 0) {
            float *dte = dwte + id * C;
            for (int i = 0; i < C; i++) {
                dte[i] += d[i];
            }
        }
        if (dwpe != NULL) {
            float *dpe = dwpe + (size_t)(r % T) * C;
            for (int i = 0; i < C; i++) {
                dpe[i] += d[i];
            }
        }
    }
}

/* The global vocabulary the tokens must lie in (0 in the args: the shard's end, v0 + V). */
static int vocab_of(const struct hx_embed_args *a)
{
    return a->vocab > 0 ? a->vocab : a->v0 + a->V;
}

/* Tokens come from the data loader: a bad one is reported (HX_EINVAL), never indexed.  A
 * token of another shard is normal; only one outside the whole vocabulary is an error. */
int hx_embed_tokens_ok(const int32_t *tokens, int N, const struct hx_embed_args *a)
{
    int vocab = vocab_of(a);
    for (int r = 0; r < N; r++) {
        if (tokens[r] < 0 || tokens[r] >= vocab) {
            HX_TASK_ERR(HX_EINVAL, "embedding: row %d token %d outside the vocabulary [0,%d) "
                        "(bad token file?)", r, (int)tokens[r], vocab);
            return 0;
        }
    }
    return 1;
}

/* The tables are whole tensors (ld == C); the activation tile is rows x C.  wpe < 0: the
 * backward without dwpe (no_pos). */
static void check_shapes(void *buffers[], const struct hx_embed_args *a, int act, int wte,
                         int wpe, const char *op)
{
    HX_ASSERT(a->v0 >= 0 && a->V >= 1 && a->v0 + a->V <= vocab_of(a),
              "%s: wte shard [%d,%d) is not inside the vocabulary [0,%d)", op, a->v0,
              a->v0 + a->V, vocab_of(a));
    HX_ASSERT(HX_BUF_ROWS(buffers, act) == a->rows && HX_BUF_COLS(buffers, act) == a->C,
              "%s: args (%d,%d) but tile (%d,%d)", op, a->rows, a->C, HX_BUF_ROWS(buffers, act),
              HX_BUF_COLS(buffers, act));
    HX_ASSERT(HX_BUF_ROWS(buffers, wte) == a->V && HX_BUF_LD(buffers, wte) == a->C &&
                  HX_BUF_COLS(buffers, wte) == a->C,
              "%s: wte is (%d,%d) ld %d, expected (%d,%d) contiguous", op,
              HX_BUF_ROWS(buffers, wte), HX_BUF_COLS(buffers, wte), HX_BUF_LD(buffers, wte),
              a->V, a->C);
    if (wpe < 0) {
        return;
    }
    HX_ASSERT(HX_BUF_ROWS(buffers, wpe) >= a->T && HX_BUF_LD(buffers, wpe) == a->C &&
                  HX_BUF_COLS(buffers, wpe) == a->C,
              "%s: wpe is (%d,%d) ld %d, expected (>=%d,%d) contiguous", op,
              HX_BUF_ROWS(buffers, wpe), HX_BUF_COLS(buffers, wpe), HX_BUF_LD(buffers, wpe),
              a->T, a->C);
}

void hx_embed_fwd_check_shapes(void *buffers[], const struct hx_embed_args *a)
{
    int nbuf = STARPU_TASK_GET_NBUFFERS(starpu_task_get_current());
    HX_ASSERT(nbuf == (a->no_pos ? 3 : 4), "embed_fwd: %d buffers with no_pos=%d (wpe is "
              "passed exactly when the position term is)", nbuf, a->no_pos);
    check_shapes(buffers, a, HX_EMBED_FWD_OUT(a), 1, a->no_pos ? -1 : 2, "embed_fwd");
}

void hx_embed_bwd_check_shapes(void *buffers[], const struct hx_embed_args *a)
{
    int nbuf = STARPU_TASK_GET_NBUFFERS(starpu_task_get_current());
    HX_ASSERT(nbuf == (a->no_pos ? 3 : 4), "embed_bwd: %d buffers with no_pos=%d (dwpe is "
              "passed exactly when the position term is)", nbuf, a->no_pos);
    check_shapes(buffers, a, 0, 2, a->no_pos ? -1 : 3, "embed_bwd");
}

/* buffers: tokens, wte, wpe, out (wpe absent with no_pos) */
static void embed_fwd_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_embed_args *a = &node->args.emb;
    if (hx_run_failed()) {
        return;
    }
    hx_embed_fwd_check_shapes(buffers, a);
    const int32_t *tokens = HX_BUF_I32(buffers, 0);
    if (!hx_embed_tokens_ok(tokens, a->rows, a)) {
        return;
    }
    int out = HX_EMBED_FWD_OUT(a);
    hx_cpu_embed_fwd(HX_BUF_F32(buffers, out), HX_BUF_LD(buffers, out), tokens,
                     HX_BUF_F32(buffers, 1), a->v0, a->V,
                     a->no_pos ? NULL : HX_BUF_F32(buffers, 2), a->rows, a->T, a->C);
}

/* buffers: dout, tokens, dwte, dwpe (absent with no_pos) */
static void embed_bwd_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_embed_args *a = &node->args.emb;
    if (hx_run_failed()) {
        return;
    }
    hx_embed_bwd_check_shapes(buffers, a);
    const int32_t *tokens = HX_BUF_I32(buffers, 1);
    if (!hx_embed_tokens_ok(tokens, a->rows, a)) {
        return;
    }
    hx_cpu_embed_bwd(HX_BUF_F32(buffers, 2), a->v0, a->V,
                     a->no_pos ? NULL : HX_BUF_F32(buffers, 3), HX_BUF_F32(buffers, 0),
                     HX_BUF_LD(buffers, 0), tokens, a->rows, a->T, a->C);
}

HX_CODELET_DEV(embed_fwd, "embed_fwd", embed_fwd_cpu);
HX_CODELET_DEV(embed_bwd, "embed_bwd", embed_bwd_cpu);
