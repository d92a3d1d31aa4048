/* SPDX-License-Identifier: MIT */
/* codelets/attention.h: the buffer check that every backend of the attention codelets runs
 * before touching a tile (internal): the CPU functions (codelets/attention.c), the OpenCL
 * launchers (codelets/opencl/attention.c) and the CUDA ones (codelets/cuda/attention.cu), so
 * the three accept exactly the same tiles. */
#ifndef HX_CODELETS_ATTENTION_H
#define HX_CODELETS_ATTENTION_H

#include "helix/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The key/value heads of @p a: KV, or NH where KV is 0 (multi-head). */
int hx_attention_kv(const struct hx_attention_args *a);

/* Buffers qkv, out (or dout) and lse of @p op must be the (nseq*T, C + 2 KV hs),
 * (nseq*T, C) and contiguous (nseq*T, NH) tiles that the node's args describe, C a multiple
 * of NH and NH of KV; otherwise HX_ASSERT aborts with the sizes found and expected (a
 * graph-builder bug). */
void hx_attention_check(void *buffers[], const struct hx_attention_args *a, int qkv, int out,
                        int lse, const char *op);

#ifdef __cplusplus
}
#endif

#endif /* HX_CODELETS_ATTENTION_H */
