/* SPDX-License-Identifier: MIT */
/* runtime/comm_nccl.c: the NCCL backend of the collective engine (--comm-backend nccl), for
 * tiles that live in GPU memory.  Compiled in a CUDA build only (configure found nvcc, cuBLAS
 * and NCCL: HX_HAVE_CUDA), as C against the CUDA runtime, cuBLAS and NCCL.  It runs only
 * under a CUDA-enabled StarPU on a machine with a GPU.  Debian's StarPU has no CUDA workers,
 * so on this project's machines the file is compiled and linked and never runs:
 * hx_comm_backend_usable (runtime/comm.c) refuses the backend there before any work.  Not
 * one line of it has yet run on a GPU.
 *
 * Communicators.  hx_comm_open creates the MPI channels (runtime/comm.c), then calls hx_nccl_open
 * (runtime/nccl_open.c): one NCCL communicator per channel whose group has more than one rank.
 * Group rank 0 draws an ncclUniqueId, MPI_Bcast carries it over the channel's MPI communicator,
 * and every member calls ncclCommInitRank(group size, id, group rank).  Every rank walks the
 * channels in kind order, as for MPI_Comm_split, and an init waits only for the members of its own
 * group, who reach it after the same earlier kinds, so the inits cannot wait on each other in a
 * cycle.  One GPU per rank, which is NCCL's model (a communicator per group and rank): the device
 * of this rank's CUDA workers, which must all be on one device.  Each channel has its own CUDA
 * stream, at the device's highest priority so that a collective's kernels do not queue behind
 * compute kernels.
 *
 * Where the tasks run, and how they get device pointers.  Collectives stay CPU tasks on the
 * communication lane, as with MPI: the NCCL codelets (codelets/collective_nccl.c) have only a
 * CPU implementation.  A CPU task cannot dereference GPU memory, but StarPU 1.3 can hand it
 * GPU addresses: a codelet with specific_nodes = 1 names, per buffer, the memory node where
 * that buffer's copy must be when the task runs (starpu_codelet.dyn_nodes), whatever kind
 * of worker runs it.  StarPU fetches the tile there (the CUDA worker's driver does the copy
 * if one is needed; the CPU worker waits for it) and buffers[i] is that node's interface.
 * The NCCL codelets point every data buffer at this rank's CUDA memory node (hx_nccl_nodes,
 * filled here) and the token at RAM, so buffers[i] holds the device address of the tile's
 * copy on the GPU, which the task passes to NCCL and never touches.  The options weighed:
 *   - a CUDA implementation of each collective (cuda_funcs) that only enqueues the NCCL call:
 *     device pointers too, but the collectives would run on the GPU's worker, queued among
 *     compute tasks and placed by the policies as compute, which breaks the lanes
 *     (architecture.md, "Lanes and collectives"): rejected.
 *   - staging through RAM, the MPI backend: correct and already there, but a PCIe round trip
 *     per collective and no NVLink, which is what NCCL is for.
 *   - specific nodes (chosen).  Costs: a collective's tiles must be on one known node, hence
 *     one GPU per rank (hx_nccl_open refuses more); a tile that a CPU task wrote is copied to
 *     the GPU first (the bus is crossed once each way, as with MPI); and the policies'
 *     transfer estimates for these tasks count the copy to the GPU (StarPU's estimates read
 *     the codelet's nodes, not the worker's).
 *
 * Ordering and completion.  A task's tiles are complete on the GPU when it starts: StarPU
 * ends a producing CUDA task (STARPU_CUDA_ASYNC) only after its stream ran it, and a copy
 * only after it landed, so the channel's stream waits on no other stream.  The task
 * enqueues its NCCL calls between ncclGroupStart and ncclGroupEnd, records a cudaEvent on
 * the channel's stream after them, adds an end-dependency to itself and hands the request to
 * the engine (runtime/comm_engine.c), exactly as the MPI path hands it an MPI_Request; the
 * progress thread polls cudaEventQuery (and ncclCommGetAsyncError) where it runs MPI_Testsome,
 * then releases the task, and StarPU releases the tiles to their readers.  A channel's
 * collectives hold its token in RW, so at most one is in flight per communicator: nothing
 * here uses one communicator from two threads at once.
 *
 * Splits.  ncclAllGather and ncclReduceScatter need equal counts; ops.h's split rule gives
 * group rank j total/p + (j < total%p) elements, so an uneven split becomes one ncclBroadcast
 * (gather) or ncclReduce (scatter) per rank, rooted at that rank, in the same group call.
 * An accumulating reduce-scatter (out += its part) reduces into stream-ordered scratch
 * (cudaMallocAsync, which does not synchronise the device) and adds it with cuBLAS axpy:
 * float and double; cuBLAS has no int32 axpy, and helix accumulates only float gradients.
 *
 * Limits, said plainly.  (1) NCCL kernels of different communicators can wait on each other
 * when the GPU cannot run them side by side, or when a call that synchronises the device
 * (cudaMalloc: StarPU allocates tiles with it) comes while one waits for a peer.  helix starts
 * the collectives of one channel in the same order on every rank (the token) but lets
 * channels interleave differently per rank, which MPI tolerates and NCCL does not promise to;
 * a hang ends in the watchdog's report (--comm-timeout).  --sched serial-comm, which starts
 * collectives in submission order, gives every rank the same order (a mitigation, unmeasured).
 * (2) A recv cannot check the count that arrived: NCCL reports none.  (3) The ranks agree
 * (an all-reduce over the world) that every GPU and every ncclUniqueId is ready before any
 * ncclCommInitRank, but an init that then fails on one rank alone leaves its group's other
 * members waiting in theirs, before the watchdog runs: that rank reports why, and the job
 * has to be stopped from outside (the launcher's time limit, or by hand).
 * Test: tests/mpi/comm_backend.sh (the flag, the refusal, the symbols), tests/mpi/comm_poll.c
 * (the engine's polled requests on CPU, the type and op mapping), tests/device/table.c. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "helix/error.h"
#include "helix/graph.h"
#include "helix/ops.h"
#include "helix/runtime.h"
#include "helix/tensor.h"
#include "runtime/comm_internal.h"
#include "runtime/nccl_internal.h"

int hx_nccl_nodes[HX_NODE_MAXREFS];

/* The backend's state: one per process, set by hx_nccl_open (runtime/nccl_open.c) and read
 * by the collectives (runtime/comm_nccl.c). */
struct hx_nccl_state hx_nccl = { .device = -1, .blas_lock = PTHREAD_MUTEX_INITIALIZER };

/* One collective in flight.  `r` comes first: the engine hands it back to nccl_done. */
struct hx_nccl_coll {
    struct hx_coll_req r;
    struct hx_nccl_channel *ch;
    int dtype;
    ncclDataType_t type;
    size_t esize;
    int in_group, failed;
    cudaEvent_t done;
    int have_event;
    int nacc;             /* accumulating reduce-scatters: dst += src after ncclGroupEnd */
    struct {
        void *dst;
        const void *src;
        long n;
        int owned;        /* src is scratch from cudaMallocAsync: freed after the add */
    } acc[HX_NODE_MAXREFS];
};

int hx_nccl_type(int dtype)
{
    switch (dtype) {
    case HX_F32: return (int)ncclFloat32;
    case HX_I32: return (int)ncclInt32;
    case HX_F64: return (int)ncclFloat64;
    default: return -1;
    }
}

int hx_nccl_op(int reduce)
{
    switch (reduce) {
    case HX_SUM: return (int)ncclSum;
    case HX_MAX: return (int)ncclMax;
    default: return -1;
    }
}

/* ---- errors: what failed, on which channel and collective, and what to do ---- */

static int nccl_fail(struct hx_nccl_coll *c, ncclResult_t rc, const char *call)
{
    char peers[128];
    c->failed = 1;
    hx_comm_format_members(c->r.channel, peers, sizeof peers);
    const char *last = c->ch->comm != NULL ? ncclGetLastError(c->ch->comm) : "";
    return HX_TASK_ERR(HX_ERUNTIME, "%s on channel %s (seq %d, %.0f bytes, world ranks %s, "
                       "GPU %d): %s failed: %s%s%s; a peer may have died or the ranks built "
                       "different graphs (NCCL_DEBUG=WARN says more)", c->r.op,
                       hx_group_name((enum hx_group_kind)c->r.channel), c->r.seq, c->r.bytes,
                       peers, hx_nccl.device, call, ncclGetErrorString(rc), *last ? ": " : "",
                       last);
}

static int cuda_fail(struct hx_nccl_coll *c, cudaError_t e, const char *call)
{
    c->failed = 1;
    return HX_TASK_ERR(HX_ERUNTIME, "%s on channel %s (seq %d): %s on GPU %d failed: %s; check "
                       "the device (nvidia-smi) and that each rank sees its own GPU "
                       "(CUDA_VISIBLE_DEVICES)", c->r.op,
                       hx_group_name((enum hx_group_kind)c->r.channel), c->r.seq, call,
                       hx_nccl.device, cudaGetErrorString(e));
}

static int nccl_ok(struct hx_nccl_coll *c, ncclResult_t rc, const char *call)
{
    return rc == ncclSuccess ? HX_OK : nccl_fail(c, rc, call);
}

static int cuda_ok(struct hx_nccl_coll *c, cudaError_t e, const char *call)
{
    return e == cudaSuccess ? HX_OK : cuda_fail(c, e, call);
}

/* ---- completion (the progress thread) ---- */

/* The progress thread's CUDA calls go to this rank's GPU: without it, the first one would
 * create a context on device 0, which may be another rank's GPU. */
static __thread int thread_on_device = -1;

static int nccl_poll(struct hx_coll_req *r)
{
    struct hx_nccl_coll *c = (struct hx_nccl_coll *)r;
    if (thread_on_device != hx_nccl.device && cudaSetDevice(hx_nccl.device) == cudaSuccess) {
        thread_on_device = hx_nccl.device;
    }
    cudaError_t e = cudaEventQuery(c->done);
    if (e == cudaSuccess) {
        return 1;
    }
    if (e != cudaErrorNotReady) {
        cuda_fail(c, e, "cudaEventQuery (waiting for the collective)");
        return -1;
    }
    ncclResult_t async = ncclSuccess;
    if (c->ch->comm != NULL && ncclCommGetAsyncError(c->ch->comm, &async) == ncclSuccess &&
        async != ncclSuccess && async != ncclInProgress) {
        /* the kernels would wait forever: abort the communicator, which ends them, so the
         * event completes and the stream's later work can run; the channel is then dead */
        nccl_fail(c, async, "the NCCL communicator (asynchronous error)");
        ncclCommAbort(c->ch->comm);
        c->ch->comm = NULL;
        c->ch->aborted = 1;
        return -1;
    }
    return 0;
}

static void nccl_done(struct hx_coll_req *r, const MPI_Status *st, int ok)
{
    struct hx_nccl_coll *c = (struct hx_nccl_coll *)r;
    (void)st;
    (void)ok;
    cudaEventDestroy(c->done);
    free(c);
}

/* ---- a collective task ---- */

struct hx_nccl_coll *hx_nccl_begin(int ch, int seq, const char *op, int dtype,
                                   const struct hx_group **g)
{
    MPI_Comm mpi_comm;
    if (hx_comm_channel(ch, op, &mpi_comm, g) != HX_OK) {
        return NULL;
    }
    const char *name = hx_group_name((enum hx_group_kind)ch);
    if (!hx_nccl.is_open) {
        HX_TASK_ERR(HX_EINVAL, "%s on channel %s seq %d is an NCCL collective task, but the "
                    "channels were opened for MPI: open them with hx_comm_opts.backend = "
                    "HX_COMM_NCCL before submitting", op, name, seq);
        return NULL;
    }
    if (hx_nccl.ch[ch].aborted) {
        HX_TASK_ERR(HX_ERUNTIME, "%s on channel %s seq %d: the channel's NCCL communicator was "
                    "aborted after an earlier failure (reported above)", op, name, seq);
        return NULL;
    }
    int type = hx_nccl_type(dtype);
    if (type < 0) {
        HX_TASK_ERR(HX_EINVAL, "%s on channel %s seq %d: args.coll.dtype %d is not HX_F32, "
                    "HX_I32 or HX_F64", op, name, seq, dtype);
        return NULL;
    }
    struct hx_nccl_coll *c = calloc(1, sizeof *c);
    if (c == NULL) {
        HX_TASK_ERR(HX_ENOMEM, "%s on channel %s seq %d: no memory for its state", op, name,
                    seq);
        return NULL;
    }
    c->r.req = MPI_REQUEST_NULL;
    c->r.poll = nccl_poll;
    c->r.done = nccl_done;
    c->r.task = starpu_task_get_current();
    c->r.channel = ch;
    c->r.seq = seq;
    c->r.op = op;
    c->r.started = hx_comm_count_start();
    c->ch = &hx_nccl.ch[ch];
    c->dtype = dtype;
    c->type = (ncclDataType_t)type;
    c->esize = hx_dtype_size((enum hx_dtype)dtype);
    /* a CPU worker thread: NCCL and CUDA calls go to the rank's GPU */
    if (cuda_ok(c, cudaSetDevice(hx_nccl.device), "cudaSetDevice") != HX_OK) {
        free(c);
        return NULL;
    }
    if (c->ch->comm != NULL) {
        if (nccl_ok(c, ncclGroupStart(), "ncclGroupStart") != HX_OK) {
            free(c);
            return NULL;
        }
        c->in_group = 1;
    }
    return c;
}

static char *at(const struct hx_nccl_coll *c, const void *p, long elements)
{
    return (char *)p + (size_t)elements * c->esize;
}

static int copy(struct hx_nccl_coll *c, void *dst, const void *src, long n)
{
    if (dst == src || n == 0) {
        return HX_OK;
    }
    return cuda_ok(c, cudaMemcpyAsync(dst, src, (size_t)n * c->esize, cudaMemcpyDeviceToDevice,
                                      c->ch->stream), "cudaMemcpyAsync (device to device)");
}

static int reduce_op(struct hx_nccl_coll *c, int reduce, ncclRedOp_t *op)
{
    int o = hx_nccl_op(reduce);
    if (o < 0) {
        c->failed = 1;
        return HX_TASK_ERR(HX_EINVAL, "%s on channel %s seq %d: args.coll.reduce %d is not "
                           "HX_SUM or HX_MAX", c->r.op,
                           hx_group_name((enum hx_group_kind)c->r.channel), c->r.seq, reduce);
    }
    *op = (ncclRedOp_t)o;
    return HX_OK;
}

int hx_nccl_allreduce(struct hx_nccl_coll *c, void *buf, long n, int reduce)
{
    ncclRedOp_t op = ncclSum; /* (set by reduce_op; GCC cannot see it) */
    if (c->failed || reduce_op(c, reduce, &op) != HX_OK) {
        return HX_ERUNTIME;
    }
    c->r.bytes += (double)n * (double)c->esize;
    if (c->ch->comm == NULL || n == 0) { /* the sum over one rank is the data */
        return HX_OK;
    }
    return nccl_ok(c, ncclAllReduce(buf, buf, (size_t)n, c->type, op, c->ch->comm,
                                    c->ch->stream), "ncclAllReduce");
}

int hx_nccl_broadcast(struct hx_nccl_coll *c, void *buf, long n, int root)
{
    if (c->failed) {
        return HX_ERUNTIME;
    }
    c->r.bytes += c->ch->rank == root ? (double)n * (double)c->esize : 0;
    if (c->ch->comm == NULL || n == 0) {
        return HX_OK;
    }
    return nccl_ok(c, ncclBroadcast(buf, buf, (size_t)n, c->type, root, c->ch->comm,
                                    c->ch->stream), "ncclBroadcast");
}

int hx_nccl_allgather(struct hx_nccl_coll *c, const void *piece, void *full, long total)
{
    int p = c->ch->size, me = c->ch->rank;
    if (c->failed) {
        return HX_ERUNTIME;
    }
    c->r.bytes += (double)hx_split_count(total, p, me) * (double)c->esize;
    if (c->ch->comm == NULL) {
        return copy(c, full, piece, total);
    }
    if (total % p == 0) { /* equal shares: NCCL's all-gather (in place when piece is ours) */
        return total == 0 ? HX_OK
                          : nccl_ok(c, ncclAllGather(piece, full, (size_t)(total / p), c->type,
                                                     c->ch->comm, c->ch->stream),
                                    "ncclAllGather");
    }
    for (int j = 0; j < p; j++) { /* uneven: rank j broadcasts its share to its place */
        long n = hx_split_count(total, p, j);
        char *dst = at(c, full, hx_split_offset(total, p, j));
        if (n > 0 && nccl_ok(c, ncclBroadcast(j == me ? piece : dst, dst, (size_t)n, c->type, j,
                                              c->ch->comm, c->ch->stream),
                             "ncclBroadcast (an uneven all-gather)") != HX_OK) {
            return HX_ERUNTIME;
        }
    }
    return HX_OK;
}

/* dst += src (n elements) after the group's calls: queued for hx_nccl_end */
static int add_later(struct hx_nccl_coll *c, void *dst, const void *src, long n, int owned)
{
    HX_ASSERT(c->nacc < (int)(sizeof c->acc / sizeof c->acc[0]), "%s: more than %d "
              "accumulating tensors in one collective", c->r.op, c->nacc);
    c->acc[c->nacc].dst = dst;
    c->acc[c->nacc].src = src;
    c->acc[c->nacc].n = n;
    c->acc[c->nacc].owned = owned;
    c->nacc++;
    return HX_OK;
}

int hx_nccl_reduce_scatter(struct hx_nccl_coll *c, const void *full, void *piece, long total,
                           int reduce, int accumulate)
{
    int p = c->ch->size, me = c->ch->rank;
    long mine = hx_split_count(total, p, me);
    ncclRedOp_t op = ncclSum; /* (set by reduce_op; GCC cannot see it) */
    if (c->failed || reduce_op(c, reduce, &op) != HX_OK) {
        return HX_ERUNTIME;
    }
    c->r.bytes += (double)total * (double)c->esize;
    if (accumulate && c->dtype != HX_F32 && c->dtype != HX_F64) {
        c->failed = 1;
        return HX_TASK_ERR(HX_EUNSUPPORTED, "reduce_scatter on channel %s seq %d accumulates "
                           "int32 tiles, which the NCCL backend cannot add on the GPU (cuBLAS "
                           "axpy is float and double); use the MPI backend for this graph",
                           hx_group_name((enum hx_group_kind)c->r.channel), c->r.seq);
    }
    if (c->ch->comm == NULL) { /* one rank: its part is the whole input */
        return accumulate ? add_later(c, piece, full, total, 0) : copy(c, piece, full, total);
    }
    void *dst = piece;
    if (accumulate && mine > 0) {
        if (cuda_ok(c, cudaMallocAsync(&dst, (size_t)mine * c->esize, c->ch->stream),
                    "cudaMallocAsync (the reduce-scatter's result before it is added)") !=
            HX_OK) {
            return HX_ERUNTIME;
        }
        add_later(c, piece, dst, mine, 1);
    }
    if (total % p == 0) {
        return total == 0 ? HX_OK
                          : nccl_ok(c, ncclReduceScatter(full, dst, (size_t)(total / p), c->type,
                                                         op, c->ch->comm, c->ch->stream),
                                    "ncclReduceScatter");
    }
    for (int j = 0; j < p; j++) { /* uneven: share j reduced onto rank j */
        long n = hx_split_count(total, p, j);
        char *src = at(c, full, hx_split_offset(total, p, j));
        /* (NCCL reads recvbuff only on the root; elsewhere it gets the send buffer) */
        if (n > 0 && nccl_ok(c, ncclReduce(src, j == me ? dst : src, (size_t)n, c->type, op, j,
                                           c->ch->comm, c->ch->stream),
                             "ncclReduce (an uneven reduce-scatter)") != HX_OK) {
            return HX_ERUNTIME;
        }
    }
    return HX_OK;
}

int hx_nccl_alltoall(struct hx_nccl_coll *c, const void *in, void *out, long n)
{
    int p = c->ch->size, me = c->ch->rank;
    long block = n / p;
    if (c->failed) {
        return HX_ERUNTIME;
    }
    c->r.bytes += (double)n * (double)c->esize;
    if (c->ch->comm == NULL) {
        return copy(c, out, in, n);
    }
    for (int j = 0; j < p && block > 0; j++) {
        int ret = j == me ? copy(c, at(c, out, j * block), at(c, in, j * block), block)
                  : nccl_ok(c, ncclSend(at(c, in, j * block), (size_t)block, c->type, j,
                                        c->ch->comm, c->ch->stream), "ncclSend (all-to-all)");
        if (ret == HX_OK && j != me) {
            ret = nccl_ok(c, ncclRecv(at(c, out, j * block), (size_t)block, c->type, j,
                                      c->ch->comm, c->ch->stream), "ncclRecv (all-to-all)");
        }
        if (ret != HX_OK) {
            return ret;
        }
    }
    return HX_OK;
}

int hx_nccl_send(struct hx_nccl_coll *c, const void *buf, long n, int peer)
{
    if (c->failed) {
        return HX_ERUNTIME;
    }
    c->r.bytes += (double)n * (double)c->esize;
    HX_ASSERT(c->ch->comm != NULL, "send on channel %s: a group of one rank has no peer",
              hx_group_name((enum hx_group_kind)c->r.channel));
    return nccl_ok(c, ncclSend(buf, (size_t)n, c->type, peer, c->ch->comm, c->ch->stream),
                   "ncclSend");
}

int hx_nccl_recv(struct hx_nccl_coll *c, void *buf, long n, int peer)
{
    if (c->failed) {
        return HX_ERUNTIME;
    }
    HX_ASSERT(c->ch->comm != NULL, "recv on channel %s: a group of one rank has no peer",
              hx_group_name((enum hx_group_kind)c->r.channel));
    return nccl_ok(c, ncclRecv(buf, (size_t)n, c->type, peer, c->ch->comm, c->ch->stream),
                   "ncclRecv");
}

/* The queued additions (accumulating reduce-scatters), in stream order after the NCCL calls;
 * scratch is freed in stream order after its addition, also when something failed. */
static void add_queued(struct hx_nccl_coll *c)
{
    static const float one_f = 1.0f;
    static const double one_d = 1.0;
    cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
    if (!c->failed && c->nacc > 0) {
        pthread_mutex_lock(&hx_nccl.blas_lock);
        s = cublasSetStream(hx_nccl.blas, c->ch->stream);
        for (int i = 0; i < c->nacc && s == CUBLAS_STATUS_SUCCESS; i++) {
            s = c->dtype == HX_F32
                    ? cublasSaxpy_64(hx_nccl.blas, c->acc[i].n, &one_f, c->acc[i].src, 1,
                                     c->acc[i].dst, 1)
                    : cublasDaxpy_64(hx_nccl.blas, c->acc[i].n, &one_d, c->acc[i].src, 1,
                                     c->acc[i].dst, 1);
        }
        pthread_mutex_unlock(&hx_nccl.blas_lock);
    }
    if (s != CUBLAS_STATUS_SUCCESS) {
        c->failed = 1;
        HX_TASK_ERR(HX_ERUNTIME, "reduce_scatter on channel %s seq %d: adding the result to "
                    "its %d accumulated tensor%s on GPU %d failed: cuBLAS axpy: %s",
                    hx_group_name((enum hx_group_kind)c->r.channel), c->r.seq, c->nacc,
                    c->nacc > 1 ? "s" : "", hx_nccl.device, cublasGetStatusString(s));
    }
    for (int i = 0; i < c->nacc; i++) {
        if (c->acc[i].owned) {
            cudaFreeAsync((void *)c->acc[i].src, c->ch->stream);
        }
    }
}

void hx_nccl_end(struct hx_nccl_coll *c, int ok)
{
    if (!ok) {
        c->failed = 1;
    }
    if (c->in_group) { /* balanced even after a failure: NCCL's group depth is per thread */
        ncclResult_t rc = ncclGroupEnd();
        if (rc != ncclSuccess && !c->failed) {
            nccl_fail(c, rc, "ncclGroupEnd (launching the collective)");
        }
    }
    add_queued(c);
    if (!c->failed &&
        cuda_ok(c, cudaEventCreateWithFlags(&c->done, cudaEventDisableTiming),
                "cudaEventCreateWithFlags") == HX_OK) {
        c->have_event = 1;
        cuda_ok(c, cudaEventRecord(c->done, c->ch->stream), "cudaEventRecord");
    }
    if (c->failed) { /* reported; the task ends now, as the MPI path's does */
        if (c->have_event) {
            cudaEventDestroy(c->done);
        }
        free(c);
        return;
    }
    /* only now: the engine cannot release the task before it holds the request */
    starpu_task_end_dep_add(c->r.task, 1);
    hx_comm_post(&c->r);
}
