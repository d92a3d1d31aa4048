/* SPDX-License-Identifier: MIT */
/* runtime/comm_internal.h: what the collective codelets (codelets/collective.c), the channels
 * (runtime/comm.c) and the progress engine (runtime/comm_engine.c) share; not installed.
 *
 * A collective's life: the codelet checks its channel (hx_comm_channel), numbers itself
 * (hx_comm_count_start), posts one non-blocking MPI call, adds an end-dependency to its own
 * task and hands the request to the engine (hx_comm_post), which then owns it.  The progress
 * thread tests the request; on completion it calls done() (unpack, accumulate, free) and then
 * starpu_task_end_dep_release, so readers ordered after the task see the finished data. */
#ifndef HX_COMM_INTERNAL_H
#define HX_COMM_INTERNAL_H

#include <mpi.h>

#include "helix/comm.h"
#include "helix/mesh.h"

struct starpu_task;
struct hx_coll_req;

/* Called by the progress thread once MPI finished the request; @p ok is 0 after an MPI error
 * (already reported).  Finishes the op and frees @p r (which it embeds). */
typedef void (*hx_coll_done_fn)(struct hx_coll_req *r, const MPI_Status *st, int ok);

struct hx_coll_req {
    MPI_Request req;
    struct starpu_task *task;   /* released after done(); NULL: a host call that waits */
    int channel, seq;           /* enum hx_group_kind; sequence number on the channel */
    const char *op;             /* "allreduce", ...: the watchdog's words */
    double bytes;               /* this rank's contribution */
    long started;               /* 1-based count of collectives started on this rank */
    hx_coll_done_fn done;       /* NULL for host calls */
    /* owned by the engine */
    double t_post;
    int finished, status;       /* host calls: set under the engine's lock */
    struct hx_coll_req *next;
};

/* ---- channels (runtime/comm.c) ---- */

/* The communicator and group of channel @p ch for a task running @p op.  @return HX_OK, or a
 * task error (reported) when the channel is closed or out of range. */
int hx_comm_channel(int ch, const char *op, MPI_Comm *comm, const struct hx_group **g);
/* The group of @p ch, NULL when closed. */
const struct hx_group *hx_comm_group(int ch);
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
/* Hand a posted request to the progress thread. */
void hx_comm_post(struct hx_coll_req *r);
/* Post a host request and wait for it; @return HX_OK or HX_ERUNTIME (reported). */
int hx_comm_wait_host(struct hx_coll_req *r);
/* Count a collective that finished without MPI (a group of one rank). */
void hx_comm_local_done(double bytes);
void hx_comm_engine_stats(struct hx_comm_stats *s);
void hx_comm_engine_reset_stats(void);

#endif /* HX_COMM_INTERNAL_H */
