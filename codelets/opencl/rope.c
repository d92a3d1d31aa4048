/* SPDX-License-Identifier: MIT */
/* codelets/opencl/rope.c: OpenCL launchers of hx_cl_rope_fwd/bwd, kernel in
 * codelets/kernels/rope.cl; buffer and check as in codelets/rope.c (codelets/rope.h): one
 * item per (row, pair) of the qkv tile, which is turned in place. */
#include "codelets/codelets.h"
#include "codelets/kernels/dialect.h"
#include "codelets/rope.h"

#if HX_OPENCL

/* buffers: qkv (RW); sign 1 forward, -1 backward */
static void rope_opencl(void *buffers[], const struct hx_node *node, cl_float sign,
                        const char *op)
{
    const struct hx_rope_args *a = &node->args.rope;
    struct hx_ocl_launch l;
    if (hx_run_failed()) {
        return;
    }
    hx_rope_check(buffers, a, op);
    cl_long rows = a->rows;
    cl_int T = a->T, NH = a->NH, KV = a->KV, hs = a->hs, ld = HX_BUF_LD(buffers, 0);
    cl_float base = a->base;
    if (rows == 0) {
        return;
    }
    if (hx_ocl_begin(&l, op, "hx_rope") == 0) {
        hx_ocl_buf(&l, buffers, 0);
        HX_OCL_VAL(&l, rows);
        HX_OCL_VAL(&l, T);
        HX_OCL_VAL(&l, NH);
        HX_OCL_VAL(&l, KV);
        HX_OCL_VAL(&l, hs);
        HX_OCL_VAL(&l, ld);
        HX_OCL_VAL(&l, base);
        HX_OCL_VAL(&l, sign);
        hx_ocl_end(&l, (size_t)rows * (hs / 2), HX_BLOCK);
    }
}

void hx_rope_fwd_opencl(void *buffers[], void *cl_arg)
{
    rope_opencl(buffers, cl_arg, 1.0f, "rope_fwd");
}

void hx_rope_bwd_opencl(void *buffers[], void *cl_arg)
{
    rope_opencl(buffers, cl_arg, -1.0f, "rope_bwd");
}

#endif
