/* SPDX-License-Identifier: MIT */
/* codelets/cuda/adamw.cu: CUDA launcher of hx_cl_adamw; the kernel is
 * codelets/kernels/adamw.cl, the source PoCL runs in make check.  The squared gradient norm
 * (8 bytes) is copied to the host first (the worker's stream, then a wait): the clip factor,
 * and the refusal of a non-finite norm as the task's error, are the CPU's
 * (hx_adamw_scalars). */
#include "codelets/adamw.h"
#include "codelets/cuda/cuda.h"
#include "codelets/kernels/adamw.cl"

/* buffers: param, grad, m, v (contiguous, n floats each), gnorm_sumsq (1,1) f64 */
extern "C" void hx_adamw_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = (const struct hx_node *)cl_arg;
    const struct hx_adamw_args *a = &node->args.adamw;
    if (hx_run_failed()) {
        return;
    }
    long n = HX_CU_NUMEL(buffers, 0);
    for (int i = 0; i < 4; i++) {
        HX_ASSERT(HX_CU_LD(buffers, i) == HX_CU_COLS(buffers, i) && HX_CU_NUMEL(buffers, i) == n,
                  "adamw: buffer %d is (%d,%d) ld %d, expected %ld contiguous elements", i,
                  HX_CU_ROWS(buffers, i), HX_CU_COLS(buffers, i), HX_CU_LD(buffers, i), n);
    }
    cudaStream_t stream = hx_cuda_stream();
    double sumsq;
    cudaError_t e = cudaMemcpyAsync(&sumsq, (const void *)STARPU_MATRIX_GET_PTR(buffers[4]),
                                    sizeof sumsq, cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess) {
        e = cudaStreamSynchronize(stream);
    }
    if (e != cudaSuccess) {
        hx_task_error_at(__FILE__, __LINE__, "adamw", HX_ERUNTIME,
                         "reading the squared gradient norm back to the host for step %d: %s",
                         a->t, cudaGetErrorString(e));
        return;
    }
    struct hx_adamw_scalars sc;
    if (hx_adamw_scalars(a, sumsq, &sc) != HX_OK) {
        return;
    }
    hx_adamw<<<hx_cuda_blocks(n), HX_BLOCK, 0, stream>>>(
        HX_CU_F32(buffers, 0), 0, HX_CU_F32(buffers, 1), 0, HX_CU_F32(buffers, 2), 0,
        HX_CU_F32(buffers, 3), 0, n, a->lr, a->beta1, a->beta2, a->eps, a->weight_decay,
        sc.clip_coef, sc.rbc1, sc.rbc2);
    HX_CUDA_CHECK("adamw", "hx_adamw");
}
