/* SPDX-License-Identifier: MIT */
/**
 * @file helix/pipeline.h
 * @brief Pipeline schedules as plain data: which layers a stage holds, the order in which it
 *        runs the forward (F) and backward (B) of its micro-batches' chunks, how many
 *        micro-batches it keeps in flight, and the bubble an order leaves.
 *
 * The model's layers are cut into V virtual stages of L/V layers: V = p (1F1B, GPipe) or
 * V = 2p (model folding, papers.md §2.6: virtual stage v runs on stage v for v < p and on
 * stage 2p-1-v after the turn).  A stage holds one or two chunks of consecutive virtual
 * stages (folded: chunk 0 = {s}, chunk 1 = {2p-1-s}, except the turning stage p-1, which
 * holds {p-1, p} as one chunk).  A task is one chunk's F or B of one micro-batch.
 *
 * Every order runs each chunk's backwards in micro-batch order, so gradients accumulate in
 * the same order and every schedule gives bitwise the same step.
 */
#ifndef HELIX_PIPELINE_H
#define HELIX_PIPELINE_H

#include "helix/model.h" /* enum hx_pipeline_schedule */

#ifdef __cplusplus
extern "C" {
#endif

struct hx_pipe_task {
    int fwd;    /**< 1 forward, 0 backward */
    int mb;     /**< micro-batch */
    int chunk;  /**< the stage's chunk (0 or 1) */
};

/** Virtual stages of the schedule (p, or 2p folded). */
int hx_pipeline_virtual_stages(int schedule, int p);
/** The stage that runs virtual stage @p v. */
int hx_pipeline_stage_of(int schedule, int p, int v);
/** Chunks of stage @p s (1 or 2); chunk c covers virtual stages first[c] .. first[c]+len[c]-1. */
int hx_pipeline_chunks(int schedule, int p, int s, int first[2], int len[2]);

/** Stage @p s's tasks for @p m micro-batches in execution order into @p out (room for
 *  4 @p m); returns their count (2 m per chunk).  1F1B: p-s-1 warm-up forwards, then F and B
 *  alternate, then the last backwards.  GPipe: all F, then all B.  Folded: DHelix's
 *  injection rule, wave w pairing F(w) with B(w-p) on every stage it passes
 *  (graphs/pipeline.c); each such B is listed right before its F. */
int hx_pipeline_tasks(int schedule, int p, int s, int m, struct hx_pipe_task *out);

/** The strand (0 alpha, 1 beta) of micro-batch @p mb when two strands run: folded,
 *  micro-batches alternate in groups of p (wave w pairs F(w) with B(w-p), which must be of
 *  different strands); otherwise one by one. */
int hx_pipeline_strand(int schedule, int p, int mb);

/** Most micro-batches stage @p s holds activations for at once (from its first chunk's F to
 *  its first chunk's B). */
int hx_pipeline_in_flight(int schedule, int p, int s, int m);

/** Makespan when every virtual stage's forward takes @p tf and backward @p tb and messages
 *  are free, each stage running its tasks in order.  The bubble fraction is
 *  1 - m (tf + tb) V / (p makespan); for 1F1B and GPipe it is (p-1)/(m+p-1). */
double hx_pipeline_makespan(int schedule, int p, int m, double tf, double tb);

/** Name of a schedule ("1f1b", "gpipe", "fold"), and the schedule of a name (-1 if unknown). */
const char *hx_pipeline_schedule_name(int schedule);
int hx_pipeline_schedule_parse(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* HELIX_PIPELINE_H */
