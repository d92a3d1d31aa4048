/* SPDX-License-Identifier: MIT */
/**
 * @file helix/trace.h
 * @brief Task traces: every task of every submitted graph on every rank with its worker,
 *        start and end, merged into one Chrome trace-event JSON that Perfetto
 *        (ui.perfetto.dev) and chrome://tracing open: one process per rank, one thread per
 *        compute worker and one per communication channel (named by its lane, intra- or
 *        inter-node).  Each event ("X", times in µs on rank 0's clock) carries in args: rank,
 *        worker, lane, channel, node, step, layer, microbatch, phase, strand (and
 *        strand_name), block, segment, bytes, flops, and collective (1 for a collective,
 *        0 for compute and for a channel fence); cat is "compute" or "comm".  A
 *        collective's event lasts from its post to MPI's completion.  `helix trace
 *        summarize` and `helix trace svg` read these files.
 */
#ifndef HELIX_TRACE_H
#define HELIX_TRACE_H

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Start recording.  Needs StarPU's profiling, so call it before hx_runtime_init or pass
 * profiling = 1 in hx_runtime_opts.  @return HX_OK or HX_ENOMEM.
 */
int hx_trace_start(void);
/** Nonzero while recording (hx_graph_submit attaches the recorder to every task). */
int hx_trace_active(void);
/** Number of task events recorded so far. */
long hx_trace_count(void);
/** Tasks that start from now on belong to training step @p step (-1: outside any step,
 *  e.g. evaluation); summaries average over steps >= 0. */
void hx_trace_set_step(int step);
/** Write the events recorded so far (after hx_graph_wait) and keep recording.  Under MPI
 *  every rank must call it (it gathers the ranks' events; collective on MPI_COMM_WORLD) and
 *  rank 0 writes @p path.  @return HX_OK, or HX_EIO naming the file (rank 0). */
int hx_trace_write(const char *path);
/** Stop recording and free the events. */
void hx_trace_stop(void);
/** The task callback hx_graph_submit installs while recording (@p node: the task's node). */
void hx_trace_record(void *node);

#ifdef __cplusplus
}
#endif

#endif /* HELIX_TRACE_H */
