/* SPDX-License-Identifier: MIT */
/* runtime/comm_smpi.c: the StarPU-MPI backend of the collective engine (--comm-backend
 * starpu-mpi).  A collective is a task graph of StarPU-MPI point-to-point transfers
 * (starpu_mpi_isend_detached / starpu_mpi_irecv_detached on registered handles) and local
 * reduction tasks, submitted by the collective's own task (codelets/collective_smpi.c) while
 * it holds its tiles, and completed through the engine like an NCCL request: the graph's
 * operations count down, the engine polls the count, then releases the task, so the
 * channel token, the statistics and the --comm-timeout watchdog are those of the MPI backend.
 *
 * Why inside the task: the tiles are the task's until it ends (its data accesses order it
 * against compute), so the transfers see exactly the data the graph says, and everything
 * the graph IR, the policies and the trace know about a collective node stays true.  The
 * handles registered here cover pieces of those tiles (home node RAM, CPU-only codelets, so
 * StarPU never copies them elsewhere) or scratch that StarPU allocates; all are unregistered
 * with starpu_data_unregister_submit once the graph is submitted.
 *
 * Algorithms: runtime/smpi_algos.c (their costs), chosen per tensor by hx_smpi_algo_for;
 * the records of a collective's operations, which the watchdog lists: runtime/smpi_ops.c;
 * the local reduction and copy tasks: runtime/smpi_tasks.c; what they share:
 * runtime/smpi_internal.h.
 *
 * Tags (starpu_mpi_tag_t, 64 bits): channel (7 bits) | number (32) | tensor (8) | step (16).
 * A collective's number counts the collectives on its channel on this rank (the channel
 * token makes it the same on every member); a send or receive counts the messages between
 * its pair of ranks in its direction on the channel, with step 65535.  So no two messages
 * between a pair of ranks ever share a tag.
 * Test: tests/mpi/collectives.sh (every op, every algorithm forced, 2-4 ranks) and
 * tests/mpi/parity_smpi.sh (training on every kind of mesh). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <starpu.h>
#include <starpu_mpi.h>

#include "helix/error.h"
#include "helix/graph.h"
#include "helix/ops.h"
#include "helix/runtime.h"
#include "helix/tensor.h"
#include "runtime/smpi_internal.h"

/* Message numbering per channel, by worker threads that the channel token serializes:
 * collectives started (every member runs the same ones), and point-to-point messages per
 * peer and direction (members run different ones; MPI's order between a pair is kept). */
static long numbers[HX_GROUP_COUNT];
static long *sent[HX_GROUP_COUNT], *received[HX_GROUP_COUNT];
#define P2P_STEP 0xffff /* the step field of a point-to-point message (above SMPI_MAX_STEPS) */

/* ---- bookkeeping ---- */

static int poll_done(struct hx_coll_req *r)
{
    struct hx_smpi_coll *c = (struct hx_smpi_coll *)r;
    return __atomic_load_n(&c->pending, __ATOMIC_ACQUIRE) == 0 ? 1 : 0;
}

static void coll_done(struct hx_coll_req *r, const MPI_Status *st, int ok)
{
    (void)st;
    (void)ok;
    struct hx_smpi_coll *c = (struct hx_smpi_coll *)r;
    hx_smpi_free_ops(c);
    free(c);
}

void hx_smpi_fail(struct hx_smpi_coll *c, const char *what, int ret)
{
    if (!c->failed) {
        HX_TASK_ERR(HX_ERUNTIME, "%s on channel %s seq %d (StarPU-MPI backend): %s failed: %s",
                    c->r.op, hx_group_name((enum hx_group_kind)c->r.channel), c->r.seq, what,
                    strerror(ret < 0 ? -ret : ret));
    }
    c->failed = 1;
}

static starpu_mpi_tag_t tag_of(const struct hx_smpi_coll *c, int tensor, int step)
{
    return (starpu_mpi_tag_t)(((uint64_t)(c->r.channel & 0x7f) << 56) |
                              (((uint64_t)c->number & 0xffffffffu) << 24) |
                              ((uint64_t)(tensor & 0xff) << 16) | (uint64_t)(step & 0xffff));
}

static int world_of(const struct hx_group *g, int j)
{
    return g->first + j * g->stride;
}

/* A vector handle over @p n elements at @p p (RAM), or StarPU-allocated scratch (p NULL);
 * unregistered once every operation submitted on it has run. */
starpu_data_handle_t hx_smpi_vec(struct hx_smpi_coll *c, void *p, long n)
{
    starpu_data_handle_t h;
    starpu_vector_data_register(&h, p != NULL ? STARPU_MAIN_RAM : -1, (uintptr_t)p,
                                (uint32_t)n, c->esize);
    return h;
}

void hx_smpi_shares(struct hx_smpi_coll *c, void *buf, long total, starpu_data_handle_t *h)
{
    int p = c->g->size;
    for (int j = 0; j < p; j++) {
        long cnt = hx_split_count(total, p, j);
        char *at = (char *)buf + (size_t)hx_split_offset(total, p, j) * c->esize;
        h[j] = cnt > 0 ? hx_smpi_vec(c, at, cnt) : NULL;
    }
}

void hx_smpi_unregister_all(starpu_data_handle_t *h, int n)
{
    for (int j = 0; j < n; j++) {
        if (h[j] != NULL) {
            starpu_data_unregister_submit(h[j]);
        }
    }
}

/* A detached transfer of @p h with group rank @p peer: a send (@p out) or a receive. */
static void xfer(struct hx_smpi_coll *c, starpu_data_handle_t h, int peer, int tensor, int step,
                 int out)
{
    if (c->failed) {
        return;
    }
    int rank = world_of(c->g, peer);
    struct hx_smpi_op *o = hx_smpi_op_new(c, out ? 's' : 'r', rank, tensor, step);
    if (o == NULL) {
        return;
    }
    __atomic_fetch_add(&c->pending, 1, __ATOMIC_RELAXED);
    starpu_mpi_tag_t tag = tag_of(c, tensor, step);
    int ret = out ? starpu_mpi_isend_detached(h, rank, tag, MPI_COMM_WORLD, hx_smpi_op_done, o)
                  : starpu_mpi_irecv_detached(h, rank, tag, MPI_COMM_WORLD, hx_smpi_op_done, o);
    if (ret != 0) {
        o->done = 1; /* (never submitted) */
        __atomic_fetch_sub(&c->pending, 1, __ATOMIC_RELAXED);
        hx_smpi_fail(c, out ? "starpu_mpi_isend_detached" : "starpu_mpi_irecv_detached", ret);
    }
}

void hx_smpi_isend(struct hx_smpi_coll *c, starpu_data_handle_t h, int to, int tensor, int step)
{
    xfer(c, h, to, tensor, step, 1);
}

void hx_smpi_irecv(struct hx_smpi_coll *c, starpu_data_handle_t h, int from, int tensor,
                  int step)
{
    xfer(c, h, from, tensor, step, 0);
}

/* The priority of a collective's reduction and copy tasks on channel @p ch: the top, so a
 * ring's next step is not held behind compute, and one below it on the inter-node lane.
 * Why: these are plain StarPU tasks in the workers' queues, where an inter-node all-reduce's
 * reductions (chunks of a large message) could otherwise run ahead of an intra-node one's
 * queued after them; the intra-node peer waits on the fast link, the inter-node one on the
 * slow link anyway (runtime/comm_engine.c, "Lanes").  Priorities order tasks only: each sum
 * still follows its handles' dependencies, so no number changes. */
static int lane_prio(int ch)
{
    return hx_comm_lane(ch) == HX_LANE_COMM_INTER ? STARPU_MAX_PRIO - 1 : STARPU_MAX_PRIO;
}

/* ---- the interface of comm_internal.h ---- */

void hx_smpi_reset(void)
{
    for (int ch = 0; ch < HX_GROUP_COUNT; ch++) {
        numbers[ch] = 0;
        free(sent[ch]);
        free(received[ch]);
        sent[ch] = received[ch] = NULL;
    }
}

enum hx_smpi_algo hx_smpi_algo_for(long bytes, int p)
{
    const char *e = getenv("HX_SMPI_ALGO");
    int pow2 = p > 0 && (p & (p - 1)) == 0;
    if (e != NULL && strcmp(e, "ring") == 0) {
        return HX_SMPI_RING;
    }
    if (e != NULL && strcmp(e, "tree") == 0) {
        return HX_SMPI_TREE;
    }
    if (e != NULL && strcmp(e, "halving") == 0) { /* a power of two only: else the ring */
        return pow2 ? HX_SMPI_HALVING : HX_SMPI_RING;
    }
    /* halving for a power of two: on the bed's dp 4 (2+2 ranks, 1 Gbit/s) it puts 1.0 n on
     * the link where the ring puts 1.5 n, and with a bucket's tiles packed into one
     * all-reduce (flush_allreduce) its steps were 1.208x and 1.139x Open MPI's against the
     * ring's 1.256x and 1.246x (bench/comm_backend.sh, two runs of 3 rounds each).  Before
     * packing, with one all-reduce per tile, it was the slower (1.33x against 1.24x). */
    if (bytes <= SMPI_TREE_MAX_BYTES) {
        return HX_SMPI_TREE;
    }
    return pow2 ? HX_SMPI_HALVING : HX_SMPI_RING;
}

struct hx_smpi_coll *hx_smpi_begin(int ch, int seq, const char *op, int dtype,
                                   const struct hx_group **g)
{
    MPI_Comm comm;
    if (hx_comm_channel(ch, op, &comm, g) != HX_OK) {
        return NULL;
    }
    if ((*g)->size > SMPI_MAX_RANKS) {
        HX_TASK_ERR(HX_EUNSUPPORTED, "%s on channel %s seq %d: a group of %d ranks; the "
                    "StarPU-MPI backend's tags number at most %d steps, so groups of at most "
                    "%d ranks: use --comm-backend mpi", op, hx_group_name((enum hx_group_kind)ch),
                    seq, (*g)->size, SMPI_MAX_STEPS, SMPI_MAX_RANKS);
        return NULL;
    }
    struct hx_smpi_coll *c = calloc(1, sizeof *c);
    if (c == NULL) {
        HX_TASK_ERR(HX_ENOMEM, "%s on channel %s seq %d: no memory for its state", op,
                    hx_group_name((enum hx_group_kind)ch), seq);
        return NULL;
    }
    c->r.req = MPI_REQUEST_NULL;
    c->r.poll = poll_done;
    c->r.task = starpu_task_get_current();
    c->r.channel = ch;
    c->r.seq = seq;
    c->r.op = op;
    c->r.done = coll_done;
    c->r.describe = hx_smpi_describe;
    c->r.started = hx_comm_count_start();
    c->g = *g;
    c->dtype = dtype;
    c->esize = hx_dtype_size((enum hx_dtype)dtype);
    c->prio = lane_prio(ch);
    c->number = -1; /* the first tensor numbers it: a collective, or a message to a peer */
    return c;
}

/* The tag field of the collective's next tensor, or -1 (reported) past the tags' limits. */
static int next_tensor(struct hx_smpi_coll *c, long n)
{
    if (c->number < 0) {
        c->number = numbers[c->r.channel]++;
    }
    int k = c->ntensors++;
    if (k >= SMPI_MAX_TENSORS || n > (long)UINT32_MAX) {
        HX_TASK_ERR(HX_EUNSUPPORTED, "%s on channel %s seq %d: tensor %d of %ld elements; the "
                    "StarPU-MPI backend takes at most %d tensors of 2^32 - 1 elements per "
                    "collective", c->r.op, hx_group_name((enum hx_group_kind)c->r.channel),
                    c->r.seq, k, n, SMPI_MAX_TENSORS);
        c->failed = 1;
        return -1;
    }
    return k;
}

/* An all-reduce's tiles are kept here and reduced together by hx_smpi_end (flush_allreduce):
 * a DDP bucket or a tensor is many tiles, and a ring per tile put one message per tile on each
 * of the ring's 2(p - 1) steps. */
int hx_smpi_allreduce(struct hx_smpi_coll *c, void *buf, long n, int reduce)
{
    int k = next_tensor(c, n);
    if (k < 0) {
        return HX_EUNSUPPORTED;
    }
    c->r.bytes += (double)n * (double)c->esize;
    if (c->g->size == 1 || n == 0 || c->failed) {
        return c->failed ? HX_ERUNTIME : HX_OK;
    }
    if (c->ntiles == c->cap_tiles) {
        int cap = c->cap_tiles ? 2 * c->cap_tiles : 16;
        struct hx_smpi_seg *t = realloc(c->tiles, (size_t)cap * sizeof *t);
        int *tk = t != NULL ? realloc(c->tile_k, (size_t)cap * sizeof *tk) : NULL;
        if (t != NULL) {
            c->tiles = t;
        }
        if (tk == NULL) {
            hx_smpi_fail(c, "keeping an all-reduce's tiles", ENOMEM);
            return HX_ERUNTIME;
        }
        c->tile_k = tk;
        c->cap_tiles = cap;
    }
    c->tiles[c->ntiles] = (struct hx_smpi_seg){ buf, n };
    c->tile_k[c->ntiles++] = k;
    c->packed += n;
    c->reduce = reduce;
    return HX_OK;
}

/* One tile's all-reduce, by the algorithm for its own size. */
static void allreduce_tile(struct hx_smpi_coll *c, void *buf, long n, int k)
{
    switch (hx_smpi_algo_for((long)((size_t)n * c->esize), c->g->size)) {
    case HX_SMPI_HALVING:
        hx_smpi_halving_allreduce(c, buf, n, c->reduce, k);
        break;
    case HX_SMPI_RING:
        hx_smpi_ring_allreduce(c, buf, n, c->reduce, k);
        break;
    default:
        hx_smpi_tree_allreduce(c, buf, n, c->reduce, k);
    }
}

/* The pieces of the kept tiles that elements [lo, lo + cnt) of their concatenation cover. */
static int cover(const struct hx_smpi_coll *c, long lo, long cnt, struct hx_smpi_seg *seg)
{
    int nseg = 0;
    long at = 0, hi = lo + cnt;
    for (int t = 0; t < c->ntiles && at < hi; t++) {
        long t0 = at, t1 = at + c->tiles[t].n;
        at = t1;
        long a = lo > t0 ? lo : t0, b = hi < t1 ? hi : t1;
        if (a < b) {
            char *p = (char *)c->tiles[t].p + (size_t)(a - t0) * c->esize;
            seg[nseg++] = (struct hx_smpi_seg){ p, b - a };
        }
    }
    return nseg;
}

/* The kept tiles' all-reduce.  When the ring or halving is the algorithm for their total
 * size, it runs once over their concatenation: chunk j (ops.h's split of the total) is
 * gathered from the tiles into StarPU-allocated scratch by a copy task, goes through the
 * algorithm, and is scattered back.  So each step sends one message per peer and chunk
 * whatever the tile count (a DDP bucket of 15 tiles sent 15), for one more copy of the data
 * in memory.  Every element is still summed in the algorithm's fixed order for its chunk, so
 * the result is the same bits under any policy or timing (not the per-tile all-reduces' bits:
 * an element's chunk is not the same).  Otherwise (a total the tree takes, HX_SMPI_ALGO=tree,
 * HX_SMPI_PACK=0, or one tile) each tile goes by the algorithm for its own size, as before
 * packing.  Measured on scripts/netbed: bench/README.md, "The StarPU-MPI backend on the bed". */
static void flush_allreduce(struct hx_smpi_coll *c)
{
    int p = c->g->size;
    long n = c->packed;
    const char *e = getenv("HX_SMPI_PACK");
    enum hx_smpi_algo algo = hx_smpi_algo_for((long)((size_t)n * c->esize), p);
    int pack = c->ntiles > 1 && !(e != NULL && strcmp(e, "0") == 0) && algo != HX_SMPI_TREE &&
               hx_split_count(n, p, 0) <= (long)UINT32_MAX;
    if (!pack) {
        for (int t = 0; t < c->ntiles && !c->failed; t++) {
            allreduce_tile(c, c->tiles[t].p, c->tiles[t].n, c->tile_k[t]);
        }
    } else {
        struct hx_smpi_seg *seg = malloc((size_t)c->ntiles * sizeof *seg);
        starpu_data_handle_t chunk[SMPI_MAX_RANKS] = { 0 };
        if (seg == NULL) {
            hx_smpi_fail(c, "packing an all-reduce's tiles", ENOMEM);
        }
        for (int j = 0; j < p && !c->failed; j++) {
            long cnt = hx_split_count(n, p, j);
            if (cnt > 0) {
                chunk[j] = hx_smpi_vec(c, NULL, cnt);
                hx_smpi_gather(c, chunk[j], seg, cover(c, hx_split_offset(n, p, j), cnt, seg));
            }
        }
        if (algo == HX_SMPI_HALVING) {
            hx_smpi_halving_chunks(c, chunk, n, c->reduce, c->tile_k[0]);
        } else {
            hx_smpi_ring_chunks(c, chunk, n, c->reduce, c->tile_k[0]);
        }
        for (int j = 0; j < p; j++) {
            if (chunk[j] != NULL) {
                long cnt = hx_split_count(n, p, j);
                hx_smpi_scatter(c, chunk[j], seg, cover(c, hx_split_offset(n, p, j), cnt, seg),
                                0);
                starpu_data_unregister_submit(chunk[j]);
            }
        }
        free(seg);
    }
    free(c->tiles);
    free(c->tile_k);
    c->tiles = NULL;
    c->tile_k = NULL;
    c->ntiles = c->cap_tiles = 0;
}

int hx_smpi_broadcast(struct hx_smpi_coll *c, void *buf, long n, int root)
{
    int k = next_tensor(c, n);
    if (k < 0) {
        return HX_EUNSUPPORTED;
    }
    c->r.bytes += c->g->rank == root ? (double)n * (double)c->esize : 0;
    if (c->g->size == 1 || n == 0 || c->failed) {
        return c->failed ? HX_ERUNTIME : HX_OK;
    }
    starpu_data_handle_t h = hx_smpi_vec(c, buf, n);
    hx_smpi_tree_bcast(c, h, root, k, 0);
    starpu_data_unregister_submit(h);
    return c->failed ? HX_ERUNTIME : HX_OK;
}

/* An all-gather's or reduce-scatter's tensor, kept for hx_smpi_end (flush_parts). */
static int keep_part(struct hx_smpi_coll *c, const void *in, void *out, long total, int k)
{
    if (c->nparts == c->cap_parts) {
        int cap = c->cap_parts ? 2 * c->cap_parts : 16;
        struct hx_smpi_part *t = realloc(c->parts, (size_t)cap * sizeof *t);
        if (t == NULL) {
            hx_smpi_fail(c, "keeping a collective's tensors", ENOMEM);
            return HX_ERUNTIME;
        }
        c->parts = t;
        c->cap_parts = cap;
    }
    c->parts[c->nparts++] = (struct hx_smpi_part){ in, out, total, k };
    return HX_OK;
}

int hx_smpi_allgather(struct hx_smpi_coll *c, const void *piece, void *full, long total)
{
    int k = next_tensor(c, total), p = c->g->size, me = c->g->rank;
    if (k < 0) {
        return HX_EUNSUPPORTED;
    }
    long mine = hx_split_count(total, p, me);
    c->r.bytes += (double)mine * (double)c->esize;
    /* this rank's share into place: the task holds both tiles, no transfer reads them yet.
     * Not in a simulation, where no kernel reads a tile: the copy would write real pages of
     * buffers that are never touched otherwise (runtime/tensor.c), 1.6 GB for 16 simulated
     * A40s of two C=4096, T=8192 layers (perf: 90% of the page faults) */
    if (!hx_runtime_simulated()) {
        memcpy((char *)full + (size_t)hx_split_offset(total, p, me) * c->esize, piece,
               (size_t)mine * c->esize);
    }
    if (p == 1 || total == 0 || c->failed) {
        return c->failed ? HX_ERUNTIME : HX_OK;
    }
    c->scatter = 0;
    return keep_part(c, piece, full, total, k);
}

int hx_smpi_reduce_scatter(struct hx_smpi_coll *c, const void *full, void *piece, long total,
                           int op, int accumulate)
{
    int k = next_tensor(c, total), p = c->g->size, me = c->g->rank;
    if (k < 0) {
        return HX_EUNSUPPORTED;
    }
    c->r.bytes += (double)total * (double)c->esize;
    long mine = hx_split_count(total, p, me);
    if (p == 1 || total == 0 || c->failed) { /* the sum over one rank is its share */
        if (!c->failed && mine > 0) {
            hx_smpi_put(piece, full, mine, c->dtype, accumulate);
        }
        return c->failed ? HX_ERUNTIME : HX_OK;
    }
    c->scatter = 1;
    c->part_op = op;
    c->part_acc = accumulate;
    return keep_part(c, full, piece, total, k);
}

/* Share @p j of each of the @p n tensors at @p q, full side (an all-gather's out, a
 * reduce-scatter's in), into @p seg: the segments chunk j packs, in tensor order.  Their
 * count. */
static int share_segs(const struct hx_smpi_coll *c, const struct hx_smpi_part *q, int n, int j,
                      struct hx_smpi_seg *seg)
{
    int p = c->g->size, nseg = 0;
    for (int t = 0; t < n; t++) {
        const char *full = c->scatter ? (const char *)q[t].in : (const char *)q[t].out;
        long cnt = hx_split_count(q[t].total, p, j);
        if (cnt > 0) {
            seg[nseg++] = (struct hx_smpi_seg){
                (void *)(full + (size_t)hx_split_offset(q[t].total, p, j) * c->esize), cnt };
        }
    }
    return nseg;
}

static long seg_total(const struct hx_smpi_seg *seg, int nseg)
{
    long n = 0;
    for (int i = 0; i < nseg; i++) {
        n += seg[i].n;
    }
    return n;
}

/* The kept tensors' all-gather or reduce-scatter, each tensor split into p shares (ops.h).
 * By default one ring per tensor: an all-gather's over the shares of the full tensor itself,
 * a reduce-scatter's over scratch copies of them.  Packed (HX_SMPI_PACK=all, more than one
 * tensor): chunk j, the concatenation of every tensor's share j, goes around one ring, so
 * each step sends one message whatever the tensor count (a ZeRO-3 layer's all-gather has
 * 12 tensors).  An all-gather's chunks are then StarPU-allocated scratch: this rank's
 * gathered from its shares by a copy task, the others scattered into the tensors once
 * arrived; a reduce-scatter's are gathered from the full tensors and chunk me scattered
 * into (or added to) the shares.  A reduce-scatter sums every element of share j in the same
 * ring order either way, so the bits are the same.  Not the default, measured: ZeRO-3 on 8
 * simulated H100s (bench/sim_prefetch.sh --ranks 8, hx-prefetch) took 348.0 ms a step per
 * tensor, 442.1 with the reduce-scatters packed (one ring's reductions, one task a step,
 * where a ring per tensor ran its reductions on several cores at once) and 576.6 with the
 * all-gathers too (one more copy of the gathered tensors); the simulation's wall time fell
 * from 14.7 to 5.0 s (fewer messages).  Packing pays where a message costs more than
 * copying its bytes: a slow link, or a simulation's wall time at large p. */
static void flush_parts(struct hx_smpi_coll *c)
{
    int p = c->g->size, me = c->g->rank;
    const char *e = getenv("HX_SMPI_PACK");
    int pack = c->nparts > 1 && e != NULL && strcmp(e, "all") == 0;
    int per_ring = pack ? c->nparts : 1; /* the tensors one ring carries */
    starpu_data_handle_t chunk[SMPI_MAX_RANKS] = { 0 };
    struct hx_smpi_seg *seg = malloc((size_t)c->nparts * sizeof *seg);
    if (seg == NULL) {
        hx_smpi_fail(c, "packing a collective's tensors", ENOMEM);
    }
    for (int t = 0; t < c->nparts && !c->failed; t += per_ring) {
        const struct hx_smpi_part *q = &c->parts[t];
        for (int j = 0; j < p; j++) {
            int nseg = share_segs(c, q, per_ring, j, seg);
            long cnt = seg_total(seg, nseg);
            if (cnt == 0) {
                chunk[j] = NULL;
            } else if (!pack && !c->scatter) {
                chunk[j] = hx_smpi_vec(c, seg[0].p, cnt); /* the share itself */
            } else {
                chunk[j] = hx_smpi_vec(c, NULL, cnt);
                if (c->scatter || j == me) {
                    hx_smpi_gather(c, chunk[j], seg, nseg);
                }
            }
        }
        if (c->scatter) {
            hx_smpi_ring_reduce_scatter_chunks(c, chunk, c->part_op, q[0].k);
            int nseg = 0;
            for (int u = 0; u < per_ring; u++) {
                long cnt = hx_split_count(q[u].total, p, me);
                if (cnt > 0) {
                    seg[nseg++] = (struct hx_smpi_seg){ q[u].out, cnt };
                }
            }
            if (chunk[me] != NULL) {
                hx_smpi_scatter(c, chunk[me], seg, nseg, c->part_acc);
            }
        } else {
            hx_smpi_ring_allgather_chunks(c, chunk, q[0].k);
            for (int j = 0; j < p && pack; j++) {
                if (chunk[j] != NULL && j != me) {
                    hx_smpi_scatter(c, chunk[j], seg, share_segs(c, q, per_ring, j, seg), 0);
                }
            }
        }
        hx_smpi_unregister_all(chunk, p);
    }
    free(seg);
    free(c->parts);
    c->parts = NULL;
    c->nparts = c->cap_parts = 0;
}

int hx_smpi_alltoall(struct hx_smpi_coll *c, const void *in, void *out, long n)
{
    int k = next_tensor(c, n), p = c->g->size, me = c->g->rank;
    if (k < 0) {
        return HX_EUNSUPPORTED;
    }
    long blk = n / p;
    size_t bytes = (size_t)blk * c->esize;
    c->r.bytes += (double)(n - blk) * (double)c->esize;
    if (!hx_runtime_simulated()) { /* (untouched buffers there: hx_smpi_allgather) */
        memcpy((char *)out + (size_t)me * bytes, (const char *)in + (size_t)me * bytes, bytes);
    }
    if (p == 1 || blk == 0 || c->failed) {
        return c->failed ? HX_ERUNTIME : HX_OK;
    }
    /* pairwise: at step s rank me sends its block for me + s and receives from me - s, so
     * every rank talks to one peer at a time */
    for (int s = 1; s < p; s++) {
        int to = (me + s) % p, from = (me - s + p) % p;
        starpu_data_handle_t hs = hx_smpi_vec(c, (char *)in + (size_t)to * bytes, blk);
        starpu_data_handle_t hr = hx_smpi_vec(c, (char *)out + (size_t)from * bytes, blk);
        hx_smpi_isend(c, hs, to, k, s);
        hx_smpi_irecv(c, hr, from, k, s);
        starpu_data_unregister_submit(hs);
        starpu_data_unregister_submit(hr);
    }
    return c->failed ? HX_ERUNTIME : HX_OK;
}

/* Point to point with group rank @p peer, one message of the whole tile, numbered by the
 * messages between this pair in this direction on the channel. */
static int p2p(struct hx_smpi_coll *c, void *buf, long n, int peer, int out)
{
    long **count = out ? sent : received;
    int ch = c->r.channel;
    if (count[ch] == NULL && (count[ch] = calloc(SMPI_MAX_RANKS, sizeof **count)) == NULL) {
        hx_smpi_fail(c, "allocating the message counters", ENOMEM);
        return HX_ENOMEM;
    }
    /* every message its own number, even two in one collective (a shift sends to one peer
     * and receives from another, or both ways with the same one) */
    c->number = count[ch][peer]++;
    if (next_tensor(c, n) < 0) {
        return HX_EUNSUPPORTED;
    }
    c->r.bytes += out ? (double)n * (double)c->esize : 0;
    if (n == 0 || c->failed) {
        return c->failed ? HX_ERUNTIME : HX_OK;
    }
    starpu_data_handle_t h = hx_smpi_vec(c, buf, n);
    xfer(c, h, peer, 0, P2P_STEP, out);
    starpu_data_unregister_submit(h);
    return c->failed ? HX_ERUNTIME : HX_OK;
}

int hx_smpi_send(struct hx_smpi_coll *c, const void *buf, long n, int peer)
{
    return p2p(c, (void *)buf, n, peer, 1);
}

int hx_smpi_recv(struct hx_smpi_coll *c, void *buf, long n, int peer)
{
    return p2p(c, buf, n, peer, 0);
}

void hx_smpi_end(struct hx_smpi_coll *c, int ok)
{
    (void)ok; /* what was submitted runs either way: a peer waits for it */
    if (c->ntiles > 0) {
        flush_allreduce(c);
    }
    if (c->nparts > 0) {
        flush_parts(c);
    }
    if (__atomic_load_n(&c->pending, __ATOMIC_ACQUIRE) == 0 && c->g->size == 1) {
        hx_comm_local_done(&c->r);
        hx_smpi_free_ops(c);
        free(c);
        return;
    }
    starpu_task_end_dep_add(c->r.task, 1);
    hx_comm_post_kicked(&c->r);
}
