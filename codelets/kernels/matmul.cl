/* SPDX-License-Identifier: MIT */
/* codelets/kernels/matmul.cl: the matmul family around the GEMM itself (codelets/matmul.c is
 * the CPU form).  The GEMM is the vendor BLAS of each backend, which is where the two differ:
 * CLBlast on OpenCL (codelets/opencl/matmul.c), cuBLAS on CUDA (codelets/cuda/matmul.cu).
 * These kernels are shared:
 * - hx_matmul_bias_rows: C(m,n)[i,:] = bias(n) on every row, before a GEMM with beta 1;
 * - hx_matmul_zero:      C(m,n) = 0, a beta-0 product with k == 0 (nothing to multiply);
 * - hx_matmul_gelu_rows: out(m,n) = gelu(pre(m,n)), the epilogue of matmul_gelu;
 * - hx_matmul_bias_bwd:  dbias(n) += column sums of dout(m,n).
 * Tiles are row-major with a row stride (ld >= n elements), as StarPU's matrix tiles.
 * Element-wise kernels: 1-D launch of m*n items (rounded up to HX_BLOCK), item e is row
 * e / n, column e % n.  bias_bwd: one item per column (global n). */

/* GPT-2's tanh GELU, the formula of codelets/kernels/gelu.cl and codelets/gelu.c.  Written
 * out again because a .cl file cannot include another, and a CUDA translation unit that
 * included gelu.cl as well would define gelu's kernels twice. */
#define HX_MATMUL_GELU_S 0.7978845608f
#define HX_MATMUL_GELU_K 0.044715f

HX_KERNEL void hx_matmul_bias_rows(HX_GLOBAL float *HX_RESTRICT c, long c_off, int ldc,
                                   HX_GLOBAL const float *HX_RESTRICT bias, long bias_off,
                                   int m, int n)
{
    long e = HX_GID();
    c += c_off;
    bias += bias_off;
    if (e < (long)m * n) {
        long i = e / n;
        int j = (int)(e - i * n);
        c[i * ldc + j] = bias[j];
    }
}

HX_KERNEL void hx_matmul_zero(HX_GLOBAL float *HX_RESTRICT c, long c_off, int ldc, int m, int n)
{
    long e = HX_GID();
    c += c_off;
    if (e < (long)m * n) {
        long i = e / n;
        int j = (int)(e - i * n);
        c[i * ldc + j] = 0.0f;
    }
}

HX_KERNEL void hx_matmul_gelu_rows(HX_GLOBAL float *HX_RESTRICT out, long out_off, int ldo,
                                   HX_GLOBAL const float *HX_RESTRICT pre, long pre_off, int ldp,
                                   int m, int n)
{
    long e = HX_GID();
    out += out_off;
    pre += pre_off;
    if (e < (long)m * n) {
        long i = e / n;
        int j = (int)(e - i * n);
        float x = pre[i * ldp + j];
        float u = HX_MATMUL_GELU_S * (x + HX_MATMUL_GELU_K * x * x * x);
        out[i * ldo + j] = 0.5f * x * (1.0f + HX_TANH(u));
    }
}

/* dbias[j] += dout[0][j] + dout[1][j] + ... + dout[m-1][j], added one row at a time onto
 * dbias[j] in float: the CPU's order exactly (hx_cpu_bias_bwd), so the device result is the
 * same bits as the CPU's and the same on every run.  Adjacent items read adjacent columns of
 * a row (coalesced).  n, the layer's width (C to 4C), gives the parallelism; m is the rows of
 * one row tile of the activations (graphs/layers.c), each item's serial loop. */
HX_KERNEL void hx_matmul_bias_bwd(HX_GLOBAL float *HX_RESTRICT dbias, long dbias_off,
                                  HX_GLOBAL const float *HX_RESTRICT dout, long dout_off, int ld,
                                  int m, int n)
{
    long j = HX_GID();
    dbias += dbias_off;
    dout += dout_off;
    if (j < n) {
        float s = dbias[j];
        for (int i = 0; i < m; i++) {
            s += dout[(long)i * ld + j];
        }
        dbias[j] = s;
    }
}
