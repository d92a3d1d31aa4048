/* SPDX-License-Identifier: MIT */
/* runtime/nccl_internal.h: the NCCL backend's state, shared by its two files:
 * runtime/comm_nccl.c (the collectives, their completion and errors) and runtime/nccl_open.c
 * (choosing the rank's GPU, creating and destroying the communicators). */
#ifndef HX_RUNTIME_NCCL_INTERNAL_H
#define HX_RUNTIME_NCCL_INTERNAL_H

#include <pthread.h>

/* CUDA 13's and NCCL's headers test __cplusplus and _MSC_FULL_VER without defining them in
 * C, which -Wundef -Werror refuses; the warning is theirs, not ours */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wundef"
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>
#pragma GCC diagnostic pop

#include "helix/mesh.h"

struct hx_nccl_channel {
    ncclComm_t comm;      /* NULL: a group of one rank, or aborted after an error */
    cudaStream_t stream;  /* every channel has one, also a group of one (its local copies) */
    int size, rank;
    int aborted;
};

struct hx_nccl_state {
    struct hx_nccl_channel ch[HX_GROUP_COUNT];
    int is_open;
    int device;                  /* this rank's GPU (its CUDA workers' device); -1 unknown */
    cublasHandle_t blas;         /* the accumulating reduce-scatters' axpy, one at a time */
    pthread_mutex_t blas_lock;
};

extern struct hx_nccl_state hx_nccl;

#endif
