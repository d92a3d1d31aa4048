/* SPDX-License-Identifier: MIT */
/* codelets/matmul.c: GEMM through cblas, C(m,n) = alpha op(A) op(B) + beta C [+ bias(n)],
 * with every transpose, and the bias gradient dbias(n) += colsum(dout(m,n)).
 * The graph splits large GEMMs into row-tile tasks (graphs/layers.c), so each task is one
 * single-threaded cblas_sgemm and both cores work.  CUDA: matmul_cuda.cu (cuBLAS).
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

HX_PERFMODEL(matmul_model, "hx_matmul");

#if HX_HAVE_CUDA
void hx_matmul_cuda(void *buffers[], void *cl_arg); /* matmul_cuda.cu */
#endif

struct starpu_codelet hx_cl_matmul = {
    .name = "matmul",
    .cpu_funcs = { matmul_cpu },
    .cpu_funcs_name = { "matmul_cpu" },
#if HX_HAVE_CUDA
    /* compiled and linked here; runs only under a CUDA-enabled StarPU (Debian's has no CUDA
     * workers, so on this machine the CPU function always runs) */
    .cuda_funcs = { hx_matmul_cuda },
    .cuda_flags = { STARPU_CUDA_ASYNC },
#endif
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &matmul_model,
};

HX_CODELET(matmul_gelu, "matmul_gelu", matmul_gelu_cpu); /* CPU only: no fused CUDA kernel */
HX_CODELET(bias_bwd, "bias_bwd", bias_bwd_cpu);
