/* SPDX-License-Identifier: MIT */
/* codelets/table.c: the op table, indexed by enum hx_op: name (task name and perf-model
 * symbol "hx_<name>"), codelet, and the number of buffers each op accepts, from the buffer
 * lists of include/helix/ops.h (optional buffers: matmul's bias, layernorm_bwd_data's and
 * rmsnorm_bwd_data's resid, embed_bwd's dwpe; the norm_* ops' vary with their mode).
 * The names are calibration keys of the perf models: keep them stable.
 * Test: every codelet test goes through it; tests/graphs/ir_topology.c checks op names. */
#include <stddef.h>

#include "codelets/codelets.h"
#include "helix/comm.h"

static const struct hx_op_info op_table[HX_OP_COUNT] = {
    [HX_OP_MATMUL] = { "matmul", &hx_cl_matmul, 3, 4 },
    [HX_OP_MATMUL_GELU] = { "matmul_gelu", &hx_cl_matmul_gelu, 5, 5 },
    [HX_OP_BIAS_BWD] = { "bias_bwd", &hx_cl_bias_bwd, 2, 2 },
    [HX_OP_LAYERNORM_FWD] = { "layernorm_fwd", &hx_cl_layernorm_fwd, 6, 6 },
    [HX_OP_ADD_LAYERNORM_FWD] = { "add_layernorm_fwd", &hx_cl_add_layernorm_fwd, 8, 8 },
    [HX_OP_LAYERNORM_BWD_DATA] = { "layernorm_bwd_data", &hx_cl_layernorm_bwd_data, 6, 7 },
    [HX_OP_LAYERNORM_BWD_WEIGHT] = { "layernorm_bwd_weight", &hx_cl_layernorm_bwd_weight, 6, 6 },
    [HX_OP_GELU_FWD] = { "gelu_fwd", &hx_cl_gelu_fwd, 2, 2 },
    [HX_OP_GELU_BWD] = { "gelu_bwd", &hx_cl_gelu_bwd, 3, 3 },
    [HX_OP_ATTENTION_FWD] = { "attention_fwd", &hx_cl_attention_fwd, 3, 3 },
    [HX_OP_ATTENTION_BWD] = { "attention_bwd", &hx_cl_attention_bwd, 5, 5 },
    [HX_OP_XENT_FWD] = { "xent_fwd", &hx_cl_xent_fwd, 4, 4 },
    [HX_OP_XENT_BWD] = { "xent_bwd", &hx_cl_xent_bwd, 3, 3 },
    [HX_OP_XENT_FUSED] = { "xent_fused", &hx_cl_xent_fused, 4, 4 },
    [HX_OP_EMBED_FWD] = { "embed_fwd", &hx_cl_embed_fwd, 3, 4 },
    [HX_OP_EMBED_BWD] = { "embed_bwd", &hx_cl_embed_bwd, 3, 4 },
    [HX_OP_ADD] = { "add", &hx_cl_add, 2, 3 },
    [HX_OP_REDUCE] = { "reduce", &hx_cl_reduce, 2, 2 },
    [HX_OP_FILL] = { "fill", &hx_cl_fill, 1, 1 },
    [HX_OP_ADAMW] = { "adamw", &hx_cl_adamw, 5, 5 },
    /* collectives: buffer 0 is the channel token (codelets/collective.c) */
    [HX_OP_ALLREDUCE] = { "allreduce", &hx_cl_allreduce, 2, HX_NODE_MAXREFS },
    [HX_OP_ALLGATHER] = { "allgather", &hx_cl_allgather, 3, HX_NODE_MAXREFS },
    [HX_OP_REDUCE_SCATTER] = { "reduce_scatter", &hx_cl_reduce_scatter, 3,
                                 HX_NODE_MAXREFS },
    [HX_OP_BROADCAST] = { "broadcast", &hx_cl_broadcast, 2, HX_NODE_MAXREFS },
    [HX_OP_ALLTOALL] = { "alltoall", &hx_cl_alltoall, 3, 3 },
    [HX_OP_SEND] = { "send", &hx_cl_send, 2, 2 },
    [HX_OP_RECV] = { "recv", &hx_cl_recv, 2, 2 },
    [HX_OP_SHIFT] = { "shift", &hx_cl_shift, 3, 3 },
    [HX_OP_FENCE] = { "fence", &hx_cl_fence, 2, HX_NODE_MAXREFS },
    [HX_OP_XENT_VP_STATS] = { "xent_vp_stats", &hx_cl_xent_vp_stats, 3, 3 },
    [HX_OP_XENT_VP] = { "xent_vp", &hx_cl_xent_vp, 5, 5 },
    [HX_OP_RMSNORM_FWD] = { "rmsnorm_fwd", &hx_cl_rmsnorm_fwd, 4, 4 },
    [HX_OP_ADD_RMSNORM_FWD] = { "add_rmsnorm_fwd", &hx_cl_add_rmsnorm_fwd, 6, 6 },
    [HX_OP_RMSNORM_BWD_DATA] = { "rmsnorm_bwd_data", &hx_cl_rmsnorm_bwd_data, 5, 6 },
    [HX_OP_RMSNORM_BWD_WEIGHT] = { "rmsnorm_bwd_weight", &hx_cl_rmsnorm_bwd_weight, 4, 4 },
    [HX_OP_SWIGLU_FWD] = { "swiglu_fwd", &hx_cl_swiglu_fwd, 2, 2 },
    [HX_OP_SWIGLU_BWD] = { "swiglu_bwd", &hx_cl_swiglu_bwd, 3, 3 },
    [HX_OP_ROPE_FWD] = { "rope_fwd", &hx_cl_rope_fwd, 1, 1 },
    [HX_OP_ROPE_BWD] = { "rope_bwd", &hx_cl_rope_bwd, 1, 1 },
    /* the column-split norms: buffer counts by mode (codelets/norm_split.c checks them) */
    [HX_OP_NORM_PART] = { "norm_part", &hx_cl_norm_part, 2, 6 },
    [HX_OP_NORM_FWD_APPLY] = { "norm_fwd_apply", &hx_cl_norm_fwd_apply, 5, 8 },
    [HX_OP_NORM_BWD_APPLY] = { "norm_bwd_apply", &hx_cl_norm_bwd_apply, 6, 8 },
};

const struct hx_op_info *hx_op_info(enum hx_op op)
{
    /* the enum's underlying type may be unsigned: compare as int so a negative value is caught */
    if ((int)op < 0 || (int)op >= HX_OP_COUNT) {
        return NULL;
    }
    return &op_table[op];
}

#if HX_HAVE_CUDA
/* the collectives on NCCL (codelets/collective_nccl.c): same buffers, tiles on the GPU */
static struct starpu_codelet *const nccl_table[HX_OP_COUNT] = {
    [HX_OP_ALLREDUCE] = &hx_cl_nccl_allreduce,
    [HX_OP_ALLGATHER] = &hx_cl_nccl_allgather,
    [HX_OP_REDUCE_SCATTER] = &hx_cl_nccl_reduce_scatter,
    [HX_OP_BROADCAST] = &hx_cl_nccl_broadcast,
    [HX_OP_ALLTOALL] = &hx_cl_nccl_alltoall,
    [HX_OP_SEND] = &hx_cl_nccl_send,
    [HX_OP_RECV] = &hx_cl_nccl_recv,
    [HX_OP_SHIFT] = &hx_cl_nccl_shift,
    [HX_OP_FENCE] = &hx_cl_nccl_fence,
};
#endif

struct starpu_codelet *hx_op_nccl_codelet(enum hx_op op)
{
#if HX_HAVE_CUDA
    return hx_op_info(op) != NULL ? nccl_table[op] : NULL;
#else
    (void)op;
    return NULL;
#endif
}

/* the collectives on StarPU-MPI (codelets/collective_smpi.c); the fence stays MPI's */
static struct starpu_codelet *const smpi_table[HX_OP_COUNT] = {
    [HX_OP_ALLREDUCE] = &hx_cl_smpi_allreduce,
    [HX_OP_ALLGATHER] = &hx_cl_smpi_allgather,
    [HX_OP_REDUCE_SCATTER] = &hx_cl_smpi_reduce_scatter,
    [HX_OP_BROADCAST] = &hx_cl_smpi_broadcast,
    [HX_OP_ALLTOALL] = &hx_cl_smpi_alltoall,
    [HX_OP_SEND] = &hx_cl_smpi_send,
    [HX_OP_RECV] = &hx_cl_smpi_recv,
    [HX_OP_SHIFT] = &hx_cl_smpi_shift,
};

struct starpu_codelet *hx_op_codelet(enum hx_op op)
{
    const struct hx_op_info *info = hx_op_info(op);
    struct starpu_codelet *nccl = hx_op_nccl_codelet(op);
    if (info == NULL) {
        return NULL;
    }
    enum hx_comm_backend b = hx_comm_backend();
    if (b == HX_COMM_STARPU_MPI && smpi_table[op] != NULL) {
        return smpi_table[op];
    }
    return nccl != NULL && b == HX_COMM_NCCL ? nccl : info->cl;
}

const char *hx_op_name(enum hx_op op)
{
    const struct hx_op_info *info = hx_op_info(op);
    return info != NULL ? info->name : "unknown";
}

#ifdef HX_SIMULATION
void hx_sim_no_kernel(void *buffers[], void *cl_arg)
{
    (void)buffers;
    const struct hx_node *n = cl_arg;
    HX_ASSERT(0, "simulation: the CUDA kernel of %s was called, but a simulated CUDA worker runs "
              "none (its codelet lacks STARPU_CODELET_SIMGRID_EXECUTE); report this as a bug",
              n != NULL ? hx_op_name(n->op) : "a task");
}
#endif
