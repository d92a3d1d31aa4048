/* SPDX-License-Identifier: MIT */
/* runtime/sim_analytic.c: analytic performance models (issue 23).  With HX_SIM_DEVICE naming
 * a device description (runtime/sim_device.h; `helix simulate --device FILE` sets it), every
 * codelet a simulation submits gets a STARPU_PER_ARCH model whose cost is a roofline:
 *
 *     t = launch + max(flops / rate, bytes / (bandwidth x memory efficiency))
 *
 * per task, from the IR node (graphs/: each compute node carries its flops and the bytes it
 * moves) or, for StarPU-MPI's copy and reduction tasks, from their buffers' sizes.  rate by op:
 *   - GEMMs (matmul, matmul_gelu): peak x efficiency x waves(m, n), where one thread block
 *     computes a tile x tile block of C and the GPU runs gpu_sms of them at a time, so a
 *     GEMM of B blocks fills B / (ceil(B / sms) x sms) of its last wave ("wave quantization",
 *     NVIDIA's Matrix Multiplication Background User's Guide, docs.nvidia.com/deeplearning/
 *     performance/dl-performance-matrix-multiplication);
 *   - attention: the GEMM peak x gpu_attention_efficiency (its two GEMMs per block); with
 *     grouped-query attention (KV < NH) the node's flops stay those of NH heads while its
 *     bytes shrink to the k and v of KV heads (graphs/layers.c);
 *   - everything else: the vector peak (most are bound by memory anyway), RoPE included: an
 *     element-wise turn of the q and k heads, read and written once.
 * On a CPU worker: its cores' peak x cpu_gemm_efficiency for GEMMs and attention, the peak
 * for the rest, and the cores' streaming bandwidth.  Units: StarPU wants microseconds.
 * Test: tests/sim/analytic.sh. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "helix/error.h"
#include "helix/graph.h"
#include "runtime/sim_analytic.h"
#include "runtime/sim_device.h"

static struct hx_sim_device dev;
static int state; /* 0: HX_SIM_DEVICE not read yet; 1: analytic; -1: history models */
static starpu_pthread_mutex_t lock = STARPU_PTHREAD_MUTEX_INITIALIZER;

int hx_sim_analytic_on(void)
{
    starpu_pthread_mutex_lock(&lock);
    if (state == 0) {
        const char *path = getenv("HX_SIM_DEVICE");
        state = -1;
        if (path != NULL && path[0] != '\0') {
            state = hx_sim_device_load(path, &dev) == HX_OK ? 1 : -2; /* -2: said */
        }
    }
    int s = state;
    starpu_pthread_mutex_unlock(&lock);
    return s == 1;
}

/* The fraction of its last wave a GEMM with an (m, n) output fills: 1 when its blocks are a
 * whole number of waves. */
static double wave_fill(int m, int n)
{
    double tile = dev.gpu_gemm_tile, sms = dev.gpu_sms;
    double blocks = ceil(m / tile) * ceil(n / tile);
    return blocks / (ceil(blocks / sms) * sms);
}

/* flops and bytes of a task that is not a graph node (StarPU-MPI's copy and reduction
 * tasks): no math to speak of; each buffer read once, written buffers written once more */
static void buffer_work(const struct starpu_task *task, double *flops, double *bytes)
{
    *flops = 0;
    *bytes = 0;
    for (unsigned i = 0; i < STARPU_TASK_GET_NBUFFERS(task); i++) {
        double b = (double)starpu_data_get_size(STARPU_TASK_GET_HANDLE(task, i));
        enum starpu_data_access_mode m = STARPU_TASK_GET_MODE(task, i);
        *bytes += (m & STARPU_R ? b : 0) + (m & STARPU_W ? b : 0);
        *flops += m & STARPU_W ? b / 4 : 0; /* a reduction: one add per written element */
    }
}

double hx_sim_analytic_cost_us(const struct hx_node *n, double flops, double bytes, int gpu,
                               int ncores)
{
    int gemm = n != NULL && (n->op == HX_OP_MATMUL || n->op == HX_OP_MATMUL_GELU);
    int attention = n != NULL && (n->op == HX_OP_ATTENTION_FWD || n->op == HX_OP_ATTENTION_BWD);
    double rate, bandwidth, launch;
    if (gpu) {
        rate = gemm        ? dev.gpu_gemm_tflops * 1e12 * dev.gpu_gemm_efficiency *
                                 wave_fill(n->args.mm.m, n->args.mm.n)
               : attention ? dev.gpu_gemm_tflops * 1e12 * dev.gpu_attention_efficiency
                           : dev.gpu_vector_tflops * 1e12;
        bandwidth = dev.gpu_memory_gbytes_per_s * 1e9 * dev.gpu_memory_efficiency;
        launch = dev.gpu_launch_us;
    } else {
        double peak = dev.cpu_gflops_per_core * 1e9 * ncores;
        rate = gemm || attention ? peak * dev.cpu_gemm_efficiency : peak;
        bandwidth = dev.cpu_memory_gbytes_per_s * 1e9 * ncores;
        launch = dev.cpu_launch_us;
    }
    return launch + fmax(flops / rate, bytes / bandwidth) * 1e6;
}

/* StarPU's STARPU_PER_ARCH entry point: a graph task's cl_arg is its node (cl_arg_size 0,
 * graphs/submit.c); StarPU-MPI's tasks carry copied arguments instead */
static double arch_cost(struct starpu_task *task, struct starpu_perfmodel_arch *arch,
                        unsigned nimpl)
{
    (void)nimpl;
    const struct hx_node *n = task->cl_arg_size == 0 ? task->cl_arg : NULL;
    double flops, bytes;
    if (n != NULL) {
        flops = n->flops;
        bytes = n->bytes;
    } else {
        buffer_work(task, &flops, &bytes);
    }
    int gpu = arch->ndevices > 0 && arch->devices[0].type == STARPU_CUDA_WORKER;
    int ncores = arch->ndevices > 0 && arch->devices[0].ncores > 0 ? arch->devices[0].ncores : 1;
    return hx_sim_analytic_cost_us(n, flops, bytes, gpu, ncores);
}

void hx_sim_analytic_attach(struct starpu_codelet *cl)
{
    /* before the codelet's first task, so StarPU has not loaded a history for it yet */
    cl->model->type = STARPU_PER_ARCH;
    cl->model->arch_cost_function = arch_cost;
}
