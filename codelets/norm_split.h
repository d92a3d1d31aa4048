/* SPDX-License-Identifier: MIT */
/* codelets/norm_split.h: the buffer checks that every backend of the column-split norm
 * codelets runs before touching a tile (internal): the CPU functions (codelets/norm_split.c),
 * the OpenCL launchers (codelets/opencl/norm_split.c) and the CUDA ones
 * (codelets/cuda/norm_split.cu), so the three accept exactly the same tiles, as
 * codelets/layernorm.h does for the whole-row norms.  A mismatch between a tile and the
 * node's args is a graph-builder bug: HX_ASSERT with the op, the sizes found and expected.
 * Buffer orders are those of include/helix/ops.h (HX_OP_NORM_*). */
#ifndef HX_CODELETS_NORM_SPLIT_H
#define HX_CODELETS_NORM_SPLIT_H

#include "helix/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The buffer index of each role of a task; -1 where the op (or its mode) has none. */
struct hx_norm_bufs {
    int inp, dout, w, b;   /* (N,C) tiles; (1,C) weights */
    int mean, rstd;        /* (N,1) row statistics: read (part, bwd) or written (fwd) */
    int s1, s2;            /* sums read: (N,1) (LN_VAR's S, ln fwd's S1, rms's S) and (N,2)
                            * (ln fwd's S2, ln bwd's S) */
    int out, resid;        /* fwd's out or bwd's dinp (N,C); bwd's residual gradient */
    int part, k;           /* NORM_PART's output, (N,k) with k = 1 or 2 */
};

/* Each checks the node's buffers against its args (mode, rms, has_resid), fills @p b and
 * returns the row stride (ld, in floats) of the op's (N,C) tiles. */
int hx_norm_part_check(void *buffers[], const struct hx_node *node, struct hx_norm_bufs *b);
int hx_norm_fwd_apply_check(void *buffers[], const struct hx_node *node, struct hx_norm_bufs *b);
int hx_norm_bwd_apply_check(void *buffers[], const struct hx_node *node, struct hx_norm_bufs *b);

#ifdef __cplusplus
}
#endif

#endif /* HX_CODELETS_NORM_SPLIT_H */
