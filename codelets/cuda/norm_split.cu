/* SPDX-License-Identifier: MIT */
/* codelets/cuda/norm_split.cu: CUDA launchers of the column-split norm codelets; the kernels
 * are codelets/kernels/norm_split.cl, the source PoCL runs in make check.  Buffers and checks
 * as in codelets/norm_split.c (codelets/norm_split.h).  Row kernels: exactly one block of
 * HX_BLOCK threads per row (no bound check in them).  A role the task lacks gets a stand-in
 * the kernel never reads (inp; dinp for a missing resid). */
#include "codelets/cuda/cuda.h"
#include "codelets/kernels/norm_split.cl"
#include "codelets/norm_split.h"

static_assert(HX_NP_LN_SUM == HX_NORM_LN_SUM && HX_NP_LN_VAR == HX_NORM_LN_VAR &&
                  HX_NP_RMS_SQ == HX_NORM_RMS_SQ && HX_NP_LN_BWD == HX_NORM_LN_BWD &&
                  HX_NP_RMS_BWD == HX_NORM_RMS_BWD,
              "norm_split.cl's HX_NP_* are enum hx_norm_part_mode of include/helix/ops.h");

/* buffer i's device pointer, or the stand-in's when the task has none */
static float *buf_or(void *buffers[], int i, int stand_in)
{
    return HX_CU_F32(buffers, i >= 0 ? i : stand_in);
}

extern "C" void hx_norm_part_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = (const struct hx_node *)cl_arg;
    const struct hx_norm_split_args *a = &node->args.nsplit;
    struct hx_norm_bufs b;
    if (hx_run_failed()) {
        return;
    }
    int ld = hx_norm_part_check(buffers, node, &b);
    if (a->rows == 0) {
        return;
    }
    int stat = a->mode == HX_NORM_LN_VAR ? b.s1 : b.mean;
    hx_norm_part<<<a->rows, HX_BLOCK, 0, hx_cuda_stream()>>>(
        HX_CU_F32(buffers, b.part), 0, HX_CU_F32(buffers, b.inp), 0,
        buf_or(buffers, b.dout, b.inp), 0, buf_or(buffers, b.w, b.inp), 0,
        buf_or(buffers, stat, b.inp), 0, buf_or(buffers, b.rstd, b.inp), 0, a->mode, a->cols,
        ld, a->cols_total);
    HX_CUDA_CHECK("norm_part", "hx_norm_part");
}

extern "C" void hx_norm_fwd_apply_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = (const struct hx_node *)cl_arg;
    const struct hx_norm_split_args *a = &node->args.nsplit;
    struct hx_norm_bufs b;
    if (hx_run_failed()) {
        return;
    }
    int ld = hx_norm_fwd_apply_check(buffers, node, &b);
    if (a->rows == 0) {
        return;
    }
    if (a->rms) {
        hx_rmsnorm_fwd_apply<<<a->rows, HX_BLOCK, 0, hx_cuda_stream()>>>(
            HX_CU_F32(buffers, b.out), 0, HX_CU_F32(buffers, b.rstd), 0,
            HX_CU_F32(buffers, b.inp), 0, HX_CU_F32(buffers, b.w), 0, HX_CU_F32(buffers, b.s1),
            0, a->cols, ld, a->cols_total, a->eps);
        HX_CUDA_CHECK("norm_fwd_apply", "hx_rmsnorm_fwd_apply");
    } else {
        hx_layernorm_fwd_apply<<<a->rows, HX_BLOCK, 0, hx_cuda_stream()>>>(
            HX_CU_F32(buffers, b.out), 0, HX_CU_F32(buffers, b.mean), 0,
            HX_CU_F32(buffers, b.rstd), 0, HX_CU_F32(buffers, b.inp), 0,
            HX_CU_F32(buffers, b.w), 0, HX_CU_F32(buffers, b.b), 0, HX_CU_F32(buffers, b.s1), 0,
            HX_CU_F32(buffers, b.s2), 0, a->cols, ld, a->cols_total, a->eps);
        HX_CUDA_CHECK("norm_fwd_apply", "hx_layernorm_fwd_apply");
    }
}

extern "C" void hx_norm_bwd_apply_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = (const struct hx_node *)cl_arg;
    const struct hx_norm_split_args *a = &node->args.nsplit;
    struct hx_norm_bufs b;
    if (hx_run_failed()) {
        return;
    }
    int ld = hx_norm_bwd_apply_check(buffers, node, &b);
    if (a->rows == 0) {
        return;
    }
    int has_resid = b.resid >= 0;
    if (a->rms) {
        hx_rmsnorm_bwd_apply<<<a->rows, HX_BLOCK, 0, hx_cuda_stream()>>>(
            HX_CU_F32(buffers, b.out), 0, HX_CU_F32(buffers, b.dout), 0,
            HX_CU_F32(buffers, b.inp), 0, HX_CU_F32(buffers, b.w), 0,
            HX_CU_F32(buffers, b.rstd), 0, HX_CU_F32(buffers, b.s1), 0,
            buf_or(buffers, b.resid, b.out), 0, has_resid, a->cols, ld, a->cols_total);
        HX_CUDA_CHECK("norm_bwd_apply", "hx_rmsnorm_bwd_apply");
    } else {
        hx_layernorm_bwd_apply<<<a->rows, HX_BLOCK, 0, hx_cuda_stream()>>>(
            HX_CU_F32(buffers, b.out), 0, HX_CU_F32(buffers, b.dout), 0,
            HX_CU_F32(buffers, b.inp), 0, HX_CU_F32(buffers, b.w), 0,
            HX_CU_F32(buffers, b.mean), 0, HX_CU_F32(buffers, b.rstd), 0,
            HX_CU_F32(buffers, b.s2), 0, buf_or(buffers, b.resid, b.out), 0, has_resid,
            a->cols, ld, a->cols_total);
        HX_CUDA_CHECK("norm_bwd_apply", "hx_layernorm_bwd_apply");
    }
}
