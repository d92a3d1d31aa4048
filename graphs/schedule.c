/* SPDX-License-Identifier: MIT */
/* graphs/schedule.c: the schedule pass, the order in which a stage emits its micro-batches'
 * work, for any model: it sees a struct hx_model and emits through its ops, the per-layer
 * emitters with the micro-batch explicit (graphs/model_internal.h).  The stage's tasks (a
 * chunk's forward F or backward B of one micro-batch) come from its pipeline
 * schedule (include/helix/pipeline.h); each is emitted whole, or, with two strands, a B
 * and an F of another micro-batch next to each other in that order form an SI block
 * (papers.md §2.6): emitted interleaved layer by layer, B's layer first, so the forward
 * takes the activation set the backward just gave back and a scheduler finds the two ready
 * side by side.  An SI block pairs micro-batches of different strands only: never one with
 * itself (its B needs its F's results), and never two of one strand, which share its tp
 * channel, so their collectives would alternate on one token in lock-step and the forward
 * would wait on every step of the backward.  The folded W comes in DHelix's waves
 * (graphs/pipeline.c): every B(k) is listed next to F(k + p), of the other strand
 * (hx_pipeline_strand), its mirror chunk on every stage.
 * Interleaving two independent tasks keeps the step's numbers: their only shared data are
 * the recycled sets, whose reuse StarPU orders.
 * Test: tests/graphs/strands.c (interleaving, strand marks, memory), parity_strands.sh. */
#include <stdlib.h>
#include <string.h>

#include "graphs/model_internal.h"
#include "helix/error.h"
#include "helix/pipeline.h"
#include "helix/plan.h"

/* ---- around each emitter: what every model's step needs there ----
 * The stamps of the nodes; under parameter sharding the gathers (the embedding's and
 * head's once, at micro-batch 0's first forward, where they stay for the whole step; each
 * layer's pf_depth layers ahead, during an earlier layer's forward; again before a layer's
 * backward, which graphs/dist.c skips while its slot still holds it); recomputation right
 * before a layer's backward, after that gather; the backward's distribution hooks (the
 * micro-batch's buckets and deferred reduce-scatters).  The emitters emit only the model's
 * own nodes. */

static void fwd_begin(struct hx_model *m, int mb, int c)
{
    hx_model_stamp(m, mb, HX_PHASE_FORWARD, -1);
    if (m->cv[c] == 0) {
        if (mb == 0) {
            hx_dist_gather_params(m, -1);
        }
        for (int l = 0; l < m->pf_depth; l++) {
            hx_dist_gather_params(m, l);
        }
    }
    m->ops->forward_begin(m, mb, c);
}

static void fwd_layer(struct hx_model *m, int mb, int c, int l)
{
    hx_model_stamp(m, mb, HX_PHASE_FORWARD, l);
    hx_dist_gather_params(m, l + m->pf_depth); /* a later layer's, during this one */
    m->ops->forward_layer(m, mb, c, l);
}

static void fwd_end(struct hx_model *m, int mb, int c)
{
    hx_model_stamp(m, mb, HX_PHASE_FORWARD, -1);
    m->ops->forward_end(m, mb, c);
}

static void loss(struct hx_model *m, int mb)
{
    hx_model_stamp(m, mb, HX_PHASE_FORWARD, -1);
    m->ops->loss(m, mb);
}

static void bwd_begin(struct hx_model *m, int mb, int c)
{
    hx_model_stamp(m, mb, HX_PHASE_BACKWARD_DATA, -1);
    if (c == m->nchunks - 1) { /* the micro-batch's first backward on this stage */
        hx_dist_backward_begin(m, -1, mb);
    }
    m->ops->backward_begin(m, mb, c);
}

static void bwd_layer(struct hx_model *m, int mb, int c, int l)
{
    hx_model_stamp(m, mb, HX_PHASE_BACKWARD_DATA, l);
    hx_dist_backward_begin(m, l, mb); /* its parameters, before a recomputation reads them */
    if (m->par.recompute != HX_RECOMPUTE_NONE) {
        m->ops->recompute_layer(m, mb, c, l);
    }
    m->ops->backward_layer(m, mb, c, l);
}

static void bwd_end(struct hx_model *m, int mb, int c)
{
    hx_model_stamp(m, mb, HX_PHASE_BACKWARD_DATA, -1);
    m->ops->backward_end(m, mb, c);
    if (c == 0) { /* the micro-batch's last backward on this stage */
        hx_dist_backward_end(m, mb);
    }
}

static void forward_whole(struct hx_model *m, const struct hx_pipe_task *t, int with_loss)
{
    int c = t->chunk, begin = m->g->nnodes;
    fwd_begin(m, t->mb, c);
    for (int l = m->clo[c]; l < m->chi[c]; l++) {
        fwd_layer(m, t->mb, c, l);
    }
    fwd_end(m, t->mb, c);
    if (t->mb == 0) { /* evaluation reruns micro-batch 0's forward, loss aside */
        HX_ASSERT(m->nfwd0 < 2, "micro-batch 0's forward in more than two chunks");
        m->fwd0[m->nfwd0][0] = begin;
        m->fwd0[m->nfwd0++][1] = m->g->nnodes;
    }
    if (with_loss && m->cv[c] + m->cvn[c] == m->nvs) {
        /* training needs the loss and its gradient: one pass over the logits */
        loss(m, t->mb);
    }
}

static void backward_whole(struct hx_model *m, const struct hx_pipe_task *t)
{
    int c = t->chunk;
    bwd_begin(m, t->mb, c);
    for (int l = m->chi[c] - 1; l >= m->clo[c]; l--) {
        bwd_layer(m, t->mb, c, l);
    }
    bwd_end(m, t->mb, c);
}

/* Do nodes a and b touch a common tile, one of them writing it? */
static int conflict(const struct hx_node *a, const struct hx_node *b)
{
    for (int i = 0; i < a->nrefs; i++) {
        for (int k = 0; k < b->nrefs; k++) {
            if (a->refs[i].tensor == b->refs[k].tensor && a->refs[i].tile == b->refs[k].tile &&
                ((a->refs[i].mode | b->refs[k].mode) & HX_W)) {
                return 1;
            }
        }
    }
    return 0;
}

/* Nodes [x0, x2) are one forward layer [x0, x1) and one backward layer [x1, x2) of an SI
 * block.  If they are the plan's lists (same lengths, same ops in the same places), reorder
 * them into the plan's steps (in each, the forward part first) and stamp block and segment,
 * so they run step by step with a barrier between steps.  Inside each list the plan's
 * orders are topological, and the two layers share no data (si_block), which the check
 * below confirms before anything moves; a pair that fails keeps its emission order and is
 * not counted as planned. */
static void apply_plan(struct hx_model *m, int x0, int x1, int x2, int may_couple)
{
    const struct hx_plan *p = may_couple ? m->par.strand_plan : NULL;
    hx_graph_t g = m->g;
    int nf = x1 - x0, nb = x2 - x1;
    m->si_pairs++;
    m->si_uncoupled += !may_couple;
    if (p == NULL || nf != p->nf || nb != p->nb) {
        return;
    }
    for (int k = 0; k < nf; k++) {
        if (strcmp(hx_op_name(g->nodes[x0 + k].op), p->f_op[k]) != 0) {
            return;
        }
    }
    for (int k = 0; k < nb; k++) {
        if (strcmp(hx_op_name(g->nodes[x1 + k].op), p->b_op[k]) != 0) {
            return;
        }
    }
    int n = nf + nb, *order = malloc(sizeof(int) * (size_t)n), *step = malloc(sizeof(int) * n);
    struct hx_node *old = malloc(sizeof *old * (size_t)n);
    HX_ASSERT(order && step && old, "out of memory");
    int at = 0;
    for (int s = 0; s < p->nsteps; s++) { /* order[]: offsets into [x0, x2) */
        const struct hx_plan_step *st = &p->steps[s];
        for (int q = st->f0; q < st->f1; q++) {
            step[at] = s, order[at++] = p->f_order[q];
        }
        for (int q = st->b0; q < st->b1; q++) {
            step[at] = s, order[at++] = nf + p->b_order[q];
        }
    }
    int ok = at == n;
    for (int i = 0; ok && i < nf; i++) { /* the forward and the backward touch no common tile */
        for (int k = nf; ok && k < n; k++) {
            ok = !conflict(&g->nodes[x0 + i], &g->nodes[x0 + k]);
        }
    }
    if (ok) {
        memcpy(old, &g->nodes[x0], sizeof *old * (size_t)n);
        int block = m->planned++;
        for (int i = 0; i < n; i++) {
            struct hx_node *d = &g->nodes[x0 + i];
            *d = old[order[i]];
            d->block = block, d->segment = step[i], d->id = x0 + i;
        }
    }
    free(order);
    free(step);
    free(old);
}

/* Stages a chunk's forward (fwd) or backward receives its input from and sends its output
 * to (-1: none, the embedding, the head or the loss are here) */
static void ends(const struct hx_model *m, int c, int fwd, int *src, int *dst)
{
    int a = m->cv[c], b = a + m->cvn[c] - 1;
    int before = a > 0 ? hx_model_vstage_rank(m, a - 1) : -1;
    int after = b + 1 < m->nvs ? hx_model_vstage_rank(m, b + 1) : -1;
    *src = fwd ? before : after;
    *dst = fwd ? after : before;
}

/* A plan's barriers tie the two strands of a block together: each waits for the other's
 * steps.  That is safe only if no input of the block depends on one of its outputs.  In
 * DHelix's waves (the folded W) F(w) and B(w - p) travel together: both
 * halves' inputs come from the wave's block one hop earlier and both outputs go to its
 * block one hop later, so every dependency runs forward in hops and none closes a cycle,
 * on the turning stage too, which receives from and sends to one stage.  Otherwise (1F1B
 * with strands) the block is safe when no stage it receives from is one it sends to (else
 * stage s's forward waits for its backward, whose gradient comes from stage s+1, which
 * waits for that very forward's activations: a cycle); blocks that fail are counted in
 * si_uncoupled (`helix train` prints it on the strands line). */
static int may_couple(const struct hx_model *m, const struct hx_pipe_task *b,
                      const struct hx_pipe_task *f)
{
    if (m->par.pipeline_schedule == HX_PIPE_FOLD && f->mb == b->mb + m->mesh.pp) {
        return 1; /* one wave */
    }
    int fs, fd, bs, bd;
    ends(m, f->chunk, 1, &fs, &fd);
    ends(m, b->chunk, 0, &bs, &bd);
    int src[2] = { fs, bs }, dst[2] = { fd, bd };
    for (int i = 0; i < 2; i++) {
        for (int k = 0; k < 2; k++) {
            if (src[i] >= 0 && src[i] == dst[k]) {
                return 0;
            }
        }
    }
    return 1;
}

/* B of one micro-batch and F of another, layer by layer: B begin and B's top two layers,
 * F begin, then pairs (one forward layer, one backward layer), then what is left, then the
 * ends.  A model whose emitters pool activation sets (GPT: graphs/gpt_acts.c) then finds
 * every set the forward takes (its begin's, and each layer's for the layer after it: GPT's
 * layer's last op writes that LayerNorm) given back by this block's backward one pair
 * earlier, so two strands need no more activation memory than one, a pair's forward
 * and backward touch no common data and run side by side, and no forward waits on another
 * task's backward (which could wait on another stage: a cycle). */
static void si_block(struct hx_model *m, const struct hx_pipe_task *b, const struct hx_pipe_task *f)
{
    int bl = m->chi[b->chunk] - 1, blo = m->clo[b->chunk];
    int fl = m->clo[f->chunk], fhi = m->chi[f->chunk];
    HX_ASSERT(f->mb != 0, "micro-batch 0's forward in an SI block");
    HX_ASSERT(fhi - fl == bl + 1 - blo, "SI block of a %d-layer forward and a %d-layer backward",
              fhi - fl, bl + 1 - blo);
    int couple = may_couple(m, b, f);
    bwd_begin(m, b->mb, b->chunk);
    for (int k = 0; k < 2 && bl >= blo; k++) {
        bwd_layer(m, b->mb, b->chunk, bl--);
    }
    fwd_begin(m, f->mb, f->chunk);
    while (bl >= blo || fl < fhi) {
        int x0 = m->g->nnodes, x1 = x0;
        if (fl < fhi) {
            fwd_layer(m, f->mb, f->chunk, fl++);
            x1 = m->g->nnodes;
        }
        if (bl >= blo) {
            bwd_layer(m, b->mb, b->chunk, bl--);
        }
        if (x1 > x0 && m->g->nnodes > x1) {
            apply_plan(m, x0, x1, m->g->nnodes, couple);
        }
    }
    bwd_end(m, b->mb, b->chunk);
    fwd_end(m, f->mb, f->chunk);
    if (m->cv[f->chunk] + m->cvn[f->chunk] == m->nvs) {
        loss(m, f->mb);
    }
}

void hx_schedule_emit(struct hx_model *m)
{
    struct hx_pipe_task *t = malloc(sizeof *t * 4 * (size_t)m->Ml);
    HX_ASSERT(t != NULL, "out of memory");
    int sched = m->par.pipeline_schedule, p = m->mesh.pp;
    int n = hx_pipeline_tasks(sched, p, m->mesh.pp_rank, m->Ml, t);
    m->item_first = malloc(sizeof(int) * (size_t)(n + 1));
    HX_ASSERT(m->item_first != NULL, "out of memory");
    m->nitems = 0;
    for (int k = 0; k < n; k++) {
        m->item_first[m->nitems++] = m->g->nnodes;
        int pair = m->strands && k + 1 < n && t[k].fwd != t[k + 1].fwd &&
                   hx_pipeline_strand(sched, p, t[k].mb) !=
                       hx_pipeline_strand(sched, p, t[k + 1].mb) /* other strands */ &&
                   t[t[k].fwd ? k : k + 1].mb != 0;
        if (pair) {
            const struct hx_pipe_task *f = t[k].fwd ? &t[k] : &t[k + 1];
            const struct hx_pipe_task *b = t[k].fwd ? &t[k + 1] : &t[k];
            si_block(m, b, f);
            k++;
        } else if (t[k].fwd) {
            forward_whole(m, &t[k], 1);
        } else {
            backward_whole(m, &t[k]);
        }
    }
    m->item_first[m->nitems] = m->g->nnodes;
    free(t);
}

/* Pipelines: the stage's schedule is an order, and the critical-path priorities cannot see
 * it, because a forward's real successors (the next stages' work, and the gradient that
 * comes back) are on other ranks: seen from stage 0 of 1F1B, B5 (a long local chain) outranks
 * F6 (a forward and a send), and running B5 first when both are ready idles stage 1, which
 * waits for F6.  So each schedule item gets a band of priorities, earlier items higher
 * (Megatron runs the schedule as program order), and the critical path orders the compute
 * inside a band.  Collectives keep theirs (above every band); the work before the first item
 * and after the last keeps the top and bottom band. */
void hx_schedule_priorities(struct hx_model *m)
{
    int n = m->nitems, w = 2000 / (n + 2), band = 0;
    for (int i = 0; i < m->g->nnodes; i++) {
        /* band 0: before the first item, k + 1: item k, n + 1: after the last */
        while (band <= n && i >= m->item_first[band]) {
            band++;
        }
        struct hx_node *d = &m->g->nodes[i];
        if (d->kind == HX_KIND_COMM) {
            continue;
        }
        /* d->priority in [0, 1000] from hx_graph_prioritize */
        d->priority = 1000 - (band + 1) * w + (d->priority * (w - 1)) / 1000;
    }
}
