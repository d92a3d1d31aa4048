/* SPDX-License-Identifier: MIT */
/* codelets/opencl/rmsnorm.c: OpenCL launchers of the rmsnorm codelets, kernels in
 * codelets/kernels/rmsnorm.cl; buffers and checks as in codelets/rmsnorm.c
 * (codelets/rmsnorm.h).  The row kernels run exactly one work-group of HX_BLOCK items per row
 * (global rows * HX_BLOCK; they have no bound check); bwd_weight one item per column. */
#include "codelets/codelets.h"
#include "codelets/kernels/dialect.h"
#include "codelets/rmsnorm.h"

#if HX_OPENCL

/* buffers: inp, w, out, rstd */
void hx_rmsnorm_fwd_opencl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    cl_int N = a->rows, C = a->cols, ld;
    cl_float eps = a->eps;
    struct hx_ocl_launch l;
    if (hx_run_failed()) {
        return;
    }
    ld = hx_rmsnorm_fwd_check(buffers, node);
    if (hx_ocl_begin(&l, "rmsnorm_fwd", "hx_rmsnorm_fwd") == 0) {
        hx_ocl_buf(&l, buffers, 2);
        hx_ocl_buf(&l, buffers, 3);
        hx_ocl_buf(&l, buffers, 0);
        hx_ocl_buf(&l, buffers, 1);
        HX_OCL_VAL(&l, C);
        HX_OCL_VAL(&l, ld);
        HX_OCL_VAL(&l, eps);
        hx_ocl_end(&l, (size_t)N * HX_BLOCK, HX_BLOCK);
    }
}

/* buffers: a, b, w, sum, out, rstd */
void hx_add_rmsnorm_fwd_opencl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    cl_int N = a->rows, C = a->cols, ld;
    cl_float eps = a->eps;
    struct hx_ocl_launch l;
    if (hx_run_failed()) {
        return;
    }
    ld = hx_add_rmsnorm_fwd_check(buffers, node);
    if (hx_ocl_begin(&l, "add_rmsnorm_fwd", "hx_add_rmsnorm_fwd") == 0) {
        hx_ocl_buf(&l, buffers, 3);
        hx_ocl_buf(&l, buffers, 4);
        hx_ocl_buf(&l, buffers, 5);
        hx_ocl_buf(&l, buffers, 0);
        hx_ocl_buf(&l, buffers, 1);
        hx_ocl_buf(&l, buffers, 2);
        HX_OCL_VAL(&l, C);
        HX_OCL_VAL(&l, ld);
        HX_OCL_VAL(&l, eps);
        hx_ocl_end(&l, (size_t)N * HX_BLOCK, HX_BLOCK);
    }
}

/* buffers: dout, inp, w, rstd, dinp [, resid] */
void hx_rmsnorm_bwd_data_opencl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    cl_int N = a->rows, C = a->cols, ld, has_resid;
    struct hx_ocl_launch l;
    if (hx_run_failed()) {
        return;
    }
    int resid;
    ld = hx_rmsnorm_bwd_data_check(buffers, node, &resid);
    has_resid = resid;
    if (hx_ocl_begin(&l, "rmsnorm_bwd_data", "hx_rmsnorm_bwd_data") == 0) {
        hx_ocl_buf(&l, buffers, 4);
        hx_ocl_buf(&l, buffers, 0);
        hx_ocl_buf(&l, buffers, 1);
        hx_ocl_buf(&l, buffers, 2);
        hx_ocl_buf(&l, buffers, 3);
        /* without a residual the kernel gets dinp in resid's place and never reads it */
        hx_ocl_buf(&l, buffers, has_resid ? 5 : 4);
        HX_OCL_VAL(&l, has_resid);
        HX_OCL_VAL(&l, C);
        HX_OCL_VAL(&l, ld);
        hx_ocl_end(&l, (size_t)N * HX_BLOCK, HX_BLOCK);
    }
}

/* buffers: dout, inp, rstd, dw */
void hx_rmsnorm_bwd_weight_opencl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    cl_int N = a->rows, C = a->cols, ld;
    struct hx_ocl_launch l;
    if (hx_run_failed()) {
        return;
    }
    ld = hx_rmsnorm_bwd_weight_check(buffers, node);
    if (hx_ocl_begin(&l, "rmsnorm_bwd_weight", "hx_rmsnorm_bwd_weight") == 0) {
        hx_ocl_buf(&l, buffers, 3);
        hx_ocl_buf(&l, buffers, 0);
        hx_ocl_buf(&l, buffers, 1);
        hx_ocl_buf(&l, buffers, 2);
        HX_OCL_VAL(&l, N);
        HX_OCL_VAL(&l, C);
        HX_OCL_VAL(&l, ld);
        hx_ocl_end(&l, (size_t)C, HX_BLOCK);
    }
}

#endif
