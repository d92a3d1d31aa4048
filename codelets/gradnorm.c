/* SPDX-License-Identifier: MIT */
/* codelets/gradnorm.c: acc(1,1) f64 += sum(x) or sum(x^2) over one f32 tile, accumulated in
 * double in index order.  The graph chains one reduce task per gradient tile into the same
 * accumulator (RW), so the global squared norm for clipping, and the loss sum, are the same
 * on every run and every worker count.  Device form: codelets/kernels/gradnorm.cl (a fixed
 * tree: the same bits on every run of a device, not the CPU's bits).
 * Reference: hx_ref_sumsq in codelets/ref/adamw_ref.c.  Test: tests/codelets/residual.c. */
#include "codelets/codelets.h"
#include "codelets/cpu.h"
#include "codelets/vecmath.h"

/* 16 partial sums, lane j taking elements j, j+16, ..., added in lane order at the end: a
 * fixed order (bitwise reproducible) that the compiler can keep in vector registers, where
 * one running sum would serialize every add. */
#define LANES 16

HX_VECTOR_CLONES
void hx_cpu_reduce(double *acc, const float *x, long n, int sumsq)
{
    double lane[LANES] = { 0 };
    long i = 0;
    for (; i + LANES <= n; i += LANES) {
        for (int j = 0; j < LANES; j++) {
            double v = x[i + j];
            lane[j] += sumsq ? v * v : v;
        }
    }
    for (; i < n; i++) {
        double v = x[i];
        lane[i % LANES] += sumsq ? v * v : v;
    }
    double s = 0.0;
    for (int j = 0; j < LANES; j++) {
        s += lane[j];
    }
    acc[0] += s;
}

/* buffers: x, acc */
static void reduce_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    if (hx_run_failed()) {
        return;
    }
    int rows = HX_BUF_ROWS(buffers, 0);
    int cols = HX_BUF_COLS(buffers, 0);
    int ld = HX_BUF_LD(buffers, 0);
    const float *x = HX_BUF_F32(buffers, 0);
    double *acc = HX_BUF_F64(buffers, 1);
    if (ld == cols) {
        hx_cpu_reduce(acc, x, (long)rows * cols, node->args.rows.sumsq);
        return;
    }
    for (int r = 0; r < rows; r++) {
        hx_cpu_reduce(acc, x + (size_t)r * ld, cols, node->args.rows.sumsq);
    }
}

HX_CODELET_DEV(reduce, "reduce", reduce_cpu);
