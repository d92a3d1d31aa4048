/* SPDX-License-Identifier: MIT */
/* codelets/opencl/gradnorm.c: OpenCL launcher of hx_cl_reduce, kernel in
 * codelets/kernels/gradnorm.cl; buffers as in codelets/gradnorm.c. */
#include "codelets/codelets.h"
#include "codelets/kernels/dialect.h"

#if HX_OPENCL

/* buffers: x (rows x cols f32, ld), acc (1,1) f64 */
void hx_reduce_opencl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    struct hx_ocl_launch l;
    int rows = HX_BUF_ROWS(buffers, 0), cols = HX_BUF_COLS(buffers, 0);
    int ld = HX_BUF_LD(buffers, 0), sumsq = node->args.rows.sumsq;
    if (hx_ocl_begin(&l, "reduce", "hx_reduce") == 0) {
        hx_ocl_buf(&l, buffers, 0);
        HX_OCL_VAL(&l, rows);
        HX_OCL_VAL(&l, cols);
        HX_OCL_VAL(&l, ld);
        hx_ocl_buf(&l, buffers, 1);
        HX_OCL_VAL(&l, sumsq);
        hx_ocl_end(&l, HX_BLOCK, HX_BLOCK); /* one group, even for an empty tile: acc += 0 */
    }
}

#endif
