/* SPDX-License-Identifier: MIT */
/* codelets/opencl/matmul.c: OpenCL launchers of hx_cl_matmul, hx_cl_matmul_gelu and
 * hx_cl_bias_bwd.  The GEMM is CLBlast's (CLBlastSgemm, row-major, on the worker's queue);
 * this is the one place where the OpenCL side differs from CUDA's (cuBLAS,
 * codelets/cuda/matmul.cu).  The bias broadcast, the GELU epilogue and bias_bwd are the
 * shared kernels of codelets/kernels/matmul.cl.  Semantics are hx_cpu_matmul's
 * (codelets/matmul.c): with a bias, C = bias on every row and beta becomes 1; with k == 0,
 * C = 0 when beta == 0 and is left alone otherwise.  A write-only C (beta 0) may hold
 * anything, NaN included: CLBlast 1.5.3 does not read C when beta is 0 (checked on PoCL with a
 * NaN-filled C at m x n x k = 17x96x33, 512^3 and 1000x777x513, and by
 * tests/codelets/matmul.c), so C needs no clearing first.  CLBlast compiles its own kernels
 * on its first call in a process (seconds on PoCL). */
#include <stdio.h>

#include "codelets/codelets.h"
#include "codelets/kernels/dialect.h"

#if HX_OPENCL
#include <clblast_c.h>

/* buffer i's cl_mem and its offset in floats (StarPU keeps a byte offset) */
static cl_mem ocl_mem(void *buffers[], int i, size_t *off)
{
    struct starpu_matrix_interface *mi = buffers[i];
    *off = mi->offset / mi->elemsize;
    return (cl_mem)mi->dev_handle;
}

/* C (buffer ic, m x n) = bias (buffer ibias) on every row */
static int bias_rows(void *buffers[], int ic, int ibias, const char *op, int m, int n)
{
    struct hx_ocl_launch l;
    int ldc = HX_BUF_LD(buffers, ic);
    if (hx_ocl_begin(&l, op, "hx_matmul_bias_rows") != 0) {
        return -1;
    }
    hx_ocl_buf(&l, buffers, ic);
    HX_OCL_VAL(&l, ldc);
    hx_ocl_buf(&l, buffers, ibias);
    HX_OCL_VAL(&l, m);
    HX_OCL_VAL(&l, n);
    return hx_ocl_end(&l, (size_t)m * (size_t)n, HX_BLOCK);
}

/* C (buffer ic, m x n) = 0 */
static int zero_rows(void *buffers[], int ic, const char *op, int m, int n)
{
    struct hx_ocl_launch l;
    int ldc = HX_BUF_LD(buffers, ic);
    if (hx_ocl_begin(&l, op, "hx_matmul_zero") != 0) {
        return -1;
    }
    hx_ocl_buf(&l, buffers, ic);
    HX_OCL_VAL(&l, ldc);
    HX_OCL_VAL(&l, m);
    HX_OCL_VAL(&l, n);
    return hx_ocl_end(&l, (size_t)m * (size_t)n, HX_BLOCK);
}

/* C(m,n) = alpha op(A) op(B) + beta C [+ bias], buffers A = 0, B = 1, C = ic, bias = ibias
 * (-1: none); hx_cpu_matmul's semantics.  0, or -1 after reporting the failure. */
static int linear(void *buffers[], int ic, int ibias, const struct hx_matmul_args *a,
                  const char *op)
{
    const int m = a->m, n = a->n, k = a->k;
    float beta = a->beta;
    if (m == 0 || n == 0) {
        return 0; /* an empty C (CLBlast refuses zero dimensions) */
    }
    if (ibias >= 0) {
        if (bias_rows(buffers, ic, ibias, op, m, n) != 0) {
            return -1;
        }
        beta = 1.0f;
    }
    if (k == 0) {
        /* nothing to multiply (CLBlast refuses k == 0); as the CPU: C = 0 for beta 0 */
        return beta == 0.0f ? zero_rows(buffers, ic, op, m, n) : 0;
    }
    size_t offa, offb, offc;
    cl_mem A = ocl_mem(buffers, 0, &offa), B = ocl_mem(buffers, 1, &offb);
    cl_mem C = ocl_mem(buffers, ic, &offc);
    int lda = HX_BUF_LD(buffers, 0), ldb = HX_BUF_LD(buffers, 1), ldc = HX_BUF_LD(buffers, ic);
    cl_command_queue queue = hx_ocl_queue();
    CLBlastStatusCode st = CLBlastSgemm(
        CLBlastLayoutRowMajor, a->transa ? CLBlastTransposeYes : CLBlastTransposeNo,
        a->transb ? CLBlastTransposeYes : CLBlastTransposeNo, (size_t)m, (size_t)n, (size_t)k,
        a->alpha, A, offa, (size_t)lda, B, offb, (size_t)ldb, beta, C, offc, (size_t)ldc, &queue,
        NULL);
    cl_int fin = st == CLBlastSuccess ? clFinish(queue) : CL_SUCCESS;
    if (st != CLBlastSuccess || fin != CL_SUCCESS) {
        char what[320];
        snprintf(what, sizeof what,
                 "%s (m=%d n=%d k=%d transa=%d transb=%d lda=%d ldb=%d ldc=%d alpha=%g beta=%g; "
                 "CLBlastStatusCode in clblast_c.h: -10xx are CLBlast's argument checks, -20xx "
                 "its kernel build, others OpenCL's)",
                 st != CLBlastSuccess ? "CLBlastSgemm" : "clFinish after CLBlastSgemm", m, n, k,
                 a->transa, a->transb, lda, ldb, ldc, (double)a->alpha, (double)beta);
        return hx_ocl_fail(__FILE__, __LINE__, op, what, st != CLBlastSuccess ? (int)st : fin);
    }
    return 0;
}

/* buffers: A, B, C [, bias] */
void hx_matmul_opencl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    if (hx_run_failed()) {
        return;
    }
    linear(buffers, 2, node->nrefs > 3 ? 3 : -1, &node->args.mm, "matmul");
}

/* buffers: A, B, pre, bias, out: pre = linear as hx_matmul_opencl, out = gelu(pre) */
void hx_matmul_gelu_opencl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_matmul_args *a = &node->args.mm;
    struct hx_ocl_launch l;
    if (hx_run_failed() || linear(buffers, 2, 3, a, "matmul_gelu") != 0) {
        return;
    }
    int ldo = HX_BUF_LD(buffers, 4), ldp = HX_BUF_LD(buffers, 2);
    if (hx_ocl_begin(&l, "matmul_gelu", "hx_matmul_gelu_rows") == 0) {
        hx_ocl_buf(&l, buffers, 4);
        HX_OCL_VAL(&l, ldo);
        hx_ocl_buf(&l, buffers, 2);
        HX_OCL_VAL(&l, ldp);
        HX_OCL_VAL(&l, a->m);
        HX_OCL_VAL(&l, a->n);
        hx_ocl_end(&l, (size_t)a->m * (size_t)a->n, HX_BLOCK);
    }
}

/* buffers: dout (rows x cols, ld), dbias (1 x cols) */
void hx_bias_bwd_opencl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    struct hx_ocl_launch l;
    int ld = HX_BUF_LD(buffers, 0), m = node->args.rows.rows, n = node->args.rows.cols;
    if (hx_ocl_begin(&l, "bias_bwd", "hx_matmul_bias_bwd") == 0) {
        hx_ocl_buf(&l, buffers, 1);
        hx_ocl_buf(&l, buffers, 0);
        HX_OCL_VAL(&l, ld);
        HX_OCL_VAL(&l, m);
        HX_OCL_VAL(&l, n);
        hx_ocl_end(&l, (size_t)n, HX_BLOCK);
    }
}

#endif /* HX_OPENCL */
