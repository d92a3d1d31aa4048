/* SPDX-License-Identifier: MIT */
/* codelets/cuda/rope.cu: CUDA launchers of hx_cl_rope_fwd/bwd; the kernel is
 * codelets/kernels/rope.cl, the source PoCL runs in make check.  Buffer and check as in
 * codelets/rope.c (codelets/rope.h): one thread per (row, pair) of the qkv tile. */
#include "codelets/cuda/cuda.h"
#include "codelets/kernels/rope.cl"
#include "codelets/rope.h"

/* buffers: qkv (RW); sign 1 forward, -1 backward */
static void rope_cuda(void *buffers[], const struct hx_node *node, float sign, const char *op)
{
    const struct hx_rope_args *a = &node->args.rope;
    if (hx_run_failed()) {
        return;
    }
    hx_rope_check(buffers, a, op);
    long n = (long)a->rows * (a->hs / 2);
    if (n == 0) {
        return;
    }
    hx_rope<<<hx_cuda_blocks(n), HX_BLOCK, 0, hx_cuda_stream()>>>(
        HX_CU_F32(buffers, 0), 0, a->rows, a->T, a->NH, a->KV, a->hs, HX_CU_LD(buffers, 0),
        a->base, sign);
    HX_CUDA_CHECK(op, "hx_rope");
}

extern "C" void hx_rope_fwd_cuda(void *buffers[], void *cl_arg)
{
    rope_cuda(buffers, (const struct hx_node *)cl_arg, 1.0f, "rope_fwd");
}

extern "C" void hx_rope_bwd_cuda(void *buffers[], void *cl_arg)
{
    rope_cuda(buffers, (const struct hx_node *)cl_arg, -1.0f, "rope_bwd");
}
