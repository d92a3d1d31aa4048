/* SPDX-License-Identifier: MIT */
/* codelets/opencl/fill.c: OpenCL launcher of hx_cl_fill, kernels in codelets/kernels/fill.cl;
 * buffers as in codelets/fill.c. */
#include "codelets/codelets.h"
#include "codelets/kernels/dialect.h"

#if HX_OPENCL

/* buffers: x (rows x cols, ld; 4-byte or 8-byte elements) */
void hx_fill_opencl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    struct hx_ocl_launch l;
    int rows = HX_BUF_ROWS(buffers, 0), cols = HX_BUF_COLS(buffers, 0);
    int ld = HX_BUF_LD(buffers, 0);
    size_t elemsize = STARPU_MATRIX_GET_ELEMSIZE(buffers[0]);
    HX_ASSERT(elemsize == sizeof(float) || elemsize == sizeof(double),
              "fill: tile (%d,%d) element size %zu, expected 4 or 8", rows, cols, elemsize);
    int f64 = elemsize == sizeof(double);
    if (hx_ocl_begin(&l, "fill", f64 ? "hx_fill_f64" : "hx_fill_f32") == 0) {
        hx_ocl_buf(&l, buffers, 0);
        HX_OCL_VAL(&l, rows);
        HX_OCL_VAL(&l, cols);
        HX_OCL_VAL(&l, ld);
        /* the float value, widened for an f64 tile as the CPU's fill_f64 does */
        cl_float v32 = node->args.rows.value;
        cl_double v64 = node->args.rows.value;
        if (f64) {
            HX_OCL_VAL(&l, v64);
        } else {
            HX_OCL_VAL(&l, v32);
        }
        hx_ocl_end(&l, (size_t)rows * (size_t)cols, HX_BLOCK);
    }
}

#endif
