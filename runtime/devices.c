/* SPDX-License-Identifier: MIT */
/* runtime/devices.c: which device workers StarPU starts, and where compute tasks may run.
 *
 * --opencl N / --cuda N (hx_runtime_opts.opencl, .cuda; 0 = STARPU_NOPENCL / STARPU_NCUDA
 * when set, else none) become conf.nopencl / conf.ncuda.  Two traps of StarPU 1.3
 * (shared/design/devices.md): it starts no OpenCL worker on a CPU device (PoCL) unless
 * STARPU_OPENCL_ON_CPUS=1, silently, so when no GPU or accelerator device exists helix sets
 * it; and asking for more workers than devices is not an error, so the counts are checked
 * after the start, naming what was found.  With PoCL, POCL_DEVICES=basic (unless set) runs
 * kernels in StarPU's OpenCL worker thread instead of PoCL's own unbound threads, which
 * would fight the CPU workers for the cores.  And StarPU re-measures the bus whenever the
 * OpenCL device count changes, so starts with OpenCL workers keep their own bus files
 * (name_host_view).
 * Test: tests/device/runtime.sh. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <starpu.h>

#include "codelets/opencl/opencl.h"
#include "helix/error.h"
#include "helix/runtime.h"
#include "runtime/devices.h"

static enum hx_place place;

#define HIDDEN_VENDORS "/nonexistent/helix-starts-no-opencl-worker"

/* a count from the option, else from the environment variable, else 0 */
static int count_of(int opt, const char *env, const char *flag, int *n)
{
    const char *v = getenv(env);
    if (opt < 0) {
        return HX_ERR(HX_EINVAL, "%s %d is negative; give a device count of 0 or more", flag,
                      opt);
    }
    if (opt == 0 && v != NULL && *v != '\0') {
        char *end;
        long x = strtol(v, &end, 10);
        if (*end != '\0' || x < 0 || x > 64) {
            return HX_ERR(HX_EINVAL, "%s=%s is not a device count (0..64); set it to the number "
                          "of devices to use or unset it", env, v);
        }
        opt = (int)x;
    }
    *n = opt;
    return HX_OK;
}

#if HX_OPENCL
/* "name (type)" of every OpenCL device, into @p out; the number of GPU/accelerator ones */
static int opencl_devices(char *out, size_t cap, int *total)
{
    cl_platform_id plats[8];
    cl_uint np = 0;
    int accel = 0;
    *total = 0;
    out[0] = '\0';
    if (clGetPlatformIDs(8, plats, &np) != CL_SUCCESS) {
        np = 0;
    }
    for (cl_uint p = 0; p < np && p < 8; p++) {
        cl_device_id devs[16];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, devs, &nd) != CL_SUCCESS) {
            continue;
        }
        for (cl_uint d = 0; d < nd && d < 16; d++) {
            char name[128] = "?";
            cl_device_type type = 0;
            clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof name, name, NULL);
            clGetDeviceInfo(devs[d], CL_DEVICE_TYPE, sizeof type, &type, NULL);
            int is_cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
            accel += !is_cpu;
            size_t len = strlen(out);
            snprintf(out + len, cap - len, "%s%s (%s)", len ? ", " : "", name,
                     is_cpu ? "CPU" : "GPU/accelerator");
            (*total)++;
        }
    }
    return accel;
}
#endif

/* StarPU names its bus files after the host ($STARPU_HOSTNAME, else gethostname()) and
 * measures the bus again whenever the OpenCL device count stored in them differs from the
 * count it finds.  helix's starts without OpenCL workers hide the OpenCL ICDs (0 devices, in
 * hx_devices_choose) and its starts with them do not, so on one STARPU_HOME every change of
 * kind re-measured the bus, and a start reading the files while one of the other kind
 * rewrote them aborted (measured: fresh-clone CI of 2863f0c, tests/device/runtime.sh, an
 * assertion in load_bus_affinity_file_content).  Starts with OpenCL workers therefore name
 * the host "<host>-opencl" unless the user set STARPU_HOSTNAME: one stable set of bus files
 * (and perf models) per view of the machine.  Undone for a later start in the same process
 * without OpenCL. */
static void name_host_view(int nopencl)
{
#ifndef HX_SIMULATION /* tools/simulate.c names the simulated machine */
    static int named_opencl_view;
    if (nopencl > 0 && getenv("STARPU_HOSTNAME") == NULL) {
        char host[256] = "localhost", name[300];
        if (gethostname(host, sizeof host - 1) != 0) {
            strcpy(host, "localhost");
        }
        host[sizeof host - 1] = '\0';
        snprintf(name, sizeof name, "%s-opencl", host);
        setenv("STARPU_HOSTNAME", name, 1);
        named_opencl_view = 1;
    } else if (nopencl == 0 && named_opencl_view) {
        unsetenv("STARPU_HOSTNAME");
        named_opencl_view = 0;
    }
#else
    (void)nopencl;
#endif
}

int hx_devices_choose(const struct hx_runtime_opts *o, struct hx_devices *d)
{
    int nopencl, ncuda, ret;
    if ((ret = count_of(o->opencl, "STARPU_NOPENCL", "--opencl", &nopencl)) != HX_OK ||
        (ret = count_of(o->cuda, "STARPU_NCUDA", "--cuda", &ncuda)) != HX_OK) {
        return ret;
    }
    place = o->compute_on;
    if (place == HX_PLACE_OPENCL && nopencl == 0) {
        nopencl = 1;
    }
    if ((place == HX_PLACE_CUDA || o->nccl) && ncuda == 0) {
        ncuda = 1; /* the tiles live on a GPU: compute there, or NCCL reducing there */
    }
#ifdef HX_SIMULATION
    /* SimGrid's StarPU simulates the CUDA workers the platform file declares (tools/
     * sim_platform.c: CUDA0 on every rank with GPUs); StarPU starts fewer when it declares
     * fewer, which hx_devices_check then reports */
#elif !defined(STARPU_USE_CUDA)
    if (ncuda > 0) {
        return HX_ERR(HX_EINVAL, "%d CUDA worker%s requested, but this StarPU (%d.%d) was built "
                      "without CUDA (Debian's is); build one with `scripts/setup --cuda` and put "
                      "its prefix on PKG_CONFIG_PATH before ./configure (README \"GPUs\")",
                      ncuda, ncuda > 1 ? "s" : "", STARPU_MAJOR_VERSION, STARPU_MINOR_VERSION);
    }
#elif !HX_HAVE_CUDA
    if (ncuda > 0) { /* the workers would start, with no implementation to run */
        return HX_ERR(HX_EINVAL, "%d CUDA worker%s requested, but helix was built without its "
                      "CUDA codelets (configure found no nvcc, cuBLAS or NCCL); install the CUDA "
                      "toolkit and reconfigure --with-cuda=yes", ncuda, ncuda > 1 ? "s" : "");
    }
#endif
    if (nopencl == 0) {
        /* Without OpenCL workers, Debian's StarPU (built with OpenCL) still enumerates the
         * OpenCL platforms at start, which loads every installed ICD: with PoCL that puts
         * PoCL's threads and LLVM into the process, and LLVM's handlers on SIGXFSZ and other
         * signals (measured: tests/graphs/checkpoint failed, its resumed run no longer
         * bitwise under ASan).  An empty vendor list keeps the ICD loader from loading any.
         * (The loader reads it once per process: a later start with --opencl in the same
         * process finds no device.) */
        setenv("OCL_ICD_VENDORS", HIDDEN_VENDORS, 1);
    } else if (getenv("OCL_ICD_VENDORS") != NULL &&
               strcmp(getenv("OCL_ICD_VENDORS"), HIDDEN_VENDORS) == 0) {
        unsetenv("OCL_ICD_VENDORS"); /* an earlier CPU-only start in this process hid them */
    }
#if !HX_OPENCL
    if (nopencl > 0) {
        return HX_ERR(HX_EINVAL, "%d OpenCL worker%s requested, but helix was built without "
                      "OpenCL (configure found no StarPU OpenCL, CL/cl.h or CLBlast); install "
                      "ocl-icd-opencl-dev libclblast-dev pocl-opencl-icd and reconfigure",
                      nopencl, nopencl > 1 ? "s" : "");
    }
#else
    if (nopencl > 0) {
        setenv("POCL_DEVICES", getenv("POCL_DEVICES") ? getenv("POCL_DEVICES") : "basic", 1);
        char found[1024];
        int total = 0;
        if (opencl_devices(found, sizeof found, &total) == 0 && total > 0) {
            setenv("STARPU_OPENCL_ON_CPUS", "1", 1); /* else StarPU skips PoCL silently */
        }
        if (nopencl > total) { /* refused before StarPU starts (and warns about binding) */
            return HX_ERR(HX_EINVAL, "%d OpenCL worker%s requested, but %d OpenCL device%s "
                          "found%s%s; use --opencl %d or fewer, or install a device (on a "
                          "machine without a GPU: apt-get install pocl-opencl-icd)", nopencl,
                          nopencl > 1 ? "s" : "", total, total == 1 ? " was" : "s were",
                          total ? ": " : "", total ? found : "", total);
        }
    }
#endif
    name_host_view(nopencl);
    d->nopencl = nopencl;
    d->ncuda = ncuda;
    return HX_OK;
}

void hx_devices_apply(const struct hx_devices *d, struct starpu_conf *conf)
{
    conf->nopencl = d->nopencl;
    conf->ncuda = d->ncuda;
}

static int cublas_up; /* starpu_cublas_init ran: hx_devices_shutdown undoes it */

/* the CUDA devices the runtime sees: their count, or why there are none */
static void cuda_visible(char *buf, size_t n)
{
#if defined(STARPU_USE_CUDA) && HX_HAVE_CUDA
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        snprintf(buf, n, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
    } else {
        snprintf(buf, n, "%d CUDA device%s visible", count, count == 1 ? "" : "s");
    }
#else
    snprintf(buf, n, "CUDA devices visible: unknown");
#endif
}

int hx_devices_check(const struct starpu_conf *conf)
{
    int got_ocl = (int)starpu_opencl_worker_get_count();
    int got_cuda = (int)starpu_cuda_worker_get_count();
    if (conf->nopencl > 0 && got_ocl < conf->nopencl) {
        char found[1024] = "none";
        int total = 0;
#if HX_OPENCL
        opencl_devices(found, sizeof found, &total);
#endif
        return HX_ERR(HX_EINVAL, "%d OpenCL worker%s requested, StarPU started %d; OpenCL "
                      "devices found: %s; use --opencl %d or fewer, or install a device "
                      "(on a machine without a GPU: apt-get install pocl-opencl-icd)",
                      conf->nopencl, conf->nopencl > 1 ? "s" : "", got_ocl,
                      total ? found : "none", got_ocl);
    }
    if (conf->ncuda > 0 && got_cuda < conf->ncuda) {
        char visible[256];
        cuda_visible(visible, sizeof visible);
#ifdef HX_SIMULATION
        return HX_ERR(HX_EINVAL, "%d CUDA worker%s requested, but the simulated machine gives "
                      "each rank %d GPU%s (the machine file's gpus_per_node; StarPU's platform "
                      "file in $STARPU_PERF_MODEL_DIR/bus); simulate a machine with GPUs, or "
                      "drop --cuda", conf->ncuda, conf->ncuda > 1 ? "s" : "", got_cuda,
                      got_cuda == 1 ? "" : "s");
#endif
        if (got_cuda == 0) {
            return HX_ERR(HX_EINVAL, "%d CUDA worker%s requested, StarPU started 0: no usable "
                          "CUDA device (%s); run where an NVIDIA GPU and its driver are, check "
                          "CUDA_VISIBLE_DEVICES, or drop --cuda", conf->ncuda,
                          conf->ncuda > 1 ? "s" : "", visible);
        }
        return HX_ERR(HX_EINVAL, "%d CUDA worker%s requested, StarPU started %d (%s); use "
                      "--cuda %d or fewer, or check CUDA_VISIBLE_DEVICES",
                      conf->ncuda, conf->ncuda > 1 ? "s" : "", got_cuda, visible, got_cuda);
    }
    if (got_cuda > 0) {
        /* each CUDA worker's cuBLAS handle, on its stream: codelets/cuda/matmul.cu takes it
         * with starpu_cublas_get_local_handle, which is NULL without this */
        starpu_cublas_init();
        cublas_up = 1;
    }
#if HX_OPENCL
    return hx_opencl_load();
#else
    return HX_OK;
#endif
}

void hx_devices_shutdown(void)
{
    if (cublas_up) {
        starpu_cublas_shutdown();
        cublas_up = 0;
    }
#if HX_OPENCL
    hx_opencl_unload();
#endif
}

int hx_place_from_name(const char *name, enum hx_place *p)
{
    static const char *const names[] = { "any", "cpu", "opencl", "cuda" };
    for (int i = 0; i < 4; i++) {
        if (name != NULL && strcmp(name, names[i]) == 0) {
            *p = (enum hx_place)i;
            return HX_OK;
        }
    }
    return HX_EINVAL;
}

int hx_runtime_where(void)
{
    switch (place) {
    case HX_PLACE_CPU:
        return STARPU_CPU;
    case HX_PLACE_OPENCL:
        return STARPU_OPENCL;
    case HX_PLACE_CUDA:
        return STARPU_CUDA;
    default:
        return -1; /* the codelet's implementations */
    }
}

int hx_runtime_opencl_workers(void)
{
    return hx_runtime_is_up() ? (int)starpu_opencl_worker_get_count() : 0;
}

int hx_runtime_cuda_workers(void)
{
    return hx_runtime_is_up() ? (int)starpu_cuda_worker_get_count() : 0;
}
