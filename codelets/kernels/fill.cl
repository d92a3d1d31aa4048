/* SPDX-License-Identifier: MIT */
/* codelets/kernels/fill.cl: set every element of a tile of rows x cols with row stride ld to
 * a constant (codelets/fill.c is the CPU form): hx_fill_f32 for 4-byte tiles (f32, and i32
 * with value 0, the same bits), hx_fill_f64 for f64 tiles (the reduction scalars).  Item e
 * is row e / cols, column e % cols: the elements between a row's end and the next row's
 * start (another tile's) are not touched.
 * Launch: global rows*cols (rounded up to HX_BLOCK).  Backends: codelets/opencl/fill.c,
 * codelets/cuda/fill.cu. */

HX_KERNEL void hx_fill_f32(HX_GLOBAL float *x, long x_off, int rows, int cols, int ld,
                           float value)
{
    long e = HX_GID();
    x += x_off;
    if (e < (long)rows * cols) {
        long r = e / cols;
        x[r * ld + (e - r * cols)] = value;
    }
}

HX_KERNEL void hx_fill_f64(HX_GLOBAL double *x, long x_off, int rows, int cols, int ld,
                           double value)
{
    long e = HX_GID();
    x += x_off;
    if (e < (long)rows * cols) {
        long r = e / cols;
        x[r * ld + (e - r * cols)] = value;
    }
}
