/* SPDX-License-Identifier: MIT */
/* runtime/sim_device.h: a device description, the input of the analytic performance models
 * of a simulation (issue 23; runtime/sim_analytic.c; format: devices/README.md).  A rank of a
 * simulated machine has CPU cores and at most one GPU: one file describes both, each number
 * with its source in a comment beside it.  `helix simulate --device FILE` reads it once to
 * refuse a bad file before the launch, and the simulated ranks read it again. */
#ifndef HX_RUNTIME_SIM_DEVICE_H
#define HX_RUNTIME_SIM_DEVICE_H

struct hx_sim_device {
    char name[64];
    /* the GPU (a rank's one CUDA worker) */
    double gpu_gemm_tflops;        /* peak of the math helix's GEMMs run in (TFLOP/s) */
    double gpu_gemm_efficiency;    /* fraction of it a large GEMM reaches */
    int gpu_gemm_tile;             /* output tile of one thread block (rows = cols) */
    int gpu_sms;                   /* streaming multiprocessors: one tile each per wave */
    double gpu_vector_tflops;      /* peak of the element-wise fp32 math */
    double gpu_attention_efficiency; /* fraction of gpu_gemm_tflops attention reaches */
    double gpu_memory_gbytes_per_s;  /* device memory bandwidth (GB/s) */
    double gpu_memory_efficiency;    /* fraction of it a streaming kernel reaches */
    double gpu_launch_us;            /* a task's fixed cost on the GPU (us) */
    /* one CPU core (a rank's CPU workers: collectives' copies and reductions, and compute
     * placed on the CPU) */
    double cpu_gflops_per_core;      /* fp32 GEMM peak of one core (GFLOP/s) */
    double cpu_gemm_efficiency;
    double cpu_memory_gbytes_per_s;  /* one core's streaming bandwidth (GB/s) */
    double cpu_launch_us;
};

/* Read @p path into @p d: HX_OK, or HX_EINVAL with a message naming the file, the line, the
 * key and what to write instead (every key is required once; unknown keys are refused). */
int hx_sim_device_load(const char *path, struct hx_sim_device *d);

#endif /* HX_RUNTIME_SIM_DEVICE_H */
