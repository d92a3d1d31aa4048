/* SPDX-License-Identifier: MIT */
/* tools/trace_summary.h: per-rank overlap figures of a trace (definitions in
 * tools/trace_summary.c), all in ms per training step. */
#ifndef HX_TRACE_SUMMARY_H
#define HX_TRACE_SUMMARY_H

#include "tools/trace_file.h"

#define TRACE_MAX_OPS 16

struct trace_comm {
    char name[32];                  /* collective op: allreduce, allgather, send, shift, ... */
    double ms, exposed_ms, hidden_ms;
    double count, mb;               /* collectives (tile transfers) and MB this rank sent */
    double efficiency;              /* 1 - exposed / baseline's exposed; NAN without one */
};

struct rank_summary {
    int rank, steps;
    double span_ms, compute_ms, comm_ms, hidden_ms, exposed_ms, bubble_ms;
    double lane_ms[2];              /* comm intra-node, comm inter-node */
    double lane_exposed_ms[2];      /* each lane's exposed time: its collectives in flight
                                     * while the rank ran no compute task, |lane - compute|.
                                     * Each lane gets all of its own uncovered time, so time
                                     * both lanes were exposed at once counts in both: with
                                     * every collective on one of the two lanes,
                                     * max(lane_exposed_ms) <= exposed_ms <= their sum, and
                                     * lane_exposed_ms[l] <= lane_ms[l] */
    struct trace_comm ops[TRACE_MAX_OPS];
    int nops;
    struct trace_comm tp;           /* every collective of the tensor-parallel channels (tp,
                                     * tp_beta), whatever the op: whole-op all-gathers and
                                     * reduce-scatters or --tp-comm-overlap's tile shifts */
    double ect_ms, efficiency;      /* Flux's, against a baseline; NAN without one */
    int strands;                    /* the trace marks strand alpha and beta tasks */
    double strand_ms[2], corun_ms;  /* each strand at work, both at once (DHelix's co-run) */
};

/* Summaries of every rank (@p out: t->nranks of them, free()), the number of steps averaged
 * and the first of them (-1: the trace has no step marks, all its events were one step).
 * @return 0, -1 when out of memory. */
int trace_summarize(const struct trace *t, struct rank_summary **out, int *nsteps,
                    int *first_step);
/* Fill @p run's ECT, overlap efficiency and per-op efficiencies against @p base (the same
 * rank of the same job under a no-overlap schedule). */
void trace_against_baseline(struct rank_summary *run, const struct rank_summary *base);

#endif /* HX_TRACE_SUMMARY_H */
