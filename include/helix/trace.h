/* SPDX-License-Identifier: MIT */
/**
 * @file helix/trace.h
 * @brief Task traces: every task of every submitted graph with its worker, start and end,
 *        written as Chrome trace-event JSON that Perfetto (ui.perfetto.dev) and
 *        chrome://tracing open.  One track per worker; each event carries its IR node's op,
 *        layer, micro-batch and phase.
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
/** Write the events recorded so far (after hx_graph_wait) and keep recording.
 *  @return HX_OK or HX_EIO naming the file. */
int hx_trace_write(const char *path);
/** Stop recording and free the events. */
void hx_trace_stop(void);
/** The task callback hx_graph_submit installs while recording (@p node: the task's node). */
void hx_trace_record(void *node);

#ifdef __cplusplus
}
#endif

#endif /* HELIX_TRACE_H */
