/* SPDX-License-Identifier: MIT */
/**
 * @file helix/threads.h
 * @brief Where this process's threads spent the run: on a core, or runnable and waiting for
 *        one (Linux /proc/self/task/TID/schedstat), by what the thread is.
 *
 * Why: a rank's threads are its StarPU workers, StarPU-MPI's progress thread and the
 * collective engine's lane threads, and on a node with fewer cores than threads the
 * communication threads wait for a core behind the workers: every transfer then starts
 * late.  On the 2-core bed (tp 2 + SP, 1+1 ranks, StarPU-MPI) StarPU-MPI's progress thread
 * was on a core 0.30 s and waiting for one 0.67 s of every second, and a send it had been
 * handed waited 2.2 ms (median 0.1-0.4 ms) before it reached MPI in a quarter of the cases
 * (bench/README.md, "StarPU-MPI's progress thread waits for a core").  Each rank of a
 * `helix train` run prints this on its stderr at the end (hx_threads_format), and a note when
 * a communication thread waited longer than it ran (hx_threads_starved).
 * Test: tests/tools/threads.c, tests/mpi/threads.sh.
 */
#ifndef HELIX_THREADS_H
#define HELIX_THREADS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What a thread is, by its name (StarPU and helix name theirs). */
enum hx_thread_kind {
    HX_THREADS_WORKERS, /**< StarPU workers: "CPU n", "CUDA n.m", "OpenCL n" */
    HX_THREADS_MPI,     /**< StarPU-MPI's progress thread: "MPI" */
    HX_THREADS_LANES,   /**< the collective engine's lanes: "hx-lane-intra", "hx-lane-inter" */
    HX_THREADS_OTHER,   /**< the main thread and everything else */
    HX_THREADS_KINDS
};

/** Seconds since each thread started, summed by kind, for the threads alive now. */
struct hx_thread_usage {
    int threads[HX_THREADS_KINDS];
    double run_s[HX_THREADS_KINDS];  /**< on a core */
    double wait_s[HX_THREADS_KINDS]; /**< runnable, waiting for a core */
};

/**
 * This process's threads now.  @return 0, or -1 where the kernel does not say (no
 * /proc/self/task, or a kernel without scheduler statistics): @p u is then zero.
 */
int hx_threads_usage(struct hx_thread_usage *u);

/**
 * One line for rank @p rank, e.g. "threads, rank 0: StarPU workers (1) 1.56 s on a core,
 * 0.15 s waiting for one (9%); StarPU-MPI's progress thread (1) 0.67 s on a core, 1.54 s
 * waiting for one (70%); ...":
 * a kind's share is its waiting time over its runnable time.  Kinds with no thread are left
 * out.
 */
void hx_threads_format(const struct hx_thread_usage *u, int rank, char *buf, size_t len);

/**
 * The communication kind (HX_THREADS_MPI, then HX_THREADS_LANES) that waited for a core more
 * than half of its runnable time and over a second in all, or -1: the rank's threads
 * outnumber its cores and its transfers start late.
 */
int hx_threads_starved(const struct hx_thread_usage *u);

/** "StarPU workers", "StarPU-MPI's progress thread", "comm lane threads", "other threads". */
const char *hx_threads_kind_name(enum hx_thread_kind k);

#ifdef __cplusplus
}
#endif

#endif /* HELIX_THREADS_H */
