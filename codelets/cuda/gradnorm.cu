/* SPDX-License-Identifier: MIT */
/* codelets/cuda/gradnorm.cu: CUDA launcher of hx_cl_reduce; the kernel is
 * codelets/kernels/gradnorm.cl, the source PoCL runs in make check. */
#include "codelets/cuda/cuda.h"
#include "codelets/kernels/gradnorm.cl"

/* buffers: x (rows x cols f32, ld), acc (1,1) f64 */
extern "C" void hx_reduce_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = (const struct hx_node *)cl_arg;
    if (hx_run_failed()) {
        return;
    }
    hx_reduce<<<1, HX_BLOCK, 0, hx_cuda_stream()>>>(
        HX_CU_F32(buffers, 0), 0, HX_CU_ROWS(buffers, 0), HX_CU_COLS(buffers, 0),
        HX_CU_LD(buffers, 0), (double *)STARPU_MATRIX_GET_PTR(buffers[1]), 0,
        node->args.rows.sumsq);
    HX_CUDA_CHECK("reduce", "hx_reduce");
}
