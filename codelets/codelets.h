/* SPDX-License-Identifier: MIT */
/* codelets/codelets.h: the op table that joins the IR to StarPU (internal to the library).
 * Every codelet takes its buffers in the order of include/helix/ops.h with the access modes
 * the node's refs give (nbuffers = STARPU_VARIABLE_NBUFFERS), and cl_arg = the node itself,
 * so a CPU function reads its arguments from node->args.  A CPU function returns at once
 * when an earlier task failed (hx_run_failed), Chameleon's failed-sequence rule. */
#ifndef HX_CODELETS_H
#define HX_CODELETS_H

#include <starpu.h>

#include "helix/error.h"
#include "helix/graph.h"

struct hx_op_info {
    const char *name;              /* task name, perf-model symbol "hx_<name>" */
    struct starpu_codelet *cl;
    int min_refs, max_refs;        /* buffer count accepted by the codelet */
};

/* The table entry of @p op (never NULL for a valid op). */
const struct hx_op_info *hx_op_info(enum hx_op op);

extern struct starpu_codelet hx_cl_matmul, hx_cl_matmul_gelu, hx_cl_bias_bwd;
extern struct starpu_codelet hx_cl_layernorm_fwd, hx_cl_add_layernorm_fwd, hx_cl_layernorm_bwd_data,
    hx_cl_layernorm_bwd_weight;
extern struct starpu_codelet hx_cl_gelu_fwd, hx_cl_gelu_bwd;
extern struct starpu_codelet hx_cl_attention_fwd, hx_cl_attention_bwd;
extern struct starpu_codelet hx_cl_xent_fwd, hx_cl_xent_bwd, hx_cl_xent_fused;
extern struct starpu_codelet hx_cl_embed_fwd, hx_cl_embed_bwd;
extern struct starpu_codelet hx_cl_xent_vp_stats, hx_cl_xent_vp;
extern struct starpu_codelet hx_cl_add, hx_cl_reduce, hx_cl_fill, hx_cl_adamw;
extern struct starpu_codelet hx_cl_allreduce, hx_cl_allgather, hx_cl_reduce_scatter,
    hx_cl_broadcast, hx_cl_alltoall, hx_cl_send, hx_cl_recv, hx_cl_fence;

/* Buffer accessors: a tile is a StarPU matrix (NY rows, NX cols, LD elements per row). */
#define HX_BUF_F32(b, i) ((float *)STARPU_MATRIX_GET_PTR((b)[i]))
#define HX_BUF_I32(b, i) ((int32_t *)STARPU_MATRIX_GET_PTR((b)[i]))
#define HX_BUF_F64(b, i) ((double *)STARPU_MATRIX_GET_PTR((b)[i]))
#define HX_BUF_ROWS(b, i) ((int)STARPU_MATRIX_GET_NY((b)[i]))
#define HX_BUF_COLS(b, i) ((int)STARPU_MATRIX_GET_NX((b)[i]))
#define HX_BUF_LD(b, i) ((int)STARPU_MATRIX_GET_LD((b)[i]))

/* A history-based perf model named after the op, for dmda and for the planner. */
#define HX_PERFMODEL(var, sym) \
    static struct starpu_perfmodel var = { .type = STARPU_HISTORY_BASED, .symbol = (sym) }

/* Defines `struct starpu_codelet hx_cl_<name>` around one CPU function (and a CUDA one when
 * HX_HAVE_CUDA and the op has a CUDA launcher; see matmul.c). */
#define HX_CODELET(cname, sname, cpu)                                                         \
    HX_PERFMODEL(cname##_model, "hx_" sname);                                                 \
    struct starpu_codelet hx_cl_##cname = {                                                   \
        .name = sname,                                                                        \
        .cpu_funcs = { cpu },                                                                 \
        .cpu_funcs_name = { #cpu },                                                           \
        .nbuffers = STARPU_VARIABLE_NBUFFERS,                                                 \
        .model = &cname##_model,                                                              \
    }

#endif /* HX_CODELETS_H */
