/* SPDX-License-Identifier: MIT */
/* graphs/tp_overlap.c: Flux's tile-level AG+GEMM and GEMM+RS as graphs (helix/tp_overlap.h
 * gives the layout and why it overlaps).  Over a group of p ranks, for group i of full tiles
 * (tiles i*p .. i*p + p-1, tile i*p + j rank j's) and this rank r:
 *
 *   all-gather      full[i*p + r] := shard[i]                  (local: fill 0, += shard)
 *                   k = 1..p-1: full[i*p + (r+k)%p] <- rank r+k  (shift k: ours to r-k)
 *   reduce-scatter  k = 1..p-1: full[i*p + (r+k)%p] -> rank r+k  (shift -k: recv[k-1][i]
 *                                                                 <- rank r-k's partial)
 *                   shard[i] := sum over j = 0..p-1 of rank j's partial of tile i*p + r
 *
 * Every rank emits its shifts in the same (i, k) order, so the channel's token orders them
 * alike everywhere and each shift meets its peers' at the same position.  A shift moves one
 * tile both ways at once (ops.h), so the ring never waits on itself.
 * The local copy is "fill 0, then += shard": 0 + x is x exactly, so no copy codelet is
 * needed (the one difference, -0 becoming +0, changes no product or sum).
 * Test: tests/graphs/tp_overlap.c, tests/mpi/parity_tpo.sh. */
#include "helix/collectives.h"
#include "helix/error.h"
#include "helix/tp_overlap.h"

#define F4 4.0 /* bytes per f32 element */

/* rows and cols of tile @p i of @p t as HX_OP_ADD / HX_OP_FILL arguments */
static union hx_op_args rows_of(hx_tensor_t t, int i)
{
    union hx_op_args a = { .rows = { .rows = hx_tile_nrows(t, i), .cols = t->cols } };
    return a;
}

static double tile_elems(hx_tensor_t t, int i)
{
    return (double)hx_tile_nrows(t, i) * t->cols;
}

/* dst tile d := src tile s, as 0 + src (exact) */
static void copy_tile(hx_graph_t g, hx_tensor_t dst, int d, hx_tensor_t src, int s)
{
    union hx_op_args a = rows_of(dst, d);
    a.rows.value = 0.0f;
    struct hx_ref fill = hx_ref_of(dst, d, HX_W);
    hx_graph_add(g, HX_OP_FILL, &a, 1, &fill, 0.0, F4 * tile_elems(dst, d));
    struct hx_ref acc[2] = { hx_ref_of(src, s, HX_R), hx_ref_of(dst, d, HX_RW) };
    hx_graph_add(g, HX_OP_ADD, &a, 2, acc, tile_elems(dst, d), F4 * 3.0 * tile_elems(dst, d));
}

/* full (T tiles) and shard (T/p tiles) of one rotated layout: same columns, dtype f32, every
 * tile of both the same number of rows */
static void check_layout(struct hx_tp_group tp, hx_tensor_t full, hx_tensor_t shard,
                         const char *what)
{
    HX_ASSERT(tp.p >= 2 && tp.r >= 0 && tp.r < tp.p, "%s: group rank %d of %d", what, tp.r,
              tp.p);
    HX_ASSERT(full->dtype == HX_F32 && shard->dtype == HX_F32 && full->cols == shard->cols &&
                  full->ntiles == tp.p * shard->ntiles &&
                  full->rows == tp.p * shard->rows && full->tile_rows == shard->tile_rows &&
                  full->rows % full->tile_rows == 0,
              "%s: %s (%d x %d, %d tiles of %d rows) and %s (%d x %d, %d tiles of %d rows) are "
              "not a rotated layout over %d ranks (f32, equal tiles, %d times the tiles)", what,
              full->name, full->rows, full->cols, full->ntiles, full->tile_rows, shard->name,
              shard->rows, shard->cols, shard->ntiles, shard->tile_rows, tp.p, tp.p);
}

void hx_tp_allgather(hx_graph_t g, struct hx_tp_group tp, hx_tensor_t full, hx_tensor_t shard)
{
    check_layout(tp, full, shard, "tile all-gather");
    int p = tp.p, r = tp.r;
    /* the own tiles first: their GEMMs need nothing from the network */
    for (int i = 0; i < shard->ntiles; i++) {
        copy_tile(g, full, i * p + r, shard, i);
    }
    for (int i = 0; i < shard->ntiles; i++) {
        for (int k = 1; k < p; k++) {
            hx_shift_tile(g, tp.ch, k, shard, i, full, i * p + (r + k) % p);
        }
    }
}

void hx_tp_reduce_scatter(hx_graph_t g, struct hx_tp_group tp, hx_tensor_t shard,
                          hx_tensor_t full, hx_tensor_t const *recv)
{
    check_layout(tp, full, shard, "tile reduce-scatter");
    int p = tp.p, r = tp.r;
    for (int k = 1; k < p; k++) {
        HX_ASSERT(recv[k - 1]->ntiles == shard->ntiles && recv[k - 1]->rows == shard->rows &&
                      recv[k - 1]->cols == shard->cols && recv[k - 1]->dtype == shard->dtype,
                  "tile reduce-scatter into %s: scratch %s is not shaped like it", shard->name,
                  recv[k - 1]->name);
    }
    for (int i = 0; i < shard->ntiles; i++) {
        for (int k = 1; k < p; k++) { /* the partial rank r+k owns, as soon as it is written */
            hx_shift_tile(g, tp.ch, -k, full, i * p + (r + k) % p, recv[k - 1], i);
        }
        /* rank j's partial of our tile: ours in full, rank r-k's in recv[k-1]; summed in
         * group-rank order, so arrival order never shows in the result */
        hx_tensor_t src[2];
        int tile[2];
        for (int j = 0; j < p; j++) {
            int k = ((r - j) % p + p) % p;
            hx_tensor_t t = k == 0 ? full : recv[k - 1];
            int ti = k == 0 ? i * p + r : i;
            union hx_op_args a = rows_of(shard, i);
            if (j < 2) {
                src[j] = t;
                tile[j] = ti;
            }
            if (j == 1) {
                struct hx_ref add[3] = { hx_ref_of(src[0], tile[0], HX_R),
                                         hx_ref_of(src[1], tile[1], HX_R),
                                         hx_ref_of(shard, i, HX_W) };
                hx_graph_add(g, HX_OP_ADD, &a, 3, add, tile_elems(shard, i),
                             F4 * 3.0 * tile_elems(shard, i));
            } else if (j > 1) {
                struct hx_ref acc[2] = { hx_ref_of(t, ti, HX_R), hx_ref_of(shard, i, HX_RW) };
                hx_graph_add(g, HX_OP_ADD, &a, 2, acc, tile_elems(shard, i),
                             F4 * 3.0 * tile_elems(shard, i));
            }
        }
    }
}

void hx_tp_order(hx_graph_t g, struct hx_tp_group tp, int own_last)
{
    g->cur.rot_p = tp.p;
    g->cur.rot_r = tp.r;
    g->cur.rot_own_last = own_last;
}

void hx_tp_order_reset(hx_graph_t g)
{
    g->cur.rot_p = 0;
    g->cur.rot_r = 0;
    g->cur.rot_own_last = 0;
}
