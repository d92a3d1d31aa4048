/* SPDX-License-Identifier: MIT */
/* runtime/trace.c: the task recorder behind --trace.  hx_graph_submit gives every task a
 * callback that copies StarPU's profiling record (worker, start; µs since starpu_init) and
 * the task's IR node into a growing array, with the training step it ran in.
 *
 * A task's end: a compute task ends when its codelet returns (StarPU's end_time); a
 * collective's codelet only posts the non-blocking MPI call and returns (runtime/
 * comm_engine.c), so its end_time is the post (about 20 µs) and the transfer would vanish
 * from the trace.  Its callback runs when the engine releases the end-dependency, i.e. when
 * MPI completed: the callback's clock is the collective's end.
 *
 * hx_trace_write merges every rank into one Chrome trace-event JSON on rank 0: one process
 * per rank ("rank R (host)"), one thread per compute worker ("compute w<k>", with the device
 * for an OpenCL or CUDA worker: "compute w1 (OpenCL 0)", beside a "transfers to w1" row of
 * the tasks' input fetches, StarPU's acquire-data interval), and one per
 * communication channel on its lane ("comm inter-node: dp"), the rows of a lane together:
 * the intra-node lane's, then the inter-node lane's.  A row is a channel, not a whole lane,
 * because a channel runs its collectives one at a time (its token), so no two events of a
 * thread overlap, as the trace format wants, while two channels of one lane (tp and
 * tp_beta) do run at once.  Clocks: each rank's
 * StarPU clock starts at its own starpu_init, so each rank's times are shifted onto rank
 * 0's clock (clock_shift: Cristian's algorithm), and the file's otherData gives the bound
 * on that shift's error ("clock_error_us").
 * Test: tests/cli/trace.sh, tests/mpi/trace.sh. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <starpu.h>
#include <starpu_mpi.h>

#include "helix/comm.h"
#include "helix/error.h"
#include "helix/graph.h"
#include "helix/mesh.h"
#include "helix/runtime.h"
#include "helix/trace.h"
#include "sim/payloads.h"

struct event {
    const struct hx_node *node;
    int worker, step;
    double start_us, end_us;
    double fetch_start_us, fetch_end_us; /* moving its input tiles to the worker's memory */
};

static struct {
    int active;
    int step; /* training step of the tasks running now; -1 outside steps */
    pthread_mutex_t lock;
    struct event *ev;
    long n, cap;
} tr = { .step = -1, .lock = PTHREAD_MUTEX_INITIALIZER };

/* thread ids: workers keep theirs; channel ch is COMM_TID + ch on the intra-node lane and
 * COMM_TID + INTER_TID + ch on the inter-node lane, so a viewer sorting rows by id (the
 * sort index, tools/trace_svg.c) shows each lane's rows together; the input transfers of
 * device worker w are FETCH_TID + w */
#define COMM_TID 1000
#define INTER_TID 100
#define FETCH_TID 2000

/* The row of collective node @p n: its channel's, among its lane's rows. */
static int comm_tid(const struct hx_node *n)
{
    return COMM_TID + (n->lane == HX_LANE_COMM_INTER ? INTER_TID : 0) + n->args.coll.channel;
}

int hx_trace_start(void)
{
    pthread_mutex_lock(&tr.lock);
    tr.active = 1;
    pthread_mutex_unlock(&tr.lock);
    starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
    return HX_OK;
}

int hx_trace_active(void)
{
    return __atomic_load_n(&tr.active, __ATOMIC_RELAXED);
}

void hx_trace_set_step(int step)
{
    __atomic_store_n(&tr.step, step, __ATOMIC_RELAXED);
}

long hx_trace_count(void)
{
    pthread_mutex_lock(&tr.lock);
    long n = tr.n;
    pthread_mutex_unlock(&tr.lock);
    return n;
}

void hx_trace_record(void *arg)
{
    struct starpu_task *task = starpu_task_get_current();
    struct starpu_profiling_task_info *pi = task ? task->profiling_info : NULL;
    const struct hx_node *n = arg;
    if (pi == NULL) {
        return;
    }
    struct event e = { n, pi->workerid, __atomic_load_n(&tr.step, __ATOMIC_RELAXED),
                       starpu_timing_timespec_to_us(&pi->start_time),
                       n->kind == HX_KIND_COMM ? starpu_timing_now()
                                               : starpu_timing_timespec_to_us(&pi->end_time),
                       starpu_timing_timespec_to_us(&pi->acquire_data_start_time),
                       starpu_timing_timespec_to_us(&pi->acquire_data_end_time) };
    pthread_mutex_lock(&tr.lock);
    if (tr.active) {
        if (tr.n == tr.cap) {
            long cap = tr.cap ? tr.cap * 2 : 4096;
            struct event *nv = realloc(tr.ev, sizeof *nv * (size_t)cap);
            if (nv == NULL) {
                pthread_mutex_unlock(&tr.lock);
                return; /* the trace loses events, training goes on */
            }
            tr.ev = nv;
            tr.cap = cap;
        }
        tr.ev[tr.n++] = e;
    }
    pthread_mutex_unlock(&tr.lock);
}

static const char *lane_name(enum hx_lane lane)
{
    return lane == HX_LANE_COMM_INTER ? "comm inter-node"
           : lane == HX_LANE_COMM_INTRA ? "comm intra-node" : "compute";
}

static const char *strand_name(int strand)
{
    return strand == HX_STRAND_ALPHA ? "alpha" : strand == HX_STRAND_BETA ? "beta" : "none";
}

static int is_collective(const struct hx_node *n)
{
    return n->kind == HX_KIND_COMM && n->op != HX_OP_FENCE;
}

static int by_start(const void *a, const void *b)
{
    const struct event *x = *(const struct event *const *)a, *y = *(const struct event *const *)b;
    return (x->start_us > y->start_us) - (x->start_us < y->start_us);
}

/* A collective's end is read in its callback, a little after MPI completed and the channel
 * token was released, so the channel's next collective may already have started: end each
 * collective no later than the next start on its channel, which the token guarantees. */
static void clamp_channel_ends(void)
{
    struct event **v = malloc(sizeof *v * ((size_t)tr.n + 1));
    if (v == NULL) {
        return; /* ends stay a few µs late */
    }
    for (int ch = 0; ch < HX_GROUP_COUNT; ch++) {
        long k = 0;
        for (long i = 0; i < tr.n; i++) {
            const struct hx_node *n = tr.ev[i].node;
            if (n->kind == HX_KIND_COMM && n->args.coll.channel == ch) {
                v[k++] = &tr.ev[i];
            }
        }
        qsort(v, (size_t)k, sizeof *v, by_start);
        for (long i = 0; i + 1 < k; i++) {
            if (v[i]->end_us > v[i + 1]->start_us) {
                v[i]->end_us = v[i + 1]->start_us > v[i]->start_us ? v[i + 1]->start_us
                                                                  : v[i]->start_us;
            }
        }
    }
    free(v);
}

/* This rank's metadata and events, each line ending in ",\n", on rank 0's clock
 * (+ @p shift_us). */
static void write_rank(FILE *f, int rank, double shift_us)
{
    clamp_channel_ends();
    static const char *phases[HX_PHASE_COUNT] = { "forward", "backward-data", "backward-weight",
                                                  "optimizer", "recompute" };
    char host[256] = "?";
    const struct hx_mesh *mesh = hx_comm_mesh();
    if (hx_runtime_simulated() && mesh != NULL && mesh->ranks_per_node > 0) {
        /* every simulated rank runs on this machine: name its simulated node instead, as
         * helix simulate's hostfile places it (tools/simulate.c: node0, node1, ...) */
        snprintf(host, sizeof host, "node%d", hx_mesh_node(mesh, rank));
    } else {
        gethostname(host, sizeof host - 1);
    }
    fprintf(f, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"args\": {\"name\": "
            "\"rank %d (%s)\"}},\n{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": %d, "
            "\"args\": {\"sort_index\": %d}},\n", rank, rank, host, rank, rank);
    for (int w = 0; w < (int)starpu_worker_get_count(); w++) {
        /* "compute w1 (OpenCL 0)": a device worker's row says which device */
        enum starpu_worker_archtype type = starpu_worker_get_type(w);
        char dev[48] = "";
        if (type != STARPU_CPU_WORKER) {
            snprintf(dev, sizeof dev, " (%s %d)", type == STARPU_OPENCL_WORKER ? "OpenCL"
                     : type == STARPU_CUDA_WORKER ? "CUDA" : "device",
                     starpu_worker_get_devid(w));
            /* its transfers: the fetch of each task's inputs into the device's memory */
            fprintf(f, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": "
                    "%d, \"args\": {\"name\": \"transfers to w%d%s\"}},\n", rank,
                    FETCH_TID + w, w, dev);
        }
        fprintf(f, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, "
                "\"args\": {\"name\": \"compute w%d%s\"}},\n", rank, w, w, dev);
    }
    int seen[HX_GROUP_COUNT] = { 0 };
    for (long i = 0; i < tr.n; i++) {
        const struct hx_node *n = tr.ev[i].node;
        int ch = n->kind == HX_KIND_COMM ? n->args.coll.channel : -1;
        if (ch >= 0 && ch < HX_GROUP_COUNT && !seen[ch]) {
            seen[ch] = 1;
            fprintf(f, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, "
                    "\"args\": {\"name\": \"%s: %s\"}},\n{\"name\": \"thread_sort_index\", "
                    "\"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"args\": {\"sort_index\": %d}},\n",
                    rank, comm_tid(n), lane_name(n->lane), hx_group_name(ch), rank,
                    comm_tid(n), comm_tid(n));
        }
    }
    for (long i = 0; i < tr.n; i++) {
        const struct event *e = &tr.ev[i];
        const struct hx_node *n = e->node;
        int comm = n->kind == HX_KIND_COMM;
        fprintf(f, "{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, "
                "\"dur\": %.3f, \"pid\": %d, \"tid\": %d, \"args\": {\"rank\": %d, "
                "\"worker\": %d, \"lane\": \"%s\", \"channel\": \"%s\", \"node\": %d, "
                "\"step\": %d, \"layer\": %d, \"microbatch\": %d, \"phase\": \"%s\", "
                "\"strand\": %d, \"strand_name\": \"%s\", \"block\": %d, \"segment\": %d, "
                "\"bytes\": %.0f, \"flops\": %.0f, \"collective\": %d}},\n",
                hx_op_name(n->op), comm ? "comm" : "compute", e->start_us + shift_us,
                e->end_us - e->start_us, rank, comm ? comm_tid(n) : e->worker,
                rank, e->worker, lane_name(n->lane),
                comm ? hx_group_name(n->args.coll.channel) : "", n->id, e->step, n->layer,
                n->microbatch, phases[n->phase], n->strand, strand_name(n->strand), n->block,
                n->segment, n->bytes, n->flops, is_collective(n));
        /* a device task's input fetch, when it took time (a tile moved to the device) */
        if (!comm && starpu_worker_get_type(e->worker) != STARPU_CPU_WORKER &&
            e->fetch_end_us - e->fetch_start_us >= 1.0) {
            fprintf(f, "{\"name\": \"fetch %s\", \"cat\": \"transfer\", \"ph\": \"X\", "
                    "\"ts\": %.3f, \"dur\": %.3f, \"pid\": %d, \"tid\": %d, \"args\": "
                    "{\"rank\": %d, \"worker\": %d, \"node\": %d, \"step\": %d}},\n",
                    hx_op_name(n->op), e->fetch_start_us + shift_us,
                    e->fetch_end_us - e->fetch_start_us, rank, FETCH_TID + e->worker, rank,
                    e->worker, n->id, e->step);
        }
    }
}

/* Rank 0's clock minus ours, by Cristian's algorithm.  Rank 0 asks each rank for its
 * clock PINGS times; the reply t to the request sent at t0 and answered at t1 (rank 0's
 * clock) was read at (t0 + t1) / 2 on rank 0's clock, within half the round trip, and the
 * shortest round trip gives the tightest bound: at rank 0, @p error_us receives the largest
 * such bound over the ranks.  (Reading every clock right after an MPI_Barrier assumed all
 * ranks leave it at once: on scripts/netbed's two nodes they left up to 8 ms apart, and in
 * bench/strands.sh's merged traces most tp all-reduces ended on one rank before the other
 * had posted them, 2026-11-25.) */
#define PINGS 16
#define PING_TAG 7
static double clock_shift(MPI_Comm comm, double *error_us)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    double shift = 0.0;
    *error_us = 0.0;
    if (rank != 0) {
        for (int k = 0; k < PINGS; k++) {
            MPI_Recv(NULL, 0, MPI_BYTE, 0, PING_TAG, comm, MPI_STATUS_IGNORE);
            double t = starpu_timing_now();
            MPI_Send(&t, 1, MPI_DOUBLE, 0, PING_TAG, comm);
        }
        MPI_Recv(&shift, 1, MPI_DOUBLE, 0, PING_TAG, comm, MPI_STATUS_IGNORE);
        return shift;
    }
    for (int r = 1; r < size; r++) {
        double best = INFINITY, s = 0.0;
        for (int k = 0; k < PINGS; k++) {
            double t0 = starpu_timing_now(), t;
            MPI_Send(NULL, 0, MPI_BYTE, r, PING_TAG, comm);
            MPI_Recv(&t, 1, MPI_DOUBLE, r, PING_TAG, comm, MPI_STATUS_IGNORE);
            double t1 = starpu_timing_now();
            if (t1 - t0 < best) {
                best = t1 - t0, s = (t0 + t1) / 2 - t;
            }
        }
        MPI_Send(&s, 1, MPI_DOUBLE, r, PING_TAG, comm);
        *error_us = fmax(*error_us, best / 2);
    }
    return shift;
}

/* Every rank's text at rank 0: @p all receives the concatenation (rank order), NULL
 * elsewhere.  @return HX_OK or HX_ENOMEM / HX_EIO naming the size. */
static int gather_text(MPI_Comm comm, const char *mine, size_t len, char **all, size_t *total)
{
    int rank, size, ret = HX_OK;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int n = len > INT_MAX ? -1 : (int)len;
    int *lens = rank == 0 ? calloc((size_t)size, sizeof(int)) : NULL;
    int *offs = rank == 0 ? calloc((size_t)size, sizeof(int)) : NULL;
    MPI_Gather(&n, 1, MPI_INT, lens, 1, MPI_INT, 0, comm);
    *all = NULL;
    *total = 0;
    long sum = 0;
    int bad = n < 0;
    if (rank == 0) {
        for (int r = 0; r < size; r++) {
            bad |= lens[r] < 0;
            offs[r] = (int)(sum < INT_MAX ? sum : INT_MAX);
            sum += lens[r] > 0 ? lens[r] : 0;
        }
        bad |= sum > INT_MAX;
        *all = bad ? NULL : malloc((size_t)sum + 1);
    }
    /* every rank learns whether the gather can go ahead */
    int go = rank != 0 || (*all != NULL);
    MPI_Bcast(&go, 1, MPI_INT, 0, comm);
    if (go) {
        MPI_Gatherv(mine, n, MPI_CHAR, *all, lens, offs, MPI_CHAR, 0, comm);
        *total = rank == 0 ? (size_t)sum : 0;
    } else {
        ret = HX_ERR(HX_ENOMEM, "the merged trace of %d ranks does not fit (%ld bytes, at most "
                     "%d): trace fewer steps (--train-iters) or a smaller model", size, sum,
                     INT_MAX);
    }
    free(lens);
    free(offs);
    return ret;
}

/* gather_text for the simulation flavour, where SMPI runs no MPI call of ours: StarPU-MPI's
 * blocking point-to-point on registered buffers (StarPU is still up), each rank's length
 * then its text in pieces SMPI copies (sim/payloads.h), to rank 0 in rank order.  One
 * simulated clock: no shift to measure. */
#define SIM_TRACE_TAG ((starpu_mpi_tag_t)0x7f << 56) /* above every channel's (comm_smpi.c) */
static int gather_text_simulated(int rank, int size, const char *mine, size_t len, char **all,
                                 size_t *total)
{
    starpu_data_handle_t h;
    long n = (long)len;
    *all = NULL;
    *total = 0;
    if (rank != 0) {
        starpu_variable_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)&n, sizeof n);
        starpu_mpi_send(h, 0, SIM_TRACE_TAG, MPI_COMM_WORLD);
        starpu_data_unregister(h);
        for (long at = 0; at < n; at += HX_SIM_COPY_MAX) { /* (SMPI copies pieces this size) */
            long piece = n - at < HX_SIM_COPY_MAX ? n - at : HX_SIM_COPY_MAX;
            starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)(mine + at),
                                        (uint32_t)piece, 1);
            starpu_mpi_send(h, 0, SIM_TRACE_TAG + 1, MPI_COMM_WORLD);
            starpu_data_unregister(h);
        }
        return HX_OK;
    }
    size_t cap = len + 1;
    char *buf = malloc(cap);
    if (buf == NULL) {
        return HX_ERR(HX_ENOMEM, "the merged trace: %zu bytes", cap);
    }
    memcpy(buf, mine, len);
    size_t at = len;
    for (int r = 1; r < size; r++) {
        MPI_Status st;
        starpu_variable_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)&n, sizeof n);
        starpu_mpi_recv(h, r, SIM_TRACE_TAG, MPI_COMM_WORLD, &st);
        starpu_data_unregister(h);
        char *grown = n > 0 ? realloc(buf, at + (size_t)n + 1) : buf;
        if (grown == NULL) { /* (rank r's send is left waiting: the error ends the simulation) */
            free(buf);
            return HX_ERR(HX_ENOMEM, "the merged trace of %d ranks: %zu bytes", size,
                          at + (size_t)n + 1);
        }
        buf = grown;
        for (long got = 0; got < n; got += HX_SIM_COPY_MAX) {
            long piece = n - got < HX_SIM_COPY_MAX ? n - got : HX_SIM_COPY_MAX;
            starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)(buf + at),
                                        (uint32_t)piece, 1);
            starpu_mpi_recv(h, r, SIM_TRACE_TAG + 1, MPI_COMM_WORLD, &st);
            starpu_data_unregister(h);
            at += (size_t)piece;
        }
    }
    *all = buf;
    *total = at;
    return HX_OK;
}

int hx_trace_write(const char *path)
{
    int inited = 0, size = 1, rank = 0;
    if (hx_runtime_simulated()) {
        size = hx_mpi_world_size(), rank = hx_mpi_world_rank();
    } else {
        MPI_Initialized(&inited);
    }
    MPI_Comm comm = MPI_COMM_NULL;
    if (inited) {
        MPI_Comm_dup(MPI_COMM_WORLD, &comm); /* our own: never matches a user message */
        MPI_Comm_size(comm, &size);
        MPI_Comm_rank(comm, &rank);
    }
    double clock_error = 0.0, shift = size > 1 && inited ? clock_shift(comm, &clock_error) : 0.0;
    char *mine = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&mine, &len);
    int ret = HX_OK;
    if (mem == NULL) {
        ret = HX_ERR(HX_ENOMEM, "[rank %d] no memory for the trace of %ld tasks", rank, tr.n);
    } else {
        pthread_mutex_lock(&tr.lock);
        write_rank(mem, rank, shift);
        pthread_mutex_unlock(&tr.lock);
        fclose(mem);
    }
    char *all = mine;
    size_t total = len;
    if (size > 1 && !inited) {
        int g = gather_text_simulated(rank, size, mine ? mine : "", mine ? len : 0, &all, &total);
        ret = ret == HX_OK ? g : ret;
    } else if (size > 1) {
        int g = gather_text(comm, mine ? mine : "", mine ? len : 0, &all, &total);
        ret = ret == HX_OK ? g : ret;
        MPI_Comm_free(&comm);
    } else if (comm != MPI_COMM_NULL) {
        MPI_Comm_free(&comm);
    }
    if (rank == 0 && ret == HX_OK) {
        FILE *f = fopen(path, "w");
        if (f == NULL) {
            ret = HX_ERR(HX_EIO, "cannot write trace '%s': %s; check --trace", path,
                         strerror(errno));
        } else {
            fprintf(f, "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"ranks\": %d, "
                    "\"generator\": \"helix\", \"clock_error_us\": %.1f}, \"traceEvents\": [\n",
                    size, clock_error);
            /* every line ends in ",\n" (write_rank): drop the last comma */
            size_t body = total >= 2 && all[total - 2] == ',' ? total - 2 : total;
            fwrite(all, 1, body, f);
            fprintf(f, "\n]}\n");
            int bad = ferror(f);
            bad = fclose(f) != 0 || bad;
            ret = bad ? HX_ERR(HX_EIO, "writing trace '%s' failed", path) : HX_OK;
        }
    }
    if (all != mine) {
        free(all);
    }
    free(mine);
    return ret;
}

void hx_trace_stop(void)
{
    pthread_mutex_lock(&tr.lock);
    tr.active = 0;
    free(tr.ev);
    tr.ev = NULL;
    tr.n = tr.cap = 0;
    pthread_mutex_unlock(&tr.lock);
}
