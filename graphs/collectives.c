/* SPDX-License-Identifier: MIT */
/* graphs/collectives.c: builders of collective nodes (include/helix/collectives.h).  Every
 * node takes its channel's token first (RW), then its data, and is stamped kind COMM, the
 * channel's lane and the channel's sequence number, which the watchdog prints.  Bytes count
 * what this rank sends; flops stay 0 so planners see communication as time on a lane.
 * Test: tests/mpi/collectives.c (through the engine), tests/mpi/parity_*.sh, and
 * tests/mpi/grad_overlap.c (the fence of the serialized baseline). */
#include <stdio.h>

#include "helix/collectives.h"
#include "helix/error.h"
#include "helix/mesh.h"

void hx_collectives_set_lanes(hx_graph_t g, const int *lanes, int n)
{
    for (int i = 0; i < HX_GRAPH_CHANNELS; i++) {
        g->chan_lane[i] = lanes != NULL && i < n ? lanes[i] : HX_LANE_COMM_INTRA;
    }
}

static hx_tensor_t token(hx_graph_t g, int ch)
{
    HX_ASSERT(ch >= 0 && ch < HX_GRAPH_CHANNELS, "channel %d out of range", ch);
    if (g->tokens[ch] == NULL) {
        char name[HX_NAME_MAX];
        snprintf(name, sizeof name, "chan.%s", hx_group_name((enum hx_group_kind)ch));
        g->tokens[ch] = hx_graph_tensor(g, name, HX_I32, HX_ROLE_SCALAR, 1, 1, 0);
    }
    return g->tokens[ch];
}

/* Append a collective: token + @p n refs. */
static void emit(hx_graph_t g, enum hx_op op, int ch, union hx_op_args *a, int n,
                 const struct hx_ref *data, double bytes)
{
    struct hx_ref refs[HX_NODE_MAXREFS];
    HX_ASSERT(n + 1 <= HX_NODE_MAXREFS, "%s on channel %s: %d buffers, at most %d",
              hx_op_name(op), hx_group_name((enum hx_group_kind)ch), n, HX_NODE_MAXREFS - 1);
    refs[0] = hx_ref_of(token(g, ch), 0, HX_RW);
    for (int i = 0; i < n; i++) {
        refs[i + 1] = data[i];
    }
    a->coll.channel = ch;
    a->coll.seq = op == HX_OP_FENCE ? -1 : g->coll_seq[ch]++; /* the watchdog counts MPI's */
    struct hx_node *node = hx_graph_add(g, op, a, n + 1, refs, 0.0, bytes);
    node->kind = HX_KIND_COMM;
    node->lane = g->chan_lane[ch] == HX_LANE_COMM_INTER ? HX_LANE_COMM_INTER : HX_LANE_COMM_INTRA;
}

static int same_dtype(int n, hx_tensor_t const *ts)
{
    for (int i = 1; i < n; i++) {
        HX_ASSERT(ts[i]->dtype == ts[0]->dtype, "packed collective mixes %s and %s dtypes",
                  ts[0]->name, ts[i]->name);
    }
    return ts[0]->dtype;
}

static void packed(hx_graph_t g, enum hx_op op, int ch, int n, hx_tensor_t const *ts,
                   union hx_op_args *a)
{
    struct hx_ref data[HX_NODE_MAXREFS];
    double bytes = 0;
    HX_ASSERT(n >= 1, "empty collective");
    for (int i = 0; i < n; i++) {
        HX_ASSERT(ts[i]->ntiles == 1, "%s: %s has %d tiles; packed collectives take single-"
                  "tile tensors", hx_op_name(op), ts[i]->name, ts[i]->ntiles);
        data[i] = hx_ref_of(ts[i], 0, HX_RW);
        bytes += (double)hx_tensor_bytes(ts[i]);
    }
    a->coll.dtype = same_dtype(n, ts);
    emit(g, op, ch, a, n, data, bytes);
}

void hx_allreduce(hx_graph_t g, int ch, int n, hx_tensor_t const *ts, enum hx_reduce_op op)
{
    union hx_op_args a = { .coll = { .reduce = op } };
    packed(g, HX_OP_ALLREDUCE, ch, n, ts, &a);
}

void hx_broadcast(hx_graph_t g, int ch, int n, hx_tensor_t const *ts, int root)
{
    union hx_op_args a = { .coll = { .peer = root } };
    packed(g, HX_OP_BROADCAST, ch, n, ts, &a);
}

static void p2p_tiles(hx_graph_t g, enum hx_op op, int ch, hx_tensor_t t, int peer)
{
    for (int i = 0; i < t->ntiles; i++) {
        union hx_op_args a = { .coll = { .peer = peer, .dtype = t->dtype } };
        struct hx_ref r = hx_ref_of(t, i, op == HX_OP_SEND ? HX_R : HX_W);
        double bytes = (double)hx_tile_nrows(t, i) * t->cols * (double)hx_dtype_size(t->dtype);
        emit(g, op, ch, &a, 1, &r, op == HX_OP_SEND ? bytes : 0.0);
    }
}

void hx_send_tiles(hx_graph_t g, int ch, hx_tensor_t t, int peer)
{
    p2p_tiles(g, HX_OP_SEND, ch, t, peer);
}

void hx_recv_tiles(hx_graph_t g, int ch, hx_tensor_t t, int peer)
{
    p2p_tiles(g, HX_OP_RECV, ch, t, peer);
}

void hx_shift_tile(hx_graph_t g, int ch, int k, hx_tensor_t in, int in_tile, hx_tensor_t out,
                   int out_tile)
{
    HX_ASSERT(in->dtype == out->dtype && in->cols == out->cols &&
                  hx_tile_nrows(in, in_tile) == hx_tile_nrows(out, out_tile),
              "shift: tile %d of %s and tile %d of %s differ in shape or dtype", in_tile,
              in->name, out_tile, out->name);
    union hx_op_args a = { .coll = { .peer = k, .dtype = in->dtype } };
    struct hx_ref r[2] = { hx_ref_of(in, in_tile, HX_R), hx_ref_of(out, out_tile, HX_W) };
    emit(g, HX_OP_SHIFT, ch, &a, 2, r,
         (double)hx_tile_nrows(in, in_tile) * in->cols * (double)hx_dtype_size(in->dtype));
}

void hx_channel_fence(hx_graph_t g, int ch, int n, hx_tensor_t const *ts)
{
    struct hx_ref data[HX_NODE_MAXREFS - 1];
    int k = 0;
    for (int i = 0; i < n; i++) {
        for (int t = 0; t < ts[i]->ntiles; t++) {
            data[k++] = hx_ref_of(ts[i], t, HX_R);
            int last = i == n - 1 && t == ts[i]->ntiles - 1;
            if (k == HX_NODE_MAXREFS - 1 || (last && k > 0)) {
                union hx_op_args a = { .coll = { .dtype = ts[0]->dtype } };
                emit(g, HX_OP_FENCE, ch, &a, k, data, 0.0);
                k = 0;
            }
        }
    }
}

void hx_allreduce_tiles(hx_graph_t g, int ch, hx_tensor_t t)
{
    for (int i = 0; i < t->ntiles; i++) {
        union hx_op_args a = { .coll = { .reduce = HX_SUM, .dtype = t->dtype } };
        struct hx_ref r = hx_ref_of(t, i, HX_RW);
        emit(g, HX_OP_ALLREDUCE, ch, &a, 1, &r,
             (double)hx_tile_nrows(t, i) * t->cols * (double)hx_dtype_size(t->dtype));
    }
}

/* full and shard: same tile count, shard tiles 1/p of the full ones; single-tile tensors
 * (a parameter and its flat piece) may have any shapes, the caller sized the piece */
static void check_split(hx_tensor_t full, hx_tensor_t shard)
{
    int tiled = full->ntiles > 1;
    HX_ASSERT(full->ntiles == shard->ntiles && full->dtype == shard->dtype &&
                  (!tiled || (full->cols == shard->cols && full->rows % shard->rows == 0)),
              "%s (%d x %d, %d tiles) is not a tile-wise gather of %s (%d x %d, %d tiles)",
              full->name, full->rows, full->cols, full->ntiles, shard->name, shard->rows,
              shard->cols, shard->ntiles);
}

void hx_allgather_tiles(hx_graph_t g, int ch, hx_tensor_t full, hx_tensor_t shard)
{
    check_split(full, shard);
    for (int i = 0; i < full->ntiles; i++) {
        union hx_op_args a = { .coll = { .dtype = full->dtype } };
        struct hx_ref r[2] = { hx_ref_of(shard, i, HX_R), hx_ref_of(full, i, HX_W) };
        emit(g, HX_OP_ALLGATHER, ch, &a, 2, r,
             (double)hx_tile_nrows(shard, i) * shard->cols * (double)hx_dtype_size(shard->dtype));
    }
}

void hx_reduce_scatter_tiles(hx_graph_t g, int ch, hx_tensor_t shard, hx_tensor_t full,
                             int accumulate)
{
    check_split(full, shard);
    for (int i = 0; i < full->ntiles; i++) {
        union hx_op_args a = { .coll = { .dtype = full->dtype, .reduce = HX_SUM,
                                         .accumulate = accumulate } };
        struct hx_ref r[2] = { hx_ref_of(full, i, HX_R),
                               hx_ref_of(shard, i, accumulate ? HX_RW : HX_W) };
        emit(g, HX_OP_REDUCE_SCATTER, ch, &a, 2, r,
             (double)hx_tile_nrows(full, i) * full->cols * (double)hx_dtype_size(full->dtype));
    }
}

/* Packed gather/scatter: refs are token, the n `in` tensors, then the n `out` ones. */
static void packed_split(hx_graph_t g, enum hx_op op, int ch, int n, hx_tensor_t const *in,
                         enum hx_access in_mode, hx_tensor_t const *out,
                         enum hx_access out_mode, union hx_op_args *a, double bytes)
{
    struct hx_ref data[HX_NODE_MAXREFS];
    HX_ASSERT(n >= 1 && 2 * n + 1 <= HX_NODE_MAXREFS, "%s on channel %s: %d tensors, at most %d",
              hx_op_name(op), hx_group_name((enum hx_group_kind)ch), n,
              (HX_NODE_MAXREFS - 1) / 2);
    for (int k = 0; k < n; k++) {
        HX_ASSERT(in[k]->ntiles == 1 && out[k]->ntiles == 1 && in[k]->dtype == in[0]->dtype &&
                      out[k]->dtype == in[0]->dtype,
                  "%s: %s and %s must be single-tile tensors of %s's dtype", hx_op_name(op),
                  in[k]->name, out[k]->name, in[0]->name);
        data[k] = hx_ref_of(in[k], 0, in_mode);
        data[n + k] = hx_ref_of(out[k], 0, out_mode);
    }
    a->coll.dtype = in[0]->dtype;
    emit(g, op, ch, a, 2 * n, data, bytes);
}

void hx_allgather_packed(hx_graph_t g, int ch, int n, hx_tensor_t const *full,
                         hx_tensor_t const *shard)
{
    union hx_op_args a = { .coll = { .dtype = 0 } };
    double bytes = 0;
    for (int k = 0; k < n; k++) {
        bytes += (double)hx_tensor_bytes(shard[k]);
    }
    packed_split(g, HX_OP_ALLGATHER, ch, n, shard, HX_R, full, HX_W, &a, bytes);
}

void hx_reduce_scatter_packed(hx_graph_t g, int ch, int n, hx_tensor_t const *shard,
                              hx_tensor_t const *full, int accumulate)
{
    union hx_op_args a = { .coll = { .reduce = HX_SUM, .accumulate = accumulate } };
    double bytes = 0;
    for (int k = 0; k < n; k++) {
        bytes += (double)hx_tensor_bytes(full[k]);
    }
    packed_split(g, HX_OP_REDUCE_SCATTER, ch, n, full, HX_R, shard,
                 accumulate ? HX_RW : HX_W, &a, bytes);
}
