/* SPDX-License-Identifier: MIT */
/* codelets/opencl/norms.c: the launch shapes the norm families share (codelets/opencl/opencl.h,
 * hx_ocl_norm_*): LayerNorm's and RMSNorm's kernels (codelets/kernels/layernorm.cl,
 * rmsnorm.cl) differ in their buffers, not in how they are run. */
#include "codelets/codelets.h"
#include "codelets/kernels/dialect.h"

#if HX_OPENCL

static void bufs(struct hx_ocl_launch *l, void *buffers[], const int *order, int n)
{
    for (int k = 0; k < n; k++) {
        hx_ocl_buf(l, buffers, order[k]);
    }
}

void hx_ocl_norm_fwd(const char *op, const char *kernel, void *buffers[], const int *order,
                     int n, const struct hx_rows_args *a, cl_int ld)
{
    cl_int C = a->cols;
    cl_float eps = a->eps;
    struct hx_ocl_launch l;
    if (hx_ocl_begin(&l, op, kernel) == 0) {
        bufs(&l, buffers, order, n);
        HX_OCL_VAL(&l, C);
        HX_OCL_VAL(&l, ld);
        HX_OCL_VAL(&l, eps);
        hx_ocl_end(&l, (size_t)a->rows * HX_BLOCK, HX_BLOCK);
    }
}

void hx_ocl_norm_bwd_data(const char *op, const char *kernel, void *buffers[],
                          const int *order, int n, int resid, int dinp,
                          const struct hx_rows_args *a, cl_int ld)
{
    cl_int C = a->cols, has_resid = resid >= 0;
    struct hx_ocl_launch l;
    if (hx_ocl_begin(&l, op, kernel) == 0) {
        bufs(&l, buffers, order, n);
        hx_ocl_buf(&l, buffers, has_resid ? resid : dinp);
        HX_OCL_VAL(&l, has_resid);
        HX_OCL_VAL(&l, C);
        HX_OCL_VAL(&l, ld);
        hx_ocl_end(&l, (size_t)a->rows * HX_BLOCK, HX_BLOCK);
    }
}

void hx_ocl_norm_bwd_weight(const char *op, const char *kernel, void *buffers[],
                            const int *order, int n, const struct hx_rows_args *a, cl_int ld)
{
    cl_int N = a->rows, C = a->cols;
    struct hx_ocl_launch l;
    if (hx_ocl_begin(&l, op, kernel) == 0) {
        bufs(&l, buffers, order, n);
        HX_OCL_VAL(&l, N);
        HX_OCL_VAL(&l, C);
        HX_OCL_VAL(&l, ld);
        hx_ocl_end(&l, (size_t)C, HX_BLOCK);
    }
}

#endif
