/* SPDX-License-Identifier: MIT */
/* codelets/ref/matmul_ref.c: reference GEMM with optional bias, and the bias gradient.
 * C (m,n) = alpha op(A) op(B) + beta C [+ bias (n) on every row]; op(A) (m,k), op(B) (k,n).
 * A is stored (m,k), or (k,m) when transa; B is stored (k,n), or (n,k) when transb.
 * beta == 0 never reads C (BLAS semantics), so C may hold garbage, even NaN.
 * Tests: tests/ref/hand_values.c (all four transposes), tests/ref/finite_diff.c. */
#include <stddef.h>

#include "codelets/ref/ref.h"

/* element (i,p) of op(A), element (p,j) of op(B) */
static double op_a(const double *A, int transa, int m, int k, int i, int p)
{
    return transa ? A[(long)p * m + i] : A[(long)i * k + p];
}

static double op_b(const double *B, int transb, int k, int n, int p, int j)
{
    return transb ? B[(long)j * k + p] : B[(long)p * n + j];
}

void hx_ref_matmul(double *C, const double *A, const double *B, const double *bias, int transa,
                   int transb, int m, int n, int k, double alpha, double beta)
{
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < n; j++) {
            double acc = 0.0;
            for (int p = 0; p < k; p++) {
                acc += op_a(A, transa, m, k, i, p) * op_b(B, transb, k, n, p, j);
            }
            double c = alpha * acc;
            if (beta != 0.0) {
                c += beta * C[(long)i * n + j];
            }
            if (bias != NULL) {
                c += bias[j];
            }
            C[(long)i * n + j] = c;
        }
    }
}

/* The bias is added to every row, so its gradient is the column sum of dout (m,n). */
void hx_ref_bias_bwd(double *dbias, const double *dout, int m, int n)
{
    for (int j = 0; j < n; j++) {
        double acc = 0.0;
        for (int i = 0; i < m; i++) {
            acc += dout[(long)i * n + j];
        }
        dbias[j] += acc;
    }
}
