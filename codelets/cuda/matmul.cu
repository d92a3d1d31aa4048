/* SPDX-License-Identifier: MIT */
/* codelets/cuda/matmul.cu: CUDA launchers of hx_cl_matmul, hx_cl_matmul_gelu and
 * hx_cl_bias_bwd.  The GEMM is cuBLAS's; this is the one place where the CUDA side differs
 * from OpenCL's (CLBlast, codelets/opencl/matmul.c).  The bias broadcast, the GELU epilogue
 * and bias_bwd are codelets/kernels/matmul.cl, the source PoCL runs in make check.
 * Semantics are hx_cpu_matmul's (codelets/matmul.c): with a bias, C = bias on every row and
 * beta becomes 1; with k == 0, C = 0 when beta == 0 and is left alone otherwise.
 * Row-major C(m,n) = alpha op(A) op(B) + beta C is column-major C^T = op(B)^T op(A)^T, so
 * cublasSgemm gets the operands swapped and n, m for m, n.  Under a CUDA-enabled StarPU the
 * handle is the worker's (starpu_cublas_get_local_handle, on the worker's stream); Debian's
 * StarPU has no CUDA workers, so here this file is compiled and linked, never run. */
#include <cublas_v2.h>

#include "codelets/cuda/cuda.h"
#include "codelets/kernels/matmul.cl"
#ifdef STARPU_USE_CUDA
#include <starpu_cublas_v2.h>
#endif

static cublasHandle_t local_handle(void)
{
#ifdef STARPU_USE_CUDA
    return starpu_cublas_get_local_handle();
#else
    /* one per host thread, as StarPU keeps one per worker; on the default stream, which is
     * hx_cuda_stream() here */
    static __thread cublasHandle_t h = NULL;
    if (h == NULL && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
        return NULL;
    }
    return h;
#endif
}

/* C(m,n) = alpha op(A) op(B) + beta C [+ bias], buffers A = 0, B = 1, C = ic, bias = ibias
 * (-1: none).  0, or -1 after reporting the failure. */
static int linear(void *buffers[], int ic, int ibias, const struct hx_matmul_args *a,
                  const char *op)
{
    const int m = a->m, n = a->n, k = a->k;
    float alpha = a->alpha, beta = a->beta;
    float *C = HX_CU_F32(buffers, ic);
    int ldc = HX_CU_LD(buffers, ic);
    cudaStream_t stream = hx_cuda_stream();
    if (m == 0 || n == 0) {
        return 0;
    }
    if (ibias >= 0) {
        hx_matmul_bias_rows<<<hx_cuda_blocks((long)m * n), HX_BLOCK, 0, stream>>>(
            C, 0, ldc, HX_CU_F32(buffers, ibias), 0, m, n);
        HX_CUDA_CHECK(op, "hx_matmul_bias_rows");
        if (hx_run_failed()) {
            return -1;
        }
        beta = 1.0f;
    }
    if (k == 0) {
        /* cuBLAS would scale C by beta; the CPU leaves it, or zeroes it for beta 0 */
        if (beta == 0.0f) {
            hx_matmul_zero<<<hx_cuda_blocks((long)m * n), HX_BLOCK, 0, stream>>>(C, 0, ldc, m, n);
            HX_CUDA_CHECK(op, "hx_matmul_zero");
        }
        return hx_run_failed() ? -1 : 0;
    }
    cublasHandle_t h = local_handle();
    if (h == NULL) {
        hx_task_error_at(__FILE__, __LINE__, op, HX_ERUNTIME,
                         "cublasCreate failed (m=%d n=%d k=%d): is a CUDA device visible to "
                         "this process?", m, n, k);
        return -1;
    }
    cublasStatus_t st = cublasSgemm(h, a->transb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                    a->transa ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha,
                                    HX_CU_F32(buffers, 1), HX_CU_LD(buffers, 1),
                                    HX_CU_F32(buffers, 0), HX_CU_LD(buffers, 0), &beta, C, ldc);
    if (st != CUBLAS_STATUS_SUCCESS) {
        hx_task_error_at(__FILE__, __LINE__, op, HX_ERUNTIME,
                         "cublasSgemm (m=%d n=%d k=%d transa=%d transb=%d lda=%d ldb=%d ldc=%d): "
                         "%s", m, n, k, a->transa, a->transb, HX_CU_LD(buffers, 0),
                         HX_CU_LD(buffers, 1), ldc, cublasGetStatusString(st));
        return -1;
    }
    return 0;
}

/* buffers: A, B, C [, bias] */
extern "C" void hx_matmul_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = (const struct hx_node *)cl_arg;
    if (hx_run_failed()) {
        return;
    }
    linear(buffers, 2, node->nrefs > 3 ? 3 : -1, &node->args.mm, "matmul");
}

/* buffers: A, B, pre, bias, out: pre = linear as hx_matmul_cuda, out = gelu(pre) */
extern "C" void hx_matmul_gelu_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = (const struct hx_node *)cl_arg;
    const struct hx_matmul_args *a = &node->args.mm;
    if (hx_run_failed() || linear(buffers, 2, 3, a, "matmul_gelu") != 0) {
        return;
    }
    hx_matmul_gelu_rows<<<hx_cuda_blocks((long)a->m * a->n), HX_BLOCK, 0, hx_cuda_stream()>>>(
        HX_CU_F32(buffers, 4), 0, HX_CU_LD(buffers, 4), HX_CU_F32(buffers, 2), 0,
        HX_CU_LD(buffers, 2), a->m, a->n);
    HX_CUDA_CHECK("matmul_gelu", "hx_matmul_gelu_rows");
}

/* buffers: dout (rows x cols, ld), dbias (1 x cols) */
extern "C" void hx_bias_bwd_cuda(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = (const struct hx_node *)cl_arg;
    if (hx_run_failed()) {
        return;
    }
    int m = node->args.rows.rows, n = node->args.rows.cols;
    hx_matmul_bias_bwd<<<hx_cuda_blocks(n), HX_BLOCK, 0, hx_cuda_stream()>>>(
        HX_CU_F32(buffers, 1), 0, HX_CU_F32(buffers, 0), 0, HX_CU_LD(buffers, 0), m, n);
    HX_CUDA_CHECK("bias_bwd", "hx_matmul_bias_bwd");
}
