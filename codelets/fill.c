/* SPDX-License-Identifier: MIT */
/* codelets/fill.c: set every element of a tile (rows x cols, row stride ld) to a constant:
 * zeroes gradient accumulators and the f64 reduction scalars (loss sum, squared gradient
 * norm) before a step.  f32 tiles get the float value, 8-byte tiles (f64) the value as a
 * double; an i32 tile is only meaningful with value 0 (same bits as 0.0f).
 * Device forms: codelets/kernels/fill.cl.
 * Test: tests/codelets/residual.c. */
#include "codelets/codelets.h"
#include "codelets/cpu.h"

void hx_cpu_fill(float *x, long n, float value)
{
    for (long i = 0; i < n; i++) {
        x[i] = value;
    }
}

static void fill_f64(double *x, long n, double value)
{
    for (long i = 0; i < n; i++) {
        x[i] = value;
    }
}

/* buffers: x */
static void fill_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    if (hx_run_failed()) {
        return;
    }
    int rows = HX_BUF_ROWS(buffers, 0);
    int cols = HX_BUF_COLS(buffers, 0);
    int ld = HX_BUF_LD(buffers, 0);
    size_t elemsize = STARPU_MATRIX_GET_ELEMSIZE(buffers[0]);
    float value = node->args.rows.value;
    HX_ASSERT(elemsize == sizeof(float) || elemsize == sizeof(double),
              "fill: tile element size %zu, expected 4 or 8", elemsize);
    /* one flat loop when contiguous, else row by row inside the larger tensor */
    int nrun = ld == cols ? 1 : rows;
    long len = ld == cols ? (long)rows * cols : cols;
    for (int r = 0; r < nrun; r++) {
        if (elemsize == sizeof(double)) {
            fill_f64(HX_BUF_F64(buffers, 0) + (size_t)r * ld, len, value);
        } else {
            hx_cpu_fill(HX_BUF_F32(buffers, 0) + (size_t)r * ld, len, value);
        }
    }
}

HX_CODELET_DEV(fill, "fill", fill_cpu);
