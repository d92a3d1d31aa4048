/* SPDX-License-Identifier: MIT */
/**
 * @file helix/comm.h
 * @brief MPI and StarPU-MPI lifecycle and the collective engine (architecture.md §3,
 *        design/starpu.md §5).
 *
 * Lifecycle: hx_mpi_init asks for MPI_THREAD_MULTIPLE (collective codelets call MPI from
 * worker threads while StarPU-MPI's own thread runs) and refuses a lower level; then
 * hx_runtime_init with opts.mpi = 1 starts StarPU through starpu_mpi_init_conf without
 * letting it initialise or finalise MPI.
 *
 * Channels: hx_comm_open gives every group of the mesh (helix/mesh.h) its own communicator,
 * split from a duplicate of MPI_COMM_WORLD, so user collectives never share StarPU-MPI's
 * communicator and groups never share one another's.  A collective node names its channel
 * (enum hx_group_kind) and takes the channel's token tensor in RW as buffer 0, so every rank
 * starts a channel's collectives in the same order.
 *
 * Completion is asynchronous: a collective codelet posts the non-blocking MPI call, adds an
 * end-dependency to its own task and returns, so the worker keeps computing; the engine's
 * progress thread of the channel's lane (intra-node or inter-node: where the group's members
 * live, by --ranks-per-node) tests the requests and releases the task when its request
 * completes.  Each lane has its own thread, so a slow inter-node collective never delays an
 * intra-node one.
 *
 * Watchdog: when a posted collective has not completed and no collective has completed, on
 * either lane, for `timeout` seconds, a progress thread prints on every waiting rank, one
 * line per pending collective,
 *   helix: error: [rank R] no collective progress for T s (--comm-timeout): waiting on
 *   channel dp seq 17 (#35 started here): allreduce of 4096 bytes with world ranks 0,2
 *   (inter-node lane) ...
 * and ends the process with exit status 3, so a lost rank never hangs the job.  A rank that
 * is busy outside collectives while its peers wait for it (rank 0 waiting for a checkpoint
 * writer) joins a host collective more often than the timeout (hx_comm_timeout): a
 * heartbeat, so a slow write is progress and a dead writer rank is still caught.
 *
 * HX_COMM_LOG=1 prints one line per completed collective task on stderr (op, channel, seq,
 * post and completion times, bytes, StarPU's clock at completion, lane), to line up with a
 * trace.  HX_COMM_ONE_LANE=1 serves both lanes from one thread, as before lanes (diagnosis).
 *
 * Backends (hx_comm_opts.backend): MPI (the default) moves host memory: the collective
 * codelets have CPU implementations only, so StarPU first brings a tile that lives on an
 * OpenCL or CUDA device to RAM.  NCCL (a CUDA build, under a CUDA-enabled StarPU, one GPU per
 * rank) reduces the tiles where they live, on the GPU: one NCCL communicator per group,
 * created at hx_comm_open from an ncclUniqueId broadcast over the group's MPI communicator;
 * the collective tasks still run on CPU workers and complete through the same progress
 * thread (runtime/comm_nccl.c says how).  The host helpers below always use MPI.
 */
#ifndef HELIX_COMM_H
#define HELIX_COMM_H

#include "helix/mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Exit status of a process the watchdog ended. */
#define HX_EXIT_COMM_TIMEOUT 3

/**
 * Initialise MPI with MPI_THREAD_MULTIPLE (a no-op when already initialised by us).  Works
 * without mpirun (a world of one).  @return HX_OK or HX_ERUNTIME when the library grants
 * less than MPI_THREAD_MULTIPLE (message names the level and the fix).
 */
int hx_mpi_init(int *argc, char ***argv);
/** Finalise MPI if hx_mpi_init started it. */
void hx_mpi_finalize(void);
/** World size and rank (1 and 0 before hx_mpi_init). */
int hx_mpi_world_size(void);
int hx_mpi_world_rank(void);
/** The largest message Open MPI's TCP transport sends eagerly, without waiting for the
 *  receiver (btl_tcp_eager_limit, which hx_mpi_init raises from Open MPI's 64 KiB unless the
 *  user set it; runtime/mpi.c says why).  machines/this-bed.machine's mpi_eager_kib is the
 *  same, for the simulation (smpi/send-is-detached-thresh). */
#define HX_MPI_EAGER_LIMIT 1048576
/** Ranks on this node as the launcher reports them (OMPI_COMM_WORLD_LOCAL_SIZE), else 0. */
int hx_mpi_local_size(void);
/** Ranks that share this rank's kernel and so its cores (the same boot id, counted in
 *  hx_mpi_init), whatever the launcher calls a node; 1 before hx_mpi_init. */
int hx_mpi_ranks_on_machine(void);
/** Abort every rank of the job (after a rank-local failure that peers cannot see). */
void hx_mpi_abort(int status);
/**
 * Before the comm engine opens (plain blocking MPI on the world, from the main thread; a
 * world of one without MPI): how the ranks agree on their input at start.
 * hx_mpi_max_int: the largest @p value of any rank, on every rank.
 * hx_mpi_bcast_text: rank 0's NUL-terminated @p text (at most @p cap bytes with the NUL) on
 * every rank.  hx_mpi_first_flagged: the lowest rank whose @p flag is nonzero, or -1, on
 * every rank; rank 0 receives that rank's @p text into out[cap] (truncated).
 */
int hx_mpi_max_int(int value);
int hx_mpi_bcast_text(char *text, unsigned long cap);
int hx_mpi_first_flagged(int flag, const char *text, char *out, unsigned long cap);

/** Who moves a collective's data (--comm-backend). */
enum hx_comm_backend {
    HX_COMM_MPI = 0,  /**< MPI_I* calls on host memory (device tiles come to RAM first) */
    HX_COMM_NCCL = 1, /**< NCCL calls on the tiles' copies in GPU memory */
    HX_COMM_STARPU_MPI = 2, /**< StarPU-MPI transfers and reduction tasks (ring or tree) */
};

/** @p name ("mpi", "nccl", "starpu-mpi") into @p b: HX_OK, or HX_EINVAL (nothing printed). */
int hx_comm_backend_from_name(const char *name, enum hx_comm_backend *b);
/** "mpi", "nccl" or "starpu-mpi". */
const char *hx_comm_backend_name(enum hx_comm_backend b);
/**
 * Whether @p b can run with this build of helix and this StarPU, decided without starting
 * anything (so a tool refuses a flag before any work).  @return HX_OK, or HX_EUNSUPPORTED
 * with the reason and the way out in why[cap] (one sentence, no prefix; nothing printed):
 * NCCL needs helix configured with CUDA and NCCL, and StarPU built with CUDA.
 */
int hx_comm_backend_usable(enum hx_comm_backend b, char *why, unsigned long cap);

struct hx_comm_opts {
    double timeout;   /**< watchdog seconds (--comm-timeout); <= 0 disables it */
    enum hx_comm_backend backend; /**< HX_COMM_MPI unless set */
};

/**
 * Create the communicators of @p mesh (collective over MPI_COMM_WORLD: every rank calls it
 * with the same mesh shape and backend) and start the progress thread.  With HX_COMM_NCCL
 * also the NCCL communicators, on the GPU of this rank's CUDA workers: StarPU must be up
 * with CUDA workers on exactly one device (HX_EINVAL naming what it found otherwise;
 * HX_EUNSUPPORTED where hx_comm_backend_usable says no).
 * @note after hx_mpi_init, and for NCCL after hx_runtime_init.
 */
int hx_comm_open(const struct hx_mesh *mesh, const struct hx_comm_opts *o);
/** Wait for pending collectives, stop the progress thread, free the communicators. */
void hx_comm_close(void);
/** Nonzero between hx_comm_open and hx_comm_close. */
int hx_comm_is_open(void);
/** The mesh given to hx_comm_open (NULL when closed). */
const struct hx_mesh *hx_comm_mesh(void);
/** The watchdog's timeout in seconds given to hx_comm_open (0: none, or not open). */
double hx_comm_timeout(void);
/** The backend of the open channels (HX_COMM_MPI when closed). */
enum hx_comm_backend hx_comm_backend(void);

/** Counters since hx_comm_open (benchmarks and tests). */
struct hx_comm_stats {
    long collectives;     /**< completed collective tasks */
    double bytes;         /**< bytes this rank contributed */
    double busy_s;        /**< summed post-to-completion seconds */
    long lane_collectives[2]; /**< of them, on the intra-node [0] and inter-node [1] lane */
    double lane_bytes[2];     /**< bytes likewise */
};
void hx_comm_get_stats(struct hx_comm_stats *s);

/**
 * Blocking helpers for the host thread between steps (checkpoints, parity checks), on the
 * channel's communicator but outside the task graph: call only when no task is in flight.
 * dtype: enum hx_dtype.  Allgatherv: every rank of the group receives every rank's
 * @p send_bytes (recv_bytes[j] from group rank j) concatenated in group-rank order.
 */
int hx_comm_host_allreduce(enum hx_group_kind ch, void *buf, long count, int dtype, int reduce);
int hx_comm_host_bcast(enum hx_group_kind ch, void *buf, long bytes, int root);
int hx_comm_host_allgatherv(enum hx_group_kind ch, const void *send, long send_bytes,
                            void *recv, const long *recv_bytes);
int hx_comm_host_barrier(enum hx_group_kind ch);

#ifdef __cplusplus
}
#endif

#endif /* HELIX_COMM_H */
