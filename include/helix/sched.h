/* SPDX-License-Identifier: MIT */
/**
 * @file helix/sched.h
 * @brief Registry of scheduling policies, selected by name (--sched NAME or HX_SCHED).
 *
 * helix's own policies (hx-prio, ...) and any policy a program registers are looked up
 * first; any other name is passed to StarPU as one of its built-in policies (eager, prio,
 * lws, dmda, ...), which stay selectable as baselines.
 * A policy only picks among ready tasks; an order it relies on that the data do not imply
 * is part of the graph, asked for by its needs (enum hx_sched_need), which the graph builder
 * reads instead of the policy's name, so a registered policy can ask for the same.
 */
#ifndef HELIX_SCHED_H
#define HELIX_SCHED_H

#ifdef __cplusplus
extern "C" {
#endif

struct starpu_sched_policy;

/** What a policy needs from the graph it runs (a bit set; hx_sched_needs).  The graph
 *  builder (hx_parallel_config.sched_needs) emits these orders into the IR, where
 *  hx_graph_deps, --dump-dot and the planners see them. */
enum hx_sched_need {
    HX_SCHED_NEEDS_PREFETCH = 1u << 0,    /**< hx-prefetch's graph order under parameter
                                           *   sharding (hx_parallel_config.prefetch) */
    HX_SCHED_NEEDS_SERIAL_COMM = 1u << 1, /**< runs of compute and runs of collectives
                                           *   serialized by control edges
                                           *   (hx_graph_serialize_comm) */
    HX_SCHED_NEEDS_STRAND_PLAN = 1u << 2, /**< the policy executes a strand plan's steps:
                                           *   the graph needs one (helix train:
                                           *   --strands --strand-plan FILE) */
};
#define HX_SCHED_NEEDS_ALL (HX_SCHED_NEEDS_PREFETCH | HX_SCHED_NEEDS_SERIAL_COMM | \
                            HX_SCHED_NEEDS_STRAND_PLAN)

/**
 * Make @p policy selectable by its policy_name, with what it @p needs from the graph
 * (enum hx_sched_need bits, 0 for none).  Call before hx_runtime_init.
 * @return HX_OK, or HX_EINVAL if the name is taken, a need unknown or the table full.
 */
int hx_sched_register(struct starpu_sched_policy *policy, unsigned needs);
/** helix or registered policy of that name, or NULL. */
struct starpu_sched_policy *hx_sched_find(const char *name);
/** The needs of the policy @p name (helix's or registered); 0 for StarPU's and unknown. */
unsigned hx_sched_needs(const char *name);
/**
 * The policy a run uses, resolved in one place: @p requested (--sched, hx_runtime_opts.sched)
 * when given, else HX_SCHED, else STARPU_SCHED, else "hx-prio" (an empty value counts as not
 * given).  A known name comes back as the registry's own string (valid for the process);
 * an unknown one as given, to be reported.  @p source, if not NULL, gets where the name came
 * from: NULL for @p requested, "HX_SCHED", "STARPU_SCHED" or "the default".
 */
const char *hx_sched_resolve(const char *requested, const char **source);
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

/**
 * After a policy's push_task put @p task among its ready tasks (and called
 * starpu_push_task_end): wake one idle worker that can run it, where StarPU's drivers block
 * (the SimGrid StarPU of helix simulate); nothing where they poll (Debian's).  A plug-in
 * calls it unconditionally, outside its lock.
 */
struct starpu_task;
void hx_sched_wake_worker_for(struct starpu_task *task);

/** The hx-prio policy: priority order, with HX_SCHED_PRIO_COMM_WORKERS workers (default 0
 *  when there is nothing to communicate, as on one rank) reserved for communication tasks. */
extern struct starpu_sched_policy hx_sched_prio;
/** DHelix's executor: a strand plan's steps (SI blocks) first, in order, alternating the two
 *  strands between workers so paired ops co-run; otherwise as hx-prio.  Needs a strand plan
 *  (HX_SCHED_NEEDS_STRAND_PLAN). */
extern struct starpu_sched_policy hx_sched_strand;
/** Wavelet+ baseline: hx-prio's order, taking the two strands round-robin. */
extern struct starpu_sched_policy hx_sched_wavelet;
/** hx-prefetch (AxoNN): collectives first, compute in submission (topological) order; needs
 *  the model builder's prefetch order (HX_SCHED_NEEDS_PREFETCH). */
extern struct starpu_sched_policy hx_sched_prefetch;
/** serial-comm: the no-overlap baseline (collectives and compute never run at once):
 *  hx-prio's heaps; needs runs of compute and of collectives serialized by control edges
 *  (HX_SCHED_NEEDS_SERIAL_COMM). */
extern struct starpu_sched_policy hx_sched_serial_comm;

#ifdef __cplusplus
}
#endif

#endif /* HELIX_SCHED_H */
