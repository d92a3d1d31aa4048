/* SPDX-License-Identifier: MIT */
/* codelets/matmul.c: GEMM through cblas, C(m,n) = alpha op(A) op(B) + beta C [+ bias(n)],
 * with every transpose, and the bias gradient dbias(n) += colsum(dout(m,n)).
 * The graph splits large GEMMs into row-tile tasks (graphs/layers.c), so each task is one
 * single-threaded cblas_sgemm and both cores work.  Device forms: the GEMM is CLBlast's on
 * OpenCL (codelets/opencl/matmul.c) and cuBLAS's on CUDA (codelets/cuda/matmul.cu), the bias
 * broadcast, GELU epilogue and bias_bwd codelets/kernels/matmul.cl.
 * Reference: codelets/ref/matmul_ref.c.  Test: tests/codelets/matmul.c. */
#include <cblas.h>
#include <string.h>

#include "codelets/codelets.h"
#include "codelets/cpu.h"

void hx_cpu_matmul(float *C, int ldc, const float *A, int lda, const float *B, int ldb,
                   const float *bias, int transa, int transb, int m, int n, int k, float alpha,
                   float beta)
{
    if (bias != NULL) {
        /* C = bias on every row, then C += alpha op(A) op(B): one pass, no extra buffer */
        for (int i = 0; i < m; i++) {
            memcpy(C + (size_t)i * ldc, bias, sizeof(float) * (size_t)n);
        }
        beta = 1.0f;
    }
    if (k == 0) {
        if (beta == 0.0f) {
            for (int i = 0; i < m; i++) {
                memset(C + (size_t)i * ldc, 0, sizeof(float) * (size_t)n);
            }
        }
        return;
    }
    cblas_sgemm(CblasRowMajor, transa ? CblasTrans : CblasNoTrans,
                transb ? CblasTrans : CblasNoTrans, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

void hx_cpu_bias_bwd(float *dbias, const float *dout, int ld, int m, int n)
{
    /* rows in order so the sum is the same on every run */
    for (int i = 0; i < m; i++) {
        const float *row = dout + (size_t)i * ld;
        for (int j = 0; j < n; j++) {
            dbias[j] += row[j];
        }
    }
}

/* buffers: A, B, C [, bias] */
static void matmul_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_matmul_args *a = &node->args.mm;
    if (hx_run_failed()) {
        return;
    }
    const float *bias = node->nrefs > 3 ? HX_BUF_F32(buffers, 3) : NULL;
    hx_cpu_matmul(HX_BUF_F32(buffers, 2), HX_BUF_LD(buffers, 2), HX_BUF_F32(buffers, 0),
                  HX_BUF_LD(buffers, 0), HX_BUF_F32(buffers, 1), HX_BUF_LD(buffers, 1), bias,
                  a->transa, a->transb, a->m, a->n, a->k, a->alpha, a->beta);
}

/* buffers: A, B, pre, bias, out: the linear of matmul_cpu, then GELU row by row (the tile's
 * rows were just written, so they are still in cache) */
static void matmul_gelu_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_matmul_args *a = &node->args.mm;
    if (hx_run_failed()) {
        return;
    }
    float *pre = HX_BUF_F32(buffers, 2), *out = HX_BUF_F32(buffers, 4);
    int ldp = HX_BUF_LD(buffers, 2), ldo = HX_BUF_LD(buffers, 4);
    hx_cpu_matmul(pre, ldp, HX_BUF_F32(buffers, 0), HX_BUF_LD(buffers, 0),
                  HX_BUF_F32(buffers, 1), HX_BUF_LD(buffers, 1), HX_BUF_F32(buffers, 3),
                  a->transa, a->transb, a->m, a->n, a->k, a->alpha, a->beta);
    for (int i = 0; i < a->m; i++) {
        hx_cpu_gelu_fwd(out + (size_t)i * ldo, pre + (size_t)i * ldp, a->n);
    }
}

/* buffers: dout, dbias */
static void bias_bwd_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    if (hx_run_failed()) {
        return;
    }
    hx_cpu_bias_bwd(HX_BUF_F32(buffers, 1), HX_BUF_F32(buffers, 0), HX_BUF_LD(buffers, 0),
                    node->args.rows.rows, node->args.rows.cols);
}

HX_CODELET_DEV(matmul, "matmul", matmul_cpu);
HX_CODELET_DEV(matmul_gelu, "matmul_gelu", matmul_gelu_cpu);
HX_CODELET_DEV(bias_bwd, "bias_bwd", bias_bwd_cpu);
