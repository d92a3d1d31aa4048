/* SPDX-License-Identifier: MIT */
/* runtime/comm_internal.h: what the collective codelets (codelets/collective.c), the channels
 * (runtime/comm.c) and the progress engine (runtime/comm_engine.c) share; not installed.
 *
 * A collective's life: the codelet checks its channel (hx_comm_channel), numbers itself
 * (hx_comm_count_start), posts one non-blocking MPI call, adds an end-dependency to its own
 * task and hands the request to the engine (hx_comm_post), which then owns it.  The progress
 * thread tests the request; on completion it calls done() (unpack, accumulate, free) and then
 * starpu_task_end_dep_release, so readers ordered after the task see the finished data.
 * With the NCCL backend (runtime/comm_nccl.c) the request carries no MPI request but a poll
 * function, which the same thread calls where it tests MPI requests. */
#ifndef HX_COMM_INTERNAL_H
#define HX_COMM_INTERNAL_H

#include <stdio.h>

#include <mpi.h>

#include "helix/comm.h"
#include "helix/mesh.h"

struct starpu_task;
struct hx_coll_req;

/* Called by the progress thread once MPI finished the request; @p ok is 0 after an MPI error
 * (already reported); @p st is NULL for a polled (NCCL) request.  Finishes the op and frees
 * @p r (which it embeds). */
typedef void (*hx_coll_done_fn)(struct hx_coll_req *r, const MPI_Status *st, int ok);
/* A request completed by something other than MPI: 1 finished, 0 not yet, -1 failed (the
 * poll reported why).  Called by the progress thread only. */
typedef int (*hx_coll_poll_fn)(struct hx_coll_req *r);
/* What a pending request still waits for, written to @p f after the watchdog's line for it
 * (each line starting with @p prefix); NULL where the request itself is all there is. */
typedef void (*hx_coll_describe_fn)(const struct hx_coll_req *r, FILE *f, const char *prefix);

struct hx_coll_req {
    MPI_Request req;            /* MPI_REQUEST_NULL when poll is set */
    hx_coll_poll_fn poll;       /* NULL: an MPI request */
    struct starpu_task *task;   /* released after done(); NULL: a host call that waits */
    int channel, seq;           /* enum hx_group_kind; sequence number on the channel */
    const char *op;             /* "allreduce", ...: the watchdog's words */
    double bytes;               /* this rank's contribution */
    long started;               /* 1-based count of collectives started on this rank */
    hx_coll_done_fn done;       /* NULL for host calls */
    hx_coll_describe_fn describe; /* NULL: nothing more to say when the watchdog fires */
    int kicked;                 /* its end calls hx_comm_engine_kick: the lane need not poll it
                                 * (set by hx_comm_post_kicked) */
    /* owned by the engine */
    int lane;                   /* enum hx_lane of the channel (hx_comm_lane), set at post */
    double t_post;
    int finished, status;       /* host calls: set under the engine's lock */
    struct hx_coll_req *next;   /* the lane's incoming list */
    struct hx_coll_req *wprev, *wnext; /* the engine's list of every pending request */
};

/* ---- channels (runtime/comm.c) ---- */

/* The communicator and group of channel @p ch for a task running @p op.  @return HX_OK, or a
 * task error (reported) when the channel is closed or out of range. */
int hx_comm_channel(int ch, const char *op, MPI_Comm *comm, const struct hx_group **g);
/* The group of @p ch, NULL when closed. */
const struct hx_group *hx_comm_group(int ch);
/* The communication lane of channel @p ch (enum hx_lane): HX_LANE_COMM_INTRA when every
 * member of this rank's group lives on its node (the group's intra_node flag, from
 * --ranks-per-node), else HX_LANE_COMM_INTER; INTRA for a closed channel.
 * Why the group and not the task's IR node (node->lane): the lane is a fact about where the
 * peers live, which the channel knows for every request, a host call (no node) as much as a
 * task; graphs/gpt.c derives node->lane from this same flag (hx_collectives_set_lanes), but
 * a graph built without it (tests, hand-built graphs) leaves every collective on the intra
 * lane, and the engine must still keep a slow link's requests apart. */
int hx_comm_lane(int ch);
/* "0,2,4" (at most @p len bytes, "..." when longer): the world ranks of @p ch's group. */
void hx_comm_format_members(int ch, char *buf, int len);
/* MPI type of an enum hx_dtype (MPI_DATATYPE_NULL if unknown), MPI op of an hx_reduce_op. */
MPI_Datatype hx_comm_mpi_type(int dtype);
MPI_Op hx_comm_mpi_op(int reduce);
/* Report MPI error @p rc of @p call for request @p r as a task error; returns HX_ERUNTIME. */
int hx_comm_report(int rc, const struct hx_coll_req *r, const char *call);

/* ---- engine (runtime/comm_engine.c) ---- */

int hx_comm_engine_start(double timeout);
/* Block until every posted request finished (the watchdog still runs). */
void hx_comm_engine_drain(void);
void hx_comm_engine_stop(void);
/* Number the next collective started on this rank. */
long hx_comm_count_start(void);
/* Hand a posted request to the progress thread of its channel's lane. */
void hx_comm_post(struct hx_coll_req *r);
/* The same for a polled request whose completion calls hx_comm_engine_kick: while a lane holds
 * only such requests its thread sleeps until kicked instead of polling (runtime/comm_engine.c). */
void hx_comm_post_kicked(struct hx_coll_req *r);
/* A polled request on @p lane (enum hx_lane) may have finished: test the lane now.  From
 * any thread; a lane holding only kicked requests, and every lane of the simulation
 * flavour, sleeps until one (runtime/comm_engine.c). */
void hx_comm_engine_kick(int lane);
/* Post a host request and wait for it; @return HX_OK or HX_ERUNTIME (reported). */
int hx_comm_wait_host(struct hx_coll_req *r);
/* Count a collective that finished without MPI (a group of one rank): its r->bytes on its
 * channel's lane. */
void hx_comm_local_done(const struct hx_coll_req *r);
void hx_comm_engine_stats(struct hx_comm_stats *s);
void hx_comm_engine_reset_stats(void);

/* ---- NCCL (runtime/comm_nccl.c: compiled in a CUDA build only, HX_HAVE_CUDA) ----
 * A collective task on NCCL: hx_nccl_begin (channel checks, ncclGroupStart), one call per
 * tensor (device pointers: the task's buffers, copies on this rank's GPU), hx_nccl_end
 * (ncclGroupEnd, a cudaEvent after the calls on the channel's stream, end-dependency, handed
 * to the engine; with ok == 0, or after a failed call, it only cleans up).  Counts are
 * elements of the begin's dtype; a failed call is reported and makes the later ones no-ops. */
struct hx_nccl_coll;

/* Memory node of each buffer of an NCCL collective codelet (its starpu_codelet.dyn_nodes,
 * HX_NODE_MAXREFS entries): the token in RAM (STARPU_SPECIFIC_NODE_LOCAL on a CPU worker),
 * every data tile on this rank's CUDA memory node.  Filled by hx_comm_open. */
extern int hx_nccl_nodes[];

/* After the MPI channels exist, before the engine starts: one NCCL communicator and stream per
 * channel (@p comms: the channels' MPI communicators, @p m their groups). */
int hx_nccl_open(const MPI_Comm *comms, const struct hx_mesh *m);
/* After the engine drained: destroys the communicators, streams and the cuBLAS handle. */
void hx_nccl_close(void);
/* ncclDataType_t of an enum hx_dtype, ncclRedOp_t of an enum hx_reduce_op; -1 if unknown
 * (ints, so this header needs no nccl.h). */
int hx_nccl_type(int dtype);
int hx_nccl_op(int reduce);

/* The start of @p op (the task's name, "allreduce"...) on channel @p ch: NULL after a
 * reported error; *g is the channel's group. */
struct hx_nccl_coll *hx_nccl_begin(int ch, int seq, const char *op, int dtype,
                                   const struct hx_group **g);
/* In place: buf (n) := sum (max) over the group. */
int hx_nccl_allreduce(struct hx_nccl_coll *c, void *buf, long n, int reduce);
/* In place: buf (n) := group rank @p root's. */
int hx_nccl_broadcast(struct hx_nccl_coll *c, void *buf, long n, int root);
/* full (total) := every rank's piece, which holds this rank's share (ops.h's split rule). */
int hx_nccl_allgather(struct hx_nccl_coll *c, const void *piece, void *full, long total);
/* piece := (or += with @p accumulate) this rank's share of the sum of every rank's full. */
int hx_nccl_reduce_scatter(struct hx_nccl_coll *c, const void *full, void *piece, long total,
                           int reduce, int accumulate);
/* out block j (n/p elements) := rank j's in block rank. */
int hx_nccl_alltoall(struct hx_nccl_coll *c, const void *in, void *out, long n);
/* Point to point with group rank @p peer (counts must match: NCCL cannot check them). */
int hx_nccl_send(struct hx_nccl_coll *c, const void *buf, long n, int peer);
int hx_nccl_recv(struct hx_nccl_coll *c, void *buf, long n, int peer);
void hx_nccl_end(struct hx_nccl_coll *c, int ok);

/* ---- StarPU-MPI (runtime/comm_smpi.c) ----
 * A collective task on StarPU-MPI: hx_smpi_begin (channel checks, numbering), one call per
 * tensor on host pointers the task holds (its tiles, in RAM: the codelets are CPU-only), which
 * submits that tensor's point-to-point transfers and reduction tasks, and hx_smpi_end
 * (end-dependency, handed to the engine, which polls until every submitted operation has
 * run).  A failed call is reported and makes the later ones no-ops. */
struct hx_smpi_coll;
enum hx_smpi_algo { HX_SMPI_TREE, HX_SMPI_RING, HX_SMPI_HALVING };
/* Restart the message numbering: the channels were (re)opened, on groups that may differ
 * from the last ones (the numbers must agree between the members of each group). */
void hx_smpi_reset(void);
/* The algorithm for @p bytes over @p p ranks: HX_SMPI_ALGO=ring|tree|halving, else by size
 * and p (runtime/comm_smpi.c). */
enum hx_smpi_algo hx_smpi_algo_for(long bytes, int p);
struct hx_smpi_coll *hx_smpi_begin(int ch, int seq, const char *op, int dtype,
                                   const struct hx_group **g);
/* In place: buf (n) := sum (max) over the group. */
int hx_smpi_allreduce(struct hx_smpi_coll *c, void *buf, long n, int reduce);
/* In place: buf (n) := group rank @p root's. */
int hx_smpi_broadcast(struct hx_smpi_coll *c, void *buf, long n, int root);
/* full (total) := every rank's piece, which holds this rank's share (ops.h's split rule). */
int hx_smpi_allgather(struct hx_smpi_coll *c, const void *piece, void *full, long total);
/* piece := (or += with @p accumulate) this rank's share of the sum of every rank's full. */
int hx_smpi_reduce_scatter(struct hx_smpi_coll *c, const void *full, void *piece, long total,
                           int reduce, int accumulate);
/* out block j (n/p elements) := rank j's in block rank. */
int hx_smpi_alltoall(struct hx_smpi_coll *c, const void *in, void *out, long n);
/* Point to point with group rank @p peer. */
int hx_smpi_send(struct hx_smpi_coll *c, const void *buf, long n, int peer);
int hx_smpi_recv(struct hx_smpi_coll *c, void *buf, long n, int peer);
void hx_smpi_end(struct hx_smpi_coll *c, int ok);

#endif /* HX_COMM_INTERNAL_H */
