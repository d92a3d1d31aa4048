/* SPDX-License-Identifier: MIT */
/**
 * @file helix/collectives.h
 * @brief Builders for collective nodes (ops.h: HX_OP_ALLREDUCE ... HX_OP_FENCE).  Like the
 *        layer builders they only append nodes; runtime/comm.c runs them over MPI.
 *
 * @p ch is the channel: an enum hx_group_kind of helix/mesh.h, whose communicator the node
 * runs on.  Each channel has a token tensor in the graph ("chan.<ch>") that every collective
 * of the channel takes first in RW, so a channel's collectives start in submission order on
 * every rank.  Collective nodes are kind COMM on the channel's lane (intra- or inter-node,
 * from hx_collectives_set_lanes) and carry their sequence number on the channel.
 *
 * "Tiles" variants run one collective per row tile, so a tile's collective starts as soon
 * as its producer finished (overlap at tile granularity); the shard tensor has the same
 * number of tiles as the full one with tile_rows / p rows (rank-major inside a tile).  With
 * single-tile tensors they gather a parameter (rows, cols) from flat pieces (1, count_j)
 * split by ops.h's rule.
 */
#ifndef HELIX_COLLECTIVES_H
#define HELIX_COLLECTIVES_H

#include "helix/graph.h"
#include "helix/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Lane of each channel (HX_LANE_COMM_INTRA or _INTER), indexed by channel; NULL = intra.
 *  Taken from the mesh by the model builder: a group inside one node is intra. */
void hx_collectives_set_lanes(hx_graph_t g, const int *lanes, int n);

/** All-reduce (sum or max) of @p n single-tile tensors in place, as one packed message. */
void hx_allreduce(hx_graph_t g, int ch, int n, hx_tensor_t const *ts, enum hx_reduce_op op);
/** All-reduce of every row tile of @p t, one collective per tile. */
void hx_allreduce_tiles(hx_graph_t g, int ch, hx_tensor_t t);
/** full (rows, C) = concatenation of every rank's shard, tile by tile. */
void hx_allgather_tiles(hx_graph_t g, int ch, hx_tensor_t full, hx_tensor_t shard);
/** shard (+)= this rank's part of the sum of every rank's full, tile by tile. */
void hx_reduce_scatter_tiles(hx_graph_t g, int ch, hx_tensor_t shard, hx_tensor_t full,
                             int accumulate);
/** The packed forms, one collective for @p n single-tile tensors (a layer's parameters,
 *  ZeRO-3's one message per layer, as FSDP's flat parameters): each full[k] is split by
 *  ops.h's rule, rank j sends the concatenation of its pieces shard[k] and the message of
 *  all ranks is unpacked into every full[k].  2n + 1 <= HX_NODE_MAXREFS. */
void hx_allgather_packed(hx_graph_t g, int ch, int n, hx_tensor_t const *full,
                         hx_tensor_t const *shard);
/** shard[k] (+)= this rank's piece of the sum over ranks of full[k], for all k at once. */
void hx_reduce_scatter_packed(hx_graph_t g, int ch, int n, hx_tensor_t const *shard,
                              hx_tensor_t const *full, int accumulate);
/** Root's @p n single-tile tensors to every rank, as one packed message. */
void hx_broadcast(hx_graph_t g, int ch, int n, hx_tensor_t const *ts, int root);
/** Send every row tile of @p t to group rank @p peer of the channel, one message per tile
 *  (a tile leaves as soon as its producer finished); the peer receives with
 *  hx_recv_tiles into a tensor of the same shape and tiling, in the same order. */
void hx_send_tiles(hx_graph_t g, int ch, hx_tensor_t t, int peer);
void hx_recv_tiles(hx_graph_t g, int ch, hx_tensor_t t, int peer);
/** One step of a ring shift (HX_OP_SHIFT): tile @p in_tile of @p in goes to group rank
 *  (r - k) mod p, tile @p out_tile of @p out comes from rank (r + k) mod p.  Every rank of
 *  the group emits the same k at the same place on the channel (helix/tp_overlap.h). */
void hx_shift_tile(hx_graph_t g, int ch, int k, hx_tensor_t in, int in_tile, hx_tensor_t out,
                   int out_tile);
/** The channel's next collectives start only after every tile of the @p n tensors has been
 *  written (HX_OP_FENCE nodes chained on the token, HX_NODE_MAXREFS - 1 tiles each): how a
 *  baseline puts its communication after a whole phase instead of overlapping it. */
void hx_channel_fence(hx_graph_t g, int ch, int n, hx_tensor_t const *ts);

#ifdef __cplusplus
}
#endif

#endif /* HELIX_COLLECTIVES_H */
