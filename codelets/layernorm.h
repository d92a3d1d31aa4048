/* SPDX-License-Identifier: MIT */
/* codelets/layernorm.h: the buffer checks that every backend of the layernorm codelets runs
 * before touching a tile (internal): the CPU functions (codelets/layernorm.c), the OpenCL
 * launchers (codelets/opencl/layernorm.c) and the CUDA ones (codelets/cuda/layernorm.cu), so
 * the three accept exactly the same tiles.  Each check aborts through HX_ASSERT with the op,
 * the sizes it found and the ones the node's args say (a mismatch is a graph-builder bug), and
 * returns the row stride (ld, in floats) shared by the (N, C) tiles of the op.  Buffer orders
 * are those of codelets/layernorm.c. */
#ifndef HX_CODELETS_LAYERNORM_H
#define HX_CODELETS_LAYERNORM_H

#include "helix/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* buffers: inp, w, b, out, mean, rstd */
int hx_layernorm_fwd_check(void *buffers[], const struct hx_node *node);
/* buffers: a, b, w, bias, sum, out, mean, rstd */
int hx_add_layernorm_fwd_check(void *buffers[], const struct hx_node *node);
/* buffers: dout, inp, w, mean, rstd, dinp [, resid]; *has_resid = 1 when buffer 6 is the
 * residual gradient to add */
int hx_layernorm_bwd_data_check(void *buffers[], const struct hx_node *node, int *has_resid);
/* buffers: dout, inp, mean, rstd, dw, db */
int hx_layernorm_bwd_weight_check(void *buffers[], const struct hx_node *node);

#ifdef __cplusplus
}
#endif

#endif /* HX_CODELETS_LAYERNORM_H */
