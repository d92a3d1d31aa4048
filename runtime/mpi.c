/* SPDX-License-Identifier: MIT */
/* runtime/mpi.c: the MPI lifecycle of include/helix/comm.h.  helix asks for
 * MPI_THREAD_MULTIPLE because collective codelets post MPI calls from StarPU worker threads
 * while the engine's progress thread (runtime/comm_engine.c) and StarPU-MPI's own thread
 * call MPI too (design/starpu.md §5); a library that grants less is refused, not trusted.
 * Without mpirun, MPI_Init_thread starts a singleton world of one rank.  Before the comm
 * engine opens, the ranks agree on their input with the few blocking calls at the end.
 * Test: tests/mpi/collectives.c (np 1, 2 and 4), tests/mpi/rank_flags.sh (the agreement). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helix/comm.h"
#include "helix/error.h"

#ifdef HX_SIMULATION
#include <starpu_mpi.h>
#endif

static int world_rank, world_size = 1;

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

#ifdef HX_SIMULATION
#include "sim/payloads.h"

/* The simulation flavour (sim/sim_config.h): SimGrid's MPI (SMPI) makes only StarPU-MPI's
 * own actor an MPI process; MPI called from helix's threads fails or deadlocks
 * (design/simulation.md).  StarPU-MPI initialised MPI before main started and knows the
 * rank and the world; it finalises MPI too.  Every simulated rank runs in this one process
 * from the same argv (starpu_smpirun gives it to all), so the ranks' settings agree by
 * construction; a verdict is each rank's own, and a rank that refuses its input ends the
 * whole simulation (tools/helix.c). */
int hx_mpi_init(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    starpu_mpi_comm_rank(MPI_COMM_WORLD, &world_rank);
    starpu_mpi_comm_size(MPI_COMM_WORLD, &world_size);
    hx_error_set_rank(world_rank, world_size);
    hx_sim_payloads_install(); /* SMPI copies envelopes, not tiles (sim/contiguous.c) */
    return HX_OK;
}

void hx_mpi_finalize(void)
{
    if (hx_comm_is_open()) {
        hx_comm_close();
    }
}

void hx_mpi_abort(int status)
{
    fflush(stdout);
    fflush(stderr);
    exit(status); /* one process holds every simulated rank: this ends them all */
}

int hx_mpi_max_int(int value)
{
    return value;
}

int hx_mpi_ranks_on_machine(void)
{
    return 1; /* the simulated machine's ranks share no real core */
}

int hx_mpi_bcast_text(char *text, unsigned long cap)
{
    (void)text, (void)cap;
    return HX_OK;
}

int hx_mpi_first_flagged(int flag, const char *text, char *out, unsigned long cap)
{
    if (flag && cap > 0) {
        snprintf(out, cap, "%s", text);
    }
    return flag ? world_rank : -1;
}
#else
static int started;              /* MPI_Init_thread was ours, so MPI_Finalize is ours too */
static int ranks_on_machine = 1; /* ranks that share this kernel, so its cores (hx_mpi_init) */

/* The ranks whose kernel is this rank's: those with the same boot id.  Not the launcher's
 * node (OMPI_COMM_WORLD_LOCAL_SIZE): scripts/netbed's nodes are network namespaces of one
 * machine, which the launcher counts as two nodes, and their ranks share the same cores. */
static int count_ranks_on_machine(void)
{
    char id[40] = "", *all;
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f != NULL) {
        if (fgets(id, sizeof id, f) == NULL) {
            id[0] = 0;
        }
        fclose(f);
    }
    if (id[0] == 0) {
        snprintf(id, sizeof id, "rank %d", world_rank); /* unknown: alone, as before */
    }
    if ((all = calloc((size_t)world_size, sizeof id)) == NULL) {
        return 1;
    }
    MPI_Allgather(id, (int)sizeof id, MPI_CHAR, all, (int)sizeof id, MPI_CHAR, MPI_COMM_WORLD);
    int n = 0;
    for (int j = 0; j < world_size; j++) {
        n += strncmp(all + (size_t)j * sizeof id, id, sizeof id) == 0;
    }
    free(all);
    return n;
}

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
        /* Tiles go eagerly up to HX_MPI_EAGER_LIMIT (1 MiB), not Open MPI's 64 KiB: above the
         * limit a message waits for the receiver's progress (a rendezvous), then moves in
         * fragments of btl_tcp_max_send_size (128 KiB), each another wait for the sender's
         * progress.  Where the thread that makes progress shares a core with the workers
         * (StarPU-MPI's, runtime/mpi_driver.c), each wait is a task or a time slice.  On the
         * 2-core bed (bench/README.md, "Eager tiles") tp 2 + SP's 128 KiB messages went from
         * 145-171 to 134-140 ms a step, and the tile-level TP bench's 512 KiB shifts left 39-42
         * ms exposed instead of 172-205.  Gradient buckets (megabytes) keep the rendezvous,
         * which bounds what a receiver buffers before its receive is posted. */
        char eager[24];
        snprintf(eager, sizeof eager, "%d", HX_MPI_EAGER_LIMIT);
        setenv("OMPI_MCA_btl_tcp_eager_limit", eager, 0);
        setenv("OMPI_MCA_btl_tcp_max_send_size", eager, 0);
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
    ranks_on_machine = count_ranks_on_machine();
    return HX_OK;
}

int hx_mpi_ranks_on_machine(void)
{
    return ranks_on_machine;
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

/* ---- agreement at start (before hx_comm_open) --------------------------------------------- */

static int mpi_up(void)
{
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    return inited && !finalized;
}

int hx_mpi_max_int(int value)
{
    int out = value;
    if (mpi_up()) {
        MPI_Allreduce(&value, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    }
    return out;
}

int hx_mpi_bcast_text(char *text, unsigned long cap)
{
    if (!mpi_up() || cap == 0) {
        return HX_OK;
    }
    int len = (int)strnlen(text, cap - 1);
    MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if ((unsigned long)len >= cap) {
        return HX_ERR(HX_EINVAL, "rank 0's text of %d bytes does not fit in %lu", len, cap);
    }
    MPI_Bcast(text, len, MPI_CHAR, 0, MPI_COMM_WORLD);
    text[len] = '\0';
    return HX_OK;
}

int hx_mpi_first_flagged(int flag, const char *text, char *out, unsigned long cap)
{
    int first = flag ? world_rank : world_size;
    if (mpi_up()) {
        int mine = first;
        MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    }
    if (first >= world_size) {
        return -1;
    }
    if (first == 0 || !mpi_up()) {
        if (world_rank == 0 && cap > 0) {
            snprintf(out, cap, "%s", text);
        }
        return first;
    }
    if (world_rank == first) {
        int len = (int)strlen(text);
        MPI_Send(&len, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
        MPI_Send(text, len, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
    } else if (world_rank == 0) {
        int len = 0;
        MPI_Recv(&len, 1, MPI_INT, first, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        char *buf = malloc((size_t)len + 1);
        if (buf == NULL) { /* its sender would wait for this receive forever */
            HX_ERR(HX_ENOMEM, "%d bytes of rank %d's text", len + 1, first);
            hx_mpi_abort(1);
        }
        MPI_Recv(buf, len, MPI_CHAR, first, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (cap > 0) {
            snprintf(out, cap, "%.*s", len, buf);
        }
        free(buf);
    }
    return first;
}
#endif /* HX_SIMULATION */
