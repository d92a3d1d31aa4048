/* SPDX-License-Identifier: MIT */
/* runtime/smpi_internal.h: the parts of the StarPU-MPI backend (--comm-backend starpu-mpi),
 * shared by its four files:
 *   runtime/comm_smpi.c   the interface of comm_internal.h: a collective's bookkeeping, its
 *                         numbering and tags, and its detached transfers;
 *   runtime/smpi_algos.c  the algorithms: binomial tree, ring and recursive halving;
 *   runtime/smpi_tasks.c  the local tasks: reductions, and copies between tiles and scratch;
 *   runtime/smpi_ops.c    the records of a collective's operations, for the watchdog.
 * Every operation a collective submits (a transfer or a task) counts in c->pending and counts
 * down in hx_smpi_op_done; a failed submission is reported once (hx_smpi_fail) and makes the
 * later ones no-ops, so the collective's task still ends. */
#ifndef HX_RUNTIME_SMPI_INTERNAL_H
#define HX_RUNTIME_SMPI_INTERNAL_H

#include <stddef.h>

#include <starpu.h>

#include "runtime/comm_internal.h"

#define SMPI_TREE_MAX_BYTES (64 << 10)
/* A group's ranks, and the steps of one collective's transfers: a ring all-reduce takes
 * 2(p - 1) steps, the halving all-reduce 2p, a tree's broadcast starts at step
 * SMPI_MAX_RANKS.  The tag's step field (comm_smpi.c) has 16 bits, so 1024 ranks (2048 steps)
 * leave room; arrays of a group's chunks are SMPI_MAX_RANKS handles on the stack (8 KiB). */
#define SMPI_MAX_RANKS 1024
#define SMPI_MAX_STEPS (2 * SMPI_MAX_RANKS)
#define SMPI_MAX_TENSORS 256

/* A piece of a tile: @p n elements at @p p (host memory the collective's task holds). */
struct hx_smpi_seg {
    void *p;
    long n;
};

/* One tensor of an all-gather (in: this rank's share, out: the full tensor) or of a
 * reduce-scatter (in: the full tensor, out: this rank's share) of @p total elements, tag
 * field @p k, kept until hx_smpi_end (comm_smpi.c, flush_parts). */
struct hx_smpi_part {
    const void *in;
    void *out;
    long total;
    int k;
};

/* One operation a collective submitted, kept until the collective ends, so that the
 * watchdog can say which of them a hung collective still waits for (comm_smpi.c,
 * describe): a transfer names its peer, tensor and step, as its tag does. */
struct hx_smpi_op {
    struct hx_smpi_coll *c;
    char kind;                     /* 's' send, 'r' receive, 't' reduction task, 'c' copy task */
    int peer, tensor, step;        /* transfers: world rank, the tag's fields */
    int done;                      /* atomic: its callback ran */
};
/* The records, in blocks whose addresses never move (a callback holds one). */
#define SMPI_OPS_PER_BLOCK 64
struct hx_smpi_ops {
    struct hx_smpi_ops *next;      /* the block filled after this one */
    int n;
    struct hx_smpi_op op[SMPI_OPS_PER_BLOCK];
};

struct hx_smpi_coll {
    struct hx_coll_req r;          /* first: the engine hands it back to done() */
    const struct hx_group *g;
    int dtype;
    size_t esize;
    long number;                   /* this collective's number on its channel */
    int ntensors;                  /* tensors added so far: the tag's tensor field */
    int pending;                   /* operations submitted and not finished (atomic) */
    int failed;                    /* a submission failed: reported, the task still ends */
    int prio;                      /* of its reduction and copy tasks: its lane's (lane_prio) */
    struct hx_smpi_ops *ops, *ops_last; /* every operation submitted, in order */
    /* an all-reduce's tiles, kept until hx_smpi_end packs them into one ring (comm_smpi.c) */
    struct hx_smpi_seg *tiles;
    int *tile_k;                   /* each tile's tensor field, for the unpacked fallback */
    int ntiles, cap_tiles, reduce;
    long packed;                   /* the kept tiles' elements */
    /* an all-gather's or reduce-scatter's tensors, kept likewise (flush_parts) */
    struct hx_smpi_part *parts;
    int nparts, cap_parts;
    int scatter;                   /* the parts are a reduce-scatter's (else an all-gather's) */
    int part_op, part_acc;         /* a reduce-scatter's reduction, and out += instead of := */
};

/* ---- transfers and bookkeeping (runtime/comm_smpi.c) ---- */

/* A vector handle over @p n elements at @p p (RAM), or StarPU-allocated scratch (p NULL);
 * unregistered once every operation submitted on it has run. */
starpu_data_handle_t hx_smpi_vec(struct hx_smpi_coll *c, void *p, long n);
/* Handles over the p shares of @p buf (ops.h's split of @p total; NULL for an empty one). */
void hx_smpi_shares(struct hx_smpi_coll *c, void *buf, long total, starpu_data_handle_t *h);
/* starpu_data_unregister_submit on each of @p h[0..n-1] that is not NULL */
void hx_smpi_unregister_all(starpu_data_handle_t *h, int n);
/* Detached transfers of @p h with group rank @p peer; @p tensor and @p step make the tag. */
void hx_smpi_isend(struct hx_smpi_coll *c, starpu_data_handle_t h, int to, int tensor, int step);
void hx_smpi_irecv(struct hx_smpi_coll *c, starpu_data_handle_t h, int from, int tensor,
                  int step);
/* The record of a new operation of @p c (@p kind as struct hx_smpi_op says; -1 for what a
 * task has not), to pass to hx_smpi_op_done as its callback's argument; NULL (reported, c
 * failed) without memory. */
struct hx_smpi_op *hx_smpi_op_new(struct hx_smpi_coll *c, char kind, int peer, int tensor,
                                  int step);
/* One submitted operation finished: its callback, with its record. */
void hx_smpi_op_done(void *arg);
/* Free @p c's records (the collective is over: no callback of it is left to run). */
void hx_smpi_free_ops(struct hx_smpi_coll *c);
/* The request's describe hook (comm_internal.h): @p r's operations not done, oldest first. */
void hx_smpi_describe(const struct hx_coll_req *r, FILE *f, const char *prefix);
/* Report a failed submission once; the collective's later operations become no-ops. */
void hx_smpi_fail(struct hx_smpi_coll *c, const char *what, int ret);

/* ---- local tasks (runtime/smpi_tasks.c), at the collective's lane priority ---- */

/* acc := acc + in (or max), elementwise, in c's dtype */
void hx_smpi_reduce(struct hx_smpi_coll *c, starpu_data_handle_t acc, starpu_data_handle_t in,
                    int op);
/* scratch @p h := the tile at @p tile */
void hx_smpi_copy_in(struct hx_smpi_coll *c, starpu_data_handle_t h, const void *tile);
/* the tile at @p tile := scratch @p h, or += with @p add */
void hx_smpi_copy_out(struct hx_smpi_coll *c, starpu_data_handle_t h, void *tile, int add);
/* scratch @p h := the segments one after another; the segments := scratch @p h */
void hx_smpi_gather(struct hx_smpi_coll *c, starpu_data_handle_t h, const struct hx_smpi_seg *seg,
                    int nseg);
void hx_smpi_scatter(struct hx_smpi_coll *c, starpu_data_handle_t h, const struct hx_smpi_seg *seg,
                     int nseg, int add);
/* dst := src, or dst += src with @p add; n elements of @p dtype (the copy-out's arithmetic,
 * for callers that hold both pointers already) */
void hx_smpi_put(void *dst, const void *src, long n, int dtype, int add);

/* ---- algorithms (runtime/smpi_algos.c; group ranks, tags from tensor @p k) ---- */

void hx_smpi_tree_bcast(struct hx_smpi_coll *c, starpu_data_handle_t h, int root, int k,
                        int step0);
void hx_smpi_tree_allreduce(struct hx_smpi_coll *c, void *buf, long n, int op, int k);
void hx_smpi_ring_allreduce(struct hx_smpi_coll *c, void *buf, long n, int op, int k);
/* The ring over p chunk handles already made (ops.h's split of @p n; NULL for an empty one),
 * which stay registered: the caller unregisters them. */
void hx_smpi_ring_chunks(struct hx_smpi_coll *c, starpu_data_handle_t *chunk, long n, int op,
                         int k);
/* All-gather around the ring over p chunk handles, this rank's own already in place; and
 * reduce-scatter around it over p scratch chunks holding this rank's contributions, which
 * leaves the sum of chunk me in chunk[me].  Both leave the chunks registered. */
void hx_smpi_ring_allgather_chunks(struct hx_smpi_coll *c, starpu_data_handle_t *chunk, int k);
void hx_smpi_ring_reduce_scatter_chunks(struct hx_smpi_coll *c, starpu_data_handle_t *chunk,
                                        int op, int k);
void hx_smpi_halving_allreduce(struct hx_smpi_coll *c, void *buf, long n, int op, int k);
void hx_smpi_halving_chunks(struct hx_smpi_coll *c, starpu_data_handle_t *chunk, long n, int op,
                            int k);

#endif
