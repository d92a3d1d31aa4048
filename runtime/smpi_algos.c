/* SPDX-License-Identifier: MIT */
/* runtime/smpi_algos.c: the StarPU-MPI backend's all-reduce and broadcast algorithms, as
 * graphs of detached transfers and reduction tasks (runtime/smpi_internal.h); the choice
 * between them is hx_smpi_algo_for's (runtime/comm_smpi.c).
 *
 * Algorithms (p ranks, n elements, a latency alpha per message, beta per byte, gamma per
 * element reduced), chosen by size and p (hx_smpi_algo_for says why; HX_SMPI_ALGO=ring|tree|
 * halving overrides): the tree up to 64 KiB, above it halving for a power of two of ranks and
 * the ring otherwise.  Above the tree, an all-reduce's tiles go through the algorithm once,
 * packed (runtime/comm_smpi.c, flush_allreduce):
 *   ring (large n; bandwidth-optimal): reduce-scatter then all-gather over p chunks (ops.h's
 *     split rule), 2(p-1) steps each moving n/p:  2(p-1) alpha + 2 (p-1)/p n beta
 *     + (p-1)/p n gamma.  Chunk c is summed along the ring starting at group rank c:
 *     ((x_c + x_{c+1}) + x_{c+2}) + ..., then copied to every rank, so every rank ends with
 *     the same bits.
 *   halving (large n, p a power of two): recursive halving then doubling, log2 p steps each
 *     way moving n/2, n/4, ...:  2 log2 p alpha + 2 (p-1)/p n beta + (p-1)/p n gamma.
 *   tree (small n; latency-optimal): binomial reduce to group rank 0, then binomial
 *     broadcast, 2 ceil(log2 p) steps each moving n:  2 ceil(log2 p) (alpha + n beta)
 *     + ceil(log2 p) n gamma.  Rank r adds r + 1, r + 2, r + 4, ... in that order.
 * Either way the algorithm, not the arrival order, fixes every sum: results are bitwise the
 * same for any scheduler, worker count or timing.  The crossover, SMPI_TREE_MAX_BYTES, is
 * where the ring's extra 2(p-1) - 2 log2 p latencies cost what the tree's extra bandwidth
 * does on the bed's 1 Gbit/s link (alpha ~ 50 us): ~ 64 KiB.
 * Test: tests/mpi/collectives.sh forces each one at 1-4 ranks. */
#include <starpu.h>

#include "helix/ops.h"
#include "runtime/smpi_internal.h"

/* ---- algorithms (group ranks; me = g->rank) ---- */

/* Binomial broadcast of @p h from group rank @p root: in relative ranks v = me - root, rank v
 * receives from v - m at the level m of its lowest set bit, then sends to v + m' for each
 * smaller m'; ceil(log2 p) levels, tags from @p step0. */
void hx_smpi_tree_bcast(struct hx_smpi_coll *c, starpu_data_handle_t h, int root, int k,
                       int step0)
{
    int p = c->g->size, v = (c->g->rank - root + p) % p;
    int top = 1;
    while (top < p) {
        top <<= 1;
    }
    for (int m = top >> 1, s = 0; m >= 1; m >>= 1, s++) {
        if ((v & (2 * m - 1)) == 0 && v + m < p) {
            hx_smpi_isend(c, h, (v + m + root) % p, k, step0 + s);
        } else if ((v & (2 * m - 1)) == m) {
            hx_smpi_irecv(c, h, (v - m + root) % p, k, step0 + s);
        }
    }
}

/* Binomial reduce to group rank 0, then binomial broadcast from it. */
void hx_smpi_tree_allreduce(struct hx_smpi_coll *c, void *buf, long n, int op, int k)
{
    int p = c->g->size, me = c->g->rank, step = 0;
    starpu_data_handle_t h = hx_smpi_vec(c, buf, n), tmp = NULL;
    int mask = 1;
    for (; mask < p; mask <<= 1, step++) {
        if (me & mask) {
            hx_smpi_isend(c, h, me - mask, k, step);
            break;
        }
        if (me + mask < p) {
            if (tmp == NULL) {
                tmp = hx_smpi_vec(c, NULL, n);
            }
            hx_smpi_irecv(c, tmp, me + mask, k, step);
            hx_smpi_reduce(c, h, tmp, op);
        }
    }
    hx_smpi_tree_bcast(c, h, 0, k, SMPI_MAX_RANKS); /* the reverse of the reduce */
    starpu_data_unregister_submit(h);
    if (tmp != NULL) {
        starpu_data_unregister_submit(tmp);
    }
}

/* An algorithm over the p chunks of @p buf itself (one tile, not packed). */
static void in_place(struct hx_smpi_coll *c, void *buf, long n, int op, int k,
                     void (*algo)(struct hx_smpi_coll *, starpu_data_handle_t *, long, int, int))
{
    starpu_data_handle_t chunk[SMPI_MAX_RANKS];
    hx_smpi_shares(c, buf, n, chunk);
    algo(c, chunk, n, op, k);
    hx_smpi_unregister_all(chunk, c->g->size);
}

/* Reduce-scatter then all-gather around the ring me -> me + 1, over the chunks of @p n. */
void hx_smpi_ring_chunks(struct hx_smpi_coll *c, starpu_data_handle_t *chunk, long n, int op,
                         int k)
{
    int p = c->g->size, me = c->g->rank;
    int next = (me + 1) % p, prev = (me + p - 1) % p;
    starpu_data_handle_t tmp[SMPI_MAX_RANKS] = { 0 };
    for (int s = 0; s < p - 1; s++) { /* reduce-scatter: chunk (me - s) goes on */
        int out = (me - s + 2 * p) % p, in = (me - s - 1 + 2 * p) % p;
        if (chunk[out] != NULL) {
            hx_smpi_isend(c, chunk[out], next, k, s);
        }
        if (chunk[in] != NULL) {
            tmp[in] = hx_smpi_vec(c, NULL, hx_split_count(n, p, in));
            hx_smpi_irecv(c, tmp[in], prev, k, s);
            hx_smpi_reduce(c, chunk[in], tmp[in], op);
        }
    }
    for (int s = 0; s < p - 1; s++) { /* all-gather: rank me holds the sum of chunk me + 1 */
        int out = (me + 1 - s + 2 * p) % p, in = (me - s + 2 * p) % p;
        if (chunk[out] != NULL) {
            hx_smpi_isend(c, chunk[out], next, k, p - 1 + s);
        }
        if (chunk[in] != NULL) {
            hx_smpi_irecv(c, chunk[in], prev, k, p - 1 + s);
        }
    }
    hx_smpi_unregister_all(tmp, p);
}

/* Step s sends chunk me - s and receives chunk me - s - 1, which step s + 1 sends on. */
void hx_smpi_ring_allgather_chunks(struct hx_smpi_coll *c, starpu_data_handle_t *chunk, int k)
{
    int p = c->g->size, me = c->g->rank;
    int next = (me + 1) % p, prev = (me + p - 1) % p;
    for (int s = 0; s < p - 1; s++) {
        int out = (me - s + 2 * p) % p, in = (me - s - 1 + 2 * p) % p;
        if (chunk[out] != NULL) {
            hx_smpi_isend(c, chunk[out], next, k, s);
        }
        if (chunk[in] != NULL) {
            hx_smpi_irecv(c, chunk[in], prev, k, s);
        }
    }
}

/* Chunk j is summed along the ring starting at group rank j + 1, ending at rank j: step s
 * sends chunk me - s - 1 and adds the arriving chunk me - s - 2 (received into scratch). */
void hx_smpi_ring_reduce_scatter_chunks(struct hx_smpi_coll *c, starpu_data_handle_t *chunk,
                                        int op, int k)
{
    int p = c->g->size, me = c->g->rank;
    int next = (me + 1) % p, prev = (me + p - 1) % p;
    starpu_data_handle_t tmp[SMPI_MAX_RANKS] = { 0 };
    for (int s = 0; s < p - 1; s++) {
        int out = (me - s - 1 + 2 * p) % p, in = (me - s - 2 + 2 * p) % p;
        if (chunk[out] != NULL) {
            hx_smpi_isend(c, chunk[out], next, k, s);
        }
        if (chunk[in] != NULL) {
            tmp[in] = hx_smpi_vec(c, NULL, (long)starpu_vector_get_nx(chunk[in]));
            hx_smpi_irecv(c, tmp[in], prev, k, s);
            hx_smpi_reduce(c, chunk[in], tmp[in], op);
        }
    }
    hx_smpi_unregister_all(tmp, p);
}

void hx_smpi_ring_allreduce(struct hx_smpi_coll *c, void *buf, long n, int op, int k)
{
    in_place(c, buf, n, op, k, hx_smpi_ring_chunks);
}

/* Recursive halving then recursive doubling (Rabenseifner's all-reduce), p a power of two.
 * Reduce-scatter: at distance d = 1, 2, 4, ... rank me keeps the half of its chunk range
 * that bit d of me selects, sends the other half to me ^ d and adds the half it receives
 * (chunk by chunk, ops.h's split into p chunks); it ends with one chunk, fully summed.
 * All-gather: the same exchanges backwards (d = p/2 .. 1), each rank sending what it holds
 * and receiving its partner's half.  Why beside the ring: the largest exchange (n/2) is at
 * distance 1, the smallest (n/p) at p/2, so with consecutive ranks per node the big ones stay
 * inside a node: on 2+2 ranks each node sends n over the link (both phases), the ring 1.5 n
 * (its two crossing edges carry 2(p-1)/p n each).  Cost: 2 log2 p alpha + 2 (p-1)/p n beta
 * + (p-1)/p n gamma, as the ring's bandwidth with log2 p latencies.  Every sum's order is
 * fixed by the algorithm: (x_a + x_a^1) + (x_a^2 + x_a^3) + ..., the same bits everywhere. */
void hx_smpi_halving_chunks(struct hx_smpi_coll *c, starpu_data_handle_t *chunk, long n, int op,
                            int k)
{
    int p = c->g->size, me = c->g->rank;
    int lo = 0, hi = p, los[16], his[16], s = 0; /* my chunk range, before each halving */
    for (int d = 1; d < p; d <<= 1, s++) {
        int partner = me ^ d, mid = (lo + hi) / 2, low = (me & d) == 0;
        int klo = low ? lo : mid, khi = low ? mid : hi; /* kept; the rest goes to partner */
        for (int j = lo; j < hi; j++) {
            if (chunk[j] == NULL) {
                continue;
            }
            if (j < klo || j >= khi) {
                hx_smpi_isend(c, chunk[j], partner, k, j);
            } else {
                starpu_data_handle_t tmp = hx_smpi_vec(c, NULL, hx_split_count(n, p, j));
                hx_smpi_irecv(c, tmp, partner, k, j);
                hx_smpi_reduce(c, chunk[j], tmp, op);
                starpu_data_unregister_submit(tmp);
            }
        }
        los[s] = lo, his[s] = hi, lo = klo, hi = khi;
    }
    for (int d = p >> 1; d >= 1; d >>= 1) { /* back up: my range, then my partner's too */
        s--;
        int partner = me ^ d;
        for (int j = los[s]; j < his[s]; j++) {
            if (chunk[j] == NULL) {
                continue;
            }
            if (j >= lo && j < hi) {
                hx_smpi_isend(c, chunk[j], partner, k, p + j);
            } else {
                hx_smpi_irecv(c, chunk[j], partner, k, p + j);
            }
        }
        lo = los[s], hi = his[s];
    }
}

void hx_smpi_halving_allreduce(struct hx_smpi_coll *c, void *buf, long n, int op, int k)
{
    in_place(c, buf, n, op, k, hx_smpi_halving_chunks);
}
