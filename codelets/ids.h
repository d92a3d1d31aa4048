/* SPDX-License-Identifier: MIT */
/* codelets/ids.h: what the CPU codelets and the device launchers of the cross-entropy
 * (crossentropy.c), vocabulary-parallel cross-entropy (xent_vp.c) and embedding
 * (embedding.c) families share (internal): the checks of a task's tiles against its node's
 * args (a mismatch is a graph-building bug: HX_ASSERT), and the checks of the token and
 * target ids, which come from the data and are reported (HX_EINVAL) before anything is
 * indexed with them, with the same message on every backend.
 *
 * The ids of a device task live in device memory, so a launcher first copies the (N,1)
 * int32 tile to the host (hx_ocl_ids / hx_cuda_ids below: 4N bytes, one synchronous copy
 * per task), checks it there and only then launches; the kernels still bound every index
 * they form from an id, so a kernel never reads outside its tiles. */
#ifndef HX_CODELETS_IDS_H
#define HX_CODELETS_IDS_H

#include <stdint.h>
#include <stdlib.h>

#include <starpu.h>

#include "helix/error.h"
#include "helix/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* crossentropy.c.  buffers: logits (N,V), targets (N,1), ...: the node's (rows, cols) must
 * be the logits tile's. */
void hx_xent_check_shapes(void *buffers[], const struct hx_rows_args *a, const char *op);
/* 1 when every target of the N rows is in [0,V); else reports the first bad row, 0 */
int hx_xent_targets_ok(const int32_t *targets, int N, int V);

/* xent_vp.c.  The stats op (buffers: logits, targets, stats) and the combine (logits,
 * targets, all, losses, lse). */
void hx_xent_vp_stats_check_shapes(void *buffers[], const struct hx_xent_vp_args *a);
void hx_xent_vp_check_shapes(void *buffers[], const struct hx_xent_vp_args *a);
/* 1 when no target is negative (the upper bound needs the whole vocabulary, which the
 * batch loader checks); else reports the first bad row for @p op, 0 */
int hx_xent_vp_targets_ok(const int32_t *targets, int N, const char *op);

/* embedding.c.  Forward buffers: tokens, wte, wpe, out; backward: dout, tokens, dwte, dwpe;
 * wpe and dwpe are absent with no_pos (the buffer count is checked too), so the forward's
 * out is buffer HX_EMBED_FWD_OUT. */
#define HX_EMBED_FWD_OUT(a) ((a)->no_pos ? 2 : 3)
void hx_embed_fwd_check_shapes(void *buffers[], const struct hx_embed_args *a);
void hx_embed_bwd_check_shapes(void *buffers[], const struct hx_embed_args *a);
/* 1 when every token is inside the whole vocabulary [0, vocab) (a token of another shard
 * is normal); else reports the first bad row, 0 */
int hx_embed_tokens_ok(const int32_t *tokens, int N, const struct hx_embed_args *a);

#ifdef __cplusplus
}
#endif

/* ---- the host copy of a device id tile ------------------------------------------------ */

/* the ids of a tile are n contiguous int32 (a (n,1) tile, one id per row) */
#define HX_IDS_CHECK_TILE(buffers, i, n, op)                                                  \
    HX_ASSERT(STARPU_MATRIX_GET_NY((buffers)[i]) == (uint32_t)(n) &&                          \
                  STARPU_MATRIX_GET_NX((buffers)[i]) == 1 &&                                  \
                  ((n) <= 1 || STARPU_MATRIX_GET_LD((buffers)[i]) == 1),                      \
              "%s: the ids (buffer %d) are a (%u,%u) tile with ld %u, expected (%d,1) "      \
              "contiguous", (op), (i), (unsigned)STARPU_MATRIX_GET_NY((buffers)[i]),          \
              (unsigned)STARPU_MATRIX_GET_NX((buffers)[i]),                                   \
              (unsigned)STARPU_MATRIX_GET_LD((buffers)[i]), (int)(n))

#if defined(__CUDACC__)
#include <cuda_runtime.h>

/* A malloc'd host copy of the n ids of the (n,1) int32 tile buffers[i] of a CUDA task, or
 * NULL after reporting why (free it).  Synchronizes the worker's stream: StarPU hands the
 * launcher its buffers ready, and the ids must be checked before a kernel indexes with
 * them. */
static inline int32_t *hx_cuda_ids(void *buffers[], int i, int n, cudaStream_t stream,
                                   const char *op)
{
    HX_IDS_CHECK_TILE(buffers, i, n, op);
    int32_t *host = (int32_t *)malloc((size_t)(n > 0 ? n : 1) * sizeof *host);
    if (host == NULL) {
        HX_TASK_ERR(HX_ENOMEM, "%s: no host memory for a copy of %d ids to check", op, n);
        return NULL;
    }
    const void *dev = (const void *)STARPU_MATRIX_GET_PTR(buffers[i]);
    cudaError_t e = cudaMemcpyAsync(host, dev, (size_t)n * sizeof *host,
                                    cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess) {
        e = cudaStreamSynchronize(stream);
    }
    if (e != cudaSuccess) {
        HX_TASK_ERR(HX_ERUNTIME, "%s: copying %d ids (buffer %d) to the host to check them "
                    "failed: %s", op, n, i, cudaGetErrorString(e));
        free(host);
        return NULL;
    }
    return host;
}

#else /* C: the OpenCL launchers */
#include "codelets/opencl/opencl.h"

#if HX_OPENCL
/* The same for an OpenCL task: a blocking read on the worker's queue. */
static inline int32_t *hx_ocl_ids(void *buffers[], int i, int n, const char *op)
{
    HX_IDS_CHECK_TILE(buffers, i, n, op);
    int32_t *host = (int32_t *)malloc((size_t)(n > 0 ? n : 1) * sizeof *host);
    if (host == NULL) {
        HX_TASK_ERR(HX_ENOMEM, "%s: no host memory for a copy of %d ids to check", op, n);
        return NULL;
    }
    if (n > 0) {
        struct starpu_matrix_interface *m = (struct starpu_matrix_interface *)buffers[i];
        cl_int err = clEnqueueReadBuffer(hx_ocl_queue(), (cl_mem)m->dev_handle, CL_TRUE,
                                         m->offset, (size_t)n * sizeof *host, host, 0, NULL,
                                         NULL);
        if (err != CL_SUCCESS) {
            hx_ocl_fail(__FILE__, __LINE__, op, "copying the ids to the host to check them",
                        err);
            free(host);
            return NULL;
        }
    }
    return host;
}
#endif /* HX_OPENCL */
#endif

#endif /* HX_CODELETS_IDS_H */
