/* SPDX-License-Identifier: MIT */
/* codelets/cuda/attention.cu: CUDA launchers of hx_cl_attention_fwd/bwd; the kernels are
 * codelets/kernels/attention.cl, the source PoCL runs in make check (a cuBLAS
 * strided-batched path is a possible later optimization, see there).  Buffers and checks as
 * in codelets/attention.c (codelets/attention.h).  Forward: exactly one block of HX_BLOCK
 * threads per (row, query head) (the kernels have no bound check); backward: those, for the
 * query rows' dq, then one per (row, kv head) for the key rows' dk and dv. */
#include <math.h>

#include "codelets/attention.h"
#include "codelets/cuda/cuda.h"
#include "codelets/kernels/attention.cl"

/* buffers: qkv, out, lse */
extern "C" void hx_attention_fwd_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = (const struct hx_node *)cl_arg;
    const struct hx_attention_args *a = &node->args.attn;
    if (hx_run_failed()) {
        return;
    }
    hx_attention_check(buffers, a, 0, 1, 2, "attention_fwd");
    long groups = (long)a->nseq * a->T * a->NH;
    if (groups == 0) {
        return;
    }
    float scale = 1.0f / sqrtf((float)(a->C / a->NH)); /* the CPU's expression */
    hx_attention_fwd<<<(unsigned)groups, HX_BLOCK, 0, hx_cuda_stream()>>>(
        HX_CU_F32(buffers, 1), 0, HX_CU_F32(buffers, 2), 0, HX_CU_F32(buffers, 0), 0, a->T, a->C,
        a->NH, hx_attention_kv(a), HX_CU_LD(buffers, 0), HX_CU_LD(buffers, 1), scale);
    HX_CUDA_CHECK("attention_fwd", "hx_attention_fwd");
}

/* buffers: qkv, out, dout, lse, dqkv */
extern "C" void hx_attention_bwd_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = (const struct hx_node *)cl_arg;
    const struct hx_attention_args *a = &node->args.attn;
    if (hx_run_failed()) {
        return;
    }
    hx_attention_check(buffers, a, 0, 1, 3, "attention_bwd");
    hx_attention_check(buffers, a, 4, 2, 3, "attention_bwd");
    const int KV = hx_attention_kv(a);
    long groups = (long)a->nseq * a->T * (a->NH + KV);
    if (groups == 0) {
        return;
    }
    float scale = 1.0f / sqrtf((float)(a->C / a->NH));
    hx_attention_bwd<<<(unsigned)groups, HX_BLOCK, 0, hx_cuda_stream()>>>(
        HX_CU_F32(buffers, 4), 0, HX_CU_F32(buffers, 0), 0, HX_CU_F32(buffers, 1), 0,
        HX_CU_F32(buffers, 2), 0, HX_CU_F32(buffers, 3), 0, a->nseq, a->T, a->C, a->NH, KV,
        HX_CU_LD(buffers, 4), HX_CU_LD(buffers, 0), HX_CU_LD(buffers, 1), HX_CU_LD(buffers, 2),
        scale);
    HX_CUDA_CHECK("attention_bwd", "hx_attention_bwd");
}
