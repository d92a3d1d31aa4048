/* SPDX-License-Identifier: MIT */
/**
 * @file helix/plan.h
 * @brief DHelix's pairing plan (papers.md §2.4): which segments of one layer's forward
 *        (strand beta, micro-batch 0) co-run with which segments of the same layer's backward
 *        (strand alpha, the rank's last micro-batch), chosen by a dynamic program over
 *        candidate operator orders and the profiled overlap table (`helix profile-overlap`).
 *
 * Pipeline (all plain data; nothing here calls StarPU or changes numerics):
 *   graph --hx_strand_list_build--> F list, B list (+ their intra-list DAGs, movable nodes)
 *   table --hx_overlap_table_load + hx_strand_costs_from_table--> solo and pair times
 *   lists --hx_strand_orders--> candidate topological orders of each side
 *   orders x costs --hx_plan_search (DP per order pair)--> plan: orders + steps
 *
 * Keys: forward op k of the list is "F<k>", backward op k "B<k>", k in submission order
 * (the profiler's naming).  A plan's step co-runs forward order positions [f0, f1) with
 * backward order positions [b0, b1); one side may be empty (that side's ops run alone).
 */
#ifndef HELIX_PLAN_H
#define HELIX_PLAN_H

#include "helix/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the two operator lists ---- */

/** One side of the pairing: the ops of one layer, one phase group, one micro-batch. */
struct hx_strand_list {
    char side;          /**< 'F' (forward) or 'B' (backward): the key prefix */
    int n;              /**< ops in the list */
    int *node;          /**< [n] graph node ids, increasing (submission order) */
    struct hx_deps dag; /**< over list indices: k must follow each of its preds (< k) */
    int *ndesc;         /**< [n] descendants of k within the list (transitively) */
    int *movable;       /**< [n] 1 if k may leave its submission position */
};

/**
 * The forward list (@p side 'F': phase FORWARD) or the backward list (@p side 'B': phases
 * BACKWARD_DATA and BACKWARD_WEIGHT) of @p layer and @p microbatch, with its DAG: k2 follows
 * k1 if the graph has a path k1 -> k2, either a direct edge or one through nodes outside the
 * list (a bucket's collective, a channel token): an executor must respect both.
 * Node k is movable when at most @p movable_desc list nodes depend on it (weight-gradient
 * GEMMs, bias reductions, re-gathers feeding only them; a data-path op has the rest of the
 * list below it).  @p deps is hx_graph_deps of @p g.
 * @return HX_OK, HX_EINVAL if the list is empty (message names layer and micro-batch).
 */
int hx_strand_list_build(const struct hx_graph *g, const struct hx_deps *deps, char side,
                         int layer, int microbatch, int movable_desc,
                         struct hx_strand_list *out);
void hx_strand_list_free(struct hx_strand_list *s);

/* ---- candidate orders ---- */

/** Topological orders of one list, each a permutation of list indices. */
struct hx_order_set {
    int n;          /**< orders held; orders[0] is the submission order 0, 1, ..., len-1 */
    int len;        /**< ops per order */
    int *orders;    /**< [n][len] */
    int complete;   /**< 1 if every order reachable by moving movable ops is held, 0 if the
                     *   enumeration stopped at the cap (there may be more) */
};

/**
 * Orders in which only movable ops leave their submission places, each valid for the list's
 * DAG, at most @p max_orders (>= 1) of them.  Breadth first from the submission order: all
 * orders one move away (a movable op taken out and put back at another valid place), then
 * two moves, ...; within a round, ops take turns (the first op's first target, the second
 * op's first target, ..., then each op's second target), targets latest place first, then
 * earliest, then the rest from far to near.  Deterministic; duplicates are dropped.
 */
int hx_strand_orders(const struct hx_strand_list *s, int max_orders, struct hx_order_set *out);
void hx_order_set_free(struct hx_order_set *o);

/* ---- costs: the profiled table, reduced to what the DP needs ---- */

/**
 * Times of one table in milliseconds, indexed by list index (not order position).
 * Pair (f, b) is at [f * nb + b]: a_ms and b_ms are each op's own duration when both start
 * together (the shorter one's is its co-run time, the longer one's includes its solo tail).
 */
struct hx_strand_costs {
    int nf, nb;
    double *f_solo;    /**< [nf] */
    double *b_solo;    /**< [nb] */
    double *a_ms;      /**< [nf*nb] forward op's own time when co-run */
    double *b_ms;      /**< [nf*nb] backward op's own time when co-run */
    double *corun_ms;  /**< [nf*nb] makespan of the pair (reported, not used by the DP) */
};

int hx_strand_costs_alloc(struct hx_strand_costs *c, int nf, int nb);
void hx_strand_costs_free(struct hx_strand_costs *c);

/**
 * Predicted time of one step: forward ops @p f[0..nf) in order on one lane, backward ops
 * @p b[0..nb) on the other (list indices), both starting together; the time until both end.
 * While ops x and y overlap each progresses at the rate the pair's profile implies (see
 * schedulers/strand_cost.c); an op alone runs at solo speed.  nf or nb may be 0 (solo sum).
 */
double hx_strand_step_time(const struct hx_strand_costs *c, const int *f, int nf, const int *b,
                           int nb);

/* ---- the plan ---- */

struct hx_plan_options {
    int max_orders;      /**< candidate orders per side (default 64) */
    int max_segment;     /**< longest co-run segment on either side (default 8) */
    double barrier_ms;   /**< cost added to each co-run step (its closing barrier; default 0) */
    int movable_desc;    /**< movable: at most this many list descendants (default 4) */
};

void hx_plan_options_default(struct hx_plan_options *o);

struct hx_plan_step {
    int f0, f1;             /**< forward order positions [f0, f1); f0 == f1: none */
    int b0, b1;             /**< backward order positions [b0, b1) */
    double predicted_ms;    /**< the step's predicted time (+ barrier if co-run) */
    double sequential_ms;   /**< the same ops one after another (sum of solo times) */
};

#define HX_PLAN_OPNAME 32

struct hx_plan {
    int layer;
    int nf, nb;
    int *f_order, *b_order;            /**< [nf], [nb]: list indices in the chosen orders */
    char (*f_op)[HX_PLAN_OPNAME];      /**< [nf] op name of each forward list index */
    char (*b_op)[HX_PLAN_OPNAME];      /**< [nb] */
    int nsteps;
    struct hx_plan_step *steps;
    double predicted_ms;               /**< sum of the steps' predicted times */
    double sequential_ms;              /**< sum of every op's solo time */
    int f_orders, b_orders;            /**< candidate orders considered per side */
    int f_all, b_all;                  /**< 1 if that side's orders were all considered,
                                        *   0 if the enumeration stopped at max_orders */
    int max_segment;
    double barrier_ms;
};

/**
 * The DP for fixed orders (papers.md §2.4, "Recommended generalisation"): T(i,j) is the best
 * time for forward positions [0,i) and backward positions [0,j),
 *   T(i,j) = min over i' <= i, j' <= j, (i',j') != (i,j) of
 *            T(i',j') + step(F[i'..i), B[j'..j)) (+ barrier if both sides are non-empty)
 * with co-run segments at most @p max_segment long.  Solo segments cost their solo sum, so
 * only one-op solo steps are tried; consecutive solo steps of one side are merged after.
 * Ties prefer a solo step (it needs no barrier), then longer co-run segments (fewer
 * barriers).  Fills @p plan's steps (if not NULL).
 * @return the predicted makespan, or NaN when out of memory (reported).
 */
double hx_plan_dp(const struct hx_strand_costs *c, const int *f_order, int nf,
                  const int *b_order, int nb, int max_segment, double barrier_ms,
                  struct hx_plan *plan);

/**
 * The best plan over every pair of candidate orders (papers.md §2.4 steps 2-4).  Ties keep
 * the earlier candidate, so the submission orders win unless a move strictly helps.
 * @p g names the ops and the layer; NULL for hand-made lists (ops "op", layer 0).
 * @return HX_OK, HX_EINVAL (options out of range), HX_ENOMEM.
 */
int hx_plan_search(const struct hx_graph *g, const struct hx_strand_list *F,
                   const struct hx_strand_list *B, const struct hx_strand_costs *c,
                   const struct hx_plan_options *o, struct hx_plan *plan);
void hx_plan_free(struct hx_plan *p);

/**
 * Write the plan as JSON, schema "helix-plan-1": orders and steps as node keys, so a
 * scheduler can execute it.  Atomic: a temporary file renamed over @p path.
 * @return HX_OK or HX_EIO (reported).
 */
int hx_plan_write_json(const struct hx_plan *p, const char *path);
/** Read a plan written by hx_plan_write_json; checks that orders are permutations and the
 *  steps cover each op once.  @return HX_OK, HX_EIO, HX_EFORMAT (reported). */
int hx_plan_read_json(const char *path, struct hx_plan *p);

/* ---- costs from the profiled overlap table (helix/overlap.h, hx_overlap_table_load) ---- */

struct hx_overlap_table;

/**
 * Costs of the lists @p F and @p B of @p g from a loaded table: it must have exactly the
 * lists' keys (F0..F(nf-1), B0..B(nb-1); the loader already guarantees every F x B pair),
 * each with the op the graph has under that key (@p g NULL: op names unchecked).
 * @return HX_OK, HX_ENOMEM or HX_EFORMAT (message names the key, the layer and the likely
 *         cause: another profiled layer, or another model or build).
 */
int hx_strand_costs_from_table(const struct hx_overlap_table *t, const struct hx_graph *g,
                               const struct hx_strand_list *F, const struct hx_strand_list *B,
                               struct hx_strand_costs *c);

#ifdef __cplusplus
}
#endif

#endif /* HELIX_PLAN_H */
