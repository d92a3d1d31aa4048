/* SPDX-License-Identifier: MIT */
/* codelets/cuda/fill.cu: CUDA launcher of hx_cl_fill; the kernels are
 * codelets/kernels/fill.cl, the source PoCL runs in make check. */
#include "codelets/cuda/cuda.h"
#include "codelets/kernels/fill.cl"

/* buffers: x (rows x cols, ld; 4-byte or 8-byte elements) */
extern "C" void hx_fill_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = (const struct hx_node *)cl_arg;
    if (hx_run_failed()) {
        return;
    }
    int rows = HX_CU_ROWS(buffers, 0), cols = HX_CU_COLS(buffers, 0), ld = HX_CU_LD(buffers, 0);
    size_t elemsize = STARPU_MATRIX_GET_ELEMSIZE(buffers[0]);
    HX_ASSERT(elemsize == sizeof(float) || elemsize == sizeof(double),
              "fill: tile (%d,%d) element size %zu, expected 4 or 8", rows, cols, elemsize);
    unsigned blocks = hx_cuda_blocks((long)rows * cols);
    float value = node->args.rows.value;
    if (elemsize == sizeof(double)) {
        hx_fill_f64<<<blocks, HX_BLOCK, 0, hx_cuda_stream()>>>(
            (double *)STARPU_MATRIX_GET_PTR(buffers[0]), 0, rows, cols, ld, (double)value);
        HX_CUDA_CHECK("fill", "hx_fill_f64");
    } else {
        hx_fill_f32<<<blocks, HX_BLOCK, 0, hx_cuda_stream()>>>(HX_CU_F32(buffers, 0), 0, rows,
                                                                cols, ld, value);
        HX_CUDA_CHECK("fill", "hx_fill_f32");
    }
}
