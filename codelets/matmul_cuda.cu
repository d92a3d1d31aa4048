/* SPDX-License-Identifier: MIT */
/* codelets/matmul_cuda.cu: the CUDA slot of hx_cl_matmul, one cublasSgemm per task.
 * Row-major C(m,n) = alpha op(A) op(B) + beta C is column-major C^T = op(B)^T op(A)^T, so
 * the call swaps the operands and m/n.  Under a CUDA-enabled StarPU the handle and stream are
 * the worker's (starpu_cublas_get_local_handle); Debian's StarPU has no CUDA workers, so here
 * this file is compiled and linked, never run. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <starpu.h>

#include "helix/error.h"
#include "helix/graph.h"
#ifdef STARPU_USE_CUDA
#include <starpu_cublas_v2.h>
#endif

/* C[i, :] = bias for every row i: grid of rows, threads over columns */
static __global__ void bias_rows(float *C, int ldc, const float *bias, int m, int n)
{
    int i = blockIdx.x;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        if (i < m) {
            C[(size_t)i * ldc + j] = bias[j];
        }
    }
}

static cublasHandle_t local_handle(cudaStream_t *stream)
{
#ifdef STARPU_USE_CUDA
    *stream = starpu_cuda_get_local_stream();
    return starpu_cublas_get_local_handle();
#else
    static __thread cublasHandle_t h = NULL; /* one per host thread, as StarPU keeps per worker */
    if (h == NULL && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
        return NULL;
    }
    *stream = 0;
    return h;
#endif
}

extern "C" void hx_matmul_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = (const struct hx_node *)cl_arg;
    const struct hx_matmul_args *a = &node->args.mm;
    if (hx_run_failed()) {
        return;
    }
    const float *A = (const float *)STARPU_MATRIX_GET_PTR(buffers[0]);
    const float *B = (const float *)STARPU_MATRIX_GET_PTR(buffers[1]);
    float *C = (float *)STARPU_MATRIX_GET_PTR(buffers[2]);
    int lda = (int)STARPU_MATRIX_GET_LD(buffers[0]);
    int ldb = (int)STARPU_MATRIX_GET_LD(buffers[1]);
    int ldc = (int)STARPU_MATRIX_GET_LD(buffers[2]);
    float alpha = a->alpha, beta = a->beta;

    cudaStream_t stream;
    cublasHandle_t h = local_handle(&stream);
    if (h == NULL) {
        hx_task_error_at(__FILE__, __LINE__, "matmul_cuda", HX_ERUNTIME,
                         "cublasCreate failed (m=%d n=%d k=%d)", a->m, a->n, a->k);
        return;
    }
    if (a->has_bias && node->nrefs > 3) {
        const float *bias = (const float *)STARPU_MATRIX_GET_PTR(buffers[3]);
        bias_rows<<<a->m, 256, 0, stream>>>(C, ldc, bias, a->m, a->n);
        beta = 1.0f;
    }
    cublasStatus_t st = cublasSgemm(h, a->transb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                    a->transa ? CUBLAS_OP_T : CUBLAS_OP_N, a->n, a->m, a->k,
                                    &alpha, B, ldb, A, lda, &beta, C, ldc);
    if (st != CUBLAS_STATUS_SUCCESS) {
        hx_task_error_at(__FILE__, __LINE__, "matmul_cuda", HX_ERUNTIME,
                         "cublasSgemm(m=%d, n=%d, k=%d, transa=%d, transb=%d): status %d", a->m, a->n,
                    a->k, a->transa, a->transb, (int)st);
    }
}
