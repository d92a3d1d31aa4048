/* SPDX-License-Identifier: MIT */
/* codelets/kernels/gradnorm.cl: acc(1,1) f64 += sum(x) or sum(x^2) over one f32 tile x of
 * rows x cols with row stride ld (codelets/gradnorm.c is the CPU form).
 * One work-group of HX_BLOCK items does the whole tile: item l accumulates, in double, the
 * elements l, l + HX_BLOCK, l + 2 HX_BLOCK, ... of the tile in row-major order (adjacent
 * items read adjacent elements), then a fixed tree in local memory adds the HX_BLOCK partial
 * sums and item 0 adds the total onto acc.  The order of every addition is fixed by the tile
 * shape alone, so a device gives the same bits on every run (not the CPU's bits: its order
 * is 16 lanes).  No atomics: the graph chains the reduce tasks of one accumulator (RW), so
 * one task at a time writes it.
 * Launch: global HX_BLOCK, local HX_BLOCK (one group).  Backends: codelets/opencl/gradnorm.c,
 * codelets/cuda/gradnorm.cu. */

HX_KERNEL void hx_reduce(HX_GLOBAL const float *HX_RESTRICT x, long x_off, int rows, int cols,
                         int ld, HX_GLOBAL double *HX_RESTRICT acc, long acc_off, int sumsq)
{
    HX_LOCAL double part[HX_BLOCK];
    int l = HX_LID();
    x += x_off;
    acc += acc_off;
    long n = (long)rows * cols;
    double s = 0.0;
    for (long e = l; e < n; e += HX_BLOCK) {
        long r = e / cols;
        double v = x[r * ld + (e - r * cols)];
        s += sumsq ? v * v : v;
    }
    double total = hx_block_sum_f64(part, s);
    if (l == 0) {
        acc[0] += total;
    }
}
