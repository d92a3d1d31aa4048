/* SPDX-License-Identifier: MIT */
/**
 * @file helix/sched.h
 * @brief Registry of scheduling policies, selected by name (--sched NAME or HX_SCHED).
 *
 * helix's own policies (hx-prio, ...) and any policy a program registers are looked up
 * first; any other name is passed to StarPU as one of its built-in policies (eager, prio,
 * lws, dmda, ...), which stay selectable as baselines.
 */
#ifndef HELIX_SCHED_H
#define HELIX_SCHED_H

#ifdef __cplusplus
extern "C" {
#endif

struct starpu_sched_policy;

/**
 * Make @p policy selectable by its policy_name.  Call before hx_runtime_init.
 * @return HX_OK, or HX_EINVAL if the name is taken or the table is full.
 */
int hx_sched_register(struct starpu_sched_policy *policy);
/** helix or registered policy of that name, or NULL. */
struct starpu_sched_policy *hx_sched_find(const char *name);
/** Nonzero if @p name is one of StarPU's built-in policies. */
int hx_sched_is_starpu_builtin(const char *name);
/** Nonzero if @p name can be selected (ours, registered or StarPU's). */
int hx_sched_is_known(const char *name);
/**
 * NULL-terminated list of every selectable name, helix's first (loop over it in tests).
 * The array is static and valid until the next hx_sched_register.
 */
const char *const *hx_sched_names(void);

/**
 * Policy data hints read from the task's IR node (task->sched_data points to it, or NULL
 * for tasks submitted outside a graph).  Comm tasks are those whose node kind is HX_KIND_COMM.
 */
int hx_sched_task_is_comm(const void *starpu_task);

/** The hx-prio policy: priority order, with HX_SCHED_PRIO_COMM_WORKERS workers (default 0
 *  when there is nothing to communicate, as on one rank) reserved for communication tasks. */
extern struct starpu_sched_policy hx_sched_prio;
/** DHelix's executor: a strand plan's steps (SI blocks) first, in order, alternating the two
 *  strands between workers so paired ops co-run; otherwise as hx-prio. */
extern struct starpu_sched_policy hx_sched_strand;
/** Wavelet+ baseline: hx-prio's order, taking the two strands round-robin. */
extern struct starpu_sched_policy hx_sched_wavelet;
/** hx-prefetch (AxoNN): collectives first, compute in submission (topological) order; the
 *  model builder's prefetch order (hx_parallel_config.prefetch) comes with it. */
extern struct starpu_sched_policy hx_sched_prefetch;
/** serial-comm: the no-overlap baseline (collectives and compute never run at once):
 *  hx-prio's heaps; hx_graph_submit serializes runs of compute and of collectives. */
extern struct starpu_sched_policy hx_sched_serial_comm;
/** Nonzero when serial-comm runs the global context (hx_graph_submit asks). */
int hx_sched_serial_comm_active(void);

#ifdef __cplusplus
}
#endif

#endif /* HELIX_SCHED_H */
