/* SPDX-License-Identifier: MIT */
/* codelets/kernels/residual.cl: out = a + b on contiguous tiles of n floats, one item per
 * element (codelets/residual.c is the CPU form).  out may be a or b itself (the accumulating
 * form acc += x passes acc as out and a), so no pointer is restrict: each item reads its
 * element of a and b before writing the same element of out.
 * Launch: global n (rounded up to HX_BLOCK).  Backends: codelets/opencl/residual.c,
 * codelets/cuda/residual.cu. */

HX_KERNEL void hx_add(HX_GLOBAL float *out, long out_off, HX_GLOBAL const float *a, long a_off,
                      HX_GLOBAL const float *b, long b_off, long n)
{
    long i = HX_GID();
    out += out_off;
    a += a_off;
    b += b_off;
    if (i < n) {
        out[i] = a[i] + b[i];
    }
}
