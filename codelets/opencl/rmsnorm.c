/* SPDX-License-Identifier: MIT */
/* codelets/opencl/rmsnorm.c: OpenCL launchers of the rmsnorm codelets, kernels in
 * codelets/kernels/rmsnorm.cl; buffers and checks as in codelets/rmsnorm.c
 * (codelets/rmsnorm.h); how they run: codelets/opencl/norms.c.  Each order lists the
 * buffers as the kernel takes them. */
#include "codelets/codelets.h"
#include "codelets/kernels/dialect.h"
#include "codelets/rmsnorm.h"

#if HX_OPENCL

/* buffers: inp, w, out, rstd */
void hx_rmsnorm_fwd_opencl(void *buffers[], void *cl_arg)
{
    static const int order[] = { 2, 3, 0, 1 }; /* out, rstd, inp, w */
    const struct hx_node *node = cl_arg;
    if (!hx_run_failed()) {
        cl_int ld = hx_rmsnorm_fwd_check(buffers, node);
        hx_ocl_norm_fwd("rmsnorm_fwd", "hx_rmsnorm_fwd", buffers, order, 4, &node->args.rows,
                        ld);
    }
}

/* buffers: a, b, w, sum, out, rstd */
void hx_add_rmsnorm_fwd_opencl(void *buffers[], void *cl_arg)
{
    static const int order[] = { 3, 4, 5, 0, 1, 2 }; /* sum, out, rstd, a, b, w */
    const struct hx_node *node = cl_arg;
    if (!hx_run_failed()) {
        cl_int ld = hx_add_rmsnorm_fwd_check(buffers, node);
        hx_ocl_norm_fwd("add_rmsnorm_fwd", "hx_add_rmsnorm_fwd", buffers, order, 6,
                        &node->args.rows, ld);
    }
}

/* buffers: dout, inp, w, rstd, dinp [, resid] */
void hx_rmsnorm_bwd_data_opencl(void *buffers[], void *cl_arg)
{
    static const int order[] = { 4, 0, 1, 2, 3 }; /* dinp, dout, inp, w, rstd */
    const struct hx_node *node = cl_arg;
    if (!hx_run_failed()) {
        int resid;
        cl_int ld = hx_rmsnorm_bwd_data_check(buffers, node, &resid);
        hx_ocl_norm_bwd_data("rmsnorm_bwd_data", "hx_rmsnorm_bwd_data", buffers, order, 5,
                             resid ? 5 : -1, 4, &node->args.rows, ld);
    }
}

/* buffers: dout, inp, rstd, dw */
void hx_rmsnorm_bwd_weight_opencl(void *buffers[], void *cl_arg)
{
    static const int order[] = { 3, 0, 1, 2 }; /* dw, dout, inp, rstd */
    const struct hx_node *node = cl_arg;
    if (!hx_run_failed()) {
        cl_int ld = hx_rmsnorm_bwd_weight_check(buffers, node);
        hx_ocl_norm_bwd_weight("rmsnorm_bwd_weight", "hx_rmsnorm_bwd_weight", buffers, order, 4,
                               &node->args.rows, ld);
    }
}

#endif
