/* SPDX-License-Identifier: MIT */
/* codelets/opencl/opencl.h: the OpenCL side of the codelets (internal).  One program holds
 * every kernel of codelets/kernels/ (the embedded string hx_kernels_cl_source, dialect first);
 * hx_opencl_load compiles it for every OpenCL device once StarPU runs, and each launcher
 * (codelets/opencl/<family>.c, the `opencl_funcs` of a codelet) sets a kernel's arguments and
 * runs it on its worker's queue:
 *
 *     struct hx_ocl_launch l;
 *     if (hx_ocl_begin(&l, "gelu_fwd", "hx_gelu_fwd") == 0) {
 *         hx_ocl_buf(&l, buffers, 1);          // out: cl_mem, offset in elements
 *         hx_ocl_buf(&l, buffers, 0);          // inp
 *         HX_OCL_VAL(&l, n);                   // a cl_long
 *         hx_ocl_end(&l, n, HX_BLOCK);         // enqueue, wait, release; errors reported
 *     }
 *
 * Errors go to hx_task_error_at with the op, the kernel and the OpenCL status, so the run
 * fails as a CPU task's failure does. */
#ifndef HX_CODELETS_OPENCL_H
#define HX_CODELETS_OPENCL_H

#include <starpu.h>

#if defined(STARPU_USE_OPENCL) && HX_HAVE_OPENCL
#define HX_OPENCL 1
#include <starpu_opencl.h>

struct hx_ocl_launch {
    const char *op, *kernel_name;
    cl_kernel kernel;
    cl_command_queue queue;
    cl_uint nargs;
    cl_int status;         /* the first failed call's status, or CL_SUCCESS */
    const char *failed_at; /* which call failed */
};

/* Compile the kernels for every OpenCL device (StarPU must be up).  HX_OK or HX_ERUNTIME
 * with PoCL's build log in the message. */
int hx_opencl_load(void);
void hx_opencl_unload(void);
/* nonzero between hx_opencl_load and hx_opencl_unload */
int hx_opencl_loaded(void);

/* Start a launch of @p kernel for @p op on the calling OpenCL worker's device.  0, or -1
 * when the run already failed (the launcher returns) or the kernel is missing (reported). */
int hx_ocl_begin(struct hx_ocl_launch *l, const char *op, const char *kernel);
/* Next two arguments: buffer i's cl_mem and its offset in elements of its element size. */
void hx_ocl_buf(struct hx_ocl_launch *l, void *buffers[], int i);
/* Next argument: @p size bytes at @p value (a cl_long, cl_int or cl_float). */
void hx_ocl_arg(struct hx_ocl_launch *l, size_t size, const void *value);
#define HX_OCL_VAL(l, v) hx_ocl_arg((l), sizeof(v), &(v))
/* Local memory of @p bytes as the next argument (a __local pointer parameter). */
void hx_ocl_local(struct hx_ocl_launch *l, size_t bytes);
/* Run @p global items (rounded up to a multiple of @p local) in groups of @p local, wait,
 * release the kernel.  Returns 0, or -1 after reporting the failure. */
int hx_ocl_end(struct hx_ocl_launch *l, size_t global, size_t local);
/* The launches the norm families share (codelets/opencl/norms.c; LayerNorm and RMSNorm):
 * the buffers in @p order (n of them), then the kernel's scalars.  Row kernels run one
 * work-group of HX_BLOCK items per row (they have no bound check):
 *   forward       ..., C, ld, eps
 *   bwd_data      ..., resid (the tile, or dinp where there is none: never read), has_resid,
 *                 C, ld
 *   bwd_weight    ..., N, C, ld, one item per column */
struct hx_rows_args;
void hx_ocl_norm_fwd(const char *op, const char *kernel, void *buffers[], const int *order,
                     int n, const struct hx_rows_args *a, cl_int ld);
void hx_ocl_norm_bwd_data(const char *op, const char *kernel, void *buffers[],
                          const int *order, int n, int resid, int dinp,
                          const struct hx_rows_args *a, cl_int ld);
void hx_ocl_norm_bwd_weight(const char *op, const char *kernel, void *buffers[],
                            const int *order, int n, const struct hx_rows_args *a, cl_int ld);
/* The calling worker's queue, for CLBlast (codelets/opencl/matmul.c). */
cl_command_queue hx_ocl_queue(void);
/* Report an OpenCL or CLBlast failure of @p op as a task error (returns -1). */
int hx_ocl_fail(const char *file, int line, const char *op, const char *what, int status);
#else
#define HX_OPENCL 0
#endif

/* The opencl_funcs slot of a codelet: the launcher, or nothing without OpenCL. */
#if HX_OPENCL
#define HX_OPENCL_SLOT(f) .opencl_funcs = { f },
#else
#define HX_OPENCL_SLOT(f)
#endif

#endif /* HX_CODELETS_OPENCL_H */
