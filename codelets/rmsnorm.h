/* SPDX-License-Identifier: MIT */
/* codelets/rmsnorm.h: the buffer checks that every backend of the rmsnorm codelets runs
 * before touching a tile (internal): the CPU functions (codelets/rmsnorm.c), the OpenCL
 * launchers (codelets/opencl/rmsnorm.c) and the CUDA ones (codelets/cuda/rmsnorm.cu), so the
 * three accept exactly the same tiles.  Each check aborts through HX_ASSERT with the op, the
 * sizes it found and the ones the node's args say (a mismatch is a graph-builder bug), and
 * returns the row stride (ld, in floats) shared by the (N, C) tiles of the op.  Buffer orders
 * are those of codelets/rmsnorm.c. */
#ifndef HX_CODELETS_RMSNORM_H
#define HX_CODELETS_RMSNORM_H

#include "helix/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* buffers: inp, w, out, rstd */
int hx_rmsnorm_fwd_check(void *buffers[], const struct hx_node *node);
/* buffers: a, b, w, sum, out, rstd */
int hx_add_rmsnorm_fwd_check(void *buffers[], const struct hx_node *node);
/* buffers: dout, inp, w, rstd, dinp [, resid]; *has_resid = 1 when buffer 5 is the residual
 * gradient to add */
int hx_rmsnorm_bwd_data_check(void *buffers[], const struct hx_node *node, int *has_resid);
/* buffers: dout, inp, rstd, dw */
int hx_rmsnorm_bwd_weight_check(void *buffers[], const struct hx_node *node);

#ifdef __cplusplus
}
#endif

#endif /* HX_CODELETS_RMSNORM_H */
