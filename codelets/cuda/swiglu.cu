/* SPDX-License-Identifier: MIT */
/* codelets/cuda/swiglu.cu: CUDA launchers of hx_cl_swiglu_fwd/bwd; the kernels are
 * codelets/kernels/swiglu.cl, the source PoCL runs in make check.  Buffers and checks as in
 * codelets/swiglu.c (codelets/swiglu.h); one thread per element of out. */
#include "codelets/cuda/cuda.h"
#include "codelets/kernels/swiglu.cl"
#include "codelets/swiglu.h"

/* buffers: inp, out */
extern "C" void hx_swiglu_fwd_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = (const struct hx_node *)cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    if (hx_run_failed()) {
        return;
    }
    hx_swiglu_fwd_check(buffers, node);
    long n = (long)a->rows * a->cols;
    hx_swiglu_fwd<<<hx_cuda_blocks(n), HX_BLOCK, 0, hx_cuda_stream()>>>(
        HX_CU_F32(buffers, 1), 0, HX_CU_F32(buffers, 0), 0, n, a->cols);
    HX_CUDA_CHECK("swiglu_fwd", "hx_swiglu_fwd");
}

/* buffers: inp, dout, dinp */
extern "C" void hx_swiglu_bwd_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = (const struct hx_node *)cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    if (hx_run_failed()) {
        return;
    }
    hx_swiglu_bwd_check(buffers, node);
    long n = (long)a->rows * a->cols;
    hx_swiglu_bwd<<<hx_cuda_blocks(n), HX_BLOCK, 0, hx_cuda_stream()>>>(
        HX_CU_F32(buffers, 2), 0, HX_CU_F32(buffers, 0), 0, HX_CU_F32(buffers, 1), 0, n, a->cols);
    HX_CUDA_CHECK("swiglu_bwd", "hx_swiglu_bwd");
}
