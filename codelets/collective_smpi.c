/* SPDX-License-Identifier: MIT */
/* codelets/collective_smpi.c: the collectives of include/helix/ops.h on the StarPU-MPI backend
 * (--comm-backend starpu-mpi).  Same buffers, access modes and packed forms as
 * codelets/collective.c, whose comment describes them; codelets/table.c's hx_op_codelet picks
 * these codelets when the channels were opened on StarPU-MPI.  CPU only, so StarPU gives the
 * task its tiles in RAM; the function passes each tile to runtime/comm_smpi.c, which submits
 * the tile's transfers and reduction tasks and completes the task through the engine.
 * All-reduce and broadcast so far; the other collectives run on the MPI engine's codelets
 * (hx_op_codelet), over the same channels.
 * Like the MPI codelets they ignore hx_run_failed(): a rank that skipped a collective would
 * leave its peers waiting until the watchdog.
 * Test: tests/mpi/collectives.sh (HX_COMM_BACKEND=starpu-mpi). */
#include "codelets/codelets.h"
#include "runtime/comm_internal.h"

/* Element pointer and count of data tile @p i: contiguous, of the collective's dtype (a graph
 * bug otherwise, as in codelets/collective.c). */
static void *stile(void *buffers[], int i, const struct hx_node *node, long *n)
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

static struct hx_smpi_coll *begin(const struct hx_node *node, const struct hx_group **g)
{
    const struct hx_coll_args *a = &node->args.coll;
    return hx_smpi_begin(a->channel, a->seq, hx_op_name(node->op), a->dtype, g);
}

/* buffers: token, d1..dk RW.  d := sum (max) over the group, each tile on its own. */
static void allreduce_smpi(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_group *g;
    struct hx_smpi_coll *c = begin(node, &g);
    int ok = c != NULL;
    for (int i = 1; ok && i < node->nrefs; i++) {
        long n = 0;
        void *d = stile(buffers, i, node, &n);
        ok = hx_smpi_allreduce(c, d, n, node->args.coll.reduce) == HX_OK;
    }
    if (c != NULL) {
        hx_smpi_end(c, ok);
    }
}

/* buffers: token, d1..dk RW.  d := the root's (args.coll.peer, a group rank). */
static void broadcast_smpi(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_group *g;
    struct hx_smpi_coll *c = begin(node, &g);
    int root = node->args.coll.peer, ok = c != NULL;
    if (ok && (root < 0 || root >= g->size)) {
        HX_TASK_ERR(HX_EINVAL, "broadcast on channel %s seq %d: root %d outside the group of "
                    "%d ranks", hx_group_name((enum hx_group_kind)node->args.coll.channel),
                    node->args.coll.seq, root, g->size);
        ok = 0;
    }
    for (int i = 1; ok && i < node->nrefs; i++) {
        long n = 0;
        void *d = stile(buffers, i, node, &n);
        ok = hx_smpi_broadcast(c, d, n, root) == HX_OK;
    }
    if (c != NULL) {
        hx_smpi_end(c, ok);
    }
}

/* `struct starpu_codelet hx_cl_smpi_<cname>`: CPU only (the communication lane), its own perf
 * model (a StarPU-MPI collective does not cost what the MPI one does). */
#define HX_SMPI_CODELET(cname, sname, cpu)                                                    \
    HX_PERFMODEL(cname##_smpi_model, "hx_" sname "_smpi");                                    \
    struct starpu_codelet hx_cl_smpi_##cname = {                                              \
        .name = sname,                                                                        \
        .cpu_funcs = { cpu },                                                                 \
        .cpu_funcs_name = { #cpu },                                                           \
        .nbuffers = STARPU_VARIABLE_NBUFFERS,                                                 \
        .model = &cname##_smpi_model,                                                         \
    }

HX_SMPI_CODELET(allreduce, "allreduce", allreduce_smpi);
HX_SMPI_CODELET(broadcast, "broadcast", broadcast_smpi);
