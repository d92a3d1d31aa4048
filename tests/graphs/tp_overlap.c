/* SPDX-License-Identifier: MIT */
/* tests/graphs/tp_overlap.c: the graphs of Flux's tile-level overlap (helix/tp_overlap.h), as
 * plain data, for group rank 1 of 3 with two groups of tiles:
 *  - AG+GEMM: the own tiles are placed without any message; shifts in (group, k) order, step
 *    k bringing rank r+k's tile (k = 1, 2: ranks 2, then 0); the GEMM of the own tile waits
 *    for no shift, each other GEMM for exactly the shift that brought its tile;
 *  - GEMM+RS: the producer's tiles in the order their partials leave (rank 2's, rank 0's, the
 *    own last); shift -k sends the partial of rank r+k right after its GEMM; the sum of each
 *    tile adds the partials in group-rank order 0, 1, 2 (the received one from rank 0, ours,
 *    the one from rank 2);
 *  - the natural order again after hx_tp_order_reset.
 * No StarPU worker runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/helix.h"
#include "tap.h"

enum { P = 3, R = 1, GROUPS = 2, ROWS = 4, C = 8 };

static int depends(const struct hx_deps *d, int from, int to)
{
    for (int k = d->off[to]; k < d->off[to + 1]; k++) {
        if (d->pred[k] == from) {
            return 1;
        }
    }
    return 0;
}

/* The node that last wrote tile @p t of @p x before node @p before (-1: none). */
static int writer(hx_graph_t g, hx_tensor_t x, int t, int before)
{
    int w = -1;
    for (int i = 0; i < before; i++) {
        const struct hx_node *n = &g->nodes[i];
        for (int k = 0; k < n->nrefs; k++) {
            if (n->refs[k].tensor == x->id && n->refs[k].tile == t && n->refs[k].mode != HX_R) {
                w = i;
            }
        }
    }
    return w;
}

static void allgather_gemm(void)
{
    hx_graph_t g = hx_graph_create();
    hx_tensor_t shard = hx_graph_tensor(g, "x.shard", HX_F32, HX_ROLE_ACTIVATION,
                                        GROUPS * ROWS, C, ROWS);
    hx_tensor_t full = hx_graph_tensor(g, "x.full", HX_F32, HX_ROLE_ACTIVATION,
                                       P * GROUPS * ROWS, C, ROWS);
    hx_tensor_t y = hx_graph_tensor(g, "y", HX_F32, HX_ROLE_ACTIVATION, P * GROUPS * ROWS, C,
                                    ROWS);
    hx_tensor_t w = hx_graph_tensor(g, "w", HX_F32, HX_ROLE_PARAM, C, C, 0);
    struct hx_tp_group tp = { HX_GROUP_TP, P, R };
    hx_tp_allgather(g, tp, full, shard);
    int gemm0 = g->nnodes;
    hx_tp_order(g, tp, 0);
    hx_linear_fwd(g, y, full, w, NULL);
    hx_tp_order_reset(g);

    /* the shifts: (group i, k = 1, 2) bring rank (1 + k) % 3's tile into full tile i*3 + it */
    int nshift = 0, order_ok = 1, own_ok = 1;
    for (int i = 0; i < gemm0; i++) {
        const struct hx_node *n = &g->nodes[i];
        if (n->op == HX_OP_SHIFT) {
            int grp = nshift / (P - 1), k = nshift % (P - 1) + 1;
            order_ok &= n->args.coll.peer == k && n->refs[1].tensor == shard->id &&
                        n->refs[1].tile == grp && n->refs[2].tensor == full->id &&
                        n->refs[2].tile == grp * P + (R + k) % P;
            nshift++;
        } else {
            own_ok &= n->kind != HX_KIND_COMM;
        }
    }
    tap_ok(nshift == GROUPS * (P - 1) && order_ok && own_ok,
           "all-gather: %d shifts, group by group, step k from rank r+k (k = 1, 2), the own "
           "tiles placed without a message", nshift);

    /* GEMM tiles: own first in each group (rank 1, 2, 0), each after its tile's writer */
    struct hx_deps d;
    int deps = hx_graph_deps(g, &d) == HX_OK;
    int tiles_ok = g->nnodes - gemm0 == P * GROUPS, wait_ok = deps;
    for (int e = 0; tiles_ok && e < P * GROUPS; e++) {
        const struct hx_node *n = &g->nodes[gemm0 + e];
        int t = n->refs[0].tile, want = e - e % P + (R + e % P) % P;
        tiles_ok &= n->op == HX_OP_MATMUL && t == want;
        int src = writer(g, full, t, gemm0 + e);
        int own = t % P == R;
        wait_ok &= src >= 0 && depends(&d, src, gemm0 + e) &&
                   (own ? g->nodes[src].op != HX_OP_SHIFT : g->nodes[src].op == HX_OP_SHIFT);
    }
    tap_ok(tiles_ok, "AG+GEMM: the GEMM's tiles in rotated order, own first (1, 2, 0 per "
           "group)");
    tap_ok(wait_ok, "AG+GEMM: the own tiles' GEMMs wait for no message, the others each for "
           "the one shift that brought their tile");
    if (deps) {
        hx_deps_free(&d);
    }
    hx_graph_destroy(g);
}

static void gemm_reduce_scatter(void)
{
    hx_graph_t g = hx_graph_create();
    hx_tensor_t x = hx_graph_tensor(g, "x", HX_F32, HX_ROLE_ACTIVATION, P * GROUPS * ROWS, C,
                                    ROWS);
    hx_tensor_t part = hx_graph_tensor(g, "y.part", HX_F32, HX_ROLE_ACTIVATION,
                                       P * GROUPS * ROWS, C, ROWS);
    hx_tensor_t shard = hx_graph_tensor(g, "y.shard", HX_F32, HX_ROLE_ACTIVATION,
                                        GROUPS * ROWS, C, ROWS);
    hx_tensor_t recv[P - 1];
    for (int k = 0; k < P - 1; k++) {
        char name[32];
        snprintf(name, sizeof name, "y.from-%d", k + 1);
        recv[k] = hx_graph_tensor(g, name, HX_F32, HX_ROLE_ACTIVATION, GROUPS * ROWS, C, ROWS);
    }
    hx_tensor_t w = hx_graph_tensor(g, "w", HX_F32, HX_ROLE_PARAM, C, C, 0);
    struct hx_tp_group tp = { HX_GROUP_TP, P, R };
    hx_tp_order(g, tp, 1);
    hx_linear_fwd(g, part, x, w, NULL);
    hx_tp_order_reset(g);
    int rs0 = g->nnodes;
    hx_tp_reduce_scatter(g, tp, shard, part, recv);
    hx_linear_fwd(g, part, x, w, NULL); /* after the reset: natural order */
    int after = g->nnodes - P * GROUPS;

    int order_ok = 1;
    for (int e = 0; e < P * GROUPS; e++) { /* per group: rank 2's, rank 0's, rank 1's (own) */
        int want = e - e % P + (R + e % P + 1) % P;
        order_ok &= g->nodes[e].refs[2].tile == want;
    }
    tap_ok(order_ok, "GEMM+RS: the producer's tiles in the order their partials leave (2, 0, "
           "then the own 1, per group)");

    /* per group: shift -1 sends rank 2's partial and receives rank 0's into recv[0]; shift -2
     * sends rank 0's and receives rank 2's into recv[1]; then shard = recv[0] + own, += recv[1] */
    int shifts_ok = 1, sum_ok = 1, node = rs0;
    for (int i = 0; i < GROUPS; i++) {
        for (int k = 1; k < P; k++, node++) {
            const struct hx_node *n = &g->nodes[node];
            shifts_ok &= n->op == HX_OP_SHIFT && n->args.coll.peer == -k &&
                         n->refs[1].tensor == part->id && n->refs[1].tile == i * P + (R + k) % P &&
                         n->refs[2].tensor == recv[k - 1]->id && n->refs[2].tile == i;
        }
        const struct hx_node *a = &g->nodes[node++], *b = &g->nodes[node++];
        sum_ok &= a->op == HX_OP_ADD && a->nrefs == 3 && a->refs[0].tensor == recv[0]->id &&
                  a->refs[1].tensor == part->id && a->refs[1].tile == i * P + R &&
                  a->refs[2].tensor == shard->id && a->refs[2].tile == i;
        sum_ok &= b->op == HX_OP_ADD && b->nrefs == 2 && b->refs[0].tensor == recv[1]->id &&
                  b->refs[1].tensor == shard->id && b->refs[1].mode == HX_RW;
    }
    tap_ok(shifts_ok, "GEMM+RS: shift -k sends the partial rank r+k owns and receives rank "
           "r-k's, group by group");
    tap_ok(sum_ok, "GEMM+RS: each tile summed in group-rank order (rank 0's, ours, rank 2's)");
    int natural = 1;
    for (int e = 0; e < P * GROUPS; e++) {
        natural &= g->nodes[after + e].refs[2].tile == e;
    }
    tap_ok(natural, "after hx_tp_order_reset the builders emit tiles 0, 1, 2, ... again");
    hx_graph_destroy(g);
}

int main(void)
{
    tap_plan(7);
    allgather_gemm();
    gemm_reduce_scatter();
    return tap_exit();
}
