/* SPDX-License-Identifier: MIT */
/* codelets/opencl/layernorm.c: OpenCL launchers of the layernorm codelets, kernels in
 * codelets/kernels/layernorm.cl; buffers and checks as in codelets/layernorm.c
 * (codelets/layernorm.h); how they run: codelets/opencl/norms.c.  Each order lists the
 * buffers as the kernel takes them. */
#include "codelets/codelets.h"
#include "codelets/kernels/dialect.h"
#include "codelets/layernorm.h"

#if HX_OPENCL

/* buffers: inp, w, b, out, mean, rstd */
void hx_layernorm_fwd_opencl(void *buffers[], void *cl_arg)
{
    static const int order[] = { 3, 4, 5, 0, 1, 2 }; /* out, mean, rstd, inp, w, b */
    const struct hx_node *node = cl_arg;
    if (!hx_run_failed()) {
        cl_int ld = hx_layernorm_fwd_check(buffers, node);
        hx_ocl_norm_fwd("layernorm_fwd", "hx_layernorm_fwd", buffers, order, 6,
                        &node->args.rows, ld);
    }
}

/* buffers: a, b, w, bias, sum, out, mean, rstd */
void hx_add_layernorm_fwd_opencl(void *buffers[], void *cl_arg)
{
    static const int order[] = { 4, 5, 6, 7, 0, 1, 2, 3 }; /* sum, out, mean, rstd, a, b, ... */
    const struct hx_node *node = cl_arg;
    if (!hx_run_failed()) {
        cl_int ld = hx_add_layernorm_fwd_check(buffers, node);
        hx_ocl_norm_fwd("add_layernorm_fwd", "hx_add_layernorm_fwd", buffers, order, 8,
                        &node->args.rows, ld);
    }
}

/* buffers: dout, inp, w, mean, rstd, dinp [, resid] */
void hx_layernorm_bwd_data_opencl(void *buffers[], void *cl_arg)
{
    static const int order[] = { 5, 0, 1, 2, 3, 4 }; /* dinp, dout, inp, w, mean, rstd */
    const struct hx_node *node = cl_arg;
    if (!hx_run_failed()) {
        int resid;
        cl_int ld = hx_layernorm_bwd_data_check(buffers, node, &resid);
        hx_ocl_norm_bwd_data("layernorm_bwd_data", "hx_layernorm_bwd_data", buffers, order, 6,
                             resid ? 6 : -1, 5, &node->args.rows, ld);
    }
}

/* buffers: dout, inp, mean, rstd, dw, db */
void hx_layernorm_bwd_weight_opencl(void *buffers[], void *cl_arg)
{
    static const int order[] = { 4, 5, 0, 1, 2, 3 }; /* dw, db, dout, inp, mean, rstd */
    const struct hx_node *node = cl_arg;
    if (!hx_run_failed()) {
        cl_int ld = hx_layernorm_bwd_weight_check(buffers, node);
        hx_ocl_norm_bwd_weight("layernorm_bwd_weight", "hx_layernorm_bwd_weight", buffers,
                               order, 6, &node->args.rows, ld);
    }
}

#endif
