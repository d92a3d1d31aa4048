/* SPDX-License-Identifier: MIT */
/* codelets/opencl/launch.c: the OpenCL program of every kernel and the launch helpers of
 * codelets/opencl/opencl.h.  Launches are synchronous (clFinish before the codelet returns):
 * StarPU then knows the task ended when the function does, and its history perf models time
 * the kernel, not its enqueueing. */
#include <stdio.h>
#include <string.h>

#include "codelets/codelets.h"
#include "codelets/opencl/opencl.h"
#include "helix/error.h"

#if HX_OPENCL
#include <clblast_c.h>
#endif

#if HX_OPENCL

extern const char hx_kernels_cl_source[]; /* generated: codelets/kernels_cl.c */

static struct starpu_opencl_program program;
static int loaded;

int hx_opencl_load(void)
{
    if (loaded || starpu_opencl_worker_get_count() == 0) {
        return HX_OK;
    }
    /* OpenCL C 1.2, no fast-math: the kernels are compared with fp64 references */
    int ret = starpu_opencl_load_opencl_from_string(hx_kernels_cl_source, &program,
                                                    "-cl-std=CL1.2");
    if (ret != 0) {
        return HX_ERR(HX_ERUNTIME, "compiling helix's OpenCL kernels (%zu bytes of source) "
                      "failed: %d; the build log is above; with PoCL, try an empty "
                      "POCL_CACHE_DIR", strlen(hx_kernels_cl_source), ret);
    }
    loaded = 1;
    return HX_OK;
}

void hx_opencl_unload(void)
{
    if (loaded) {
        /* CLBlast keeps its compiled programs per context in a static cache; emptied now,
         * while StarPU's contexts live, not by its destructors after starpu_shutdown
         * released them (under Oclgrind that exit corrupted the heap) */
        CLBlastClearCache();
        starpu_opencl_unload_opencl(&program);
        loaded = 0;
    }
}

int hx_opencl_loaded(void)
{
    return loaded;
}

int hx_ocl_fail(const char *file, int line, const char *op, const char *what, int status)
{
    hx_task_error_at(file, line, op, HX_ERUNTIME, "%s failed on OpenCL worker %d (%s): "
                     "status %d", what, starpu_worker_get_id(), op, status);
    return -1;
}

static void note(struct hx_ocl_launch *l, cl_int err, const char *what)
{
    if (err != CL_SUCCESS && l->status == CL_SUCCESS) {
        l->status = err;
        l->failed_at = what;
    }
}

int hx_ocl_begin(struct hx_ocl_launch *l, const char *op, const char *kernel)
{
    memset(l, 0, sizeof *l);
    l->op = op;
    l->kernel_name = kernel;
    if (hx_run_failed()) {
        return -1;
    }
    int devid = starpu_worker_get_devid(starpu_worker_get_id());
    int err = loaded ? starpu_opencl_load_kernel(&l->kernel, &l->queue, &program, kernel, devid)
                     : CL_INVALID_PROGRAM;
    if (err != CL_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "loading kernel %s%s", kernel,
                 loaded ? "" : " (hx_opencl_load was not called)");
        return hx_ocl_fail(__FILE__, __LINE__, op, what, err);
    }
    return 0;
}

void hx_ocl_arg(struct hx_ocl_launch *l, size_t size, const void *value)
{
    note(l, clSetKernelArg(l->kernel, l->nargs++, size, value), "clSetKernelArg");
}

void hx_ocl_local(struct hx_ocl_launch *l, size_t bytes)
{
    note(l, clSetKernelArg(l->kernel, l->nargs++, bytes, NULL), "clSetKernelArg (local)");
}

void hx_ocl_buf(struct hx_ocl_launch *l, void *buffers[], int i)
{
    struct starpu_matrix_interface *m = buffers[i];
    cl_mem mem = (cl_mem)m->dev_handle;
    cl_long off = (cl_long)(m->offset / m->elemsize);
    hx_ocl_arg(l, sizeof mem, &mem);
    hx_ocl_arg(l, sizeof off, &off);
}

int hx_ocl_end(struct hx_ocl_launch *l, size_t global, size_t local)
{
    size_t g = (global + local - 1) / local * local;
    if (g == 0) { /* an empty tile: nothing to run */
        starpu_opencl_release_kernel(l->kernel);
        return 0;
    }
    if (l->status == CL_SUCCESS) {
        note(l, clEnqueueNDRangeKernel(l->queue, l->kernel, 1, NULL, &g, &local, 0, NULL, NULL),
             "clEnqueueNDRangeKernel");
    }
    if (l->status == CL_SUCCESS) {
        note(l, clFinish(l->queue), "clFinish");
    }
    starpu_opencl_release_kernel(l->kernel);
    if (l->status != CL_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "%s of kernel %s (%zu items in groups of %zu)", l->failed_at,
                 l->kernel_name, g, local);
        return hx_ocl_fail(__FILE__, __LINE__, l->op, what, l->status);
    }
    return 0;
}

cl_command_queue hx_ocl_queue(void)
{
    cl_command_queue q;
    starpu_opencl_get_current_queue(&q);
    return q;
}

#endif /* HX_OPENCL */
