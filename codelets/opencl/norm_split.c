/* SPDX-License-Identifier: MIT */
/* codelets/opencl/norm_split.c: OpenCL launchers of the column-split norm codelets, kernels
 * in codelets/kernels/norm_split.cl; buffers and checks as in codelets/norm_split.c
 * (codelets/norm_split.h).  Row kernels: exactly one work-group of HX_BLOCK items per row.
 * Each launcher passes the buffers in the kernel's order; a role the task lacks gets a
 * stand-in the kernel never reads (inp; dinp for a missing resid). */
#include "codelets/codelets.h"
#include "codelets/kernels/dialect.h"
#include "codelets/norm_split.h"

#if HX_OPENCL

/* buffer i, or the stand-in when the task has none */
static void buf_or(struct hx_ocl_launch *l, void *buffers[], int i, int stand_in)
{
    hx_ocl_buf(l, buffers, i >= 0 ? i : stand_in);
}

void hx_norm_part_opencl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_norm_split_args *a = &node->args.nsplit;
    struct hx_norm_bufs b;
    struct hx_ocl_launch l;
    if (hx_run_failed()) {
        return;
    }
    cl_int ld = hx_norm_part_check(buffers, node, &b);
    cl_int mode = a->mode, C = a->cols, total = a->cols_total;
    if (hx_ocl_begin(&l, "norm_part", "hx_norm_part") == 0) {
        hx_ocl_buf(&l, buffers, b.part);
        hx_ocl_buf(&l, buffers, b.inp);
        buf_or(&l, buffers, b.dout, b.inp);
        buf_or(&l, buffers, b.w, b.inp);
        buf_or(&l, buffers, mode == HX_NORM_LN_VAR ? b.s1 : b.mean, b.inp); /* stat */
        buf_or(&l, buffers, b.rstd, b.inp);
        HX_OCL_VAL(&l, mode);
        HX_OCL_VAL(&l, C);
        HX_OCL_VAL(&l, ld);
        HX_OCL_VAL(&l, total);
        hx_ocl_end(&l, (size_t)a->rows * HX_BLOCK, HX_BLOCK);
    }
}

void hx_norm_fwd_apply_opencl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_norm_split_args *a = &node->args.nsplit;
    struct hx_norm_bufs b;
    struct hx_ocl_launch l;
    if (hx_run_failed()) {
        return;
    }
    cl_int ld = hx_norm_fwd_apply_check(buffers, node, &b);
    cl_int C = a->cols, total = a->cols_total;
    cl_float eps = a->eps;
    const char *kernel = a->rms ? "hx_rmsnorm_fwd_apply" : "hx_layernorm_fwd_apply";
    if (hx_ocl_begin(&l, "norm_fwd_apply", kernel) == 0) {
        hx_ocl_buf(&l, buffers, b.out);
        if (!a->rms) {
            hx_ocl_buf(&l, buffers, b.mean);
        }
        hx_ocl_buf(&l, buffers, b.rstd);
        hx_ocl_buf(&l, buffers, b.inp);
        hx_ocl_buf(&l, buffers, b.w);
        if (!a->rms) {
            hx_ocl_buf(&l, buffers, b.b);
        }
        hx_ocl_buf(&l, buffers, b.s1);
        if (!a->rms) {
            hx_ocl_buf(&l, buffers, b.s2);
        }
        HX_OCL_VAL(&l, C);
        HX_OCL_VAL(&l, ld);
        HX_OCL_VAL(&l, total);
        HX_OCL_VAL(&l, eps);
        hx_ocl_end(&l, (size_t)a->rows * HX_BLOCK, HX_BLOCK);
    }
}

void hx_norm_bwd_apply_opencl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_norm_split_args *a = &node->args.nsplit;
    struct hx_norm_bufs b;
    struct hx_ocl_launch l;
    if (hx_run_failed()) {
        return;
    }
    cl_int ld = hx_norm_bwd_apply_check(buffers, node, &b);
    cl_int C = a->cols, total = a->cols_total, has_resid = b.resid >= 0;
    const char *kernel = a->rms ? "hx_rmsnorm_bwd_apply" : "hx_layernorm_bwd_apply";
    if (hx_ocl_begin(&l, "norm_bwd_apply", kernel) == 0) {
        hx_ocl_buf(&l, buffers, b.out); /* dinp */
        hx_ocl_buf(&l, buffers, b.dout);
        hx_ocl_buf(&l, buffers, b.inp);
        hx_ocl_buf(&l, buffers, b.w);
        if (!a->rms) {
            hx_ocl_buf(&l, buffers, b.mean);
        }
        hx_ocl_buf(&l, buffers, b.rstd);
        hx_ocl_buf(&l, buffers, a->rms ? b.s1 : b.s2);
        buf_or(&l, buffers, b.resid, b.out);
        HX_OCL_VAL(&l, has_resid);
        HX_OCL_VAL(&l, C);
        HX_OCL_VAL(&l, ld);
        HX_OCL_VAL(&l, total);
        hx_ocl_end(&l, (size_t)a->rows * HX_BLOCK, HX_BLOCK);
    }
}

#endif
