/* SPDX-License-Identifier: MIT */
/* codelets/opencl/swiglu.c: OpenCL launchers of hx_cl_swiglu_fwd/bwd, kernels in
 * codelets/kernels/swiglu.cl; buffers and checks as in codelets/swiglu.c (codelets/swiglu.h:
 * contiguous tiles, inp (N,2F), out (N,F)).  One item per element of out. */
#include "codelets/codelets.h"
#include "codelets/kernels/dialect.h"
#include "codelets/swiglu.h"

#if HX_OPENCL

/* buffers: inp, out */
void hx_swiglu_fwd_opencl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    cl_long n = (cl_long)a->rows * a->cols;
    cl_int F = a->cols;
    struct hx_ocl_launch l;
    if (hx_run_failed()) {
        return;
    }
    hx_swiglu_fwd_check(buffers, node);
    if (hx_ocl_begin(&l, "swiglu_fwd", "hx_swiglu_fwd") == 0) {
        hx_ocl_buf(&l, buffers, 1);
        hx_ocl_buf(&l, buffers, 0);
        HX_OCL_VAL(&l, n);
        HX_OCL_VAL(&l, F);
        hx_ocl_end(&l, (size_t)n, HX_BLOCK);
    }
}

/* buffers: inp, dout, dinp */
void hx_swiglu_bwd_opencl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    cl_long n = (cl_long)a->rows * a->cols;
    cl_int F = a->cols;
    struct hx_ocl_launch l;
    if (hx_run_failed()) {
        return;
    }
    hx_swiglu_bwd_check(buffers, node);
    if (hx_ocl_begin(&l, "swiglu_bwd", "hx_swiglu_bwd") == 0) {
        hx_ocl_buf(&l, buffers, 2);
        hx_ocl_buf(&l, buffers, 0);
        hx_ocl_buf(&l, buffers, 1);
        HX_OCL_VAL(&l, n);
        HX_OCL_VAL(&l, F);
        hx_ocl_end(&l, (size_t)n, HX_BLOCK);
    }
}

#endif
