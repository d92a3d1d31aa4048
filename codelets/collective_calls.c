/* SPDX-License-Identifier: MIT */
/* codelets/collective_calls.c: the collective codelets' bodies for the backends that take each
 * tile where it is, NCCL (codelets/collective_nccl.c: the tiles' GPU copies) and StarPU-MPI
 * (codelets/collective_smpi.c: the tiles in RAM), written once against their calls
 * (codelets/collective_calls.h).  Same buffers, access modes, split rule and packed forms as
 * codelets/collective.c, whose comment describes them.  Each body checks shapes and hands
 * the tiles' addresses to the backend, which completes the task through the engine; nothing
 * here dereferences a tile.  Like the MPI codelets they ignore hx_run_failed(): a rank that
 * skipped a collective would leave its peers waiting until the watchdog. */
#include "codelets/collective_calls.h"

/* Address and element count of data tile @p i (in the memory the backend reads): contiguous,
 * of the collective's dtype (a graph bug otherwise, as in codelets/collective.c). */
static void *dtile(void *buffers[], int i, const struct hx_node *node, long *n)
{
    const struct hx_coll_args *a = &node->args.coll;
    size_t es = STARPU_MATRIX_GET_ELEMSIZE(buffers[i]);
    int rows = HX_BUF_ROWS(buffers, i), cols = HX_BUF_COLS(buffers, i);
    HX_ASSERT(es == hx_dtype_size((enum hx_dtype)a->dtype), "%s on channel %s seq %d: buffer %d "
              "has %zu-byte elements, args.coll.dtype %d has %zu", hx_op_name(node->op),
              hx_group_name((enum hx_group_kind)a->channel), a->seq, i, es, a->dtype,
              hx_dtype_size((enum hx_dtype)a->dtype));
    HX_ASSERT(HX_BUF_LD(buffers, i) == cols || rows == 1, "%s: buffer %d is (%d,%d) with ld %d; "
              "collectives move contiguous tiles", hx_op_name(node->op), i, rows, cols,
              HX_BUF_LD(buffers, i));
    *n = (long)rows * cols;
    return (void *)STARPU_MATRIX_GET_PTR(buffers[i]);
}

/* The collective's start: NULL after a reported error. */
static void *begin(const struct hx_coll_calls *o, const struct hx_node *node,
                   const struct hx_group **g)
{
    const struct hx_coll_args *a = &node->args.coll;
    return o->begin(a->channel, a->seq, hx_op_name(node->op), a->dtype, g);
}

/* A piece that is not this rank's share of its full tensor: reported, 0. */
static int share_ok(const struct hx_node *node, const struct hx_group *g, int k, int n,
                    long piece, long total)
{
    long want = hx_split_count(total, g->size, g->rank);
    if (piece == want) {
        return 1;
    }
    HX_TASK_ERR(HX_EINVAL, "%s on channel %s seq %d, tensor %d of %d: group rank %d of %d holds "
                "%ld of the %ld elements, but its share is %ld (total/p + (rank < total%%p))",
                hx_op_name(node->op), hx_group_name((enum hx_group_kind)node->args.coll.channel),
                node->args.coll.seq, k, n, g->rank, g->size, piece, total, want);
    return 0;
}

/* buffers: token, d1..dk RW.  d := sum (max) over the group: one call per tile (no packing:
 * both backends take each tile where it is). */
void hx_coll_allreduce_with(const struct hx_coll_calls *o, void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_group *g;
    void *c = begin(o, node, &g);
    int ok = c != NULL;
    for (int i = 1; ok && i < node->nrefs; i++) {
        long n = 0;
        void *d = dtile(buffers, i, node, &n);
        ok = o->allreduce(c, d, n, node->args.coll.reduce) == HX_OK;
    }
    if (c != NULL) {
        o->end(c, ok);
    }
}

/* buffers: token, d1..dk RW.  d := the root's (args.coll.peer, a group rank). */
void hx_coll_broadcast_with(const struct hx_coll_calls *o, void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_group *g;
    void *c = begin(o, node, &g);
    int root = node->args.coll.peer, ok = c != NULL;
    if (ok && (root < 0 || root >= g->size)) {
        HX_TASK_ERR(HX_EINVAL, "broadcast on channel %s seq %d: root %d outside the group of "
                    "%d ranks", hx_group_name((enum hx_group_kind)node->args.coll.channel),
                    node->args.coll.seq, root, g->size);
        ok = 0;
    }
    for (int i = 1; ok && i < node->nrefs; i++) {
        long n = 0;
        void *d = dtile(buffers, i, node, &n);
        ok = o->broadcast(c, d, n, root) == HX_OK;
    }
    if (c != NULL) {
        o->end(c, ok);
    }
}

/* buffers: token, in[0..n-1] R (this rank's shares), out[0..n-1] W (the full tensors); n = 1
 * is the plain all-gather, n > 1 a packed layer. */
void hx_coll_allgather_with(const struct hx_coll_calls *o, void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_group *g;
    void *c = begin(o, node, &g);
    int n = (node->nrefs - 1) / 2, ok = c != NULL;
    HX_ASSERT(node->nrefs % 2 == 1, "allgather: %d buffers; token + n in + n out", node->nrefs);
    for (int k = 0; ok && k < n; k++) {
        long np = 0, total = 0;
        void *piece = dtile(buffers, 1 + k, node, &np), *full = dtile(buffers, 1 + n + k, node,
                                                                        &total);
        ok = share_ok(node, g, k, n, np, total) &&
             o->allgather(c, piece, full, total) == HX_OK;
    }
    if (c != NULL) {
        o->end(c, ok);
    }
}

/* buffers: token, in[0..n-1] R (full tensors), out[0..n-1] W, or RW with accumulate (this
 * rank's shares: out (+)= its part of the sum). */
void hx_coll_reduce_scatter_with(const struct hx_coll_calls *o, void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_coll_args *a = &node->args.coll;
    const struct hx_group *g;
    void *c = begin(o, node, &g);
    int n = (node->nrefs - 1) / 2, ok = c != NULL;
    HX_ASSERT(node->nrefs % 2 == 1, "reduce_scatter: %d buffers; token + n in + n out",
              node->nrefs);
    for (int k = 0; ok && k < n; k++) {
        long total = 0, np = 0;
        void *full = dtile(buffers, 1 + k, node, &total), *piece = dtile(buffers, 1 + n + k, node,
                                                                        &np);
        ok = share_ok(node, g, k, n, np, total) &&
             o->reduce_scatter(c, full, piece, total, a->reduce, a->accumulate) == HX_OK;
    }
    if (c != NULL) {
        o->end(c, ok);
    }
}

/* buffers: token, in (total) R, out (total) W; block j of out = rank j's block `rank`. */
void hx_coll_alltoall_with(const struct hx_coll_calls *o, void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_group *g;
    void *c = begin(o, node, &g);
    long nin = 0, nout = 0;
    int ok = c != NULL;
    if (ok) {
        void *in = dtile(buffers, 1, node, &nin), *out = dtile(buffers, 2, node, &nout);
        if (nin != nout || nin % g->size != 0) {
            HX_TASK_ERR(HX_EINVAL, "alltoall on channel %s seq %d: in has %ld elements and out "
                        "%ld; both must be the same multiple of the group size %d",
                        hx_group_name((enum hx_group_kind)node->args.coll.channel),
                        node->args.coll.seq, nin, nout, g->size);
            ok = 0;
        }
        ok = ok && o->alltoall(c, in, out, nin) == HX_OK;
        o->end(c, ok);
    }
}

/* SEND buffers: token, data R; RECV: token, data W; peer: args.coll.peer (group rank).
 * Paired in a deadlock-free order by the graph, as for MPI (codelets/collective.c). */
void hx_coll_p2p_with(const struct hx_coll_calls *o, void *buffers[], void *cl_arg, int send)
{
    const struct hx_node *node = cl_arg;
    const struct hx_group *g;
    void *c = begin(o, node, &g);
    int peer = node->args.coll.peer, ok = c != NULL;
    if (ok) {
        long n = 0;
        void *d = dtile(buffers, 1, node, &n);
        if (peer < 0 || peer >= g->size || peer == g->rank) {
            HX_TASK_ERR(HX_EINVAL, "%s on channel %s seq %d: peer %d is not another rank of the "
                        "group of %d (this is group rank %d)", hx_op_name(node->op),
                        hx_group_name((enum hx_group_kind)node->args.coll.channel),
                        node->args.coll.seq, peer, g->size, g->rank);
            ok = 0;
        }
        ok = ok && (send ? o->send(c, d, n, peer) : o->recv(c, d, n, peer)) == HX_OK;
        o->end(c, ok);
    }
}

/* buffers: token, in R, out W; k = args.coll.peer: in goes to group rank (r - k) mod p, out
 * comes from (r + k) mod p (ops.h).  Both transfers are posted before either is waited on, so
 * the ranks of a ring never wait on each other's sends. */
void hx_coll_shift_with(const struct hx_coll_calls *o, void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_group *g;
    void *c = begin(o, node, &g);
    int ok = c != NULL;
    if (ok) {
        long nin = 0, nout = 0;
        const void *in = dtile(buffers, 1, node, &nin);
        void *out = dtile(buffers, 2, node, &nout);
        int k = node->args.coll.peer, p = g->size;
        if (nin != nout || k % p == 0) {
            HX_TASK_ERR(HX_EINVAL, "shift on channel %s seq %d: in has %ld elements and out "
                        "%ld, distance %d over %d ranks; the tiles must match and the distance "
                        "must not be a multiple of the group size",
                        hx_group_name((enum hx_group_kind)node->args.coll.channel),
                        node->args.coll.seq, nin, nout, k, p);
            ok = 0;
        }
        int to = ((g->rank - k) % p + p) % p, from = ((g->rank + k) % p + p) % p;
        ok = ok && o->send(c, in, nin, to) == HX_OK && o->recv(c, out, nout, from) == HX_OK;
        o->end(c, ok);
    }
}
