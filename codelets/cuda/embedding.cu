/* SPDX-License-Identifier: MIT */
/* codelets/cuda/embedding.cu: CUDA launchers of hx_cl_embed_fwd/bwd; the kernels are
 * codelets/kernels/embedding.cl, the source PoCL runs in make check.  The tokens are copied
 * to the host and checked (codelets/ids.h) before a kernel runs. */
#include "codelets/cuda/cuda.h"
#include "codelets/ids.h"
#include "codelets/kernels/embedding.cl"

/* the tokens (buffer @p i) of the tile's rows checked; 0 when a kernel may run */
static int tokens_ready(void *buffers[], int i, const struct hx_embed_args *a, const char *op)
{
    int32_t *tokens = hx_cuda_ids(buffers, i, a->rows, hx_cuda_stream(), op);
    if (tokens == NULL) {
        return -1;
    }
    int ok = hx_embed_tokens_ok(tokens, a->rows, a);
    free(tokens);
    return ok ? 0 : -1;
}

/* buffers: tokens, wte, wpe, out (wpe absent with no_pos: the kernel then gets wte in its
 * place, never read).  A thread per output element. */
extern "C" void hx_embed_fwd_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_embed_args *a = &((const struct hx_node *)cl_arg)->args.emb;
    if (hx_run_failed()) {
        return;
    }
    hx_embed_fwd_check_shapes(buffers, a);
    if (tokens_ready(buffers, 0, a, "embed_fwd") != 0) {
        return;
    }
    int out = HX_EMBED_FWD_OUT(a);
    hx_embed_fwd<<<hx_cuda_blocks((long)a->rows * a->C), HX_BLOCK, 0, hx_cuda_stream()>>>(
        HX_CU_F32(buffers, out), 0, HX_CU_LD(buffers, out), HX_CU_I32(buffers, 0), 0,
        HX_CU_F32(buffers, 1), 0, a->v0, a->V, HX_CU_F32(buffers, a->no_pos ? 1 : 2), 0,
        !a->no_pos, a->rows, a->T, a->C);
    HX_CUDA_CHECK("embed_fwd", "hx_embed_fwd");
}

/* buffers: dout, tokens, dwte, dwpe (absent with no_pos).  dwte: a block per vocabulary row
 * of the shard; dwpe: a thread per element of its first T rows. */
extern "C" void hx_embed_bwd_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_embed_args *a = &((const struct hx_node *)cl_arg)->args.emb;
    if (hx_run_failed()) {
        return;
    }
    hx_embed_bwd_check_shapes(buffers, a);
    if (tokens_ready(buffers, 1, a, "embed_bwd") != 0) {
        return;
    }
    hx_embed_bwd_wte<<<(unsigned)a->V, HX_BLOCK, 0, hx_cuda_stream()>>>(
        HX_CU_F32(buffers, 2), 0, HX_CU_F32(buffers, 0), 0, HX_CU_LD(buffers, 0),
        HX_CU_I32(buffers, 1), 0, a->v0, a->V, a->rows, a->C);
    HX_CUDA_CHECK("embed_bwd", "hx_embed_bwd_wte");
    if (!a->no_pos && !hx_run_failed()) {
        hx_embed_bwd_wpe<<<hx_cuda_blocks((long)a->T * a->C), HX_BLOCK, 0, hx_cuda_stream()>>>(
            HX_CU_F32(buffers, 3), 0, HX_CU_F32(buffers, 0), 0, HX_CU_LD(buffers, 0), a->rows,
            a->T, a->C);
        HX_CUDA_CHECK("embed_bwd", "hx_embed_bwd_wpe");
    }
}
