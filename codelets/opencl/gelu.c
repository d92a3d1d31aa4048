/* SPDX-License-Identifier: MIT */
/* codelets/opencl/gelu.c: OpenCL launchers of hx_cl_gelu_fwd/bwd, kernels in
 * codelets/kernels/gelu.cl; buffers as in codelets/gelu.c (contiguous tiles of n floats). */
#include "codelets/codelets.h"
#include "codelets/kernels/dialect.h"

#if HX_OPENCL

/* buffers: inp, out */
void hx_gelu_fwd_opencl(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    struct hx_ocl_launch l;
    cl_long n = hx_buf_flat(buffers, 0, -1, "gelu_fwd");
    hx_buf_flat(buffers, 1, n, "gelu_fwd");
    if (hx_ocl_begin(&l, "gelu_fwd", "hx_gelu_fwd") == 0) {
        hx_ocl_buf(&l, buffers, 1);
        hx_ocl_buf(&l, buffers, 0);
        HX_OCL_VAL(&l, n);
        hx_ocl_end(&l, (size_t)n, HX_BLOCK);
    }
}

/* buffers: inp, dout, dinp */
void hx_gelu_bwd_opencl(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    struct hx_ocl_launch l;
    cl_long n = hx_buf_flat(buffers, 0, -1, "gelu_bwd");
    hx_buf_flat(buffers, 1, n, "gelu_bwd");
    hx_buf_flat(buffers, 2, n, "gelu_bwd");
    if (hx_ocl_begin(&l, "gelu_bwd", "hx_gelu_bwd") == 0) {
        hx_ocl_buf(&l, buffers, 2);
        hx_ocl_buf(&l, buffers, 0);
        hx_ocl_buf(&l, buffers, 1);
        HX_OCL_VAL(&l, n);
        hx_ocl_end(&l, (size_t)n, HX_BLOCK);
    }
}

#endif
