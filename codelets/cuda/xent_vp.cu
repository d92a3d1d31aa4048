/* SPDX-License-Identifier: MIT */
/* codelets/cuda/xent_vp.cu: CUDA launchers of hx_cl_xent_vp_stats and hx_cl_xent_vp; the
 * kernels are codelets/kernels/xent_lse.cl + xent_vp.cl, the source PoCL runs in make check.
 * The targets are copied to the host and checked (codelets/ids.h) before a kernel runs. */
#include "codelets/cuda/cuda.h"
#include "codelets/ids.h"
#include "codelets/kernels/xent_lse.cl"
#include "codelets/kernels/xent_vp.cl"

/* the targets (buffer 1) of the tile's rows checked; 0 when a kernel may run */
static int targets_ready(void *buffers[], const struct hx_xent_vp_args *a, const char *op)
{
    int32_t *targets = hx_cuda_ids(buffers, 1, a->rows, hx_cuda_stream(), op);
    if (targets == NULL) {
        return -1;
    }
    int ok = hx_xent_vp_targets_ok(targets, a->rows, op);
    free(targets);
    return ok ? 0 : -1;
}

/* buffers: logits R, targets R, stats W.  A block per row. */
extern "C" void hx_xent_vp_stats_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_xent_vp_args *a = &((const struct hx_node *)cl_arg)->args.xvp;
    if (hx_run_failed()) {
        return;
    }
    hx_xent_vp_stats_check_shapes(buffers, a);
    if (targets_ready(buffers, a, "xent_vp_stats") != 0 || a->rows == 0) {
        return;
    }
    hx_xent_vp_stats<<<(unsigned)a->rows, HX_BLOCK, 0, hx_cuda_stream()>>>(
        HX_CU_F32(buffers, 2), 0, HX_CU_LD(buffers, 2), HX_CU_F32(buffers, 0), 0,
        HX_CU_LD(buffers, 0), HX_CU_I32(buffers, 1), 0, a->V, a->v0);
    HX_CUDA_CHECK("xent_vp_stats", "hx_xent_vp_stats");
}

/* buffers: logits (RW with grad, else R), targets R, all R, losses W, lse W.  A block per
 * row. */
extern "C" void hx_xent_vp_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_xent_vp_args *a = &((const struct hx_node *)cl_arg)->args.xvp;
    if (hx_run_failed()) {
        return;
    }
    hx_xent_vp_check_shapes(buffers, a);
    if (targets_ready(buffers, a, "xent_vp") != 0 || a->rows == 0) {
        return;
    }
    hx_xent_vp<<<(unsigned)a->rows, HX_BLOCK, 0, hx_cuda_stream()>>>(
        HX_CU_F32(buffers, 0), 0, HX_CU_LD(buffers, 0), HX_CU_I32(buffers, 1), 0,
        HX_CU_F32(buffers, 2), 0, HX_CU_LD(buffers, 2), HX_CU_F32(buffers, 3), 0,
        HX_CU_LD(buffers, 3), HX_CU_F32(buffers, 4), 0, HX_CU_LD(buffers, 4), a->rows, a->V,
        a->v0, a->parts, a->grad, a->scale);
    HX_CUDA_CHECK("xent_vp", "hx_xent_vp");
}
