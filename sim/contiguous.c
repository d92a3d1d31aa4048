/* SPDX-License-Identifier: MIT */
/* sim/contiguous.c: StarPU-MPI's messages as plain bytes under SimGrid's SMPI (the simulation
 * flavour only: Makefile.am links it into sim/helix-sim; issue 23).
 *
 * StarPU-MPI describes a vector tile as MPI_Type_contiguous(n, MPI_BYTE) and a matrix tile as
 * MPI_Type_vector(rows, cols x elemsize, ld x elemsize, MPI_BYTE).  SMPI treats every derived
 * datatype as scattered: the send packs the payload into a buffer it allocates, the transfer
 * copies it to another, and the receive unpacks that.  Those copies were most of a
 * simulation's wall time (perf: 24% of it in memmove, page faults next), and the packed
 * buffers of the messages in flight its real memory (4.2 GB for ZeRO-3 on 8 simulated
 * ranks).  A dense datatype (lower bound 0, extent = size: no gaps) holds its
 * bytes in order, so it is sent as that many MPI_BYTEs instead, through MPI's profiling
 * interface; SMPI then sends from and receives into the buffers themselves.  And it copies
 * the payload only of messages up to HX_SIM_COPY_MAX bytes (sim/payloads.h): StarPU-MPI's
 * envelopes and helix's gathered trace text (runtime/trace.c) are read; a tile's bytes are
 * not, and left uncopied its buffers are never touched, so never backed by memory.  SMPI declares the MPI_* functions weak so that a program can
 * define them; helix-sim is linked with -Bsymbolic-functions (Makefile.am), which binds
 * StarPU-MPI's calls inside it to these definitions rather than to libsimgrid's.
 *
 * Timing: a ping-pong of 1 MiB and of 64 MiB between this-bed's nodes (tests/sim/pingpong.c)
 * takes 8796.830 and 561602.587 us one way with the derived datatype and as bytes alike.  The
 * dp 2 step of tests/sim/simulate.sh went from 15.6 to 14.4 ms.  Our reading, not yet checked
 * against SimGrid's source: SMPI sends a message under smpi/send-is-detached-thresh (64 KiB)
 * eagerly, without waiting for the receiver, only when its datatype is not derived, and the
 * tiny model's all-reduce pieces are that small.  Eager sends below 64 KiB are what Open
 * MPI's TCP transport does by default (btl_tcp_eager_limit, 64 KiB); helix raises Open MPI's
 * to HX_MPI_EAGER_LIMIT (runtime/mpi.c), and a machine file sets SMPI's (mpi_eager_kib). */
#include <limits.h>
#include <stddef.h>

#include <mpi.h>

#include "sim/payloads.h"

/* SMPI's own copy of a message's payload.  SimGrid 3.32 (Debian 12's libsimgrid-dev) declares
 * it for C++ only (smpi.h): this is its C++ name. */
extern void hx_smpi_copy_payload(void *comm, void *buff, size_t size) __asm__(
    "_Z30smpi_comm_copy_buffer_callbackPN7simgrid6kernel8activity8CommImplEPvm");

static void copy_small(smx_activity_t comm, void *buff, size_t size)
{
    if (size <= HX_SIM_COPY_MAX) {
        hx_smpi_copy_payload((void *)comm, buff, size);
    }
}

void hx_sim_payloads_install(void)
{
    smpi_comm_set_copy_data_callback(copy_small);
    hx_sim_early_data_install();
}

/* count elements of t as bytes, when t is dense: 1 and *bytes, else 0 */
static int as_bytes(MPI_Datatype t, int count, int *bytes)
{
    int size;
    MPI_Aint lb, extent;
    if (t == MPI_BYTE || PMPI_Type_size(t, &size) != MPI_SUCCESS ||
        PMPI_Type_get_extent(t, &lb, &extent) != MPI_SUCCESS) {
        return 0;
    }
    if (lb != 0 || extent != (MPI_Aint)size || (long long)size * count > INT_MAX) {
        return 0;
    }
    *bytes = size * count;
    return 1;
}

int MPI_Isend(const void *buf, int count, MPI_Datatype t, int dst, int tag,
                              MPI_Comm comm, MPI_Request *req)
{
    int n;
    return as_bytes(t, count, &n) ? PMPI_Isend(buf, n, MPI_BYTE, dst, tag, comm, req)
                                   : PMPI_Isend(buf, count, t, dst, tag, comm, req);
}

int MPI_Issend(const void *buf, int count, MPI_Datatype t, int dst, int tag,
                               MPI_Comm comm, MPI_Request *req)
{
    int n;
    return as_bytes(t, count, &n) ? PMPI_Issend(buf, n, MPI_BYTE, dst, tag, comm, req)
                                   : PMPI_Issend(buf, count, t, dst, tag, comm, req);
}

int MPI_Send(const void *buf, int count, MPI_Datatype t, int dst, int tag,
                             MPI_Comm comm)
{
    int n;
    return as_bytes(t, count, &n) ? PMPI_Send(buf, n, MPI_BYTE, dst, tag, comm)
                                   : PMPI_Send(buf, count, t, dst, tag, comm);
}

int MPI_Irecv(void *buf, int count, MPI_Datatype t, int src, int tag,
                              MPI_Comm comm, MPI_Request *req)
{
    int n;
    return as_bytes(t, count, &n) ? PMPI_Irecv(buf, n, MPI_BYTE, src, tag, comm, req)
                                   : PMPI_Irecv(buf, count, t, src, tag, comm, req);
}
