/* SPDX-License-Identifier: MIT */
/* codelets/cuda/crossentropy.cu: CUDA launchers of hx_cl_xent_fwd/bwd/fused; the kernels are
 * codelets/kernels/xent_lse.cl + crossentropy.cl, the source PoCL runs in make check.  The
 * targets are copied to the host and checked (codelets/ids.h) before a kernel runs. */
#include "codelets/cuda/cuda.h"
#include "codelets/ids.h"
#include "codelets/kernels/xent_lse.cl"
#include "codelets/kernels/crossentropy.cl"

/* the shapes, then the targets (buffer 1) of the rows x cols logits tile; 0 when a kernel
 * may run */
static int xent_ready(void *buffers[], const struct hx_rows_args *a, const char *op)
{
    if (hx_run_failed()) {
        return -1;
    }
    hx_xent_check_shapes(buffers, a, op);
    int32_t *targets = hx_cuda_ids(buffers, 1, a->rows, hx_cuda_stream(), op);
    if (targets == NULL) {
        return -1;
    }
    int ok = hx_xent_targets_ok(targets, a->rows, a->cols);
    free(targets);
    return ok ? 0 : -1;
}

/* buffers: logits, targets, losses, lse.  A block per row. */
extern "C" void hx_xent_fwd_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_rows_args *a = &((const struct hx_node *)cl_arg)->args.rows;
    if (xent_ready(buffers, a, "xent_fwd") != 0 || a->rows == 0) {
        return;
    }
    hx_xent_fwd<<<(unsigned)a->rows, HX_BLOCK, 0, hx_cuda_stream()>>>(
        HX_CU_F32(buffers, 2), 0, HX_CU_F32(buffers, 3), 0, HX_CU_F32(buffers, 0), 0,
        HX_CU_LD(buffers, 0), HX_CU_I32(buffers, 1), 0, a->cols);
    HX_CUDA_CHECK("xent_fwd", "hx_xent_fwd");
}

/* buffers: logits (RW), targets, lse.  A thread per logit. */
extern "C" void hx_xent_bwd_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_rows_args *a = &((const struct hx_node *)cl_arg)->args.rows;
    if (xent_ready(buffers, a, "xent_bwd") != 0) {
        return;
    }
    hx_xent_bwd<<<hx_cuda_blocks((long)a->rows * a->cols), HX_BLOCK, 0, hx_cuda_stream()>>>(
        HX_CU_F32(buffers, 0), 0, HX_CU_LD(buffers, 0), HX_CU_F32(buffers, 2), 0,
        HX_CU_I32(buffers, 1), 0, a->rows, a->cols, a->scale);
    HX_CUDA_CHECK("xent_bwd", "hx_xent_bwd");
}

/* buffers: logits (RW), targets, losses, lse.  A block per row. */
extern "C" void hx_xent_fused_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_rows_args *a = &((const struct hx_node *)cl_arg)->args.rows;
    if (xent_ready(buffers, a, "xent_fused") != 0 || a->rows == 0) {
        return;
    }
    hx_xent_fused<<<(unsigned)a->rows, HX_BLOCK, 0, hx_cuda_stream()>>>(
        HX_CU_F32(buffers, 0), 0, HX_CU_LD(buffers, 0), HX_CU_I32(buffers, 1), 0,
        HX_CU_F32(buffers, 2), 0, HX_CU_F32(buffers, 3), 0, a->cols, a->scale);
    HX_CUDA_CHECK("xent_fused", "hx_xent_fused");
}
