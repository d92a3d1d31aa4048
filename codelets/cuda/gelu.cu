/* SPDX-License-Identifier: MIT */
/* codelets/cuda/gelu.cu: CUDA launchers of hx_cl_gelu_fwd/bwd; the kernels are
 * codelets/kernels/gelu.cl, the source PoCL runs in make check. */
#include "codelets/cuda/cuda.h"
#include "codelets/kernels/gelu.cl"

/* buffers: inp, out */
extern "C" void hx_gelu_fwd_cuda(void *buffers[], void *cl_arg)
{
    if (hx_run_failed()) {
        return;
    }
    long n = HX_CU_NUMEL(buffers, 0);
    hx_gelu_fwd<<<hx_cuda_blocks(n), HX_BLOCK, 0, hx_cuda_stream()>>>(
        HX_CU_F32(buffers, 1), 0, HX_CU_F32(buffers, 0), 0, n);
    HX_CUDA_CHECK("gelu_fwd", "hx_gelu_fwd");
}

/* buffers: inp, dout, dinp */
extern "C" void hx_gelu_bwd_cuda(void *buffers[], void *cl_arg)
{
    if (hx_run_failed()) {
        return;
    }
    long n = HX_CU_NUMEL(buffers, 0);
    hx_gelu_bwd<<<hx_cuda_blocks(n), HX_BLOCK, 0, hx_cuda_stream()>>>(
        HX_CU_F32(buffers, 2), 0, HX_CU_F32(buffers, 0), 0, HX_CU_F32(buffers, 1), 0, n);
    HX_CUDA_CHECK("gelu_bwd", "hx_gelu_bwd");
}
