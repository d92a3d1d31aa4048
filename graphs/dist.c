/* SPDX-License-Identifier: MIT */
/* graphs/dist.c: the distribution pass, any model's step on one rank of a mesh
 * (design/architecture.md §5, papers.md §4).  It reads the model's parameters as plain data
 * (struct hx_param_spec, helix/model.h) and its layout (struct hx_model,
 * graphs/model_internal.h), never the model's own struct; the model calls its hooks at fixed
 * points of its emitters.  Three transforms, each a no-op when its size is 1:
 *
 * Tensor parallelism (Megatron 1D), from each parameter's split: a column-parallel linear's
 * weight keeps its output rows (a packed one, GPT-2's q|k|v, cut block by block so heads
 * stay whole), a row-parallel one its input columns (partial outputs summed, the bias added
 * once by tp rank 0), an embedding its vocabulary rows (a tied head gives a logits shard;
 * the loss combines every shard's log-sum-exp).  The region boundaries, Megatron's and
 * AxoNN's grid's, are graphs/dist_tp.c.
 *
 * Data parallelism with AMSP sharding inside the dp group (s_p <= s_g <= s_os):
 *   s_p > 1: each rank keeps a flat piece of every tp-local parameter; layers gather theirs
 *            into rotating slots before use (two slots, one layer ahead; with hx-prefetch's
 *            order, depth + 1 slots, depth layers ahead, a resident layer not gathered
 *            again, and reduce-scatters deferred behind the next gather) and reduce-scatter
 *            their gradients into pieces after each micro-batch's backward; both move
 *            in units of a few tensors, one packed message each (units()).
 *   s_g > s_p: a micro-batch's gradient pieces are all-reduced in the G group and only
 *            their owner adds them to its accumulator (select and drop); the last
 *            micro-batch adds the accumulator and all-reduces over the replica group.
 *   s_g = s_p: pieces accumulate locally; the last micro-batch all-reduces them over the
 *            replica group, in buckets, as the backward completes them (DDP).
 *   s_os > s_p: only a piece's OS owner keeps Adam states and updates it, then broadcasts
 *            the new values to its OS group.
 * The norm sums each gradient element once in the world (OS owners; tp-replicated tensors
 * on tp rank 0) and all-reduces the f64 square sum.
 * Test: tests/mpi/parity_*.sh (every mesh against the serial run). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphs/model_internal.h"
#include "helix/collectives.h"
#include "helix/error.h"
#include "helix/layers.h"

#define BUCKET_MAX 15 /* tensors in one DDP bucket (Megatron cuts by size alone) */

static void rs_flush(struct hx_model *m);

/* s_p > 1 moves parameters and gradients in units, one packed message each: the model
 * declares each layer parameter's unit (helix/model.h), and the parameters outside the
 * layers (embedding, head, final norm) form one more, "layer" -1.  GPT-2 cuts a layer in two,
 * its attention block and its MLP block (graphs/gpt_spec.c).  Two per layer, not twelve: a
 * message pays the channel's latency, which under compute load is most of a small one's
 * time; not one: the first layer's attention starts after a third of its parameters
 * arrived, and the last layer's MLP gradients leave while its attention's backward runs. */
#define RS_WAIT_MAX(m) ((m)->L * (m)->Ml * (m)->units + 1)

static int units(const struct hx_model *m, int l)
{
    return l < 0 ? 1 : m->units;
}

/* Parameters of unit @p u of layer @p l (-1: those outside the layers) into @p ids, in
 * parameter order; returns the count (at most HX_UNIT_MAX, checked by the layout). */
static int unit_params(const struct hx_model *m, int l, int u, int *ids)
{
    int n = 0;
    for (int i = 0; i < m->nparams; i++) {
        if (m->pd[i].layer == l && (l < 0 || m->spec[i].unit == u)) {
            ids[n++] = i;
        }
    }
    return n;
}

/* The tensors of a unit's parameters this stage holds: full[q] from @p fulls and piece[q]
 * from @p pieces, in unit_params' order; returns the count (ids: their parameters). */
static int held_params(const struct hx_model *m, int l, int u, int *ids, hx_tensor_t *full,
                       hx_tensor_t *piece, hx_tensor_t const *fulls, hx_tensor_t const *pieces)
{
    int all[HX_UNIT_MAX], n = 0;
    for (int q = 0, nq = unit_params(m, l, u, all); q < nq; q++) {
        if (m->pd[all[q]].held) {
            ids[n] = all[q];
            full[n] = fulls[all[q]];
            piece[n++] = pieces[all[q]];
        }
    }
    return n;
}

/* ---- layout ---- */

/* The dimension Megatron's 1D tensor parallelism cuts: an embedding's vocabulary rows, a
 * column-parallel weight's output rows or its bias's columns, a row-parallel weight's input
 * columns; -1: replicated. */
int hx_dist_tp_dim(const struct hx_param_spec *s)
{
    switch (s->split) {
    case HX_TP_VOCAB:
        return 0;
    case HX_TP_COLUMN:
        return s->role == HX_PARAM_BIAS ? 1 : 0;
    case HX_TP_ROW:
        return 1;
    default:
        return -1;
    }
}

/* The dimension AxoNN's Y cuts under --tp-grid: the hidden size, wherever it is.  A
 * column-parallel ("normal") weight's input columns, a row-parallel ("transposed") one's
 * output rows, an embedding's columns and every replicated parameter's columns (norm
 * weights, a row-parallel linear's bias, learned positions: vectors over the hidden size);
 * a column-parallel bias is replicated over Y (added by y rank 0). */
int hx_dist_y_dim(const struct hx_param_spec *s)
{
    switch (s->split) {
    case HX_TP_COLUMN:
        return s->role == HX_PARAM_BIAS ? -1 : 1;
    case HX_TP_ROW:
        return 0;
    default:
        return 1;
    }
}

static void tp_split(struct hx_param_dist *d, const struct hx_param_spec *s, int tpx, int tpy)
{
    d->tp_dim = tpx > 1 ? hx_dist_tp_dim(s) : -1;
    d->y_dim = tpy > 1 ? hx_dist_y_dim(s) : -1;
    d->lrows = d->rows / (d->tp_dim == 0 ? tpx : 1) / (d->y_dim == 0 ? tpy : 1);
    d->lcols = d->cols / (d->tp_dim == 1 ? tpx : 1) / (d->y_dim == 1 ? tpy : 1);
    /* the blocks along the cut, each cut in tp parts (q|k|v separately: whole heads) */
    d->nblocks = s->nblocks > 0 ? s->nblocks : 1;
    for (int b = 0; b < d->nblocks; b++) {
        d->block[b] = s->nblocks > 0 ? s->block[b] : d->tp_dim == 0 ? d->rows : d->cols;
        HX_ASSERT(d->tp_dim < 0 || d->block[b] % tpx == 0, "parameter %s: block %d of %d "
                  "along dimension %d does not divide by tp %d", s->name, b, d->block[b],
                  d->tp_dim, tpx);
    }
    HX_ASSERT(d->y_dim < 0 || (d->y_dim == 0 ? d->rows : d->cols) % tpy == 0, "parameter %s "
              "(%d x %d): dimension %d does not divide by the grid's Gy %d", s->name, d->rows,
              d->cols, d->y_dim, tpy);
}

void hx_dist_layout(struct hx_model *m)
{
    const struct hx_mesh *ms = &m->mesh;
    int L = m->L;
    m->pd = calloc((size_t)m->nparams, sizeof *m->pd);
    int *nk = calloc((size_t)L + 1, sizeof(int)); /* [l + 1]: parameters of layer l so far */
    HX_ASSERT(m->pd != NULL && nk != NULL, "out of memory");
    int p = ms->sp.s, j = ms->groups[HX_GROUP_SHARD_P].rank;
    /* pipeline stages: layers in equal runs; the embedding on the first stage, the output
     * layer and its norm on the last, a tied embedding on both */
    int first = hx_model_vstage_rank(m, 0), head = hx_model_vstage_rank(m, m->nvs - 1);
    m->units = 1;
    for (int i = 0; i < m->nparams; i++) {
        const struct hx_param_spec *s = &m->spec[i];
        struct hx_param_dist *d = &m->pd[i];
        d->layer = s->site == HX_SITE_LAYER ? s->layer : -1;
        d->k = d->layer >= 0 ? nk[d->layer + 1] : -1;
        HX_ASSERT(d->layer < L && ++nk[d->layer + 1] <= HX_UNIT_MAX && s->unit >= 0 &&
                  s->unit < HX_UNIT_MAX, "parameter %s: layer %d of %d, unit %d, %d "
                  "parameters in the layer (at most %d)", s->name, s->layer, L, s->unit,
                  nk[d->layer + 1], HX_UNIT_MAX);
        m->units = d->layer >= 0 && s->unit >= m->units ? s->unit + 1 : m->units;
        d->rows = s->rows;
        d->cols = s->cols;
        snprintf(d->name, sizeof d->name, "%s", s->name);
        d->stage = d->layer >= 0 ? hx_model_vstage_rank(m, d->layer / m->Lc)
                 : s->site == HX_SITE_HEAD ? head : first;
        d->held = d->stage == ms->pp_rank || (s->site == HX_SITE_TIED && head == ms->pp_rank);
        tp_split(d, s, ms->tpx, ms->tpy);
        long n = (long)d->lrows * d->lcols;
        d->piece_cnt = hx_split_count(n, p, j);
        d->piece_off = hx_split_offset(n, p, j);
        d->sp_partial = ms->sequence_parallel && s->role == HX_PARAM_NORM;
    }
    m->layer_params_max = 0;
    for (int l = 0; l <= L; l++) {
        m->layer_params_max = nk[l] > m->layer_params_max ? nk[l] : m->layer_params_max;
    }
    free(nk);
    /* optimizer-state owners inside the OS group: whole pieces, largest first, each to the
     * least loaded member (every member computes the same answer: same pieces, same order) */
    int q = ms->groups[HX_GROUP_SHARD_OS].size, me = ms->groups[HX_GROUP_SHARD_OS].rank;
    long *load = calloc((size_t)q, sizeof *load);
    char *done = calloc((size_t)m->nparams, 1);
    HX_ASSERT(load != NULL && done != NULL, "out of memory");
    int nheld = 0;
    for (int i = 0; i < m->nparams; i++) {
        nheld += m->pd[i].held;
    }
    for (int step = 0; step < nheld; step++) {
        int best = -1;
        for (int i = 0; i < m->nparams; i++) {
            if (m->pd[i].held && !done[i] &&
                (best < 0 || m->pd[i].piece_cnt > m->pd[best].piece_cnt)) {
                best = i;
            }
        }
        /* a tied embedding first: its two pipeline copies (first and last stage) then have
         * the same owner, so the embedding group sums owner with owner */
        for (int i = m->nparams - 1; i >= 0; i--) {
            best = m->spec[i].site == HX_SITE_TIED && m->pd[i].held && !done[i] ? i : best;
        }
        int owner = 0;
        for (int r = 1; r < q; r++) {
            owner = load[r] < load[owner] ? r : owner;
        }
        done[best] = 1;
        load[owner] += m->pd[best].piece_cnt;
        struct hx_param_dist *d = &m->pd[best];
        d->os_owner = owner;
        d->owns_optim = owner == me;
        d->owns_grad = ms->sg.s == ms->sp.s || d->owns_optim;
    }
    free(load);
    free(done);
}

/* ---- tensors ---- */

static hx_tensor_t comm_tensor(struct hx_model *m, const char *fmt, const char *name, int rows,
                               int cols)
{
    char buf[HX_NAME_MAX + 16];
    snprintf(buf, sizeof buf, fmt, name);
    buf[HX_NAME_MAX - 1] = '\0';
    return hx_graph_tensor(m->g, buf, HX_F32, HX_ROLE_COMM, rows, cols, 0);
}

static void queue_init(struct hx_model *m, struct hx_grad_queue *q, int ch, int accumulate)
{
    q->ch = ch;
    q->accumulate = accumulate;
    q->ids = calloc((size_t)m->nparams, sizeof(int));
    q->cuts = calloc((size_t)m->nparams + 1, sizeof(int));
    HX_ASSERT(q->ids != NULL && q->cuts != NULL, "out of memory");
}

void hx_dist_tensors(struct hx_model *m)
{
    const struct hx_mesh *ms = &m->mesh;
    int n = m->nparams, sharded = ms->sp.s > 1, per_mb = ms->sg.s > ms->sp.s;
    m->pfull = calloc((size_t)n, sizeof(hx_tensor_t));
    m->gfull = calloc((size_t)n, sizeof(hx_tensor_t));
    m->mbg = calloc((size_t)n, sizeof(hx_tensor_t));
    m->gfinal = calloc((size_t)n, sizeof(hx_tensor_t));
    HX_ASSERT(m->pfull && m->gfull && m->mbg && m->gfinal, "out of memory");
    /* nps slots of gathered layer parameters and of their gradients: layer l in l % nps */
    /* slot s's k-th tensor of a layer at [s * layer_params_max + k] */
    size_t nslot = (size_t)m->nps * (size_t)m->layer_params_max + 1;
    hx_tensor_t *slot = calloc(nslot, sizeof *slot), *gslot = calloc(nslot, sizeof *gslot);
    m->slot_layer = malloc(sizeof(int) * (size_t)m->nps);
    m->rs_wait = malloc(sizeof *m->rs_wait * (size_t)RS_WAIT_MAX(m));
    m->grads_done = calloc((size_t)((m->L + 1) * m->Ml * m->units), sizeof(int));
    HX_ASSERT(slot && gslot && m->slot_layer && m->rs_wait && m->grads_done, "out of memory");
    for (int k = 0; k < m->nps; k++) {
        m->slot_layer[k] = -1;
    }
    for (int i = 0; i < n; i++) {
        const struct hx_param_dist *d = &m->pd[i];
        if (!d->held) { /* another pipeline stage's */
            continue;
        }
        const char *dot = strchr(m->params[i]->name, '.'); /* "h3.qkv_w": the slot's name */
        const char *name = d->layer >= 0 && dot != NULL ? dot + 1 : m->params[i]->name;
        if (per_mb) {
            m->mbg[i] = comm_tensor(m, "%s.mbgrad", m->params[i]->name, m->params[i]->rows,
                                    m->params[i]->cols);
        }
        if (!sharded) {
            m->pfull[i] = m->params[i];
            m->gfull[i] = per_mb ? m->mbg[i] : m->grads[i];
        } else if (d->layer >= 0) {
            /* the layers sharing a slot have the same k-th parameter (same shape) */
            int s = d->layer % m->nps, at = s * m->layer_params_max + d->k;
            if (slot[at] == NULL) {
                char fmt[32];
                snprintf(fmt, sizeof fmt, "slot%d.%%s", s);
                slot[at] = comm_tensor(m, fmt, name, d->lrows, d->lcols);
                snprintf(fmt, sizeof fmt, "gslot%d.%%s", s);
                gslot[at] = comm_tensor(m, fmt, name, d->lrows, d->lcols);
            }
            HX_ASSERT(slot[at]->rows == d->lrows && slot[at]->cols == d->lcols, "parameter %s "
                      "(%d x %d) shares gather slot %d with %s (%d x %d): under s_p > 1 every "
                      "layer must declare the same parameters in the same order", d->name,
                      d->lrows, d->lcols, s, slot[at]->name, slot[at]->rows, slot[at]->cols);
            m->pfull[i] = slot[at];
            m->gfull[i] = gslot[at];
        } else {
            m->pfull[i] = comm_tensor(m, "gather.%s", name, d->lrows, d->lcols);
            m->gfull[i] = comm_tensor(m, "gfull.%s", name, d->lrows, d->lcols);
        }
        m->gfinal[i] = per_mb ? m->mbg[i] : m->grads[i];
    }
    free(slot);
    free(gslot);
    queue_init(m, &m->queue[0], HX_GROUP_REPLICA, 0);
    queue_init(m, &m->queue[1], HX_GROUP_SHARD_G, 1);
}

void hx_dist_prefetch_depth(struct hx_model *m)
{
    int L = m->L, d = 1;
    if (m->par.prefetch && m->mesh.sp.s > 1 && m->par.prefetch_memory > 0) {
        double layer = 0; /* bytes of one layer's gathered (tp-local) parameters */
        for (int i = 0; i < m->nparams; i++) {
            layer += m->pd[i].layer == 0 ? 4.0 * m->pd[i].lrows * m->pd[i].lcols : 0;
        }
        d = (int)(m->par.prefetch_memory / layer) - 1;
        d = d < 1 ? 1 : d;
    }
    d = d < L - 1 ? d : L - 1;
    m->pf_depth = d < 1 ? 1 : d;
    m->nps = m->pf_depth + 1;
}

/* ---- parameter gathers (s_p > 1) ---- */

void hx_dist_gather_params(struct hx_model *m, int layer)
{
    if (m->mesh.sp.s == 1 || layer >= m->L) {
        return;
    }
    if (m->par.prefetch && layer >= 0) { /* still in its slot: the gathered values stand */
        if (m->slot_layer[layer % m->nps] == layer && !(m->par.no_overlap & HX_NO_OVERLAP_CACHE)) {
            return;
        }
        m->slot_layer[layer % m->nps] = layer;
    }
    int at = m->g->cur.layer, first = m->g->nnodes; /* gathers carry the layer they serve */
    m->g->cur.layer = layer;
    for (int u = 0; u < units(m, layer); u++) { /* one packed message per unit (units()) */
        int ids[HX_UNIT_MAX];
        hx_tensor_t full[HX_UNIT_MAX], piece[HX_UNIT_MAX];
        int n = held_params(m, layer, u, ids, full, piece, m->pfull, m->params);
        if (n > 0) {
            hx_allgather_packed(m->g, HX_GROUP_SHARD_P, n, full, piece);
        }
    }
    m->g->cur.layer = at;
    hx_model_blocking(m, HX_NO_OVERLAP_PREFETCH, first);
}

/* ---- gradient buckets ---- */

/* Gradient pieces queue up in the order the backward completes them and are cut into
 * buckets of ddp_bucket_size elements or BUCKET_MAX tensors, each one packed all-reduce.
 * Overlapped, a bucket is emitted as soon as it is cut, so it runs while the backward goes
 * on; serialized (the baseline), every bucket is emitted after the backward.  The cut is
 * the same either way, so both give bitwise the same gradients. */
static long bucket_cap(const struct hx_model *m)
{
    long cap = m->par.ddp_bucket_size;
    long dflt = 1000000L * m->mesh.dp;
    return cap > 0 ? cap : (dflt > 40000000L ? dflt : 40000000L);
}

/* The tensor queue entry k reduces: the micro-batch's buffer when s_g > s_p, else the
 * accumulated gradient */
static hx_tensor_t queued(const struct hx_model *m, const struct hx_grad_queue *q, int k)
{
    return m->mesh.sg.s > m->mesh.sp.s ? m->mbg[q->ids[k]] : m->grads[q->ids[k]];
}

/* Emit queue entries [from, to) as one all-reduce; owners of a G-group bucket then add the
 * sum to their accumulator (select), the other members drop it. */
static void bucket_emit(struct hx_model *m, struct hx_grad_queue *q, int from, int to)
{
    hx_tensor_t ts[BUCKET_MAX] = { NULL };
    HX_ASSERT(to > from && to - from <= BUCKET_MAX, "bucket [%d, %d)", from, to);
    for (int k = from; k < to; k++) {
        ts[k - from] = queued(m, q, k);
    }
    hx_allreduce(m->g, q->ch, to - from, ts, HX_SUM);
    for (int k = from; k < to && q->accumulate; k++) {
        int i = q->ids[k];
        if (m->pd[i].owns_grad) {
            hx_accumulate(m->g, m->grads[i], m->mbg[i]);
        }
    }
}

static void queue_add(struct hx_model *m, struct hx_grad_queue *q, int i)
{
    q->ids[q->n++] = i;
    q->open_elems += m->pd[i].piece_cnt;
    if (q->n - q->open == BUCKET_MAX || q->open_elems >= bucket_cap(m)) {
        q->cuts[q->ncuts++] = q->n;
        if (!m->par.serialize_grad_reduce) {
            bucket_emit(m, q, q->open, q->n);
            q->emitted = q->n;
        }
        q->open = q->n;
        q->open_elems = 0;
    }
}

/* Emit what is still queued (all buckets when serialized) and empty the queue.  Serialized,
 * a fence on every queued gradient first holds the channel until the last of them is
 * written, so no bucket starts before the backward ends: emitting the buckets late is not
 * enough, a bucket's all-reduce would otherwise start as soon as its own gradients are done. */
static void queue_flush(struct hx_model *m, struct hx_grad_queue *q)
{
    if (m->par.serialize_grad_reduce && q->n > 0) {
        hx_tensor_t *ts = malloc((size_t)q->n * sizeof *ts);
        HX_ASSERT(ts != NULL, "out of memory");
        for (int k = 0; k < q->n; k++) {
            ts[k] = queued(m, q, k);
        }
        hx_channel_fence(m->g, q->ch, q->n, ts);
        free(ts);
    }
    for (int c = 0; c < q->ncuts; c++) {
        int from = c == 0 ? 0 : q->cuts[c - 1];
        if (from >= q->emitted) {
            bucket_emit(m, q, from, q->cuts[c]);
        }
    }
    if (q->n > q->open) {
        bucket_emit(m, q, q->open, q->n);
    }
    q->n = q->open = q->ncuts = q->emitted = 0;
    q->open_elems = 0;
}

void hx_dist_free(struct hx_model *m)
{
    for (int k = 0; k < 2; k++) {
        free(m->queue[k].ids);
        free(m->queue[k].cuts);
    }
    free(m->pd);
    free(m->slot_layer);
    free(m->rs_wait);
    free(m->grads_done);
    free(m->pfull);
    free(m->gfull);
    free(m->mbg);
    free(m->gfinal);
    for (int i = 0; i < m->nrs_scratch; i++) {
        free(m->rs_scratch[i].recv);
    }
    free(m->rs_scratch);
}

void hx_dist_backward_begin(struct hx_model *m, int layer, int mb)
{
    const struct hx_mesh *ms = &m->mesh;
    (void)mb;
    if (m->par.prefetch) { /* depth layers ahead, then what the layer above left waiting */
        if (layer - m->pf_depth >= 0) {
            hx_dist_gather_params(m, layer - m->pf_depth);
        }
        rs_flush(m);
    } else if (ms->sp.s > 1) {
        /* the layer below's parameters, one layer ahead: the last two layers are still in
         * their slots from the forward (O4; off, the backward gathers them again: the top
         * one before the head's backward) */
        int cache = !(m->par.no_overlap & HX_NO_OVERLAP_CACHE);
        if (layer >= 1 && (layer - 1 <= m->L - 3 || !cache)) {
            hx_dist_gather_params(m, layer - 1);
        } else if (layer == -1 && !cache && m->L >= 1) {
            hx_dist_gather_params(m, m->L - 1);
        }
    }
    for (int u = 0; u < units(m, layer); u++) {
        int ids[HX_UNIT_MAX];
        for (int q = 0, n = unit_params(m, layer, u, ids); q < n; q++) {
            if (m->gfull[ids[q]] != m->grads[ids[q]]) { /* a per-micro-batch buffer */
                hx_fill(m->g, m->gfull[ids[q]], 0.0f);
            }
        }
    }
}

/* Parameter i's gradient of micro-batch mb is in its piece (reduce-scattered when s_p > 1):
 * queue the piece for its all-reduce, so buckets fill in the order the backward finishes
 * gradients. */
static void grad_queue(struct hx_model *m, int i, int mb)
{
    const struct hx_mesh *ms = &m->mesh;
    int last = mb == m->Ml - 1, per_mb = ms->sg.s > ms->sp.s;
    if (per_mb && !last) {
        queue_add(m, &m->queue[1], i);
    } else if (last) {
        if (per_mb && m->Ml > 1 && m->pd[i].owns_grad) {
            hx_accumulate(m->g, m->mbg[i], m->grads[i]);
        }
        if (ms->groups[HX_GROUP_REPLICA].size > 1) {
            queue_add(m, &m->queue[0], i);
        }
    }
}

/* s_p > 1: every gradient of unit @p u of layer @p l of micro-batch mb is complete: one
 * packed reduce-scatter of the unit's full gradients into this rank's pieces (accumulated,
 * or the micro-batch's buffers when s_g > s_p), then the queue. */
static void unit_grads_now(struct hx_model *m, int l, int u, int mb)
{
    int per_mb = m->mesh.sg.s > m->mesh.sp.s, ids[HX_UNIT_MAX];
    hx_tensor_t full[HX_UNIT_MAX], piece[HX_UNIT_MAX];
    int n = held_params(m, l, u, ids, full, piece, m->gfull, per_mb ? m->mbg : m->grads);
    int at = m->g->cur.layer; /* the reduce-scatter carries the layer it serves (traces) */
    m->g->cur.layer = l;
    int first = m->g->nnodes;
    hx_reduce_scatter_packed(m->g, HX_GROUP_SHARD_P, n, piece, full, !per_mb);
    hx_model_blocking(m, HX_NO_OVERLAP_DEFER_RS, first);
    m->g->cur.layer = at;
    for (int q = 0; q < n; q++) {
        grad_queue(m, ids[q], mb);
    }
}

/* hx-prefetch: the units' reduce-scatters that waited for the next gather, in order */
static void rs_flush(struct hx_model *m)
{
    for (int k = 0; k < m->nrs_wait; k++) {
        unit_grads_now(m, m->rs_wait[k][0], m->rs_wait[k][1], m->rs_wait[k][2]);
    }
    m->nrs_wait = 0;
}

void hx_model_grad_done(struct hx_model *m, int i, int mb)
{
    if (m->mesh.sp.s == 1) {
        grad_queue(m, i, mb);
        return;
    }
    /* a unit's gradients travel together once its last one is complete */
    int l = m->pd[i].layer, u = l < 0 ? 0 : m->spec[i].unit, ids[HX_UNIT_MAX], held = 0;
    for (int q = 0, nq = unit_params(m, l, u, ids); q < nq; q++) {
        held += m->pd[ids[q]].held;
    }
    int *done = &m->grads_done[(mb * (m->L + 1) + l + 1) * m->units + u];
    if (++*done < held) {
        return;
    }
    *done = 0;
    if (m->par.prefetch && l >= 0) {
        /* deferred behind the next layer's gather on the shard channel (AxoNN IV-B); its
         * bucket follows it, so nothing reads the piece before the reduce-scatter wrote it */
        HX_ASSERT(m->nrs_wait < RS_WAIT_MAX(m), "%d deferred reduce-scatters", m->nrs_wait);
        m->rs_wait[m->nrs_wait][0] = l;
        m->rs_wait[m->nrs_wait][1] = u;
        m->rs_wait[m->nrs_wait++][2] = mb;
        return;
    }
    unit_grads_now(m, l, u, mb);
}

void hx_dist_backward_end(struct hx_model *m, int mb)
{
    (void)mb; /* a micro-batch's G-group buckets go before the next one's backward */
    rs_flush(m);
    queue_flush(m, &m->queue[1]);
}

void hx_dist_after_backward(struct hx_model *m)
{
    const struct hx_mesh *ms = &m->mesh;
    queue_flush(m, &m->queue[0]);
    /* LayerNorm gradients of sequence shards are partial over tp: sum them (the tp peers
     * own the same pieces) */
    hx_tensor_t ts[BUCKET_MAX];
    int n = 0;
    for (int i = 0; i < m->nparams; i++) {
        if (m->pd[i].sp_partial && m->pd[i].owns_optim) {
            ts[n++] = m->gfinal[i];
            if (n == BUCKET_MAX) {
                hx_allreduce(m->g, HX_GROUP_TP, n, ts, HX_SUM);
                n = 0;
            }
        }
    }
    if (n > 0) {
        hx_allreduce(m->g, HX_GROUP_TP, n, ts, HX_SUM);
    }
    if (ms->dp > 1) {
        hx_allreduce(m->g, HX_GROUP_DP, 1, &m->loss_sum, HX_SUM);
    }
    if (ms->pp > 1) {
        /* the two copies of a tied embedding (first stage: lookup, last: head) sum their
         * gradients, after each was reduced over its replicas; then both run the same AdamW
         * (one copy when a folded pipeline runs both ends on one stage) */
        int tied_copies =
            hx_model_vstage_rank(m, 0) != hx_model_vstage_rank(m, m->nvs - 1) ? 2 : 1;
        for (int i = 0; i < m->nparams; i++) {
            if (m->spec[i].site == HX_SITE_TIED && tied_copies == 2 &&
                (m->first_stage || m->last_stage)) {
                hx_allreduce(m->g, HX_GROUP_EMBED, 1, &m->gfinal[i], HX_SUM);
            }
        }
        hx_allreduce(m->g, HX_GROUP_PP, 1, &m->loss_sum, HX_SUM); /* 0 but on the last */
    }
}

/* Each gradient element once in the job: by its piece's OS owner in the first OS group of
 * the replica group (the others hold copies), and for tensors replicated over tp by tp
 * rank 0. */
int hx_dist_counts_in_norm(const struct hx_model *m, int i)
{
    const struct hx_mesh *ms = &m->mesh;
    int first_os_group = ms->groups[HX_GROUP_REPLICA].rank < ms->groups[HX_GROUP_SHARD_OS].size;
    /* the last stage's copy of a tied embedding is the first stage's again */
    int first_copy = m->spec[i].site != HX_SITE_TIED || m->first_stage;
    return m->pd[i].owns_optim && first_os_group && first_copy &&
           (m->pd[i].tp_dim >= 0 || ms->tpx_rank == 0) &&
           (m->pd[i].y_dim >= 0 || ms->tpy_rank == 0);
}

void hx_dist_norm_reduce(struct hx_model *m)
{
    if (m->mesh.world_size > 1) {
        hx_allreduce(m->g, HX_GROUP_WORLD, 1, &m->gnorm_sumsq, HX_SUM);
    }
}

void hx_dist_after_adamw(struct hx_model *m)
{
    if (m->mesh.groups[HX_GROUP_SHARD_OS].size == 1) {
        return;
    }
    /* runs of consecutive pieces with one owner travel as one packed broadcast */
    hx_tensor_t ts[BUCKET_MAX];
    int n = 0, root = -1;
    for (int i = 0; i <= m->nparams; i++) {
        if (i < m->nparams && !m->pd[i].held) { /* another pipeline stage's */
            continue;
        }
        int owner = i < m->nparams ? m->pd[i].os_owner : -1;
        if (n > 0 && (owner != root || n == BUCKET_MAX)) {
            hx_broadcast(m->g, HX_GROUP_SHARD_OS, n, ts, root);
            n = 0;
        }
        if (i < m->nparams) {
            root = owner;
            ts[n++] = m->params[i];
        }
    }
}
