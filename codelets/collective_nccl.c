/* SPDX-License-Identifier: MIT */
/* codelets/collective_nccl.c: the collectives of include/helix/ops.h on the NCCL backend
 * (--comm-backend nccl), compiled in a CUDA build only (HX_HAVE_CUDA).  Same buffers, access
 * modes, split rule and packed forms as codelets/collective.c, whose comment describes them;
 * codelets/table.c's hx_op_codelet picks these codelets when the channels were opened on
 * NCCL.  Each codelet has a CPU implementation only, so its task runs on the communication
 * lane like an MPI one, and sets specific_nodes with dyn_nodes = hx_nccl_nodes: StarPU gives
 * the task its data tiles as their copies on this rank's GPU (buffer 0, the token, stays in
 * RAM), so buffers[i] holds device addresses.  The function only checks shapes and passes
 * those addresses to runtime/comm_nccl.c, which enqueues the NCCL calls on the channel's
 * stream and completes the task through the engine; runtime/comm_nccl.c's comment explains
 * the choice and its costs.  The codelet bodies are codelets/collective_calls.c's, shared
 * with StarPU-MPI.  Nothing here dereferences a tile.
 * Like the MPI codelets they ignore hx_run_failed(): a rank that skipped a collective would
 * leave its peers waiting until the watchdog.
 * Test: tests/device/table.c (CPU only, the GPU node for every data buffer); nothing runs
 * them here (Debian's StarPU has no CUDA workers). */
#include "codelets/collective_calls.h"

HX_COLL_BACKEND(nccl)

/* A fence only orders.  Its tiles are declared on the GPU node too, where the NCCL
 * collectives that follow want them: the MPI fence would pull them to RAM and back. */
static void fence_nccl(void *buffers[], void *cl_arg)
{
    (void)buffers;
    (void)cl_arg;
}

/* `struct starpu_codelet hx_cl_nccl_<cname>`: CPU only (the communication lane), every data
 * buffer on this rank's GPU (hx_nccl_nodes).  Its own perf model: an NCCL collective does not
 * cost what the MPI one does. */
#define HX_NCCL_CODELET(cname, sname, cpu)                                                    \
    HX_PERFMODEL(cname##_nccl_model, "hx_" sname "_nccl");                                    \
    struct starpu_codelet hx_cl_nccl_##cname = {                                              \
        .name = sname,                                                                        \
        .cpu_funcs = { cpu },                                                                 \
        .cpu_funcs_name = { #cpu },                                                           \
        .nbuffers = STARPU_VARIABLE_NBUFFERS,                                                 \
        .specific_nodes = 1,                                                                  \
        .dyn_nodes = hx_nccl_nodes,                                                           \
        .model = &cname##_nccl_model,                                                         \
    }

HX_NCCL_CODELET(allreduce, "allreduce", allreduce_nccl);
HX_NCCL_CODELET(allgather, "allgather", allgather_nccl);
HX_NCCL_CODELET(reduce_scatter, "reduce_scatter", reduce_scatter_nccl);
HX_NCCL_CODELET(broadcast, "broadcast", broadcast_nccl);
HX_NCCL_CODELET(alltoall, "alltoall", alltoall_nccl);
HX_NCCL_CODELET(send, "send", send_nccl);
HX_NCCL_CODELET(recv, "recv", recv_nccl);
HX_NCCL_CODELET(shift, "shift", shift_nccl);
HX_NCCL_CODELET(fence, "fence", fence_nccl);
