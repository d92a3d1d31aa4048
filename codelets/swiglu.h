/* SPDX-License-Identifier: MIT */
/* codelets/swiglu.h: the buffer checks that every backend of the swiglu codelets runs before
 * touching a tile (internal): the CPU functions (codelets/swiglu.c), the OpenCL launchers
 * (codelets/opencl/swiglu.c) and the CUDA ones (codelets/cuda/swiglu.cu), so the three accept
 * exactly the same tiles.  A check aborts through HX_ASSERT with the op, the sizes it found
 * and the ones the node's args say (a graph-builder bug).  The tiles must be contiguous
 * (ld == cols), as the element-wise kernels index them so.  Buffer orders are those of
 * codelets/swiglu.c; args.rows.cols is F, the width of out. */
#ifndef HX_CODELETS_SWIGLU_H
#define HX_CODELETS_SWIGLU_H

#include "helix/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* buffers: inp (N,2F), out (N,F) */
void hx_swiglu_fwd_check(void *buffers[], const struct hx_node *node);
/* buffers: inp (N,2F), dout (N,F), dinp (N,2F) */
void hx_swiglu_bwd_check(void *buffers[], const struct hx_node *node);

#ifdef __cplusplus
}
#endif

#endif /* HX_CODELETS_SWIGLU_H */
