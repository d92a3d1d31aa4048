/* SPDX-License-Identifier: MIT */
/* codelets/opencl/embedding.c: OpenCL launchers of hx_cl_embed_fwd/bwd, kernels in
 * codelets/kernels/embedding.cl; buffers and args as in codelets/embedding.c.  The tokens
 * are copied to the host and checked (codelets/ids.h) before any kernel runs, so a token
 * outside the vocabulary is reported with the CPU's message and nothing is indexed with it. */
#include <stdlib.h>

#include "codelets/codelets.h"
#include "codelets/ids.h"
#include "codelets/kernels/dialect.h"

#if HX_OPENCL

/* the tokens (buffer @p i) of the tile's rows checked; 0 when a kernel may run */
static int tokens_ready(void *buffers[], int i, const struct hx_embed_args *a, const char *op)
{
    int32_t *tokens = hx_ocl_ids(buffers, i, a->rows, op);
    if (tokens == NULL) {
        return -1;
    }
    int ok = hx_embed_tokens_ok(tokens, a->rows, a);
    free(tokens);
    return ok ? 0 : -1;
}

/* buffers: tokens, wte, wpe, out (wpe absent with no_pos: the kernel then gets wte in its
 * place, never read).  An item per output element. */
void hx_embed_fwd_opencl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_embed_args *a = &node->args.emb;
    struct hx_ocl_launch l;
    if (hx_run_failed()) {
        return;
    }
    hx_embed_fwd_check_shapes(buffers, a);
    if (tokens_ready(buffers, 0, a, "embed_fwd") != 0) {
        return;
    }
    int out = HX_EMBED_FWD_OUT(a);
    cl_int ld = HX_BUF_LD(buffers, out), v0 = a->v0, V = a->V, has_pos = !a->no_pos;
    cl_int N = a->rows, T = a->T, C = a->C;
    if (hx_ocl_begin(&l, "embed_fwd", "hx_embed_fwd") == 0) {
        hx_ocl_buf(&l, buffers, out);
        HX_OCL_VAL(&l, ld);
        hx_ocl_buf(&l, buffers, 0);
        hx_ocl_buf(&l, buffers, 1);
        HX_OCL_VAL(&l, v0);
        HX_OCL_VAL(&l, V);
        hx_ocl_buf(&l, buffers, has_pos ? 2 : 1);
        HX_OCL_VAL(&l, has_pos);
        HX_OCL_VAL(&l, N);
        HX_OCL_VAL(&l, T);
        HX_OCL_VAL(&l, C);
        hx_ocl_end(&l, (size_t)N * (size_t)C, HX_BLOCK);
    }
}

/* buffers: dout, tokens, dwte, dwpe (absent with no_pos).  Two kernels: dwte, a work-group
 * per vocabulary row of the shard; dwpe, an item per element of its first T rows. */
void hx_embed_bwd_opencl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_embed_args *a = &node->args.emb;
    struct hx_ocl_launch l;
    if (hx_run_failed()) {
        return;
    }
    hx_embed_bwd_check_shapes(buffers, a);
    if (tokens_ready(buffers, 1, a, "embed_bwd") != 0) {
        return;
    }
    cl_int ld = HX_BUF_LD(buffers, 0), v0 = a->v0, V = a->V;
    cl_int N = a->rows, T = a->T, C = a->C;
    if (hx_ocl_begin(&l, "embed_bwd", "hx_embed_bwd_wte") != 0) {
        return;
    }
    hx_ocl_buf(&l, buffers, 2);
    hx_ocl_buf(&l, buffers, 0);
    HX_OCL_VAL(&l, ld);
    hx_ocl_buf(&l, buffers, 1);
    HX_OCL_VAL(&l, v0);
    HX_OCL_VAL(&l, V);
    HX_OCL_VAL(&l, N);
    HX_OCL_VAL(&l, C);
    if (hx_ocl_end(&l, (size_t)V * HX_BLOCK, HX_BLOCK) != 0 || a->no_pos) {
        return;
    }
    if (hx_ocl_begin(&l, "embed_bwd", "hx_embed_bwd_wpe") == 0) {
        hx_ocl_buf(&l, buffers, 3);
        hx_ocl_buf(&l, buffers, 0);
        HX_OCL_VAL(&l, ld);
        HX_OCL_VAL(&l, N);
        HX_OCL_VAL(&l, T);
        HX_OCL_VAL(&l, C);
        hx_ocl_end(&l, (size_t)T * (size_t)C, HX_BLOCK);
    }
}

#endif
