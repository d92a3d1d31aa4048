/* SPDX-License-Identifier: MIT */
/* graphs/dist_tp.c: the tensor-parallel region boundaries of the distribution pass
 * (graphs/dist.c), any model's: Megatron's f and g (hx_model_tp_gather, hx_model_tp_reduce:
 * identity or all-gather, all-reduce or reduce-scatter under sequence parallelism, Flux's
 * tile-level forms with --tp-comm-overlap), and AxoNN's grid (--tp-grid): the all-reduce over
 * Y of a GEMM contracting over the hidden size, which rank adds a bias, and the norms' row
 * statistics over Y (helix/model.h).
 * Test: tests/mpi/parity_tp.sh, parity_tpo.sh, parity_grid.sh. */
#include <stdio.h>
#include <stdlib.h>

#include "graphs/model_internal.h"
#include "helix/collectives.h"
#include "helix/error.h"
#include "helix/tp_overlap.h"

/* The channel of the node being emitted's tp collectives: strand beta has its own, so with
 * two strands interleaved a backward's collective never waits on the token behind the other
 * strand's forward (whose input may come from another stage that waits on that backward). */
int hx_model_tp_channel(const struct hx_model *m)
{
    if (m->mesh.tpy > 1) { /* Megatron's tp is the grid's X */
        return HX_GROUP_TP_X;
    }
    return m->g->cur.strand == HX_STRAND_BETA ? HX_GROUP_TP_BETA : HX_GROUP_TP;
}

static struct hx_tp_group tp_group(const struct hx_model *m)
{
    struct hx_tp_group tp = { hx_model_tp_channel(m), m->mesh.tp, m->mesh.tp_rank };
    return tp;
}

hx_tensor_t hx_model_tp_gather(struct hx_model *m, hx_tensor_t full, hx_tensor_t shard)
{
    if (!m->mesh.sequence_parallel) {
        return shard;
    }
    if (m->par.tp_comm_overlap) {
        hx_tp_allgather(m->g, tp_group(m), full, shard);
    } else {
        hx_allgather_tiles(m->g, hx_model_tp_channel(m), full, shard);
    }
    return full;
}

void hx_model_tp_partial(struct hx_model *m)
{
    if (m->par.tp_comm_overlap) {
        hx_tp_order(m->g, tp_group(m), 1);
    }
}

/* The scratch for the partials @p shard receives (--tp-comm-overlap): its own, made on first
 * use. */
static hx_tensor_t *rs_scratch(struct hx_model *m, hx_tensor_t shard)
{
    for (int i = 0; i < m->nrs_scratch; i++) {
        if (m->rs_scratch[i].shard == shard) {
            return m->rs_scratch[i].recv;
        }
    }
    struct hx_rs_scratch *grown =
        realloc(m->rs_scratch, sizeof *grown * (size_t)(m->nrs_scratch + 1));
    HX_ASSERT(grown != NULL, "out of memory");
    m->rs_scratch = grown;
    struct hx_rs_scratch *s = &m->rs_scratch[m->nrs_scratch++];
    s->shard = shard;
    s->recv = calloc((size_t)m->mesh.tp - 1, sizeof *s->recv);
    HX_ASSERT(s->recv != NULL, "out of memory");
    for (int k = 1; k < m->mesh.tp; k++) {
        char name[HX_NAME_MAX];
        snprintf(name, sizeof name, "%.32s.from-%u", shard->name, (unsigned)k % 1000u);
        s->recv[k - 1] = hx_graph_tensor(m->g, name, HX_F32, HX_ROLE_ACTIVATION, shard->rows,
                                    shard->cols, shard->tile_rows);
    }
    return s->recv;
}

void hx_model_tp_reduce(struct hx_model *m, hx_tensor_t shard, hx_tensor_t partial)
{
    hx_tp_order_reset(m->g);
    if (m->mesh.tpx == 1) {
        return;
    }
    if (m->mesh.sequence_parallel && m->par.tp_comm_overlap) {
        hx_tp_reduce_scatter(m->g, tp_group(m), shard, partial, rs_scratch(m, shard));
    } else if (m->mesh.sequence_parallel) {
        hx_reduce_scatter_tiles(m->g, hx_model_tp_channel(m), shard, partial, 0);
    } else {
        HX_ASSERT(shard == partial, "without sequence parallelism %s and %s must alias",
                  shard->name, partial->name);
        int first = m->g->nnodes;
        hx_allreduce_tiles(m->g, hx_model_tp_channel(m), partial);
        if (m->g->cur.phase == HX_PHASE_BACKWARD_DATA) { /* an input gradient's (O1) */
            hx_model_blocking(m, HX_NO_OVERLAP_DGRAD_AR, first);
        }
    }
}

/* AxoNN's Y: a GEMM contracting over the hidden size, which Y splits, leaves partial sums
 * over Y (a column-parallel linear's output, a row-parallel one's input gradient). */
void hx_model_tp_reduce_y(struct hx_model *m, hx_tensor_t partial)
{
    if (m->mesh.tpy > 1) {
        int first = m->g->nnodes;
        hx_allreduce_tiles(m->g, HX_GROUP_TP_Y, partial);
        if (m->g->cur.phase == HX_PHASE_BACKWARD_DATA) { /* an input gradient's (O1) */
            hx_model_blocking(m, HX_NO_OVERLAP_DGRAD_AR, first);
        }
    }
}

int hx_model_tp_adds_bias(const struct hx_model *m, enum hx_tp_split split)
{
    switch (split) {
    case HX_TP_ROW: /* its output is a partial sum over X: the bias once */
        return m->mesh.tpx_rank == 0;
    case HX_TP_COLUMN: /* a partial sum over Y under the grid */
        return m->mesh.tpy_rank == 0;
    default:
        return 1;
    }
}

const struct hx_norm_split *hx_model_norm_split(struct hx_model *m, hx_tensor_t inp)
{
    if (m->mesh.tpy == 1) {
        return NULL;
    }
    /* one pair of row-statistics tensors per row tiling, shared by every norm: the
     * all-reduces are tiny, and reuse only orders norms that are ordered anyway */
    int total = inp->cols * m->mesh.tpy;
    for (int i = 0; i < m->nnorm_split; i++) {
        const struct hx_norm_split *sp = &m->norm_split[i];
        if (sp->s1->rows == inp->rows && sp->s1->tile_rows == inp->tile_rows &&
            sp->cols_total == total) {
            return sp;
        }
    }
    HX_ASSERT(m->nnorm_split < HX_NORM_SPLIT_MAX, "more than %d row tilings of norms",
              HX_NORM_SPLIT_MAX);
    struct hx_norm_split *sp = &m->norm_split[m->nnorm_split];
    char name[HX_NAME_MAX];
    snprintf(name, sizeof name, "normstat%d.s1", m->nnorm_split);
    sp->s1 = hx_graph_tensor(m->g, name, HX_F32, HX_ROLE_ACTIVATION, inp->rows, 1,
                             inp->tile_rows);
    snprintf(name, sizeof name, "normstat%d.s2", m->nnorm_split++);
    sp->s2 = hx_graph_tensor(m->g, name, HX_F32, HX_ROLE_ACTIVATION, inp->rows, 2,
                             inp->tile_rows);
    sp->channel = HX_GROUP_TP_Y;
    sp->group_size = m->mesh.tpy;
    sp->cols_total = total;
    return sp;
}

