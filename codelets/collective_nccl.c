/* SPDX-License-Identifier: MIT */
/* codelets/collective_nccl.c: the collectives of include/helix/ops.h on the NCCL backend
 * (--comm-backend nccl), compiled in a CUDA build only (HX_HAVE_CUDA).  Same buffers, access
 * modes, split rule and packed forms as codelets/collective.c, whose comment describes them;
 * codelets/table.c's hx_op_codelet picks these codelets when the channels were opened on
 * NCCL.  Each codelet has a CPU implementation only, so its task runs on the communication
 * lane like an MPI one, and sets specific_nodes with dyn_nodes = hx_nccl_nodes: StarPU gives
 * the task its data tiles as their copies on this rank's GPU (buffer 0, the token, stays in
 * RAM), so buffers[i] holds device addresses.  The function only checks shapes and passes
 * those addresses to runtime/comm_nccl.c, which enqueues the NCCL calls on the channel's
 * stream and completes the task through the engine; runtime/comm_nccl.c's comment explains
 * the choice and its costs.  Nothing here dereferences a tile.
 * Like the MPI codelets they ignore hx_run_failed(): a rank that skipped a collective would
 * leave its peers waiting until the watchdog.
 * Test: tests/device/table.c (CPU only, the GPU node for every data buffer); nothing runs
 * them here (Debian's StarPU has no CUDA workers). */
#include "codelets/codelets.h"
#include "runtime/comm_internal.h"

/* Device address and element count of data tile @p i: contiguous, of the collective's dtype
 * (a graph bug otherwise, as in codelets/collective.c). */
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
static struct hx_nccl_coll *begin(const struct hx_node *node, const struct hx_group **g)
{
    const struct hx_coll_args *a = &node->args.coll;
    return hx_nccl_begin(a->channel, a->seq, hx_op_name(node->op), a->dtype, g);
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

/* buffers: token, d1..dk RW.  d := sum (max) over the group: one NCCL call per tile, launched
 * together (no packing: NCCL takes each tile where it is). */
static void allreduce_nccl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_group *g;
    struct hx_nccl_coll *c = begin(node, &g);
    int ok = c != NULL;
    for (int i = 1; ok && i < node->nrefs; i++) {
        long n = 0;
        void *d = dtile(buffers, i, node, &n);
        ok = hx_nccl_allreduce(c, d, n, node->args.coll.reduce) == HX_OK;
    }
    if (c != NULL) {
        hx_nccl_end(c, ok);
    }
}

/* buffers: token, d1..dk RW.  d := the root's (args.coll.peer, a group rank). */
static void broadcast_nccl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_group *g;
    struct hx_nccl_coll *c = begin(node, &g);
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
        ok = hx_nccl_broadcast(c, d, n, root) == HX_OK;
    }
    if (c != NULL) {
        hx_nccl_end(c, ok);
    }
}

/* buffers: token, in[0..n-1] R (this rank's shares), out[0..n-1] W (the full tensors); n = 1
 * is the plain all-gather, n > 1 a packed layer. */
static void allgather_nccl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_group *g;
    struct hx_nccl_coll *c = begin(node, &g);
    int n = (node->nrefs - 1) / 2, ok = c != NULL;
    HX_ASSERT(node->nrefs % 2 == 1, "allgather: %d buffers; token + n in + n out", node->nrefs);
    for (int k = 0; ok && k < n; k++) {
        long np = 0, total = 0;
        void *piece = dtile(buffers, 1 + k, node, &np), *full = dtile(buffers, 1 + n + k, node,
                                                                        &total);
        ok = share_ok(node, g, k, n, np, total) &&
             hx_nccl_allgather(c, piece, full, total) == HX_OK;
    }
    if (c != NULL) {
        hx_nccl_end(c, ok);
    }
}

/* buffers: token, in[0..n-1] R (full tensors), out[0..n-1] W, or RW with accumulate (this
 * rank's shares: out (+)= its part of the sum). */
static void reduce_scatter_nccl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_coll_args *a = &node->args.coll;
    const struct hx_group *g;
    struct hx_nccl_coll *c = begin(node, &g);
    int n = (node->nrefs - 1) / 2, ok = c != NULL;
    HX_ASSERT(node->nrefs % 2 == 1, "reduce_scatter: %d buffers; token + n in + n out",
              node->nrefs);
    for (int k = 0; ok && k < n; k++) {
        long total = 0, np = 0;
        void *full = dtile(buffers, 1 + k, node, &total), *piece = dtile(buffers, 1 + n + k, node,
                                                                        &np);
        ok = share_ok(node, g, k, n, np, total) &&
             hx_nccl_reduce_scatter(c, full, piece, total, a->reduce, a->accumulate) == HX_OK;
    }
    if (c != NULL) {
        hx_nccl_end(c, ok);
    }
}

/* buffers: token, in (total) R, out (total) W; block j of out = rank j's block `rank`. */
static void alltoall_nccl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_group *g;
    struct hx_nccl_coll *c = begin(node, &g);
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
        ok = ok && hx_nccl_alltoall(c, in, out, nin) == HX_OK;
        hx_nccl_end(c, ok);
    }
}

/* SEND buffers: token, data R; RECV: token, data W; peer: args.coll.peer (group rank).
 * Paired in a deadlock-free order by the graph, as for MPI (codelets/collective.c). */
static void p2p_nccl(void *buffers[], const struct hx_node *node, int send)
{
    const struct hx_group *g;
    struct hx_nccl_coll *c = begin(node, &g);
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
        ok = ok && (send ? hx_nccl_send(c, d, n, peer) : hx_nccl_recv(c, d, n, peer)) == HX_OK;
        hx_nccl_end(c, ok);
    }
}

static void send_nccl(void *buffers[], void *cl_arg)
{
    p2p_nccl(buffers, cl_arg, 1);
}

static void recv_nccl(void *buffers[], void *cl_arg)
{
    p2p_nccl(buffers, cl_arg, 0);
}

/* A fence only orders.  Its tiles are declared on the GPU node too, where the NCCL
 * collectives that follow want them: the MPI fence would pull them to RAM and back. */
static void fence_nccl(void *buffers[], void *cl_arg)
{
    (void)buffers;
    (void)cl_arg;
}

/* `struct starpu_codelet hx_cl_nccl_<cname>`: CPU only (the communication lane), every data
 * buffer on this rank's GPU (hx_nccl_nodes).  Its own perf model: an NCCL collective does not
 * cost what the MPI one does. */
#define HX_NCCL_CODELET(cname, sname, cpu)                                                    \
    HX_PERFMODEL(cname##_nccl_model, "hx_" sname "_nccl");                                    \
    struct starpu_codelet hx_cl_nccl_##cname = {                                              \
        .name = sname,                                                                        \
        .cpu_funcs = { cpu },                                                                 \
        .cpu_funcs_name = { #cpu },                                                           \
        .nbuffers = STARPU_VARIABLE_NBUFFERS,                                                 \
        .specific_nodes = 1,                                                                  \
        .dyn_nodes = hx_nccl_nodes,                                                           \
        .model = &cname##_nccl_model,                                                         \
    }

HX_NCCL_CODELET(allreduce, "allreduce", allreduce_nccl);
HX_NCCL_CODELET(allgather, "allgather", allgather_nccl);
HX_NCCL_CODELET(reduce_scatter, "reduce_scatter", reduce_scatter_nccl);
HX_NCCL_CODELET(broadcast, "broadcast", broadcast_nccl);
HX_NCCL_CODELET(alltoall, "alltoall", alltoall_nccl);
HX_NCCL_CODELET(send, "send", send_nccl);
HX_NCCL_CODELET(recv, "recv", recv_nccl);
HX_NCCL_CODELET(fence, "fence", fence_nccl);
