/* SPDX-License-Identifier: MIT */
/* tools/trace_summary.c: `helix trace summarize`: where communication was hidden, per rank,
 * averaged over training steps (the first step, the warm-up, is left out when there are
 * more).  All quantities are measures of unions of task intervals within a step:
 *   span         first task start to last task end of the step on the rank;
 *   compute      union of compute tasks (busy time of the compute lane);
 *   comm (op)    union of the op's collectives, from post to MPI completion;
 *   hidden       comm ∩ compute: in flight while the rank computed;
 *   exposed      comm − compute: the rank waited on the network and computed nothing;
 *   lane exposed lane − compute, per communication lane (intra-node, inter-node): each
 *                lane's collectives in flight with no compute running; time both lanes are
 *                exposed at once counts in each, so the two can sum to more than exposed
 *                (and each is at most exposed and at most its lane's busy time);
 *   bubble       span − compute − exposed data/tensor-parallel collectives, over span: the
 *                compute lane idle and waiting on no collective but a pipeline send/recv or
 *                on nothing (for pipelines: the bubble; otherwise: scheduling gaps);
 *   strand s     union of strand s's tasks but pipeline sends and receives (a receive is
 *                in flight from its post: waiting, not work), with two strands marked;
 *   co-run       strand alpha ∩ strand beta: both strands at work at once, which is what
 *                DHelix's interleaving is for; its share of (alpha ∪ beta) says how much of
 *                the time a strand works the other works beside it.
 * With a baseline (the same job under a no-overlap schedule, --sched serial-comm), Flux's
 * metrics (papers.md §3.3): ECT = span − C and E = 1 − ECT / ECT_baseline, where C is the
 * baseline's compute time (its compute is not slowed by overlapping); per op, the share of
 * the baseline's exposed time that overlap hid, E_op = 1 − exposed / exposed_baseline.
 * The tensor-parallel row is the union of every collective on the tp channels, whatever
 * moves the data (whole-op all-gathers and reduce-scatters, or --tp-comm-overlap's tile
 * shifts), so runs with and without the tile-level overlap compare on it: its exposed time is
 * Flux's effective communication time of the tensor-parallel collectives, and against the
 * serialized baseline E_tp = 1 − exposed_tp / exposed_tp_baseline.  Per op and for that row,
 * the collectives (tile transfers) started per step and the MB this rank sent.
 * Test: tests/mpi/trace.sh. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/trace_file.h"
#include "tools/trace_summary.h"

struct ivl {
    double a, b;
};

static int cmp_ivl(const void *x, const void *y)
{
    const struct ivl *p = x, *q = y;
    return (p->a > q->a) - (p->a < q->a);
}

/* Sort and merge in place; @return the merged count. */
static int merge(struct ivl *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_ivl);
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (k > 0 && v[i].a <= v[k - 1].b) {
            v[k - 1].b = fmax(v[k - 1].b, v[i].b);
        } else {
            v[k++] = v[i];
        }
    }
    return k;
}

static double measure(const struct ivl *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) {
        s += v[i].b - v[i].a;
    }
    return s;
}

/* |A ∩ B| of two merged lists */
static double overlap(const struct ivl *a, int na, const struct ivl *b, int nb)
{
    double s = 0;
    for (int i = 0, k = 0; i < na && k < nb;) {
        double lo = fmax(a[i].a, b[k].a), hi = fmin(a[i].b, b[k].b);
        s += hi > lo ? hi - lo : 0;
        if (a[i].b < b[k].b) {
            i++;
        } else {
            k++;
        }
    }
    return s;
}

typedef int (*pick_fn)(const struct trace_event *e, const void *arg);

/* The merged intervals of the events [0, n) that @p pick selects, into @p v. */
static int select_merged(const struct trace_event *const *ev, int n, pick_fn pick,
                         const void *arg, struct ivl *v)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (pick(ev[i], arg)) {
            v[k++] = (struct ivl){ ev[i]->t0, ev[i]->t1 };
        }
    }
    return merge(v, k);
}

static int is_compute(const struct trace_event *e, const void *arg)
{
    (void)arg;
    return !e->comm;
}

static int is_collective(const struct trace_event *e, const void *arg)
{
    (void)arg;
    return e->collective;
}

static int is_pipeline(const struct trace_event *e)
{
    return strcmp(e->name, "send") == 0 || strcmp(e->name, "recv") == 0;
}

static int is_non_pipeline(const struct trace_event *e, const void *arg)
{
    (void)arg;
    return e->collective && !is_pipeline(e);
}

static int is_op(const struct trace_event *e, const void *arg)
{
    return e->collective && strcmp(e->name, arg) == 0;
}

static int is_tp(const struct trace_event *e)
{
    return e->collective && (strcmp(e->channel, "tp") == 0 || strcmp(e->channel, "tp_beta") == 0);
}

static int on_tp(const struct trace_event *e, const void *arg)
{
    (void)arg;
    return is_tp(e);
}

static int on_lane(const struct trace_event *e, const void *arg)
{
    return e->collective && strcmp(e->lane, arg) == 0;
}

static int is_strand_work(const struct trace_event *e, const void *arg)
{
    return e->strand == *(const int *)arg && !is_pipeline(e);
}

static struct trace_comm *op_slot(struct rank_summary *r, const char *name)
{
    for (int i = 0; i < r->nops; i++) {
        if (strcmp(r->ops[i].name, name) == 0) {
            return &r->ops[i];
        }
    }
    if (r->nops == TRACE_MAX_OPS) {
        return NULL;
    }
    struct trace_comm *c = &r->ops[r->nops++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->efficiency = NAN;
    return c;
}

static void count_transfer(struct trace_comm *c, const struct trace_event *e)
{
    if (c != NULL) {
        c->count += 1;
        c->mb += e->bytes / 1e6;
    }
}

/* One step of one rank (@p ev: its events) added into @p r. */
static void add_step(struct rank_summary *r, const struct trace_event *const *ev, int n,
                     struct ivl *buf, struct ivl *cbuf)
{
    double t0 = INFINITY, t1 = -INFINITY;
    for (int i = 0; i < n; i++) {
        t0 = fmin(t0, ev[i]->t0), t1 = fmax(t1, ev[i]->t1);
    }
    double span = t1 - t0;
    int nc = select_merged(ev, n, is_compute, NULL, cbuf);
    double comp = measure(cbuf, nc);
    int nu = select_merged(ev, n, is_collective, NULL, buf);
    double comm = measure(buf, nu), hid = overlap(buf, nu, cbuf, nc);
    int nn = select_merged(ev, n, is_non_pipeline, NULL, buf);
    double np_exposed = measure(buf, nn) - overlap(buf, nn, cbuf, nc);
    r->span_ms += span;
    r->compute_ms += comp;
    r->comm_ms += comm;
    r->hidden_ms += hid;
    r->exposed_ms += comm - hid;
    r->bubble_ms += fmax(0.0, span - comp - np_exposed);
    static const char *lanes[] = { "comm intra-node", "comm inter-node" };
    for (int l = 0; l < 2; l++) {
        int k = select_merged(ev, n, on_lane, lanes[l], buf);
        double busy = measure(buf, k);
        r->lane_ms[l] += busy;
        r->lane_exposed_ms[l] += busy - overlap(buf, k, cbuf, nc);
    }
    int nt = select_merged(ev, n, on_tp, NULL, buf);
    double tpt = measure(buf, nt), tph = overlap(buf, nt, cbuf, nc);
    r->tp.ms += tpt;
    r->tp.hidden_ms += tph;
    r->tp.exposed_ms += tpt - tph;
    for (int i = 0; i < n; i++) { /* transfers and bytes, per op and tensor-parallel */
        if (ev[i]->collective) {
            count_transfer(op_slot(r, ev[i]->name), ev[i]);
            if (is_tp(ev[i])) {
                count_transfer(&r->tp, ev[i]);
            }
        }
    }
    for (int i = 0; i < n; i++) { /* each collective op once per step */
        if (!ev[i]->collective) {
            continue;
        }
        int first = 1;
        for (int j = 0; j < i && first; j++) {
            first = !(ev[j]->collective && strcmp(ev[j]->name, ev[i]->name) == 0);
        }
        struct trace_comm *c = first ? op_slot(r, ev[i]->name) : NULL;
        if (c != NULL) {
            int k = select_merged(ev, n, is_op, ev[i]->name, buf);
            double t = measure(buf, k), h = overlap(buf, k, cbuf, nc);
            c->ms += t;
            c->hidden_ms += h;
            c->exposed_ms += t - h;
        }
    }
    int nst[2]; /* last: the strands' unions take both buffers (alpha buf, beta cbuf) */
    for (int k = 0; k < 2; k++) {
        nst[k] = select_merged(ev, n, is_strand_work, &k, k ? cbuf : buf);
        r->strand_ms[k] += measure(k ? cbuf : buf, nst[k]);
    }
    r->strands |= nst[0] > 0 && nst[1] > 0;
    r->corun_ms += overlap(buf, nst[0], cbuf, nst[1]);
}

int trace_summarize(const struct trace *t, struct rank_summary **out, int *nsteps_out,
                    int *first_step)
{
    int *steps = malloc(sizeof(int) * ((size_t)t->n + 1));
    const struct trace_event **sel = malloc(sizeof *sel * ((size_t)t->n + 1));
    struct ivl *buf = malloc(sizeof *buf * ((size_t)t->n + 1));
    struct ivl *cbuf = malloc(sizeof *cbuf * ((size_t)t->n + 1));
    struct rank_summary *rs = calloc((size_t)t->nranks + 1, sizeof *rs);
    if (steps == NULL || sel == NULL || buf == NULL || cbuf == NULL || rs == NULL) {
        free(steps), free(sel), free(buf), free(cbuf), free(rs);
        return -1;
    }
    int ns = trace_steps(t, steps), skip = ns > 1; /* the first step warms up */
    int used = ns == 0 ? 1 : ns - skip;
    for (int r = 0; r < t->nranks; r++) {
        rs[r].rank = r;
        snprintf(rs[r].tp.name, sizeof rs[r].tp.name, "tensor-parallel");
        rs[r].tp.efficiency = NAN;
        for (int s = skip; s < (ns == 0 ? 1 : ns); s++) {
            int n = 0;
            for (int i = 0; i < t->n; i++) {
                if (t->ev[i].rank == r && (ns == 0 || t->ev[i].step == steps[s])) {
                    sel[n++] = &t->ev[i];
                }
            }
            if (n > 0) {
                add_step(&rs[r], sel, n, buf, cbuf);
                rs[r].steps++;
            }
        }
        double k = rs[r].steps > 0 ? rs[r].steps : 1; /* sums -> per-step means */
        rs[r].span_ms /= k, rs[r].compute_ms /= k, rs[r].comm_ms /= k;
        rs[r].hidden_ms /= k, rs[r].exposed_ms /= k, rs[r].bubble_ms /= k;
        rs[r].lane_ms[0] /= k, rs[r].lane_ms[1] /= k;
        rs[r].lane_exposed_ms[0] /= k, rs[r].lane_exposed_ms[1] /= k;
        rs[r].strand_ms[0] /= k, rs[r].strand_ms[1] /= k, rs[r].corun_ms /= k;
        for (int i = 0; i <= rs[r].nops; i++) {
            struct trace_comm *c = i < rs[r].nops ? &rs[r].ops[i] : &rs[r].tp;
            c->ms /= k, c->hidden_ms /= k, c->exposed_ms /= k, c->count /= k, c->mb /= k;
        }
        rs[r].ect_ms = rs[r].efficiency = NAN;
    }
    *first_step = ns == 0 ? -1 : steps[skip];
    *nsteps_out = ns == 0 ? 0 : used;
    free(steps), free(sel), free(buf), free(cbuf);
    *out = rs;
    return 0;
}

void trace_against_baseline(struct rank_summary *run, const struct rank_summary *base)
{
    double c = base->compute_ms, ect_base = base->span_ms - c;
    run->ect_ms = run->span_ms - c;
    run->efficiency = ect_base > 0 ? 1.0 - run->ect_ms / ect_base : NAN;
    if (base->tp.exposed_ms > 0) { /* Flux's view of the tensor-parallel collectives */
        run->tp.efficiency = 1.0 - run->tp.exposed_ms / base->tp.exposed_ms;
    }
    for (int i = 0; i < run->nops; i++) {
        struct trace_comm *op = &run->ops[i];
        for (int k = 0; k < base->nops; k++) {
            if (strcmp(base->ops[k].name, op->name) == 0 && base->ops[k].exposed_ms > 0) {
                op->efficiency = 1.0 - op->exposed_ms / base->ops[k].exposed_ms;
            }
        }
    }
}
