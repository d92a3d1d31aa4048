/* SPDX-License-Identifier: MIT */
/* codelets/opencl/crossentropy.c: OpenCL launchers of hx_cl_xent_fwd/bwd/fused, kernels in
 * codelets/kernels/crossentropy.cl; buffers and args as in codelets/crossentropy.c.  The
 * targets are copied to the host and checked (codelets/ids.h) before any kernel runs, so a
 * bad target is reported with the CPU's message and nothing is indexed with it. */
#include <stdlib.h>

#include "codelets/codelets.h"
#include "codelets/ids.h"
#include "codelets/kernels/dialect.h"

#if HX_OPENCL

/* the shapes, then the targets (buffer 1) of the rows x cols logits tile; 0 when a kernel
 * may run */
static int xent_ready(void *buffers[], const struct hx_rows_args *a, const char *op)
{
    if (hx_run_failed()) {
        return -1;
    }
    hx_xent_check_shapes(buffers, a, op);
    int32_t *targets = hx_ocl_ids(buffers, 1, a->rows, op);
    if (targets == NULL) {
        return -1;
    }
    int ok = hx_xent_targets_ok(targets, a->rows, a->cols);
    free(targets);
    return ok ? 0 : -1;
}

/* buffers: logits, targets, losses, lse.  A work-group per row. */
void hx_xent_fwd_opencl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    struct hx_ocl_launch l;
    if (xent_ready(buffers, a, "xent_fwd") != 0) {
        return;
    }
    cl_int ld = HX_BUF_LD(buffers, 0), V = a->cols;
    if (hx_ocl_begin(&l, "xent_fwd", "hx_xent_fwd") == 0) {
        hx_ocl_buf(&l, buffers, 2);
        hx_ocl_buf(&l, buffers, 3);
        hx_ocl_buf(&l, buffers, 0);
        HX_OCL_VAL(&l, ld);
        hx_ocl_buf(&l, buffers, 1);
        HX_OCL_VAL(&l, V);
        hx_ocl_end(&l, (size_t)a->rows * HX_BLOCK, HX_BLOCK);
    }
}

/* buffers: logits (RW), targets, lse.  An item per logit. */
void hx_xent_bwd_opencl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    struct hx_ocl_launch l;
    if (xent_ready(buffers, a, "xent_bwd") != 0) {
        return;
    }
    cl_int ld = HX_BUF_LD(buffers, 0), N = a->rows, V = a->cols;
    cl_float scale = a->scale;
    if (hx_ocl_begin(&l, "xent_bwd", "hx_xent_bwd") == 0) {
        hx_ocl_buf(&l, buffers, 0);
        HX_OCL_VAL(&l, ld);
        hx_ocl_buf(&l, buffers, 2);
        hx_ocl_buf(&l, buffers, 1);
        HX_OCL_VAL(&l, N);
        HX_OCL_VAL(&l, V);
        HX_OCL_VAL(&l, scale);
        hx_ocl_end(&l, (size_t)N * (size_t)V, HX_BLOCK);
    }
}

/* buffers: logits (RW), targets, losses, lse.  A work-group per row. */
void hx_xent_fused_opencl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    struct hx_ocl_launch l;
    if (xent_ready(buffers, a, "xent_fused") != 0) {
        return;
    }
    cl_int ld = HX_BUF_LD(buffers, 0), V = a->cols;
    cl_float scale = a->scale;
    if (hx_ocl_begin(&l, "xent_fused", "hx_xent_fused") == 0) {
        hx_ocl_buf(&l, buffers, 0);
        HX_OCL_VAL(&l, ld);
        hx_ocl_buf(&l, buffers, 1);
        hx_ocl_buf(&l, buffers, 2);
        hx_ocl_buf(&l, buffers, 3);
        HX_OCL_VAL(&l, V);
        HX_OCL_VAL(&l, scale);
        hx_ocl_end(&l, (size_t)a->rows * HX_BLOCK, HX_BLOCK);
    }
}

#endif
