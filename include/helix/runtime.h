/* SPDX-License-Identifier: MIT */
/**
 * @file helix/runtime.h
 * @brief Lifecycle of the StarPU runtime: CPU and device workers, placement, scheduling
 * policy, BLAS threading.
 *
 * hx_runtime_init starts StarPU with CPU workers and, when asked, OpenCL and CUDA workers
 * (each a memory node of its own: StarPU moves tiles between them), holds OpenBLAS to one
 * thread per worker so BLAS and StarPU never oversubscribe the cores, and installs the
 * scheduling policy chosen by name (schedulers/registry.c).  Debian's StarPU has OpenCL
 * (PoCL is a device on a machine without a GPU) and no CUDA workers.
 */
#ifndef HELIX_RUNTIME_H
#define HELIX_RUNTIME_H

#ifdef __cplusplus
extern "C" {
#endif

/** Where compute tasks may run (collectives always run on CPU workers). */
enum hx_place {
    HX_PLACE_ANY = 0, /**< the policy chooses among the implementations of each codelet */
    HX_PLACE_CPU,     /**< CPU workers only */
    HX_PLACE_OPENCL,  /**< OpenCL workers only (at least one is started) */
    HX_PLACE_CUDA,    /**< CUDA workers only (at least one is started) */
};

/** Whether StarPU-MPI's progress thread drives CPU worker 0, running its tasks between its
 *  polls (StarPU's MPI driver; runtime/mpi_driver.c says when that pays). */
enum hx_mpi_driver {
    HX_MPI_DRIVER_OFF = 0, /**< its own thread, as StarPU-MPI starts it (the default) */
    HX_MPI_DRIVER_ON,      /**< driven, in any run of two ranks or more */
    HX_MPI_DRIVER_AUTO,    /**< STARPU_MPI_DRIVER_CALL_FREQUENCY if set, else driven where
                            *   the ranks on this machine, each with its workers and that
                            *   thread, have more busy threads than cores, but their
                            *   workers alone fit */
};

struct hx_runtime_opts {
    int workers;        /**< CPU workers; 0 = STARPU_NCPU if set, else the cores (max 4) */
    int opencl;         /**< OpenCL workers; 0 = STARPU_NOPENCL if set, else none */
    int cuda;           /**< CUDA workers; 0 = STARPU_NCUDA if set, else none (at least
                         *   one with compute_on = HX_PLACE_CUDA or nccl) */
    enum hx_place compute_on; /**< placement of compute tasks (--compute-on) */
    const char *sched;  /**< policy (helix or StarPU); NULL = HX_SCHED, STARPU_SCHED, hx-prio */
    int profiling;      /**< enable StarPU task profiling (per-task start/end times) */
    int nccl;           /**< the channels will open on the NCCL backend (helix/comm.h),
                         *   whose collectives take their tiles on this rank's GPU: start a
                         *   CUDA worker even if none was asked for */
    int mpi;            /**< start StarPU through StarPU-MPI (starpu_mpi_init_conf) on an
                         *   MPI that hx_mpi_init already started; shutdown stops both
                         *   StarPU-MPI and StarPU, never MPI */
    enum hx_mpi_driver mpi_driver; /**< with mpi: StarPU-MPI's thread drives worker 0 */
    double stall_timeout; /**< task watchdog (helix train: --comm-timeout): when no task
                         *   terminates for this many seconds while hx_graph_wait (or the
                         *   shutdown) waits on submitted ones, print them and the policy's
                         *   name and exit with HX_EXIT_COMM_TIMEOUT (helix/comm.h), so a
                         *   policy that never hands a task to a worker cannot hang the run;
                         *   0 = the collective engine's timeout (hx_comm_timeout: none while
                         *   no channel is open), < 0 = never; not in the simulation flavour */
};

/** Defaults: every field zero/NULL. */
void hx_runtime_opts_init(struct hx_runtime_opts *o);

/**
 * Start StarPU.  Validates the worker count and the policy name before starting anything.
 * @return HX_OK, HX_EINVAL (bad worker count or unknown policy, message lists the choices)
 *         or HX_ERUNTIME (StarPU failed to start).
 * @note Main thread only; once per process at a time.
 */
int hx_runtime_init(const struct hx_runtime_opts *o);
/** Wait for all tasks and stop StarPU. */
void hx_runtime_shutdown(void);
/** Nonzero between hx_runtime_init and hx_runtime_shutdown. */
int hx_runtime_is_up(void);
/** Number of CPU workers StarPU started. */
int hx_runtime_workers(void);
/** Number of OpenCL / CUDA workers StarPU started. */
int hx_runtime_opencl_workers(void);
int hx_runtime_cuda_workers(void);
/** @p name ("any", "cpu", "opencl", "cuda") into @p place: HX_OK or HX_EINVAL. */
int hx_place_from_name(const char *name, enum hx_place *place);
/** The StarPU `where` mask for compute tasks under the placement (-1: any implementation). */
int hx_runtime_where(void);
/** Name of the policy in use. */
const char *hx_runtime_sched_name(void);

/** Number of cores available to this process (sched_getaffinity). */
int hx_ncores(void);

/** The rule of HX_MPI_DRIVER_AUTO (and ON: always, OFF: never): whether StarPU-MPI's thread
 *  should drive worker 0 when @p ranks_here ranks of @p workers CPU workers each share
 *  @p cores cores.  Pure. */
int hx_mpi_driver_wanted(enum hx_mpi_driver mode, int ranks_here, int workers, int cores);
/** "off", "on" or "auto". */
const char *hx_mpi_driver_name(enum hx_mpi_driver mode);
/** The worker whose tasks StarPU-MPI's thread runs (a policy must not put it to sleep in
 *  pop: each pop is one pass of that thread's polling loop), or -1. */
int hx_runtime_driven_worker(void);

/** Nonzero in the simulation flavour (sim/helix-sim, run by `helix simulate`): StarPU's
 * SimGrid mode runs no kernel, a task takes its performance model's time, and host code must
 * read no number a task would have computed (losses, norms, weights). */
int hx_runtime_simulated(void);
/** Milliseconds on StarPU's clock: simulated time in the simulation flavour (SimGrid's), a
 * monotonic clock otherwise.  Differences only; the origin is unspecified. */
double hx_clock_ms(void);

#ifdef __cplusplus
}
#endif

#endif /* HELIX_RUNTIME_H */
