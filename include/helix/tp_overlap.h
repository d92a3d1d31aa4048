/* SPDX-License-Identifier: MIT */
/**
 * @file helix/tp_overlap.h
 * @brief Flux's tile-level overlap of tensor-parallel GEMMs with their all-gather and
 *        reduce-scatter (papers.md §3), as graph transformations any model's
 *        sequence-parallel linear layers can use.
 *
 * The rotated layout: a full tensor (N rows) of T row tiles over a group of p ranks, T a
 * multiple of p, belongs tile-cyclically to the ranks: tile i*p + j is group rank j's.  A
 * rank's shard (N/p rows, tiles of the same size) holds its tiles in order: shard tile i is
 * full tile i*p + rank.  With whole sequences per tile this is the same split of the rows as
 * helix/collectives.h's gather (a full tile there is p of these tiles, rank-major), only cut
 * finer, so nothing row-wise changes.
 *
 * Why it overlaps: each tile moves by itself (HX_OP_SHIFT, one message per tile and step), and
 * a GEMM over the full tensor is one task per tile (graphs/layers.c), so
 *   - AG+GEMM: the GEMM of the rank's own tile needs no message at all, and the GEMM of a
 *     peer's tile starts when that one tile has arrived; step k (1..p-1) brings rank r + k's
 *     tile, so at each step every rank reads from a different peer;
 *   - GEMM+RS: the partial tile a peer owns is sent as soon as its GEMM task finished, at step
 *     k to rank r + k, while the rank's other tiles are still being multiplied; the owner adds
 *     the p partials of its tile in group-rank order 0..p-1, whatever order they arrived in,
 *     so the sum is the same on every run and under every policy.
 * Emitting the producer's tiles in the order the sends want (hx_tp_order) makes a
 * first-come scheduler run them in that order; the dependencies alone already give AG+GEMM's.
 * Test: tests/mpi/parity_tpo.sh (training against the serial run and the whole-op
 * collectives), tests/graphs/tp_overlap.c (the graphs these build).
 */
#ifndef HELIX_TP_OVERLAP_H
#define HELIX_TP_OVERLAP_H

#include "helix/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A tensor-parallel group as the builders see it: channel, size and this rank's place. */
struct hx_tp_group {
    int ch;     /**< enum hx_group_kind of the group's channel */
    int p, r;   /**< group size and this rank's group rank */
};

/** full := every rank's shard, in the rotated layout: the own tiles are copied in, then for
 *  each group of p tiles, step k = 1..p-1 receives rank r + k's tile while sending ours to
 *  rank r - k.  full: T tiles, shard: T/p tiles of the same rows and columns. */
void hx_tp_allgather(hx_graph_t g, struct hx_tp_group tp, hx_tensor_t full, hx_tensor_t shard);

/** shard := this rank's tiles of the sum over the group of every rank's @p full (partial
 *  sums, rotated layout).  Step k sends the partial tile rank r + k owns and receives rank
 *  r - k's partial of ours into @p recv[k-1] (p - 1 tensors shaped like @p shard, scratch:
 *  give each reduce-scatter target its own, so two strands never wait on one scratch); the
 *  tile's sum is then formed in group-rank order. */
void hx_tp_reduce_scatter(hx_graph_t g, struct hx_tp_group tp, hx_tensor_t shard,
                          hx_tensor_t full, hx_tensor_t const *recv);

/** The tile order of the builders that follow (struct hx_cursor): @p own_last = 1 before
 *  the GEMM whose output hx_tp_reduce_scatter sends (the peers' tiles first, in the order
 *  they are sent), 0 for the one after hx_tp_allgather.  hx_tp_order_reset restores the
 *  natural order. */
void hx_tp_order(hx_graph_t g, struct hx_tp_group tp, int own_last);
void hx_tp_order_reset(hx_graph_t g);

#ifdef __cplusplus
}
#endif

#endif /* HELIX_TP_OVERLAP_H */
