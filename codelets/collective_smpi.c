/* SPDX-License-Identifier: MIT */
/* codelets/collective_smpi.c: the collectives of include/helix/ops.h on the StarPU-MPI backend
 * (--comm-backend starpu-mpi).  Same buffers, access modes and packed forms as
 * codelets/collective.c, whose comment describes them; codelets/table.c's hx_op_codelet picks
 * these codelets when the channels were opened on StarPU-MPI.  CPU only, so StarPU gives the
 * task its tiles in RAM; the bodies (codelets/collective_calls.c, shared with NCCL) pass each
 * tile to runtime/comm_smpi.c, which submits the tile's transfers and reduction tasks and
 * completes the task through the engine.  The fence stays the MPI engine's (it only orders).
 * Test: tests/mpi/collectives.sh (HX_COMM_BACKEND=starpu-mpi). */
#include "codelets/collective_calls.h"

HX_COLL_BACKEND(smpi)

/* `struct starpu_codelet hx_cl_smpi_<cname>`: CPU only (the communication lane), its own perf
 * model (a StarPU-MPI collective does not cost what the MPI one does).  In StarPU's SimGrid
 * mode (helix simulate) the body runs, in zero simulated time, where other codelets only
 * take their model's: it is what submits the transfers and reduction tasks that SimGrid
 * times (STARPU_CODELET_SIMGRID_EXECUTE; ignored by a StarPU without SimGrid). */
#define HX_SMPI_CODELET(cname, sname, cpu)                                                    \
    HX_PERFMODEL(cname##_smpi_model, "hx_" sname "_smpi");                                    \
    struct starpu_codelet hx_cl_smpi_##cname = {                                              \
        .name = sname,                                                                        \
        .cpu_funcs = { cpu },                                                                 \
        .cpu_funcs_name = { #cpu },                                                           \
        .nbuffers = STARPU_VARIABLE_NBUFFERS,                                                 \
        .model = &cname##_smpi_model,                                                         \
        .flags = STARPU_CODELET_SIMGRID_EXECUTE,                                              \
    }

HX_SMPI_CODELET(allreduce, "allreduce", allreduce_smpi);
HX_SMPI_CODELET(allgather, "allgather", allgather_smpi);
HX_SMPI_CODELET(reduce_scatter, "reduce_scatter", reduce_scatter_smpi);
HX_SMPI_CODELET(broadcast, "broadcast", broadcast_smpi);
HX_SMPI_CODELET(alltoall, "alltoall", alltoall_smpi);
HX_SMPI_CODELET(send, "send", send_smpi);
HX_SMPI_CODELET(recv, "recv", recv_smpi);
HX_SMPI_CODELET(shift, "shift", shift_smpi);
