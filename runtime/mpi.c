/* SPDX-License-Identifier: MIT */
/* runtime/mpi.c: the MPI lifecycle of include/helix/comm.h.  helix asks for
 * MPI_THREAD_MULTIPLE because collective codelets post MPI calls from StarPU worker threads
 * while the engine's progress thread (runtime/comm_engine.c) and StarPU-MPI's own thread
 * call MPI too (design/starpu.md §5); a library that grants less is refused, not trusted.
 * Without mpirun, MPI_Init_thread starts a singleton world of one rank.
 * Test: tests/mpi/collectives.c (np 1, 2 and 4). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "helix/comm.h"
#include "helix/error.h"

static int started;              /* MPI_Init_thread was ours, so MPI_Finalize is ours too */
static int world_rank, world_size = 1;

static const char *level_name(int level)
{
    switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "an unknown level";
    }
}

int hx_mpi_init(int *argc, char ***argv)
{
    int inited = 0, finalized = 0, provided = MPI_THREAD_SINGLE, rc;
    MPI_Finalized(&finalized);
    if (finalized) {
        return HX_ERR(HX_ERUNTIME, "hx_mpi_init after MPI_Finalize: MPI cannot be restarted "
                      "in one process; initialise it once for the whole program");
    }
    MPI_Initialized(&inited);
    if (!inited) {
        /* Gradient buckets are megabytes: Open MPI's non-blocking all-reduce (libnbc) picks a
         * binomial tree for in-place buffers, which sends the whole bucket over the slowest
         * link twice; reduce-scatter + all-gather (Rabenseifner, algorithm 3) sends it once
         * in pieces.  On the emulated 2-node bed (1 Gbit/s) a dp=4 step went from 1.85 to
         * 1.13 s.  A value the user set (environment or mpirun --mca) wins. */
        setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "3", 0);
        rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
        if (rc != MPI_SUCCESS) {
            return HX_ERR(HX_ERUNTIME, "MPI_Init_thread(MPI_THREAD_MULTIPLE) failed (code %d); "
                          "start the program with mpirun, or check the Open MPI installation "
                          "(ompi_info)", rc);
        }
        started = 1;
    } else {
        MPI_Query_thread(&provided);
    }
    if (provided < MPI_THREAD_MULTIPLE) {
        int status = HX_ERR(HX_ERUNTIME, "MPI grants %s, but helix needs MPI_THREAD_MULTIPLE: "
                            "collective tasks call MPI from StarPU worker threads while "
                            "StarPU-MPI's thread runs; use an MPI built with thread support "
                            "(Open MPI's default)%s", level_name(provided),
                            started ? "" : ", or let helix initialise MPI");
        if (started) {
            MPI_Finalize();
            started = 0;
        }
        return status;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    hx_error_set_rank(world_rank, world_size);
    return HX_OK;
}

void hx_mpi_finalize(void)
{
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (started && !finalized) {
        if (hx_comm_is_open()) {
            hx_comm_close();
        }
        MPI_Finalize();
    }
    started = 0;
}

int hx_mpi_world_size(void)
{
    return world_size;
}

int hx_mpi_world_rank(void)
{
    return world_rank;
}

int hx_mpi_local_size(void)
{
    const char *e = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    int n = e != NULL ? atoi(e) : 0;
    return n > 0 ? n : 0;
}

void hx_mpi_abort(int status)
{
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    fflush(stdout);
    fflush(stderr);
    if (inited && !finalized) {
        MPI_Abort(MPI_COMM_WORLD, status); /* ends every rank; does not return */
    }
    _exit(status);
}
