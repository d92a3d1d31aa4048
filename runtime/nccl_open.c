/* SPDX-License-Identifier: MIT */
/* runtime/nccl_open.c: the NCCL backend's lifecycle (runtime/comm_nccl.c says how the backend
 * works): hx_nccl_open finds the rank's GPU (its CUDA workers' device), creates one stream per
 * channel and the cuBLAS handle, and one NCCL communicator per channel group of more than one
 * rank, after every rank agreed that its GPU and ids are ready; hx_nccl_close destroys them.
 * Its state is runtime/nccl_internal.h's. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "helix/error.h"
#include "helix/graph.h"
#include "helix/mesh.h"
#include "helix/runtime.h"
#include "runtime/comm_internal.h"
#include "runtime/nccl_internal.h"

/* This rank's GPU: the device and memory node of its CUDA workers, which must be one. */
static int find_device(int *node)
{
    int ndev = 0, other = -1;
    *node = -1;
    hx_nccl.device = -1;
    for (unsigned w = 0; w < starpu_worker_get_count(); w++) {
        if (starpu_worker_get_type((int)w) != STARPU_CUDA_WORKER) {
            continue;
        }
        int dev = starpu_worker_get_devid((int)w);
        if (hx_nccl.device < 0) {
            hx_nccl.device = dev;
            *node = (int)starpu_worker_get_memory_node(w);
            ndev = 1;
        } else if (dev != hx_nccl.device) {
            other = dev;
            ndev++;
        }
    }
    if (hx_nccl.device < 0) {
        return HX_ERR(HX_EINVAL, "hx_comm_open: the NCCL backend reduces tiles in GPU memory, "
                      "but StarPU started no CUDA worker (%d workers, none CUDA); start one "
                      "(hx_runtime_opts.cuda = 1; helix train --cuda 1 or --compute-on cuda)",
                      (int)starpu_worker_get_count());
    }
    if (ndev > 1) {
        return HX_ERR(HX_EINVAL, "hx_comm_open: the NCCL backend drives one GPU per rank (one "
                      "communicator per group and rank), but this rank's CUDA workers are on "
                      "%d devices (e.g. %d and %d); launch one rank per GPU with one CUDA "
                      "worker device each (--cuda 1)", ndev, hx_nccl.device, other);
    }
    return HX_OK;
}

/* The lowest rank status of @p ok (1/0) over the world channel: every rank decides alike. */
static int all_ok(const MPI_Comm *comms, int ok)
{
    int all = 0;
    if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comms[HX_GROUP_WORLD]) != MPI_SUCCESS) {
        return 0;
    }
    return all;
}

static void free_channels(void)
{
    for (int k = 0; k < HX_GROUP_COUNT; k++) {
        if (hx_nccl.ch[k].comm != NULL) {
            ncclCommFinalize(hx_nccl.ch[k].comm); /* blocking: completes what is queued */
            ncclCommDestroy(hx_nccl.ch[k].comm);
        }
        if (hx_nccl.ch[k].stream != NULL) {
            cudaStreamDestroy(hx_nccl.ch[k].stream);
        }
        memset(&hx_nccl.ch[k], 0, sizeof hx_nccl.ch[k]);
    }
    if (hx_nccl.blas != NULL) {
        cublasDestroy(hx_nccl.blas);
        hx_nccl.blas = NULL;
    }
}

/* Streams and the cuBLAS handle on the rank's GPU: HX_OK or a reported error. */
static int prepare_local(void)
{
    int lo = 0, hi = 0;
    cudaError_t e = cudaSetDevice(hx_nccl.device);
    if (e == cudaSuccess) {
        e = cudaDeviceGetStreamPriorityRange(&lo, &hi); /* hi: the highest priority */
    }
    for (int k = 0; k < HX_GROUP_COUNT && e == cudaSuccess; k++) {
        e = cudaStreamCreateWithPriority(&hx_nccl.ch[k].stream, cudaStreamNonBlocking, hi);
    }
    if (e != cudaSuccess) {
        return HX_ERR(HX_ERUNTIME, "hx_comm_open: preparing GPU %d for NCCL (device, %d "
                      "streams) failed: %s; check the device (nvidia-smi) and "
                      "CUDA_VISIBLE_DEVICES", hx_nccl.device, HX_GROUP_COUNT,
                      cudaGetErrorString(e));
    }
    cublasStatus_t s = cublasCreate(&hx_nccl.blas);
    if (s != CUBLAS_STATUS_SUCCESS) {
        hx_nccl.blas = NULL;
        return HX_ERR(HX_ERUNTIME, "hx_comm_open: cublasCreate on GPU %d failed: %s",
                      hx_nccl.device, cublasGetStatusString(s));
    }
    return HX_OK;
}

int hx_nccl_open(const MPI_Comm *comms, const struct hx_mesh *m)
{
    int node = -1;
    HX_ASSERT(!hx_nccl.is_open, "the NCCL backend is already open");
    if (!hx_runtime_is_up()) {
        return HX_ERR(HX_EINVAL, "hx_comm_open with the NCCL backend before StarPU: call "
                      "hx_runtime_init first (with a CUDA worker), then hx_comm_open");
    }
    int ret = find_device(&node);
    ret = ret == HX_OK ? prepare_local() : ret;
    /* ids: group rank 0 draws one, the channel's MPI communicator carries it with its status */
    struct {
        int ok;
        ncclUniqueId id;
    } msg[HX_GROUP_COUNT];
    memset(msg, 0, sizeof msg);
    for (int k = 0; k < HX_GROUP_COUNT; k++) {
        const struct hx_group *g = &m->groups[k];
        hx_nccl.ch[k].size = g->size;
        hx_nccl.ch[k].rank = g->rank;
        if (g->size == 1) {
            continue;
        }
        if (g->rank == 0) {
            msg[k].ok = ret == HX_OK && ncclGetUniqueId(&msg[k].id) == ncclSuccess;
        }
        /* every member takes part even after a local failure, or its peers would wait */
        if (MPI_Bcast(&msg[k], (int)sizeof msg[k], MPI_BYTE, 0, comms[k]) != MPI_SUCCESS) {
            msg[k].ok = 0;
        }
        if (!msg[k].ok && ret == HX_OK) {
            ret = HX_ERR(HX_ERUNTIME, "hx_comm_open: channel %s (%d ranks): no ncclUniqueId "
                         "from its group rank 0 (its GPU or NCCL failed there: see that "
                         "rank's message)", hx_group_name((enum hx_group_kind)k), g->size);
        }
    }
    if (!all_ok(comms, ret == HX_OK)) { /* nobody enters an init a peer will not join */
        free_channels();
        return ret != HX_OK ? ret : HX_ERR(HX_ERUNTIME, "hx_comm_open: another rank could not "
                                           "prepare its GPU for NCCL (its message above)");
    }
    for (int k = 0; k < HX_GROUP_COUNT && ret == HX_OK; k++) {
        if (hx_nccl.ch[k].size == 1) {
            continue;
        }
        struct hx_nccl_channel *ch = &hx_nccl.ch[k];
        ncclResult_t rc = ncclCommInitRank(&ch->comm, ch->size, msg[k].id, ch->rank);
        if (rc != ncclSuccess) {
            hx_nccl.ch[k].comm = NULL;
            ret = HX_ERR(HX_ERUNTIME, "hx_comm_open: ncclCommInitRank for channel %s (%d ranks, "
                         "this one %d, GPU %d) failed: %s; NCCL_DEBUG=INFO shows the transport "
                         "it tried", hx_group_name((enum hx_group_kind)k), hx_nccl.ch[k].size,
                         hx_nccl.ch[k].rank, hx_nccl.device, ncclGetErrorString(rc));
        }
    }
    if (!all_ok(comms, ret == HX_OK)) {
        free_channels();
        return ret != HX_OK ? ret : HX_ERR(HX_ERUNTIME, "hx_comm_open: NCCL failed on another "
                                           "rank (its message above)");
    }
    hx_nccl_nodes[0] = STARPU_SPECIFIC_NODE_LOCAL; /* the token: RAM, for a CPU worker */
    for (int i = 1; i < HX_NODE_MAXREFS; i++) {
        hx_nccl_nodes[i] = node;
    }
    hx_nccl.is_open = 1;
    return HX_OK;
}

void hx_nccl_close(void)
{
    if (!hx_nccl.is_open) {
        return;
    }
    cudaSetDevice(hx_nccl.device);
    free_channels();
    memset(hx_nccl_nodes, 0, sizeof(int) * HX_NODE_MAXREFS); /* RAM: valid for any StarPU */
    hx_nccl.is_open = 0;
}
