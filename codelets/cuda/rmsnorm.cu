/* SPDX-License-Identifier: MIT */
/* codelets/cuda/rmsnorm.cu: CUDA launchers of the rmsnorm codelets; the kernels are
 * codelets/kernels/rmsnorm.cl, the source PoCL runs in make check.  Buffers and checks as in
 * codelets/rmsnorm.c (codelets/rmsnorm.h).  Row kernels: exactly one block of HX_BLOCK threads
 * per row (no bound check in them); bwd_weight: one thread per column. */
#include "codelets/cuda/cuda.h"
#include "codelets/kernels/rmsnorm.cl"
#include "codelets/rmsnorm.h"

/* buffers: inp, w, out, rstd */
extern "C" void hx_rmsnorm_fwd_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = (const struct hx_node *)cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    if (hx_run_failed()) {
        return;
    }
    int ld = hx_rmsnorm_fwd_check(buffers, node);
    if (a->rows == 0) {
        return;
    }
    hx_rmsnorm_fwd<<<a->rows, HX_BLOCK, 0, hx_cuda_stream()>>>(
        HX_CU_F32(buffers, 2), 0, HX_CU_F32(buffers, 3), 0, HX_CU_F32(buffers, 0), 0,
        HX_CU_F32(buffers, 1), 0, a->cols, ld, a->eps);
    HX_CUDA_CHECK("rmsnorm_fwd", "hx_rmsnorm_fwd");
}

/* buffers: a, b, w, sum, out, rstd */
extern "C" void hx_add_rmsnorm_fwd_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = (const struct hx_node *)cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    if (hx_run_failed()) {
        return;
    }
    int ld = hx_add_rmsnorm_fwd_check(buffers, node);
    if (a->rows == 0) {
        return;
    }
    hx_add_rmsnorm_fwd<<<a->rows, HX_BLOCK, 0, hx_cuda_stream()>>>(
        HX_CU_F32(buffers, 3), 0, HX_CU_F32(buffers, 4), 0, HX_CU_F32(buffers, 5), 0,
        HX_CU_F32(buffers, 0), 0, HX_CU_F32(buffers, 1), 0, HX_CU_F32(buffers, 2), 0, a->cols, ld,
        a->eps);
    HX_CUDA_CHECK("add_rmsnorm_fwd", "hx_add_rmsnorm_fwd");
}

/* buffers: dout, inp, w, rstd, dinp [, resid] */
extern "C" void hx_rmsnorm_bwd_data_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = (const struct hx_node *)cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    if (hx_run_failed()) {
        return;
    }
    int has_resid;
    int ld = hx_rmsnorm_bwd_data_check(buffers, node, &has_resid);
    if (a->rows == 0) {
        return;
    }
    /* without a residual the kernel gets dinp in resid's place and never reads it */
    hx_rmsnorm_bwd_data<<<a->rows, HX_BLOCK, 0, hx_cuda_stream()>>>(
        HX_CU_F32(buffers, 4), 0, HX_CU_F32(buffers, 0), 0, HX_CU_F32(buffers, 1), 0,
        HX_CU_F32(buffers, 2), 0, HX_CU_F32(buffers, 3), 0, HX_CU_F32(buffers, has_resid ? 5 : 4),
        0, has_resid, a->cols, ld);
    HX_CUDA_CHECK("rmsnorm_bwd_data", "hx_rmsnorm_bwd_data");
}

/* buffers: dout, inp, rstd, dw */
extern "C" void hx_rmsnorm_bwd_weight_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = (const struct hx_node *)cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    if (hx_run_failed()) {
        return;
    }
    int ld = hx_rmsnorm_bwd_weight_check(buffers, node);
    hx_rmsnorm_bwd_weight<<<hx_cuda_blocks(a->cols), HX_BLOCK, 0, hx_cuda_stream()>>>(
        HX_CU_F32(buffers, 3), 0, HX_CU_F32(buffers, 0), 0, HX_CU_F32(buffers, 1), 0,
        HX_CU_F32(buffers, 2), 0, a->rows, a->cols, ld);
    HX_CUDA_CHECK("rmsnorm_bwd_weight", "hx_rmsnorm_bwd_weight");
}
