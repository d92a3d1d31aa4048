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
/* The codelet @p op's tasks run: a collective's NCCL variant while the channels are open on
 * the NCCL backend (a CUDA build), else the entry's cl.  NULL for an invalid op. */
struct starpu_codelet *hx_op_codelet(enum hx_op op);
/* A collective's NCCL variant (codelets/collective_nccl.c); NULL for other ops and in a build
 * without CUDA. */
struct starpu_codelet *hx_op_nccl_codelet(enum hx_op op);

extern struct starpu_codelet hx_cl_matmul, hx_cl_matmul_gelu, hx_cl_bias_bwd;
extern struct starpu_codelet hx_cl_layernorm_fwd, hx_cl_add_layernorm_fwd, hx_cl_layernorm_bwd_data,
    hx_cl_layernorm_bwd_weight;
extern struct starpu_codelet hx_cl_rmsnorm_fwd, hx_cl_add_rmsnorm_fwd, hx_cl_rmsnorm_bwd_data,
    hx_cl_rmsnorm_bwd_weight;
extern struct starpu_codelet hx_cl_norm_part, hx_cl_norm_fwd_apply, hx_cl_norm_bwd_apply;
extern struct starpu_codelet hx_cl_gelu_fwd, hx_cl_gelu_bwd;
extern struct starpu_codelet hx_cl_swiglu_fwd, hx_cl_swiglu_bwd;
extern struct starpu_codelet hx_cl_attention_fwd, hx_cl_attention_bwd;
extern struct starpu_codelet hx_cl_rope_fwd, hx_cl_rope_bwd;
extern struct starpu_codelet hx_cl_xent_fwd, hx_cl_xent_bwd, hx_cl_xent_fused;
extern struct starpu_codelet hx_cl_embed_fwd, hx_cl_embed_bwd;
extern struct starpu_codelet hx_cl_xent_vp_stats, hx_cl_xent_vp;
extern struct starpu_codelet hx_cl_add, hx_cl_reduce, hx_cl_fill, hx_cl_adamw;
extern struct starpu_codelet hx_cl_allreduce, hx_cl_allgather, hx_cl_reduce_scatter,
    hx_cl_broadcast, hx_cl_alltoall, hx_cl_send, hx_cl_recv, hx_cl_shift, hx_cl_fence;
extern struct starpu_codelet hx_cl_smpi_allreduce, hx_cl_smpi_allgather,
    hx_cl_smpi_reduce_scatter, hx_cl_smpi_broadcast, hx_cl_smpi_alltoall, hx_cl_smpi_send,
    hx_cl_smpi_recv, hx_cl_smpi_shift;
#if HX_HAVE_CUDA
extern struct starpu_codelet hx_cl_nccl_allreduce, hx_cl_nccl_allgather,
    hx_cl_nccl_reduce_scatter, hx_cl_nccl_broadcast, hx_cl_nccl_alltoall, hx_cl_nccl_send,
    hx_cl_nccl_recv, hx_cl_nccl_shift, hx_cl_nccl_fence;
#endif

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

/* Elements of buffer i, which must be contiguous (ld == cols) and hold n elements when
 * n >= 0: element-wise kernels walk such a tile as one flat array. */
static inline long hx_buf_flat(void *buffers[], int i, long n, const char *op)
{
    int rows = HX_BUF_ROWS(buffers, i);
    int cols = HX_BUF_COLS(buffers, i);
    HX_ASSERT(HX_BUF_LD(buffers, i) == cols, "%s: buffer %d not contiguous (ld %d, cols %d)", op,
              i, HX_BUF_LD(buffers, i), cols);
    long m = (long)rows * cols;
    HX_ASSERT(n < 0 || m == n, "%s: buffer %d has %ld elements, expected %ld", op, i, m, n);
    return m;
}

/* Tile checks of the row-wise families (layernorm, rmsnorm), which a family's CPU codelet and
 * device launchers share: a node whose shape is not its tile's is a graph-builder bug that
 * would read past the tile.  Here buffer i is a (rows, cols) tile of the node's args. */
static inline void hx_buf_check_rows(void *buffers[], int i, const struct hx_rows_args *a,
                                     const char *what, const char *op)
{
    HX_ASSERT(a->rows == HX_BUF_ROWS(buffers, i) && a->cols == HX_BUF_COLS(buffers, i),
              "%s: args (%d,%d) but the %s tile is (%d,%d); the graph builder "
              "(graphs/layers.c) passed the wrong shape", op, a->rows, a->cols, what,
              HX_BUF_ROWS(buffers, i), HX_BUF_COLS(buffers, i));
}

/* Buffer i holds n floats read as one contiguous vector (a weight (1,C), a row statistic
 * (N,1)). */
static inline void hx_buf_check_vec(void *buffers[], int i, int n, const char *what,
                                    const char *op)
{
    int rows = HX_BUF_ROWS(buffers, i), cols = HX_BUF_COLS(buffers, i);
    HX_ASSERT((long)rows * cols == n && (rows == 1 || HX_BUF_LD(buffers, i) == cols),
              "%s: %s is a (%d,%d) tile with ld %d, expected %d contiguous floats; the graph "
              "builder (graphs/layers.c) passed the wrong tensor", op, what, rows, cols,
              HX_BUF_LD(buffers, i), n);
}

/* Buffer i has the row stride ld of the op's other (N, C) tiles. */
static inline void hx_buf_check_ld(void *buffers[], int i, int ld, const char *what,
                                   const char *op)
{
    HX_ASSERT(HX_BUF_LD(buffers, i) == ld, "%s: %s has ld %d, the other (N,C) tiles %d; the "
              "kernels take one row stride", op, what, HX_BUF_LD(buffers, i), ld);
}

/* The device slots of a codelet: StarPU picks among the implementations a codelet has, and
 * a worker runs only the one of its kind.  OpenCL launchers (codelets/opencl/) run when
 * StarPU has OpenCL and configure found CLBlast; CUDA launchers (codelets/cuda/) are
 * compiled when configure found CUDA, and run only under a CUDA-enabled StarPU. */
#include "codelets/opencl/opencl.h"
#ifdef HX_SIMULATION
/* The simulation flavour (sim/sim_config.h) simulates CUDA workers: StarPU offers a codelet to
 * a CUDA worker when it has a cuda_funcs entry, and the task then takes its CUDA model's time.
 * No kernel runs, so every codelet names this one function, which says so if ever called.
 * Synchronous there (no STARPU_CUDA_ASYNC): StarPU 1.3.10 queues an asynchronous task to the
 * GPU's simulated runner and, without a pipeline (tools/simulate.c sets STARPU_CUDA_PIPELINE
 * 0), waits for the runner's last queued task; the runner forgets a task as it starts it, so
 * the wait returned at once and the task ended 10 us (StarPU's queueing cost) after it
 * started, its kernel still running: each task's end, and so the release of its outputs to
 * their consumers and to the network, came one kernel early, and each task's time in the
 * trace was its predecessor's (measured: a 323 us GEMM run twice took 10 and 640 us; see
 * src/core/simgrid.c task_execute and _starpu_simgrid_wait_tasks).  Run synchronously, the
 * worker's own actor runs the kernel's time and the task ends when it does. */
void hx_sim_no_kernel(void *buffers[], void *cl_arg);
#define HX_CUDA_SLOT(f) .cuda_funcs = { hx_sim_no_kernel }, .cuda_flags = { 0 },
#elif HX_HAVE_CUDA
#define HX_CUDA_SLOT(f) .cuda_funcs = { f }, .cuda_flags = { STARPU_CUDA_ASYNC },
#else
#define HX_CUDA_SLOT(f)
#endif

/* Defines `struct starpu_codelet hx_cl_<cname>` around one CPU function: the collectives,
 * which run only on CPU workers (the communication lane).  With the MPI backend StarPU
 * brings their tiles to RAM first; the NCCL variants (codelets/collective_nccl.c) ask for
 * the tiles' GPU copies instead (specific_nodes). */
#define HX_CODELET(cname, sname, cpu)                                                         \
    HX_PERFMODEL(cname##_model, "hx_" sname);                                                 \
    struct starpu_codelet hx_cl_##cname = {                                                   \
        .name = sname,                                                                        \
        .cpu_funcs = { cpu },                                                                 \
        .cpu_funcs_name = { #cpu },                                                           \
        .nbuffers = STARPU_VARIABLE_NBUFFERS,                                                 \
        .model = &cname##_model,                                                              \
    }

/* A compute codelet: the CPU function @p cpu and the device launchers hx_<cname>_opencl
 * (codelets/opencl/<family>.c) and hx_<cname>_cuda (codelets/cuda/<family>.cu). */
#define HX_CODELET_DEV(cname, sname, cpu)                                                     \
    void hx_##cname##_opencl(void *buffers[], void *cl_arg);                                  \
    void hx_##cname##_cuda(void *buffers[], void *cl_arg);                                    \
    HX_PERFMODEL(cname##_model, "hx_" sname);                                                 \
    struct starpu_codelet hx_cl_##cname = {                                                   \
        .name = sname,                                                                        \
        .cpu_funcs = { cpu },                                                                 \
        .cpu_funcs_name = { #cpu },                                                           \
        HX_OPENCL_SLOT(hx_##cname##_opencl)                                                   \
        HX_CUDA_SLOT(hx_##cname##_cuda)                                                       \
        .nbuffers = STARPU_VARIABLE_NBUFFERS,                                                 \
        .model = &cname##_model,                                                              \
    }

#endif /* HX_CODELETS_H */
