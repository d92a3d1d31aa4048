/* SPDX-License-Identifier: MIT */
/* tools/overlap_measure.c: solo and pairwise co-run times of one layer's operators, the
 * measurements behind `helix profile-overlap` (DHelix's offline profile, papers.md §2.2).
 *
 * An operator is one real IR node of the step graph, run as the StarPU task it is in
 * training (hx_graph_submit_timed of that one node).  Forward nodes come from model x and
 * backward nodes from model y, two instances of one configuration, so a pair never shares a
 * tile and StarPU runs the two tasks at once on two workers:
 *
 *   solo:  submit F_i (or B_j) -> wait                  T = end - start
 *   pair:  submit F_i from x, B_j from y -> wait        T = max(ends) - min(starts)
 *
 *   every op solo R times; then per forward op i (a row), per backward op j, R times:
 *       solo F_i, solo B_j, pair (F_i, B_j)
 *
 * The solo runs inside the rows take the op's solo time at the same moments as its pairs:
 * on a shared machine the load drifts over a run, and an OEF from a solo time measured a
 * minute before its pair would mostly measure the drift.  Times come from StarPU's profiling
 * clock (the codelet's start, the task's termination), so submission and wake-up latency of
 * the main thread are not counted.  Every number kept is a median (solo also the minimum):
 * over R repeats for a pair, over all of an op's solo runs (R x (1 + pairs)) for an op.
 * Under MPI every rank runs this same sequence (collectives need every rank of their group),
 * ranks meet at a barrier before each repeat, and each sample is the maximum over the
 * ranks: a pair is over when its slowest rank is.
 *
 * With classes (--classes), ops doing the same work (overlap_same_work: the row tiles of one
 * operation) share one class: its first op stands for it.  Solo runs of any member count
 * for the class, and only pairs of two first ops are co-run; since a class's first op is
 * its smallest index, the pair (first of class(F_i), first of class(B_j)) is the first pair
 * of those two classes in row order, measured before any pair that reuses it.
 *
 * State between measurements: a node run again and again is idempotent except an in-place
 * all-reduce (x := sum over tp: at tp 2 the values double on every run) and weight-gradient
 * accumulation (+=).  Before each forward node's row of pairs both models run a forward and
 * backward pass again, so every row starts from the values of a real step.  Within a row a
 * forward all-reduce may run ~2R x nbwd times and overflow its own buffer to Inf; only that
 * all-reduce reads it before the next refresh, and MPI sums Inf as fast as finite floats.  A
 * backward one runs 2R times per row (x 2^20 at R 10, still finite, no denormals). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/profile_overlap.h"

int overlap_lists(hx_gpt_t m, int layer, int bwd_mb, int **fwd, int *nfwd, int **bwd,
                  int *nbwd)
{
    hx_graph_t g = hx_gpt_graph(m);
    int end = hx_gpt_first_optimizer_node(m); /* the evaluation tail is never part of a step */
    *fwd = malloc(sizeof(int) * (size_t)(end > 0 ? end : 1));
    *bwd = malloc(sizeof(int) * (size_t)(end > 0 ? end : 1));
    if (*fwd == NULL || *bwd == NULL) {
        free(*fwd);
        free(*bwd);
        *fwd = *bwd = NULL;
        return HX_ERR(HX_ENOMEM, "node lists of %d nodes", end);
    }
    *nfwd = *nbwd = 0;
    for (int i = 0; i < end; i++) {
        const struct hx_node *n = &g->nodes[i];
        if (n->layer != layer) {
            continue;
        }
        if (n->phase == HX_PHASE_FORWARD && n->microbatch == 0) {
            (*fwd)[(*nfwd)++] = i;
        } else if ((n->phase == HX_PHASE_BACKWARD_DATA || n->phase == HX_PHASE_BACKWARD_WEIGHT) &&
                   n->microbatch == bwd_mb) {
            (*bwd)[(*nbwd)++] = i;
        }
    }
    return HX_OK;
}

int overlap_serialized(const struct hx_node *a, const struct hx_node *b)
{
    return a->kind == HX_KIND_COMM && b->kind == HX_KIND_COMM &&
           a->args.coll.channel == b->args.coll.channel;
}

static int args_equal(enum hx_op op, const union hx_op_args *a, const union hx_op_args *b)
{
    switch (op) {
    case HX_OP_MATMUL:
    case HX_OP_MATMUL_GELU:
        return memcmp(&a->mm, &b->mm, sizeof a->mm) == 0;
    case HX_OP_ATTENTION_FWD:
    case HX_OP_ATTENTION_BWD:
        return memcmp(&a->attn, &b->attn, sizeof a->attn) == 0;
    case HX_OP_ROPE_FWD:
    case HX_OP_ROPE_BWD:
        return memcmp(&a->rope, &b->rope, sizeof a->rope) == 0;
    case HX_OP_EMBED_FWD:
    case HX_OP_EMBED_BWD:
        return memcmp(&a->emb, &b->emb, sizeof a->emb) == 0;
    case HX_OP_ADAMW:
        return memcmp(&a->adamw, &b->adamw, sizeof a->adamw) == 0;
    case HX_OP_XENT_VP_STATS:
    case HX_OP_XENT_VP:
        return memcmp(&a->xvp, &b->xvp, sizeof a->xvp) == 0;
    case HX_OP_ALLREDUCE:
    case HX_OP_ALLGATHER:
    case HX_OP_REDUCE_SCATTER:
    case HX_OP_BROADCAST:
    case HX_OP_ALLTOALL:
    case HX_OP_SEND:
    case HX_OP_RECV:
    case HX_OP_SHIFT:
    case HX_OP_FENCE: {
        struct hx_coll_args x = a->coll, y = b->coll;
        x.seq = y.seq = 0; /* the position on the channel is no part of the work */
        return memcmp(&x, &y, sizeof x) == 0;
    }
    default:
        return memcmp(&a->rows, &b->rows, sizeof a->rows) == 0;
    }
}

int overlap_same_work(const struct hx_graph *gp, const struct hx_node *p,
                      const struct hx_graph *gq, const struct hx_node *q)
{
    if (p->op != q->op || p->kind != q->kind || p->lane != q->lane || p->flops != q->flops ||
        p->bytes != q->bytes || p->nrefs != q->nrefs || !args_equal(p->op, &p->args, &q->args)) {
        return 0;
    }
    for (int r = 0; r < p->nrefs; r++) {
        const struct hx_tensor *tp = gp->tensors[p->refs[r].tensor];
        const struct hx_tensor *tq = gq->tensors[q->refs[r].tensor];
        if (p->refs[r].mode != q->refs[r].mode || tp->dtype != tq->dtype ||
            tp->cols != tq->cols ||
            hx_tile_nrows(tp, p->refs[r].tile) != hx_tile_nrows(tq, q->refs[r].tile)) {
            return 0;
        }
    }
    return 1;
}

/* t->ops[i].cls: the first op of i's side doing the same work (i itself without classes). */
static void set_classes(const struct overlap_setup *s, struct hx_overlap_table *t)
{
    hx_graph_t gx = hx_gpt_graph(s->x), gy = hx_gpt_graph(s->y);
    t->classes = s->classes;
    for (int i = 0; i < t->nops; i++) {
        int fwd = i < s->nfwd, first = fwd ? 0 : s->nfwd;
        hx_graph_t g = fwd ? gx : gy;
        const struct hx_node *n = &g->nodes[fwd ? s->fwd[i] : s->bwd[i - s->nfwd]];
        t->ops[i].cls = i;
        for (int c = first; s->classes && c < i; c++) {
            const struct hx_node *m = &g->nodes[fwd ? s->fwd[c] : s->bwd[c - s->nfwd]];
            if (t->ops[c].cls == c && overlap_same_work(g, m, g, n)) {
                t->ops[i].cls = c;
                break;
            }
        }
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v). */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Ranks start each repeat together, or a collective would count its peers' lateness. */
static int sync_ranks(const struct overlap_setup *s)
{
    return s->ranks > 1 ? hx_comm_host_barrier(HX_GROUP_WORLD) : HX_OK;
}

static int wait_done(hx_graph_t g, struct hx_task_time *tt, int n)
{
    int ret = hx_graph_wait(g);
    for (int k = 0; k < n && ret == HX_OK; k++) {
        /* termination (hence the callback) precedes the end of starpu_task_wait_for_all */
        HX_ASSERT(__atomic_load_n(&tt[k].done, __ATOMIC_ACQUIRE),
                  "node %d finished without its timing callback", tt[k].node->id);
    }
    return ret;
}

/* One node alone: its duration in ms. */
static int run_solo(const struct overlap_setup *s, hx_gpt_t m, int id, double *ms)
{
    struct hx_task_time tt;
    hx_graph_t g = hx_gpt_graph(m);
    int ret = sync_ranks(s);
    ret = ret == HX_OK ? hx_graph_submit_timed(g, id, id + 1, &tt) : ret;
    ret = ret == HX_OK ? wait_done(g, &tt, 1) : ret;
    *ms = ret == HX_OK ? (tt.end_us - tt.start_us) / 1e3 : 0;
    return ret;
}

/* Forward node @p fa of x and backward node @p fb of y started together: the makespan and
 * each one's own duration, in ms. */
static int run_pair(const struct overlap_setup *s, int fa, int fb, double *span, double *a_ms,
                    double *b_ms)
{
    struct hx_task_time tt[2];
    hx_graph_t gx = hx_gpt_graph(s->x), gy = hx_gpt_graph(s->y);
    int ret = sync_ranks(s);
    ret = ret == HX_OK ? hx_graph_submit_timed(gx, fa, fa + 1, &tt[0]) : ret;
    ret = ret == HX_OK ? hx_graph_submit_timed(gy, fb, fb + 1, &tt[1]) : ret;
    ret = ret == HX_OK ? wait_done(gx, tt, 2) : ret;
    if (ret != HX_OK) {
        return ret;
    }
    double start = fmin(tt[0].start_us, tt[1].start_us), end = fmax(tt[0].end_us, tt[1].end_us);
    *span = (end - start) / 1e3;
    *a_ms = (tt[0].end_us - tt[0].start_us) / 1e3;
    *b_ms = (tt[1].end_us - tt[1].start_us) / 1e3;
    return HX_OK;
}

/* Both models run a forward and backward pass: activations and gradients of a real step. */
static int refresh(const struct overlap_setup *s)
{
    struct hx_step_result r;
    int ret = hx_gpt_forward_backward(s->x, &r);
    return ret == HX_OK ? hx_gpt_forward_backward(s->y, &r) : ret;
}

/* Samples: what the ranks agree on with one MAX all-reduce, so every rank must take them in
 * the same order and the same number.  Solo samples belong to a class (row cls of `solo`,
 * the class's first op): R per member at the start, then R in each co-run pair of the
 * class, at most cap = R x (largest class + max(nfwd, nbwd)).  Pair samples are kept at the
 * measured pairs' indices. */
struct samples {
    int cap;        /* solo samples a class can have */
    int *nsolo;     /* per class (first op): solo samples taken */
    double *solo;   /* nops x cap */
    double *span;   /* npairs x R */
    double *own_a;  /* npairs x R */
    double *own_b;  /* npairs x R */
    double *all;    /* the one allocation of the four above */
    long count;
};

static int solo_sample(const struct overlap_setup *s, const struct hx_overlap_table *t,
                       struct samples *sm, int op)
{
    int fwd = op < s->nfwd, c = t->ops[op].cls;
    HX_ASSERT(sm->nsolo[c] < sm->cap, "class of op %d: more than %d solo samples", op,
              sm->cap);
    return run_solo(s, fwd ? s->x : s->y, fwd ? s->fwd[op] : s->bwd[op - s->nfwd],
                    &sm->solo[(long)c * sm->cap + sm->nsolo[c]++]);
}

static int measure_all(const struct overlap_setup *s, const struct hx_overlap_table *t,
                       struct samples *sm)
{
    const int R = s->repeats;
    hx_graph_t gx = hx_gpt_graph(s->x), gy = hx_gpt_graph(s->y);
    int ret = HX_OK;
    double t0 = now_s();
    for (int i = 0; i < t->nops && ret == HX_OK; i++) {
        for (int r = 0; r < R && ret == HX_OK; r++) {
            ret = solo_sample(s, t, sm, i);
        }
    }
    for (int i = 0; i < s->nfwd && ret == HX_OK; i++) {
        if (t->ops[i].cls != i) {
            continue; /* its class's first op's row stands for it */
        }
        ret = refresh(s);
        for (int j = 0; j < s->nbwd && ret == HX_OK; j++) {
            int k = i * s->nbwd + j;
            if (t->ops[s->nfwd + j].cls != s->nfwd + j ||
                overlap_serialized(&gx->nodes[s->fwd[i]], &gy->nodes[s->bwd[j]])) {
                continue; /* another pair's numbers, or never co-run (see overlap_measure) */
            }
            for (int r = 0; r < R && ret == HX_OK; r++) {
                ret = solo_sample(s, t, sm, i);
                ret = ret == HX_OK ? solo_sample(s, t, sm, s->nfwd + j) : ret;
                ret = ret == HX_OK ? run_pair(s, s->fwd[i], s->bwd[j], &sm->span[k * R + r],
                                              &sm->own_a[k * R + r], &sm->own_b[k * R + r])
                                   : ret;
            }
        }
        if (s->verbose && ret == HX_OK) {
            fprintf(stderr, "profile-overlap: F%d of %d paired with the backward ops "
                    "(%.1f s)\n", i, s->nfwd, now_s() - t0);
        }
    }
    return ret;
}

int overlap_measure(const struct overlap_setup *s, struct hx_overlap_table *t)
{
    const int R = s->repeats;
    hx_graph_t gx = hx_gpt_graph(s->x), gy = hx_gpt_graph(s->y);
    HX_ASSERT(t->nfwd == s->nfwd && t->nbwd == s->nbwd && R >= 1,
              "table %d x %d for lists %d x %d, %d repeats", t->nfwd, t->nbwd, s->nfwd,
              s->nbwd, R);
    set_classes(s, t);
    struct samples sm;
    int largest = 0;
    for (int c = 0; c < t->nops; c++) {
        int n = 0;
        for (int i = c; i < t->nops; i++) {
            n += t->ops[i].cls == c;
        }
        largest = n > largest ? n : largest;
    }
    sm.cap = R * (largest + (t->nfwd > t->nbwd ? t->nfwd : t->nbwd));
    sm.count = (long)t->nops * sm.cap + 3L * R * t->npairs;
    sm.all = calloc((size_t)(sm.count > 0 ? sm.count : 1), sizeof(double));
    sm.nsolo = calloc((size_t)(t->nops > 0 ? t->nops : 1), sizeof(int));
    if (sm.all == NULL || sm.nsolo == NULL) {
        free(sm.all);
        free(sm.nsolo);
        return HX_ERR(HX_ENOMEM, "%ld timing samples", sm.count);
    }
    sm.solo = sm.all;
    sm.span = sm.solo + (long)t->nops * sm.cap;
    sm.own_a = sm.span + (long)R * t->npairs;
    sm.own_b = sm.own_a + (long)R * t->npairs;
    int ret = measure_all(s, t, &sm);
    if (ret == HX_OK && s->ranks > 1) {
        ret = hx_comm_host_allreduce(HX_GROUP_WORLD, sm.all, sm.count, HX_F64, HX_MAX);
    }
    for (int i = 0; i < t->nops && ret == HX_OK; i++) {
        struct hx_overlap_op *o = &t->ops[i];
        const struct hx_node *n = i < s->nfwd ? &gx->nodes[s->fwd[i]]
                                              : &gy->nodes[s->bwd[i - s->nfwd]];
        snprintf(o->op, sizeof o->op, "%s", hx_op_name(n->op));
        o->comm = n->kind == HX_KIND_COMM;
        o->lane = (int)n->lane;
        o->flops = n->flops;
        o->bytes = n->bytes;
        double *v = &sm.solo[(long)o->cls * sm.cap];
        o->solo_ms = median(v, sm.nsolo[o->cls]); /* sorted now: v[0] is the minimum */
        o->solo_ms_min = v[0];
    }
    for (int k = 0; k < t->npairs && ret == HX_OK; k++) {
        struct hx_overlap_pair *p = &t->pairs[k];
        const struct hx_overlap_op *a = &t->ops[p->a], *b = &t->ops[p->b];
        p->serialized = overlap_serialized(&gx->nodes[s->fwd[p->a]],
                                           &gy->nodes[s->bwd[p->b - s->nfwd]]);
        if (p->serialized) {
            /* one channel runs its collectives in token order: back to back, nothing hidden;
             * b waits for a, so b's own time from the common start is both solos */
            p->corun_ms = a->solo_ms + b->solo_ms;
            p->a_ms = a->solo_ms;
            p->b_ms = a->solo_ms + b->solo_ms;
            p->oef = 0.0;
            continue;
        }
        long m = (long)(a->cls * s->nbwd + (b->cls - s->nfwd)) * R; /* the measured pair */
        p->corun_ms = median(&sm.span[m], R);
        p->a_ms = median(&sm.own_a[m], R);
        p->b_ms = median(&sm.own_b[m], R);
        p->oef = hx_oef(a->solo_ms, b->solo_ms, p->corun_ms);
    }
    free(sm.all);
    free(sm.nsolo);
    return ret;
}
