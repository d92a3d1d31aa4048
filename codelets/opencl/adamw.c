/* SPDX-License-Identifier: MIT */
/* codelets/opencl/adamw.c: OpenCL launcher of hx_cl_adamw, kernel in
 * codelets/kernels/adamw.cl; buffers as in codelets/adamw.c.  The squared gradient norm
 * (8 bytes) is read back to the host first: the clip factor, and the refusal of a non-finite
 * norm as the task's error, are the CPU's (hx_adamw_scalars). */
#include <stdio.h>

#include "codelets/adamw.h"
#include "codelets/codelets.h"
#include "codelets/kernels/dialect.h"

#if HX_OPENCL

/* buffers: param, grad, m, v (contiguous, n floats each), gnorm_sumsq (1,1) f64 */
void hx_adamw_opencl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_adamw_args *a = &node->args.adamw;
    struct hx_ocl_launch l;
    if (hx_run_failed()) {
        return;
    }
    cl_long n = hx_buf_flat(buffers, 0, -1, "adamw");
    for (int i = 1; i < 4; i++) {
        hx_buf_flat(buffers, i, n, "adamw");
    }
    struct starpu_matrix_interface *gn = buffers[4];
    double sumsq;
    cl_int err = clEnqueueReadBuffer(hx_ocl_queue(), (cl_mem)gn->dev_handle, CL_TRUE,
                                     gn->offset, sizeof sumsq, &sumsq, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "reading the squared gradient norm (8 bytes at offset %zu) "
                 "back to the host for step %d", (size_t)gn->offset, a->t);
        hx_ocl_fail(__FILE__, __LINE__, "adamw", what, err);
        return;
    }
    struct hx_adamw_scalars sc;
    if (hx_adamw_scalars(a, sumsq, &sc) != HX_OK) {
        return;
    }
    if (hx_ocl_begin(&l, "adamw", "hx_adamw") == 0) {
        hx_ocl_buf(&l, buffers, 0);
        hx_ocl_buf(&l, buffers, 1);
        hx_ocl_buf(&l, buffers, 2);
        hx_ocl_buf(&l, buffers, 3);
        HX_OCL_VAL(&l, n);
        HX_OCL_VAL(&l, a->lr);
        HX_OCL_VAL(&l, a->beta1);
        HX_OCL_VAL(&l, a->beta2);
        HX_OCL_VAL(&l, a->eps);
        HX_OCL_VAL(&l, a->weight_decay);
        HX_OCL_VAL(&l, sc.clip_coef);
        HX_OCL_VAL(&l, sc.rbc1);
        HX_OCL_VAL(&l, sc.rbc2);
        hx_ocl_end(&l, (size_t)n, HX_BLOCK);
    }
}

#endif
