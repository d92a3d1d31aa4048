/* SPDX-License-Identifier: MIT */
/* codelets/opencl/residual.c: OpenCL launcher of hx_cl_add, kernel in
 * codelets/kernels/residual.cl; buffers as in codelets/residual.c (contiguous tiles of n
 * floats). */
#include "codelets/codelets.h"
#include "codelets/kernels/dialect.h"

#if HX_OPENCL

/* buffers: a, b, out (out = a + b); or x, acc (acc += x) */
void hx_add_opencl(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    struct hx_ocl_launch l;
    int nbuf = STARPU_TASK_GET_NBUFFERS(starpu_task_get_current());
    HX_ASSERT(nbuf == 2 || nbuf == 3, "add: %d buffers, expected 3 (a, b, out) or 2 (x, acc)",
              nbuf);
    cl_long n = hx_buf_flat(buffers, 0, -1, "add");
    for (int i = 1; i < nbuf; i++) {
        hx_buf_flat(buffers, i, n, "add");
    }
    /* kernel arguments out, a, b: acc += x is out = acc, a = acc, b = x */
    int out = nbuf - 1, a = nbuf == 2 ? 1 : 0, b = nbuf == 2 ? 0 : 1;
    if (hx_ocl_begin(&l, "add", "hx_add") == 0) {
        hx_ocl_buf(&l, buffers, out);
        hx_ocl_buf(&l, buffers, a);
        hx_ocl_buf(&l, buffers, b);
        HX_OCL_VAL(&l, n);
        hx_ocl_end(&l, (size_t)n, HX_BLOCK);
    }
}

#endif
