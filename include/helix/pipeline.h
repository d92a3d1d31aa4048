/* SPDX-License-Identifier: MIT */
/**
 * @file helix/pipeline.h
 * @brief Pipeline schedules as plain data: the order in which stage s of p runs the forward
 *        (F) and backward (B) of its m micro-batches, how many are in flight, and the bubble
 *        the order leaves, from a two-lane-free simulation of unit-cost tasks.
 *
 * An order is 2m entries: micro-batch j's forward is j, its backward -1 - j.  Every schedule
 * runs the backwards in micro-batch order, so gradients accumulate in the same order and
 * every schedule gives bitwise the same step.
 */
#ifndef HELIX_PIPELINE_H
#define HELIX_PIPELINE_H

#include "helix/gpt.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Fill @p order (2 @p m entries) for stage @p s of @p p under @p schedule
 *  (enum hx_pipeline_schedule). */
void hx_pipeline_order(int schedule, int p, int s, int m, int *order);

/** Most micro-batches stage @p s holds activations for at once under @p schedule. */
int hx_pipeline_in_flight(int schedule, int p, int s, int m);

/** Makespan of the schedule when every forward takes @p tf and every backward @p tb on
 *  every stage and messages are free: each stage runs its order, F(j) on stage s after
 *  F(j) on s-1, B(j) after B(j) on s+1.  The bubble fraction is
 *  1 - m (tf + tb) / makespan; for 1F1B and GPipe it is (p-1)/(m+p-1). */
double hx_pipeline_makespan(int schedule, int p, int m, double tf, double tb);

/** Name of a schedule ("1f1b", "gpipe"), and the schedule of a name (-1 if unknown). */
const char *hx_pipeline_schedule_name(int schedule);
int hx_pipeline_schedule_parse(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* HELIX_PIPELINE_H */
