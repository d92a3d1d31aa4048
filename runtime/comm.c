/* SPDX-License-Identifier: MIT */
/* runtime/comm.c: one MPI communicator per channel (enum hx_group_kind) of the mesh, and the
 * host-side helpers of include/helix/comm.h.
 *
 * Channel k's communicator holds the members of this rank's group k, world ranks
 * first + i*stride, ranked i: MPI_Comm_split of a duplicate of MPI_COMM_WORLD with
 * color = first member (the groups of one kind partition the world, so the first member
 * names the group) and key = world rank.  Every rank builds every channel, in kind order,
 * so the splits match; a kind whose groups have one rank gets a duplicate of MPI_COMM_SELF
 * without communication (group sizes of a kind are the same on every rank).  Channels use
 * MPI_ERRORS_RETURN: an MPI failure becomes a helix message naming channel, op and bytes.
 *
 * Host helpers post a non-blocking call and wait for the progress thread to finish it, so
 * the watchdog also covers a host thread stuck on a lost peer.  A world of one rank with
 * no channels open runs them locally.  With the NCCL backend the same MPI channels exist
 * (the ncclUniqueIds travel over them, and the host helpers keep using them) and
 * runtime/comm_nccl.c adds the NCCL communicators.
 * Test: tests/mpi/collectives.c; the backends: tests/mpi/comm_poll.c and
 * tests/mpi/comm_backend.sh. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "helix/comm.h"
#include "helix/error.h"
#include "helix/graph.h"
#include "helix/ops.h"
#include "helix/runtime.h"
#include "helix/tensor.h"
#include "runtime/comm_internal.h"

static int is_open;
static enum hx_comm_backend backend;
static struct hx_mesh mesh;
static MPI_Comm comms[HX_GROUP_COUNT];
static int host_seq[HX_GROUP_COUNT];

MPI_Datatype hx_comm_mpi_type(int dtype)
{
    switch (dtype) {
    case HX_F32: return MPI_FLOAT;
    case HX_I32: return MPI_INT32_T;
    case HX_F64: return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL;
    }
}

MPI_Op hx_comm_mpi_op(int reduce)
{
    return reduce == HX_MAX ? MPI_MAX : MPI_SUM;
}

const struct hx_group *hx_comm_group(int ch)
{
    return is_open && ch >= 0 && ch < HX_GROUP_COUNT ? &mesh.groups[ch] : NULL;
}

int hx_comm_lane(int ch)
{
    const struct hx_group *g = hx_comm_group(ch);
    return g != NULL && !g->intra_node ? HX_LANE_COMM_INTER : HX_LANE_COMM_INTRA;
}

void hx_comm_format_members(int ch, char *buf, int len)
{
    const struct hx_group *g = hx_comm_group(ch);
    int used = 0;
    buf[0] = '\0';
    for (int i = 0; g != NULL && i < g->size; i++) {
        char one[16];
        snprintf(one, sizeof one, "%s%d", i ? "," : "", hx_group_member(g, i));
        if (used + (int)strlen(one) + 4 >= len) {
            snprintf(buf + used, (size_t)(len - used), "...");
            return;
        }
        used += snprintf(buf + used, (size_t)(len - used), "%s", one);
    }
}

int hx_comm_report(int rc, const struct hx_coll_req *r, const char *call)
{
    char msg[MPI_MAX_ERROR_STRING] = "", peers[128];
    int n = 0;
    if (MPI_Error_string(rc, msg, &n) != MPI_SUCCESS) {
        snprintf(msg, sizeof msg, "MPI error code %d", rc);
    }
    hx_comm_format_members(r->channel, peers, sizeof peers);
    int status = HX_ERUNTIME;
    const char *fmt = "%s%s on channel %s (seq %d, %.0f bytes, world ranks %s): %s failed: "
                      "%s; a peer may have died, or the ranks built different graphs";
    const char *ch = hx_group_name((enum hx_group_kind)r->channel);
    if (r->task != NULL) { /* several tasks may fail alike: the first one speaks */
        HX_TASK_ERR(status, fmt, "", r->op, ch, r->seq, r->bytes, peers, call, msg);
    } else {
        HX_ERR(status, fmt, "host ", r->op, ch, r->seq, r->bytes, peers, call, msg);
    }
    return status;
}

int hx_comm_channel(int ch, const char *op, MPI_Comm *comm, const struct hx_group **g)
{
    if (ch < 0 || ch >= HX_GROUP_COUNT) {
        return HX_TASK_ERR(HX_EINVAL, "%s names channel %d; channels are 0..%d (enum "
                           "hx_group_kind)", op, ch, HX_GROUP_COUNT - 1);
    }
    if (!is_open) {
        return HX_TASK_ERR(HX_EINVAL, "%s on channel %s while no channel is open: call "
                           "hx_comm_open before submitting collectives", op,
                           hx_group_name((enum hx_group_kind)ch));
    }
    *comm = comms[ch];
    *g = &mesh.groups[ch];
    return HX_OK;
}

/* ---- backends ---- */

int hx_comm_backend_from_name(const char *name, enum hx_comm_backend *b)
{
    if (name != NULL && strcmp(name, "mpi") == 0) {
        *b = HX_COMM_MPI;
        return HX_OK;
    }
    if (name != NULL && strcmp(name, "nccl") == 0) {
        *b = HX_COMM_NCCL;
        return HX_OK;
    }
    if (name != NULL && strcmp(name, "starpu-mpi") == 0) {
        *b = HX_COMM_STARPU_MPI;
        return HX_OK;
    }
    return HX_EINVAL;
}

const char *hx_comm_backend_name(enum hx_comm_backend b)
{
    return b == HX_COMM_NCCL ? "nccl" : b == HX_COMM_STARPU_MPI ? "starpu-mpi" : "mpi";
}

/* Both conditions are known when helix is compiled: HX_HAVE_CUDA (configure found nvcc,
 * cuBLAS and NCCL) and STARPU_USE_CUDA (the StarPU whose headers we compiled against has
 * CUDA workers; pkg-config links that same StarPU). */
int hx_comm_backend_usable(enum hx_comm_backend b, char *why, unsigned long cap)
{
    why[0] = '\0';
    if (hx_runtime_simulated() && b != HX_COMM_STARPU_MPI) {
        snprintf(why, cap, "in a simulation, communication goes through StarPU-MPI only (SimGrid "
                 "runs no MPI call of helix's own threads, nor NCCL): use --comm-backend "
                 "starpu-mpi, the default there");
        return HX_EUNSUPPORTED;
    }
    if (b == HX_COMM_MPI || b == HX_COMM_STARPU_MPI) {
        return HX_OK;
    }
    if (b != HX_COMM_NCCL) {
        snprintf(why, cap, "backend %d is not an enum hx_comm_backend (HX_COMM_MPI, "
                 "HX_COMM_NCCL, HX_COMM_STARPU_MPI)", (int)b);
        return HX_EINVAL;
    }
    int used = 0, cuda = HX_HAVE_CUDA, starpu_cuda = 0;
#ifdef STARPU_USE_CUDA
    starpu_cuda = 1;
#endif
    if (!cuda) {
        used = snprintf(why, cap, "helix was built without CUDA and NCCL (configure found no "
                        "nvcc, cuBLAS or nccl.h: see its summary; install the CUDA toolkit "
                        "with NCCL and reconfigure with --with-cuda)%s",
                        starpu_cuda ? "" : ", and ");
    }
    if (!starpu_cuda && used >= 0 && (unsigned long)used < cap) {
        snprintf(why + used, cap - (unsigned long)used, "this StarPU (%d.%d) has no CUDA "
                 "workers (Debian's is built without CUDA), so no tile can live in GPU memory "
                 "for NCCL to reduce; build a CUDA-enabled StarPU with `scripts/setup --cuda` "
                 "and configure helix against it (README \"GPUs\")", STARPU_MAJOR_VERSION,
                 STARPU_MINOR_VERSION);
    }
    return cuda && starpu_cuda ? HX_OK : HX_EUNSUPPORTED;
}

enum hx_comm_backend hx_comm_backend(void)
{
    return is_open ? backend : HX_COMM_MPI;
}

/* ---- lifecycle ---- */

static void free_comms(void)
{
    for (int k = 0; k < HX_GROUP_COUNT; k++) {
        if (comms[k] != MPI_COMM_NULL && comms[k] != MPI_COMM_WORLD) {
            MPI_Comm_free(&comms[k]);
        }
        comms[k] = MPI_COMM_NULL;
    }
}

/* Every rank must pass the same mesh shape: compare a few numbers across @p world (a
 * duplicate of MPI_COMM_WORLD: StarPU-MPI's own traffic stays on MPI_COMM_WORLD). */
static int check_same_shape(const struct hx_mesh *m, MPI_Comm world)
{
    int v[8] = { m->world_size, m->dp, m->tp, m->pp, m->sp.s, m->sg.s, m->sos.s,
                 m->ranks_per_node };
    int lo[8], hi[8];
    if (MPI_Allreduce(v, lo, 8, MPI_INT, MPI_MIN, world) != MPI_SUCCESS ||
        MPI_Allreduce(v, hi, 8, MPI_INT, MPI_MAX, world) != MPI_SUCCESS) {
        return HX_ERR(HX_ERUNTIME, "hx_comm_open: MPI_Allreduce over the world failed");
    }
    if (memcmp(lo, hi, sizeof lo) != 0) {
        return HX_ERR(HX_EINVAL, "hx_comm_open: the ranks passed different meshes (this rank: "
                      "world %d, dp %d, tp %d, pp %d, s_p %d, s_g %d, s_os %d, %d ranks/node); "
                      "every rank must build the mesh from the same flags", v[0], v[1], v[2],
                      v[3], v[4], v[5], v[6], v[7]);
    }
    return HX_OK;
}

/* One communicator per channel kind, split from a duplicate of MPI_COMM_WORLD (StarPU-MPI's
 * own traffic stays on MPI_COMM_WORLD), after checking every rank passed the same mesh. */
static int open_mpi_channels(const struct hx_mesh *m, int rank, int size)
{
    int rc = MPI_SUCCESS, ret;
    MPI_Comm base = MPI_COMM_NULL;
    if (MPI_Comm_dup(MPI_COMM_WORLD, &base) != MPI_SUCCESS) {
        return HX_ERR(HX_ERUNTIME, "hx_comm_open: MPI_Comm_dup(MPI_COMM_WORLD) failed");
    }
    if ((ret = check_same_shape(m, base)) != HX_OK) {
        MPI_Comm_free(&base);
        return ret;
    }
    for (int k = 0; k < HX_GROUP_COUNT && rc == MPI_SUCCESS; k++) {
        const struct hx_group *g = &m->groups[k];
        /* every rank splits every kind (collective over the world, even where a kind's
         * group has one member on some ranks and two on others, as the embedding group);
         * a group's first member is its colour, unique among the groups of a kind */
        rc = MPI_Comm_split(base, g->first, rank, &comms[k]);
        if (rc == MPI_SUCCESS) {
            rc = MPI_Comm_set_errhandler(comms[k], MPI_ERRORS_RETURN);
        }
        if (rc == MPI_SUCCESS) {
            int csize = 0, crank = 0;
            MPI_Comm_size(comms[k], &csize);
            MPI_Comm_rank(comms[k], &crank);
            HX_ASSERT(csize == g->size && crank == g->rank, "channel %s: communicator of %d "
                      "ranks (this one %d), mesh group of %d (this one %d)",
                      hx_group_name((enum hx_group_kind)k), csize, crank, g->size, g->rank);
        }
    }
    MPI_Comm_free(&base);
    if (rc != MPI_SUCCESS) {
        free_comms();
        return HX_ERR(HX_ERUNTIME, "hx_comm_open: creating the channel communicators of a "
                      "world of %d ranks failed (MPI error %d)", size, rc);
    }
    return HX_OK;
}

/* The simulation flavour's channels: no communicator of helix's own (SMPI runs no MPI call
 * of ours, design/simulation.md), so every channel names MPI_COMM_WORLD, where StarPU-MPI's
 * transfers go anyway (runtime/comm_smpi.c: world ranks, tags that carry the channel); the
 * mesh's groups say who is in which.  Every simulated rank took the same argv: one shape. */
static int open_simulated_channels(void)
{
    for (int k = 0; k < HX_GROUP_COUNT; k++) {
        comms[k] = MPI_COMM_WORLD;
    }
    return HX_OK;
}

int hx_comm_open(const struct hx_mesh *m, const struct hx_comm_opts *o)
{
    int inited = 0, finalized = 0, size = 1, rank = 0, ret;
    if (is_open) {
        return HX_ERR(HX_EINVAL, "hx_comm_open called twice; call hx_comm_close first");
    }
    if (hx_runtime_simulated()) {
        inited = 1, size = hx_mpi_world_size(), rank = hx_mpi_world_rank();
    } else {
        MPI_Initialized(&inited);
        MPI_Finalized(&finalized);
    }
    if (!inited || finalized) {
        return HX_ERR(HX_EINVAL, "hx_comm_open without MPI: call hx_mpi_init first");
    }
    if (!hx_runtime_simulated()) {
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    }
    enum hx_comm_backend b = o != NULL ? o->backend : HX_COMM_MPI;
    char why[512];
    if ((ret = hx_comm_backend_usable(b, why, sizeof why)) != HX_OK) {
        return HX_ERR(ret, "hx_comm_open with the %s backend: %s", hx_comm_backend_name(b),
                      why);
    }
    if (m->world_size != size || m->world_rank != rank) {
        return HX_ERR(HX_EINVAL, "hx_comm_open: the mesh is for rank %d of %d, but this process "
                      "is rank %d of %d; build the mesh from hx_mpi_world_rank/size",
                      m->world_rank, m->world_size, rank, size);
    }
    for (int k = 0; k < HX_GROUP_COUNT; k++) {
        comms[k] = MPI_COMM_NULL;
    }
    ret = hx_runtime_simulated() ? open_simulated_channels() : open_mpi_channels(m, rank, size);
    if (ret != HX_OK) {
        return ret;
    }
#if HX_HAVE_CUDA
    if (b == HX_COMM_NCCL && (ret = hx_nccl_open(comms, m)) != HX_OK) {
        free_comms();
        return ret;
    }
#endif
    mesh = *m;
    backend = b;
    memset(host_seq, 0, sizeof host_seq);
    hx_smpi_reset(); /* StarPU-MPI's message numbers start again with the new groups */
    hx_comm_engine_reset_stats();
    if ((ret = hx_comm_engine_start(o != NULL ? o->timeout : 0)) != HX_OK) {
#if HX_HAVE_CUDA
        if (b == HX_COMM_NCCL) {
            hx_nccl_close();
        }
#endif
        free_comms();
        return ret;
    }
    is_open = 1;
    return HX_OK;
}

void hx_comm_close(void)
{
    if (!is_open) {
        return;
    }
    hx_comm_engine_drain();
    hx_comm_engine_stop();
#if HX_HAVE_CUDA
    if (backend == HX_COMM_NCCL) {
        hx_nccl_close();
    }
#endif
    free_comms();
    is_open = 0;
    backend = HX_COMM_MPI;
}

int hx_comm_is_open(void)
{
    return is_open;
}

const struct hx_mesh *hx_comm_mesh(void)
{
    return is_open ? &mesh : NULL;
}

void hx_comm_get_stats(struct hx_comm_stats *s)
{
    hx_comm_engine_stats(s);
}

/* ---- host helpers ----
 * In the simulation flavour they move nothing and return HX_OK: what they carry is data no
 * kernel computed there (the initial parameters, checkpoint state) or the per-step stop
 * agreement of a real run (signals, lost output), and SMPI runs no MPI call of ours. */

/* The channel of a host call: 1 = MPI on *comm, 0 = a group of one rank (run locally), or a
 * negative status (reported). */
static int host_channel(enum hx_group_kind ch, const char *op, MPI_Comm *comm,
                        const struct hx_group **g)
{
    if ((int)ch < 0 || ch >= HX_GROUP_COUNT) {
        return HX_ERR(HX_EINVAL, "hx_comm_host_%s: channel %d is not an enum hx_group_kind "
                      "(0..%d)", op, (int)ch, HX_GROUP_COUNT - 1);
    }
    if (!is_open) {
        if (hx_mpi_world_size() == 1) {
            *g = NULL;
            return 0;
        }
        return HX_ERR(HX_EINVAL, "hx_comm_host_%s on channel %s before hx_comm_open (world of "
                      "%d ranks); open the channels first", op, hx_group_name(ch),
                      hx_mpi_world_size());
    }
    *comm = comms[ch];
    *g = &mesh.groups[ch];
    return (*g)->size > 1;
}

static int host_wait(enum hx_group_kind ch, const char *op, int rc, const char *call,
                     struct hx_coll_req *r, double bytes)
{
    r->channel = ch;
    r->seq = host_seq[ch]++;
    r->op = op;
    r->bytes = bytes;
    r->task = NULL;
    r->poll = NULL; /* an MPI request (r is the caller's, uninitialised but for req) */
    r->started = hx_comm_count_start();
    if (rc != MPI_SUCCESS) {
        return hx_comm_report(rc, r, call);
    }
    return hx_comm_wait_host(r);
}

static int int_count(long n, const char *op, enum hx_group_kind ch)
{
    if (n < 0 || n > INT_MAX) {
        return HX_ERR(HX_EINVAL, "hx_comm_host_%s on channel %s: %ld elements; one call moves "
                      "0..%d, split the buffer", op, hx_group_name(ch), n, INT_MAX);
    }
    return HX_OK;
}

int hx_comm_host_allreduce(enum hx_group_kind ch, void *buf, long count, int dtype, int reduce)
{
    if (hx_runtime_simulated()) {
        return HX_OK;
    }
    MPI_Comm comm;
    const struct hx_group *g;
    struct hx_coll_req r;
    MPI_Datatype type = hx_comm_mpi_type(dtype);
    int mode = host_channel(ch, "allreduce", &comm, &g);
    if (mode <= 0) {
        return mode;
    }
    if (type == MPI_DATATYPE_NULL) {
        return HX_ERR(HX_EINVAL, "hx_comm_host_allreduce on channel %s: dtype %d is not an "
                      "enum hx_dtype", hx_group_name(ch), dtype);
    }
    if (int_count(count, "allreduce", ch) != HX_OK) {
        return HX_EINVAL;
    }
    int rc = MPI_Iallreduce(MPI_IN_PLACE, buf, (int)count, type, hx_comm_mpi_op(reduce), comm,
                            &r.req);
    return host_wait(ch, "allreduce", rc, "MPI_Iallreduce", &r,
                     (double)count * (double)hx_dtype_size((enum hx_dtype)dtype));
}

int hx_comm_host_bcast(enum hx_group_kind ch, void *buf, long bytes, int root)
{
    if (hx_runtime_simulated()) {
        return HX_OK;
    }
    MPI_Comm comm;
    const struct hx_group *g;
    struct hx_coll_req r;
    int mode = host_channel(ch, "bcast", &comm, &g);
    if (mode <= 0) {
        return mode == 0 && root != 0 ? HX_ERR(HX_EINVAL, "hx_comm_host_bcast: root %d in a "
                                               "group of one rank", root)
                                      : mode;
    }
    if (root < 0 || root >= g->size) {
        return HX_ERR(HX_EINVAL, "hx_comm_host_bcast on channel %s: root %d outside the group "
                      "of %d ranks", hx_group_name(ch), root, g->size);
    }
    if (int_count(bytes, "bcast", ch) != HX_OK) {
        return HX_EINVAL;
    }
    int rc = MPI_Ibcast(buf, (int)bytes, MPI_BYTE, root, comm, &r.req);
    return host_wait(ch, "bcast", rc, "MPI_Ibcast", &r, g->rank == root ? (double)bytes : 0);
}

int hx_comm_host_allgatherv(enum hx_group_kind ch, const void *send, long send_bytes,
                            void *recv, const long *recv_bytes)
{
    if (hx_runtime_simulated()) {
        return HX_OK;
    }
    MPI_Comm comm;
    const struct hx_group *g;
    struct hx_coll_req r;
    int mode = host_channel(ch, "allgatherv", &comm, &g);
    if (mode < 0) {
        return mode;
    }
    int p = mode ? g->size : 1, me = mode ? g->rank : 0;
    if (recv_bytes[me] != send_bytes) {
        return HX_ERR(HX_EINVAL, "hx_comm_host_allgatherv on channel %s: this rank (group rank "
                      "%d) sends %ld bytes but recv_bytes[%d] = %ld; they must agree",
                      hx_group_name(ch), me, send_bytes, me, recv_bytes[me]);
    }
    if (mode == 0) {
        if (recv != send) {
            memmove(recv, send, (size_t)send_bytes);
        }
        return HX_OK;
    }
    int *counts = malloc(sizeof *counts * (size_t)p * 2), *displs = counts + p;
    long off = 0;
    if (counts == NULL) {
        return HX_ERR(HX_ENOMEM, "hx_comm_host_allgatherv: %d counts", p);
    }
    for (int j = 0; j < p; j++) {
        if (int_count(recv_bytes[j], "allgatherv", ch) != HX_OK ||
            int_count(off, "allgatherv", ch) != HX_OK) {
            free(counts);
            return HX_EINVAL;
        }
        counts[j] = (int)recv_bytes[j];
        displs[j] = (int)off;
        off += recv_bytes[j];
    }
    /* this rank's piece already in place: MPI forbids overlapping send and receive buffers */
    const void *sendbuf = (const char *)send == (const char *)recv + displs[me] ? MPI_IN_PLACE
                                                                                : send;
    int rc = MPI_Iallgatherv(sendbuf, (int)send_bytes, MPI_BYTE, recv, counts, displs, MPI_BYTE,
                             comm, &r.req);
    int ret = host_wait(ch, "allgatherv", rc, "MPI_Iallgatherv", &r, (double)send_bytes);
    free(counts);
    return ret;
}

int hx_comm_host_barrier(enum hx_group_kind ch)
{
    if (hx_runtime_simulated()) {
        return HX_OK;
    }
    MPI_Comm comm;
    const struct hx_group *g;
    struct hx_coll_req r;
    int mode = host_channel(ch, "barrier", &comm, &g);
    if (mode <= 0) {
        return mode;
    }
    int rc = MPI_Ibarrier(comm, &r.req);
    return host_wait(ch, "barrier", rc, "MPI_Ibarrier", &r, 0);
}
