/* SPDX-License-Identifier: MIT */
/* codelets/collective.c: the collectives of include/helix/ops.h (HX_OP_ALLREDUCE ..
 * HX_OP_SHIFT) over MPI, on the communicator of the node's channel (runtime/comm.c).
 * Buffer 0 is the channel token: it only orders, so it is never read.  Data tiles are
 * contiguous (ld == cols) with the element type args.coll.dtype.  Of `total` elements, group
 * rank j holds count_j = total/p + (j < total%p) at offset sum_{i<j} count_i.
 *
 * The packed all-gather and reduce-scatter (2n data buffers: n inputs, then n outputs) move
 * n tensors in one message per rank, each split by that rule (struct split).
 *
 * Each CPU function posts one non-blocking MPI call, adds an end-dependency to its own task
 * and hands the request to the engine (runtime/comm_engine.c); the worker returns at once and
 * the task ends when the progress thread has finished the op (unpacked a packed message,
 * accumulated a reduce-scatter result).  A group of one rank completes here, without MPI.
 * Collectives ignore hx_run_failed(): a rank that skipped one would leave its peers waiting
 * until the watchdog, so after a failure they still run, on whatever data there is.
 * Test: tests/mpi/collectives.c (every op on every channel of 1-, 2- and 4-rank meshes). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "codelets/codelets.h"
#include "runtime/comm_internal.h"

/* A packed all-gather or reduce-scatter of n tensors over p ranks: full[k] (total[k]
 * elements) split by the rule above, piece[k] this rank's share.  Rank j's message is
 * its pieces of full[0..n-1] back to back, so one MPI call moves a whole layer. */
struct split {
    int n, p, me, gather, accumulate;
    void *full[HX_NODE_MAXREFS / 2];
    long total[HX_NODE_MAXREFS / 2];
    void *piece[HX_NODE_MAXREFS / 2];
    long mine;                          /* this rank's message: sum of its pieces */
};

/* One collective in flight.  `r` comes first: the engine hands it back to coll_done. */
struct coll {
    struct hx_coll_req r;
    int dtype;
    size_t esize;
    void *scratch;                      /* packed message, or the result to accumulate */
    int nunpack;                        /* packed tiles to copy back from scratch */
    void *unpack[HX_NODE_MAXREFS];
    long unpack_n[HX_NODE_MAXREFS];
    void *acc;                          /* reduce-scatter with accumulate: acc += scratch */
    long acc_n;
    long recv_n;                        /* recv: elements expected (-1: no check) */
    int *counts, *displs;               /* allgatherv, reduce_scatter */
    struct split split;                 /* packed all-gather / reduce-scatter: n > 0 */
};

/* Element pointer and count of data tile @p i, checked against the collective's dtype. */
static void *tile(void *buffers[], int i, const struct coll *c, long *n)
{
    size_t es = STARPU_MATRIX_GET_ELEMSIZE(buffers[i]);
    int rows = HX_BUF_ROWS(buffers, i), cols = HX_BUF_COLS(buffers, i);
    HX_ASSERT(es == c->esize, "%s on channel %s seq %d: buffer %d has %zu-byte elements, "
              "args.coll.dtype %d has %zu", c->r.op, hx_group_name(c->r.channel), c->r.seq, i,
              es, c->dtype, c->esize);
    HX_ASSERT(HX_BUF_LD(buffers, i) == cols || rows == 1, "%s: buffer %d is (%d,%d) with ld "
              "%d; collectives move contiguous tiles", c->r.op, i, rows, cols,
              HX_BUF_LD(buffers, i));
    *n = (long)rows * cols;
    return (void *)STARPU_MATRIX_GET_PTR(buffers[i]);
}

static void coll_free(struct coll *c)
{
    free(c->scratch);
    free(c->counts);
    free(c);
}

/* y += x, n elements of dtype */
static void add_into(int dtype, void *y, const void *x, long n)
{
    if (dtype == HX_F32) {
        float *a = y;
        const float *b = x;
        for (long i = 0; i < n; i++) {
            a[i] += b[i];
        }
    } else if (dtype == HX_F64) {
        double *a = y;
        const double *b = x;
        for (long i = 0; i < n; i++) {
            a[i] += b[i];
        }
    } else {
        int32_t *a = y;
        const int32_t *b = x;
        for (long i = 0; i < n; i++) {
            a[i] += b[i];
        }
    }
}

/* After MPI.  All-gather: scratch holds every rank's message in rank order; its pieces go to
 * their places in the full tensors.  Reduce-scatter: scratch starts with this rank's summed
 * pieces, which go into (or onto) its piece tensors. */
static void split_unpack(struct coll *c)
{
    const struct split *s = &c->split;
    int gather = s->gather;
    const char *p = c->scratch;
    for (int j = gather ? 0 : s->me; j <= (gather ? s->p - 1 : s->me); j++) {
        for (int k = 0; k < s->n; k++) {
            long n = hx_split_count(s->total[k], s->p, j);
            if (gather) {
                size_t at = (size_t)hx_split_offset(s->total[k], s->p, j) * c->esize;
                memcpy((char *)s->full[k] + at, p, (size_t)n * c->esize);
            } else if (s->accumulate) {
                add_into(c->dtype, s->piece[k], p, n);
            } else {
                memcpy(s->piece[k], p, (size_t)n * c->esize);
            }
            p += (size_t)n * c->esize;
        }
    }
}

/* Progress thread: MPI finished this collective. */
static void coll_done(struct hx_coll_req *r, const MPI_Status *st, int ok)
{
    struct coll *c = (struct coll *)r;
    if (ok) {
        const char *p = c->scratch;
        for (int i = 0; i < c->nunpack; i++) {
            memcpy(c->unpack[i], p, (size_t)c->unpack_n[i] * c->esize);
            p += (size_t)c->unpack_n[i] * c->esize;
        }
        if (c->acc != NULL) {
            add_into(c->dtype, c->acc, c->scratch, c->acc_n);
        }
        if (c->split.n > 0) {
            split_unpack(c);
        }
        int got = 0;
        if (c->recv_n >= 0 && MPI_Get_count(st, hx_comm_mpi_type(c->dtype), &got) ==
                                  MPI_SUCCESS && got != c->recv_n) {
            HX_TASK_ERR(HX_EINVAL, "recv on channel %s seq %d: %d elements arrived, the tile "
                        "holds %ld; the sender's tile must have the same size",
                        hx_group_name(r->channel), r->seq, got, c->recv_n);
        }
    }
    coll_free(c);
}

/* A context for @p node's collective on its channel, or NULL after a reported error. */
static struct coll *coll_begin(const struct hx_node *node, MPI_Comm *comm,
                               const struct hx_group **g)
{
    const struct hx_coll_args *a = &node->args.coll;
    const char *op = hx_op_name(node->op);
    if (hx_comm_channel(a->channel, op, comm, g) != HX_OK) {
        return NULL;
    }
    if (hx_comm_mpi_type(a->dtype) == MPI_DATATYPE_NULL) {
        HX_TASK_ERR(HX_EINVAL, "%s on channel %s seq %d: args.coll.dtype %d is not HX_F32, "
                    "HX_I32 or HX_F64", op, hx_group_name(a->channel), a->seq, a->dtype);
        return NULL;
    }
    struct coll *c = calloc(1, sizeof *c);
    if (c == NULL) {
        HX_TASK_ERR(HX_ENOMEM, "%s on channel %s seq %d: no memory for its state", op,
                    hx_group_name(a->channel), a->seq);
        return NULL;
    }
    c->r.task = starpu_task_get_current();
    c->r.channel = a->channel;
    c->r.seq = a->seq;
    c->r.op = op;
    c->r.done = coll_done;
    c->r.started = hx_comm_count_start();
    c->dtype = a->dtype;
    c->esize = hx_dtype_size((enum hx_dtype)a->dtype);
    c->recv_n = -1;
    return c;
}

/* After MPI_I*: on success the task waits for the engine, else the error is reported. */
static void coll_post(struct coll *c, int rc, const char *call)
{
    if (rc != MPI_SUCCESS) {
        hx_comm_report(rc, &c->r, call);
        coll_free(c);
        return;
    }
    /* only now: the engine cannot release the task before it holds the request */
    starpu_task_end_dep_add(c->r.task, 1);
    hx_comm_post(&c->r);
}

/* Finished without MPI (a group of one rank). */
static void coll_local(struct coll *c)
{
    hx_comm_local_done(&c->r);
    coll_free(c);
}

static int fits_int(struct coll *c, long n, const char *what)
{
    if (n > INT_MAX) {
        HX_TASK_ERR(HX_EINVAL, "%s on channel %s seq %d: %s of %ld elements; one MPI call moves "
                    "at most %d, use smaller tiles", c->r.op, hx_group_name(c->r.channel),
                    c->r.seq, what, n, INT_MAX);
        return 0;
    }
    return 1;
}

/* counts/displs of the message of each of @p p ranks: its shares (ops.h's split) of @p n
 * tensors of totals[k] elements, back to back (n = 1: one tensor) */
static int split_counts(struct coll *c, int n, const long *totals, int p)
{
    long sum = 0;
    for (int k = 0; k < n; k++) {
        sum += totals[k];
    }
    if (!fits_int(c, sum, n > 1 ? "a packed message" : "a message")) {
        return 0;
    }
    c->counts = malloc(sizeof *c->counts * (size_t)p * 2);
    if (c->counts == NULL) {
        HX_TASK_ERR(HX_ENOMEM, "%s: %d counts", c->r.op, p);
        return 0;
    }
    c->displs = c->counts + p;
    long off = 0;
    for (int j = 0; j < p; j++) {
        long cj = 0;
        for (int k = 0; k < n; k++) {
            cj += hx_split_count(totals[k], p, j);
        }
        c->counts[j] = (int)cj;
        c->displs[j] = (int)off;
        off += cj;
    }
    return 1;
}

/* Packs data buffers 1..nbuf-1 into one scratch message (a DDP bucket) or, for one buffer,
 * uses the tile itself.  @p fill: copy the data in (all-reduce; the broadcast root). */
static void *packed_message(void *buffers[], int nbuf, struct coll *c, long *count, int fill)
{
    long n = 0, total = 0;
    void *ptr = NULL;
    if (nbuf == 2) {
        ptr = tile(buffers, 1, c, &n);
        *count = n;
        return ptr;
    }
    for (int i = 1; i < nbuf; i++) {
        c->unpack[c->nunpack] = tile(buffers, i, c, &c->unpack_n[c->nunpack]);
        total += c->unpack_n[c->nunpack++];
    }
    c->scratch = malloc((size_t)(total > 0 ? total : 1) * c->esize);
    if (c->scratch == NULL) {
        HX_TASK_ERR(HX_ENOMEM, "%s on channel %s seq %d: %ld-element packing buffer", c->r.op,
                    hx_group_name(c->r.channel), c->r.seq, total);
        return NULL;
    }
    char *p = c->scratch;
    for (int i = 0; fill && i < c->nunpack; i++) {
        memcpy(p, c->unpack[i], (size_t)c->unpack_n[i] * c->esize);
        p += (size_t)c->unpack_n[i] * c->esize;
    }
    *count = total;
    return c->scratch;
}

/* buffers: token, d1..dk RW.  d := sum (max) over the group. */
static void allreduce_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    MPI_Comm comm;
    const struct hx_group *g;
    struct coll *c = coll_begin(node, &comm, &g);
    long n = 0;
    if (c == NULL) {
        return;
    }
    if (g->size == 1) { /* the sum over one rank is the data */
        for (int i = 1; i < node->nrefs; i++) {
            (void)tile(buffers, i, c, &n);
            c->r.bytes += (double)n * (double)c->esize;
        }
        coll_local(c);
        return;
    }
    void *msg = packed_message(buffers, node->nrefs, c, &n, 1);
    c->r.bytes = (double)n * (double)c->esize;
    if (msg == NULL || !fits_int(c, n, "a packed message")) {
        coll_free(c);
        return;
    }
    int rc = MPI_Iallreduce(MPI_IN_PLACE, msg, (int)n, hx_comm_mpi_type(c->dtype),
                            hx_comm_mpi_op(node->args.coll.reduce), comm, &c->r.req);
    coll_post(c, rc, "MPI_Iallreduce");
}

/* buffers: token, d1..dk RW.  d := the root's (args.coll.peer, a group rank). */
static void broadcast_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    MPI_Comm comm;
    const struct hx_group *g;
    struct coll *c = coll_begin(node, &comm, &g);
    long n = 0;
    if (c == NULL) {
        return;
    }
    int root = node->args.coll.peer;
    if (root < 0 || root >= g->size) {
        HX_TASK_ERR(HX_EINVAL, "broadcast on channel %s seq %d: root %d outside the group of "
                    "%d ranks", hx_group_name(c->r.channel), c->r.seq, root, g->size);
        coll_free(c);
        return;
    }
    int is_root = g->rank == root;
    if (g->size == 1) { /* the root's data is already everywhere */
        coll_local(c);
        return;
    }
    void *msg = packed_message(buffers, node->nrefs, c, &n, is_root);
    c->r.bytes = is_root ? (double)n * (double)c->esize : 0;
    if (msg == NULL || !fits_int(c, n, "a packed message")) {
        coll_free(c);
        return;
    }
    if (is_root) {
        c->nunpack = 0; /* the root's tiles already hold the data */
    }
    int rc = MPI_Ibcast(msg, (int)n, hx_comm_mpi_type(c->dtype), root, comm, &c->r.req);
    coll_post(c, rc, "MPI_Ibcast");
}

/* Split @p total elements over the group (ops.h's rule) and check that this rank's piece
 * holds its share; on failure reports, frees @p c and returns 0. */
static int my_share(struct coll *c, const struct hx_group *g, long total, long mine)
{
    if (!split_counts(c, 1, &total, g->size)) {
        coll_free(c);
        return 0;
    }
    if (mine != c->counts[g->rank]) {
        HX_TASK_ERR(HX_EINVAL, "%s on channel %s seq %d: group rank %d of %d holds %ld of the "
                    "%ld elements, but its share is %d (total/p + (rank < total%%p))", c->r.op,
                    hx_group_name(c->r.channel), c->r.seq, g->rank, g->size, mine, total,
                    c->counts[g->rank]);
        coll_free(c);
        return 0;
    }
    return 1;
}

/* The start of the collectives with one input and one output tile (buffers 1 and 2): the
 * channel, and both tiles with their element counts; NULL when the channel is unusable
 * (already reported). */
static struct coll *begin_in_out(void *buffers[], const struct hx_node *node, MPI_Comm *comm,
                                 const struct hx_group **g, void **in, long *nin, void **out,
                                 long *nout)
{
    struct coll *c = coll_begin(node, comm, g);
    if (c != NULL) {
        *in = tile(buffers, 1, c, nin);
        *out = tile(buffers, 2, c, nout);
    }
    return c;
}

/* The packed forms (refs: token, in[0..n-1], out[0..n-1]; the full tensors are a gather's
 * outputs and a reduce-scatter's inputs): checks every piece against its share, sets the
 * per-rank message counts, allocates scratch = [the receive buffer | the send buffer] and
 * packs the send buffer.  Returns it, or NULL after a reported error (c freed). */
static char *split_begin(void *buffers[], const struct hx_node *node, struct coll *c,
                         const struct hx_group *g, int gather)
{
    struct split *s = &c->split;
    HX_ASSERT(node->nrefs % 2 == 1, "packed %s on channel %s seq %d: %d buffers; token + n in "
              "+ n out", c->r.op, hx_group_name(c->r.channel), c->r.seq, node->nrefs);
    s->n = (node->nrefs - 1) / 2, s->p = g->size, s->me = g->rank, s->gather = gather;
    s->accumulate = node->args.coll.accumulate;
    long sum = 0;
    for (int k = 0; k < s->n; k++) {
        long nin = 0, nout = 0, np;
        void *in = tile(buffers, 1 + k, c, &nin), *out = tile(buffers, 1 + s->n + k, c, &nout);
        s->full[k] = gather ? out : in, s->piece[k] = gather ? in : out;
        s->total[k] = gather ? nout : nin, np = gather ? nin : nout;
        if (np != hx_split_count(s->total[k], s->p, s->me)) {
            HX_TASK_ERR(HX_EINVAL, "packed %s on channel %s seq %d, tensor %d of %d: group rank "
                        "%d of %d holds %ld of the %ld elements, but its share is %ld "
                        "(total/p + (rank < total%%p))", c->r.op, hx_group_name(c->r.channel),
                        c->r.seq, k, s->n, s->me, s->p, np, s->total[k],
                        hx_split_count(s->total[k], s->p, s->me));
            coll_free(c);
            return NULL;
        }
        s->mine += np, sum += s->total[k];
    }
    c->r.bytes = (double)(gather ? s->mine : sum) * (double)c->esize;
    if (!split_counts(c, s->n, s->total, s->p)) {
        coll_free(c);
        return NULL;
    }
    c->scratch = malloc((size_t)(sum + s->mine + 1) * c->esize);
    if (c->scratch == NULL) {
        HX_TASK_ERR(HX_ENOMEM, "packed %s on channel %s seq %d: %ld-element buffers", c->r.op,
                    hx_group_name(c->r.channel), c->r.seq, sum + s->mine);
        coll_free(c);
        return NULL;
    }
    /* the send buffer: a gather's pieces back to back; a reduce-scatter's message to rank
     * j is its pieces of every full tensor, for j = 0..p-1 */
    char *send = (char *)c->scratch + (size_t)(gather ? sum : s->mine) * c->esize, *p = send;
    for (int j = gather ? s->me : 0; j <= (gather ? s->me : s->p - 1); j++) {
        for (int k = 0; k < s->n; k++) {
            size_t n = (size_t)hx_split_count(s->total[k], s->p, j) * c->esize;
            const char *src = gather ? (const char *)s->piece[k]
                                     : (const char *)s->full[k] +
                                           (size_t)hx_split_offset(s->total[k], s->p, j) * c->esize;
            memcpy(p, src, n);
            p += n;
        }
    }
    return send;
}

/* A group of one rank: its own message is the result.  Returns 1 when done so. */
static int split_local(struct coll *c, const struct hx_group *g, const char *send)
{
    if (g->size != 1) {
        return 0;
    }
    memcpy(c->scratch, send, (size_t)c->split.mine * c->esize);
    split_unpack(c);
    coll_local(c);
    return 1;
}

/* Packed all-gather: every rank's message into scratch, unpacked by split_unpack. */
static void allgather_packed(void *buffers[], const struct hx_node *node, struct coll *c,
                             MPI_Comm comm, const struct hx_group *g)
{
    char *send = split_begin(buffers, node, c, g, 1);
    if (send == NULL || split_local(c, g, send)) {
        return;
    }
    MPI_Datatype t = hx_comm_mpi_type(c->dtype);
    int rc = MPI_Iallgatherv(send, (int)c->split.mine, t, c->scratch, c->counts, c->displs, t,
                             comm, &c->r.req);
    coll_post(c, rc, "MPI_Iallgatherv");
}

/* Packed reduce-scatter: the sum of this rank's pieces arrives at the start of scratch. */
static void reduce_scatter_packed(void *buffers[], const struct hx_node *node, struct coll *c,
                                  MPI_Comm comm, const struct hx_group *g)
{
    char *send = split_begin(buffers, node, c, g, 0);
    if (send == NULL || split_local(c, g, send)) {
        return;
    }
    int rc = MPI_Ireduce_scatter(send, c->scratch, c->counts, hx_comm_mpi_type(c->dtype),
                                 hx_comm_mpi_op(node->args.coll.reduce), comm, &c->r.req);
    coll_post(c, rc, "MPI_Ireduce_scatter");
}

/* buffers: token, in (count_rank) R, out (total) W. */
static void allgather_cpu(void *buffers[], void *cl_arg)
{
    MPI_Comm comm;
    const struct hx_group *g;
    void *in, *out;
    long nin = 0, total = 0;
    const struct hx_node *node = cl_arg;
    if (node->nrefs > 3) {
        struct coll *c = coll_begin(node, &comm, &g);
        if (c != NULL) {
            allgather_packed(buffers, node, c, comm, g);
        }
        return;
    }
    struct coll *c = begin_in_out(buffers, cl_arg, &comm, &g, &in, &nin, &out, &total);
    if (c == NULL) {
        return;
    }
    c->r.bytes = (double)nin * (double)c->esize;
    if (!my_share(c, g, total, nin)) {
        return;
    }
    if (g->size == 1) {
        memmove(out, in, (size_t)nin * c->esize);
        coll_local(c);
        return;
    }
    MPI_Datatype t = hx_comm_mpi_type(c->dtype);
    int rc = MPI_Iallgatherv(in, (int)nin, t, out, c->counts, c->displs, t, comm, &c->r.req);
    coll_post(c, rc, "MPI_Iallgatherv");
}

/* buffers: token, in (total) R, out (count_rank) W, or RW with accumulate (out += part). */
static void reduce_scatter_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    MPI_Comm comm;
    const struct hx_group *g;
    void *in, *out;
    long total = 0, nout = 0;
    if (node->nrefs > 3) {
        struct coll *c = coll_begin(node, &comm, &g);
        if (c != NULL) {
            reduce_scatter_packed(buffers, node, c, comm, g);
        }
        return;
    }
    struct coll *c = begin_in_out(buffers, cl_arg, &comm, &g, &in, &total, &out, &nout);
    if (c == NULL) {
        return;
    }
    c->r.bytes = (double)total * (double)c->esize;
    if (!my_share(c, g, total, nout)) {
        return;
    }
    void *dst = out;
    if (node->args.coll.accumulate) {
        c->scratch = malloc((size_t)(nout > 0 ? nout : 1) * c->esize);
        if (c->scratch == NULL) {
            HX_TASK_ERR(HX_ENOMEM, "reduce_scatter on channel %s seq %d: %ld-element result "
                        "buffer", hx_group_name(c->r.channel), c->r.seq, nout);
            coll_free(c);
            return;
        }
        c->acc = out;
        c->acc_n = nout;
        dst = c->scratch;
    }
    if (g->size == 1) {
        if (c->acc != NULL) {
            add_into(c->dtype, out, in, nout);
        } else {
            memmove(out, in, (size_t)nout * c->esize);
        }
        coll_local(c);
        return;
    }
    int rc = MPI_Ireduce_scatter(in, dst, c->counts, hx_comm_mpi_type(c->dtype),
                                 hx_comm_mpi_op(node->args.coll.reduce), comm, &c->r.req);
    coll_post(c, rc, "MPI_Ireduce_scatter");
}

/* buffers: token, in (total) R, out (total) W; block j of out = rank j's block `rank`. */
static void alltoall_cpu(void *buffers[], void *cl_arg)
{
    MPI_Comm comm;
    const struct hx_group *g;
    void *in, *out;
    long nin = 0, nout = 0;
    struct coll *c = begin_in_out(buffers, cl_arg, &comm, &g, &in, &nin, &out, &nout);
    if (c == NULL) {
        return;
    }
    c->r.bytes = (double)nin * (double)c->esize;
    if (nin != nout || nin % g->size != 0) {
        HX_TASK_ERR(HX_EINVAL, "alltoall on channel %s seq %d: in has %ld elements and out "
                    "%ld; both must be the same multiple of the group size %d",
                    hx_group_name(c->r.channel), c->r.seq, nin, nout, g->size);
        coll_free(c);
        return;
    }
    if (!fits_int(c, nin, "a message")) {
        coll_free(c);
        return;
    }
    if (g->size == 1) {
        memmove(out, in, (size_t)nin * c->esize);
        coll_local(c);
        return;
    }
    MPI_Datatype t = hx_comm_mpi_type(c->dtype);
    int block = (int)(nin / g->size);
    int rc = MPI_Ialltoall(in, block, t, out, block, t, comm, &c->r.req);
    coll_post(c, rc, "MPI_Ialltoall");
}

/* SEND buffers: token, data R; RECV: token, data W.  Peer: args.coll.peer (group rank).
 * Within a channel they behave like blocking MPI_Send/MPI_Recv (the token serialises them),
 * so a graph pairs them in a deadlock-free order (one side sends first, the other receives
 * first). */
static void p2p(void *buffers[], const struct hx_node *node, int send)
{
    MPI_Comm comm;
    const struct hx_group *g;
    struct coll *c = coll_begin(node, &comm, &g);
    long n = 0;
    if (c == NULL) {
        return;
    }
    void *data = tile(buffers, 1, c, &n);
    int peer = node->args.coll.peer;
    c->r.bytes = send ? (double)n * (double)c->esize : 0;
    if (peer < 0 || peer >= g->size || peer == g->rank) {
        HX_TASK_ERR(HX_EINVAL, "%s on channel %s seq %d: peer %d is not another rank of the "
                    "group of %d (this is group rank %d)", c->r.op,
                    hx_group_name(c->r.channel), c->r.seq, peer, g->size, g->rank);
        coll_free(c);
        return;
    }
    if (!fits_int(c, n, "a message")) {
        coll_free(c);
        return;
    }
    MPI_Datatype t = hx_comm_mpi_type(c->dtype);
    int rc;
    if (send) {
        rc = MPI_Isend(data, (int)n, t, peer, 0, comm, &c->r.req);
    } else {
        c->recv_n = n;
        rc = MPI_Irecv(data, (int)n, t, peer, 0, comm, &c->r.req);
    }
    coll_post(c, rc, send ? "MPI_Isend" : "MPI_Irecv");
}

static void send_cpu(void *buffers[], void *cl_arg)
{
    p2p(buffers, cl_arg, 1);
}

static void recv_cpu(void *buffers[], void *cl_arg)
{
    p2p(buffers, cl_arg, 0);
}

/* buffers: token, in R, out W; k = args.coll.peer: in goes to group rank (r - k) mod p, out
 * comes from (r + k) mod p.  One MPI_Ialltoallv whose only non-zero counts are those two
 * ranks': one request for the engine, and both transfers posted at once (as separate
 * MPI_Isend/MPI_Irecv tasks on one channel they would wait on each other: the token orders
 * them). */
static void shift_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    MPI_Comm comm;
    const struct hx_group *g;
    struct coll *c = coll_begin(node, &comm, &g);
    long nin = 0, nout = 0;
    if (c == NULL) {
        return;
    }
    void *in = tile(buffers, 1, c, &nin), *out = tile(buffers, 2, c, &nout);
    int k = node->args.coll.peer, p = g->size;
    c->r.bytes = (double)nin * (double)c->esize;
    if (nin != nout || k % p == 0) {
        HX_TASK_ERR(HX_EINVAL, "shift on channel %s seq %d: in has %ld elements and out %ld, "
                    "distance %d over %d ranks; the tiles must match and the distance must "
                    "not be a multiple of the group size", hx_group_name(c->r.channel),
                    c->r.seq, nin, nout, k, p);
        coll_free(c);
        return;
    }
    if (!fits_int(c, nin, "a message")) {
        coll_free(c);
        return;
    }
    c->counts = calloc((size_t)p * 4, sizeof *c->counts); /* scounts, sdispls, rcounts, rdispls */
    if (c->counts == NULL) {
        HX_TASK_ERR(HX_ENOMEM, "shift on channel %s seq %d: %d counts",
                    hx_group_name(c->r.channel), c->r.seq, 4 * p);
        coll_free(c);
        return;
    }
    int *scounts = c->counts, *sdispls = scounts + p, *rcounts = sdispls + p,
        *rdispls = rcounts + p;
    scounts[((g->rank - k) % p + p) % p] = (int)nin;
    rcounts[((g->rank + k) % p + p) % p] = (int)nout;
    MPI_Datatype t = hx_comm_mpi_type(c->dtype);
    int rc = MPI_Ialltoallv(in, scounts, sdispls, t, out, rcounts, rdispls, t, comm,
                            &c->r.req);
    coll_post(c, rc, "MPI_Ialltoallv");
}

/* A fence only orders: its dependencies (token RW after the tiles' writers) are the work. */
static void fence_cpu(void *buffers[], void *cl_arg)
{
    (void)buffers;
    (void)cl_arg;
}

HX_CODELET(allreduce, "allreduce", allreduce_cpu);
HX_CODELET(allgather, "allgather", allgather_cpu);
HX_CODELET(reduce_scatter, "reduce_scatter", reduce_scatter_cpu);
HX_CODELET(broadcast, "broadcast", broadcast_cpu);
HX_CODELET(alltoall, "alltoall", alltoall_cpu);
HX_CODELET(send, "send", send_cpu);
HX_CODELET(recv, "recv", recv_cpu);
HX_CODELET(shift, "shift", shift_cpu);
HX_CODELET(fence, "fence", fence_cpu);
