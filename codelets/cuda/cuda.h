/* SPDX-License-Identifier: MIT */
/* codelets/cuda/cuda.h: what every CUDA launcher (codelets/cuda/<family>.cu) shares.  The
 * kernels come from codelets/kernels/<family>.cl through codelets/kernels/dialect.h; a
 * launcher reads its buffers' device pointers (StarPU's CUDA buffers have offset 0 in the
 * pointer), launches on the worker's stream and returns (STARPU_CUDA_ASYNC: StarPU waits on
 * the stream).  Under Debian's StarPU (no CUDA workers) these are compiled and linked, never
 * run; hx_cuda_stream then gives the default stream, so the code still builds. */
#ifndef HX_CODELETS_CUDA_H
#define HX_CODELETS_CUDA_H

#include <cuda_runtime.h>
#include <starpu.h>

#include "codelets/kernels/dialect.h"
#include "helix/error.h"
#include "helix/graph.h"

#define HX_CU_F32(b, i) ((float *)STARPU_MATRIX_GET_PTR((b)[i]))
#define HX_CU_I32(b, i) ((int *)STARPU_MATRIX_GET_PTR((b)[i]))
#define HX_CU_ROWS(b, i) ((int)STARPU_MATRIX_GET_NY((b)[i]))
#define HX_CU_COLS(b, i) ((int)STARPU_MATRIX_GET_NX((b)[i]))
#define HX_CU_LD(b, i) ((int)STARPU_MATRIX_GET_LD((b)[i]))
#define HX_CU_NUMEL(b, i) ((long)HX_CU_ROWS(b, i) * HX_CU_COLS(b, i))

static inline cudaStream_t hx_cuda_stream(void)
{
#ifdef STARPU_USE_CUDA
    return starpu_cuda_get_local_stream();
#else
    return 0;
#endif
}

/* blocks of HX_BLOCK threads covering n items (at least one) */
static inline unsigned hx_cuda_blocks(long n)
{
    long b = (n + HX_BLOCK - 1) / HX_BLOCK;
    return (unsigned)(b > 0 ? b : 1);
}

/* a launch error of @p op's kernel @p kernel becomes the task's failure */
static inline void hx_cuda_check(const char *file, int line, const char *op, const char *kernel)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        hx_task_error_at(file, line, op, HX_ERUNTIME, "CUDA kernel %s of %s: %s", kernel, op,
                         cudaGetErrorString(e));
    }
}
#define HX_CUDA_CHECK(op, kernel) hx_cuda_check(__FILE__, __LINE__, (op), (kernel))

#endif /* HX_CODELETS_CUDA_H */
