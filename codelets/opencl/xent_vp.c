/* SPDX-License-Identifier: MIT */
/* codelets/opencl/xent_vp.c: OpenCL launchers of hx_cl_xent_vp_stats and hx_cl_xent_vp,
 * kernels in codelets/kernels/xent_vp.cl; buffers and args as in codelets/xent_vp.c.  The
 * targets are copied to the host and checked (codelets/ids.h) before any kernel runs, so a
 * negative target is reported with the CPU's message and nothing is indexed with it. */
#include <stdlib.h>

#include "codelets/codelets.h"
#include "codelets/ids.h"
#include "codelets/kernels/dialect.h"

#if HX_OPENCL

/* the targets (buffer 1) of the tile's rows checked; 0 when a kernel may run */
static int targets_ready(void *buffers[], const struct hx_xent_vp_args *a, const char *op)
{
    int32_t *targets = hx_ocl_ids(buffers, 1, a->rows, op);
    if (targets == NULL) {
        return -1;
    }
    int ok = hx_xent_vp_targets_ok(targets, a->rows, op);
    free(targets);
    return ok ? 0 : -1;
}

/* buffers: logits R, targets R, stats W.  A work-group per row. */
void hx_xent_vp_stats_opencl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_xent_vp_args *a = &node->args.xvp;
    struct hx_ocl_launch l;
    if (hx_run_failed()) {
        return;
    }
    hx_xent_vp_stats_check_shapes(buffers, a);
    if (targets_ready(buffers, a, "xent_vp_stats") != 0) {
        return;
    }
    cl_int lds = HX_BUF_LD(buffers, 2), ld = HX_BUF_LD(buffers, 0), V = a->V, v0 = a->v0;
    if (hx_ocl_begin(&l, "xent_vp_stats", "hx_xent_vp_stats") == 0) {
        hx_ocl_buf(&l, buffers, 2);
        HX_OCL_VAL(&l, lds);
        hx_ocl_buf(&l, buffers, 0);
        HX_OCL_VAL(&l, ld);
        hx_ocl_buf(&l, buffers, 1);
        HX_OCL_VAL(&l, V);
        HX_OCL_VAL(&l, v0);
        hx_ocl_end(&l, (size_t)a->rows * HX_BLOCK, HX_BLOCK);
    }
}

/* buffers: logits (RW with grad, else R), targets R, all R, losses W, lse W.  A work-group
 * per row. */
void hx_xent_vp_opencl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_xent_vp_args *a = &node->args.xvp;
    struct hx_ocl_launch l;
    if (hx_run_failed()) {
        return;
    }
    hx_xent_vp_check_shapes(buffers, a);
    if (targets_ready(buffers, a, "xent_vp") != 0) {
        return;
    }
    cl_int ld = HX_BUF_LD(buffers, 0), lda = HX_BUF_LD(buffers, 2);
    cl_int ldl = HX_BUF_LD(buffers, 3), ldlse = HX_BUF_LD(buffers, 4);
    cl_int N = a->rows, V = a->V, v0 = a->v0, parts = a->parts, grad = a->grad;
    cl_float scale = a->scale;
    if (hx_ocl_begin(&l, "xent_vp", "hx_xent_vp") == 0) {
        hx_ocl_buf(&l, buffers, 0);
        HX_OCL_VAL(&l, ld);
        hx_ocl_buf(&l, buffers, 1);
        hx_ocl_buf(&l, buffers, 2);
        HX_OCL_VAL(&l, lda);
        hx_ocl_buf(&l, buffers, 3);
        HX_OCL_VAL(&l, ldl);
        hx_ocl_buf(&l, buffers, 4);
        HX_OCL_VAL(&l, ldlse);
        HX_OCL_VAL(&l, N);
        HX_OCL_VAL(&l, V);
        HX_OCL_VAL(&l, v0);
        HX_OCL_VAL(&l, parts);
        HX_OCL_VAL(&l, grad);
        HX_OCL_VAL(&l, scale);
        hx_ocl_end(&l, (size_t)N * HX_BLOCK, HX_BLOCK);
    }
}

#endif
