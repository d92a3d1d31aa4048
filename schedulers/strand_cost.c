/* SPDX-License-Identifier: MIT */
/* schedulers/strand_cost.c: the predicted time of one step of a plan, by simulating two
 * lanes (papers.md §2.4, "Recommended generalisation").  Each side runs its ops in order;
 * work is counted in solo milliseconds; while forward op x and backward op y overlap each
 * progresses at a rate taken from the pair's profile (pair_rates), and an op whose partner
 * side is done runs at rate 1 (solo speed).  Inside a segment a pair's rates are used
 * whatever point each op has reached: the profile has nothing finer.  The costs come from
 * a loaded overlap table (hx_strand_costs_from_table), checked against the graph's lists.
 * Test: tests/schedulers/strand_plan.c, tests/schedulers/plan_io.c, tests/cli/plan_strands.sh */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/error.h"
#include "helix/overlap.h"
#include "helix/plan.h"

int hx_strand_costs_alloc(struct hx_strand_costs *c, int nf, int nb)
{
    memset(c, 0, sizeof *c);
    c->nf = nf, c->nb = nb;
    size_t np = (size_t)nf * (size_t)nb;
    c->f_solo = calloc((size_t)nf + 1, sizeof(double));
    c->b_solo = calloc((size_t)nb + 1, sizeof(double));
    c->a_ms = calloc(np + 1, sizeof(double));
    c->b_ms = calloc(np + 1, sizeof(double));
    c->corun_ms = calloc(np + 1, sizeof(double));
    if (c->f_solo == NULL || c->b_solo == NULL || c->a_ms == NULL || c->b_ms == NULL ||
        c->corun_ms == NULL) {
        hx_strand_costs_free(c);
        return HX_ERR(HX_ENOMEM, "costs of %d x %d ops", nf, nb);
    }
    return HX_OK;
}

void hx_strand_costs_free(struct hx_strand_costs *c)
{
    free(c->f_solo), free(c->b_solo), free(c->a_ms), free(c->b_ms), free(c->corun_ms);
    memset(c, 0, sizeof *c);
}

/* Rates of forward op x and backward op y while they overlap, in solo ms per ms.
 *
 * The profiler starts x and y together and records each one's own duration, a_ms and b_ms;
 * the shorter one (say x, a_ms <= b_ms) overlapped for its whole life, the longer one ran
 * alone for its last b_ms - a_ms.  The rates that reproduce both durations:
 *     rate_x = solo_x / a_ms
 *     rate_y = (solo_y - (b_ms - a_ms)) / a_ms     (>= 0: y cannot go backwards)
 * so the simulated pair ends at max(a_ms, b_ms), as measured.  (Taking solo/own for both
 * would let a pair that ran one after the other, a_ms = solo_x and b_ms = solo_x + solo_y,
 * finish before solo_x + solo_y.)  A serialized pair thus keeps the total rate at 1 and a
 * plan's time stays the sequential time; a perfectly overlapped pair (own times = solo
 * times) runs both at rate 1.
 * Both rates are capped at 1: co-running never makes an op faster than alone, and an own
 * time below the solo median is noise.  Uncapped, the noise became speed: on the 4-rank bed
 * (2026-11-25) 592 of 720 pairs gave a rate above 1, the worst 107 (F14, a 0.86 ms
 * all-reduce, with B39, a 2 us op: own 0.61 ms against its 0.86 ms solo, so the 0.25 ms
 * difference was "done" in 2 us), and chaining such pairs predicted a step shorter than
 * the solo time of one of its ops.  With the cap each lane progresses at most at solo speed,
 * so a step is never predicted shorter than either side's solo sum. */
static void pair_rates(const struct hx_strand_costs *c, int x, int y, double *rx, double *ry)
{
    double sx = c->f_solo[x], sy = c->b_solo[y];
    double ax = c->a_ms[(size_t)x * c->nb + y], by = c->b_ms[(size_t)x * c->nb + y];
    if (ax <= by) {
        *rx = ax > 0 ? fmin(1.0, sx / ax) : 1.0;
        *ry = ax > 0 ? fmin(1.0, fmax(0.0, (sy - (by - ax)) / ax)) : 1.0;
    } else {
        *ry = by > 0 ? fmin(1.0, sy / by) : 1.0;
        *rx = by > 0 ? fmin(1.0, fmax(0.0, (sx - (ax - by)) / by)) : 1.0;
    }
}

double hx_strand_step_time(const struct hx_strand_costs *c, const int *f, int nf, const int *b,
                           int nb)
{
    double t = 0;
    int i = 0, j = 0;
    double wx = nf > 0 ? c->f_solo[f[0]] : 0, wy = nb > 0 ? c->b_solo[b[0]] : 0; /* work left */
    while (i < nf && j < nb) {
        if (wx <= 0) {
            if (++i < nf) {
                wx = c->f_solo[f[i]];
            }
            continue;
        }
        if (wy <= 0) {
            if (++j < nb) {
                wy = c->b_solo[b[j]];
            }
            continue;
        }
        double rx, ry;
        pair_rates(c, f[i], b[j], &rx, &ry);
        /* one rate may be 0 (pair_rates), never both: the other side's op ends first */
        double tx = rx > 0 ? wx / rx : INFINITY, ty = ry > 0 ? wy / ry : INFINITY;
        if (tx <= ty) {
            t += tx;
            wy -= ry * tx;
            wx = 0;
        } else {
            t += ty;
            wx -= rx * ty;
            wy = 0;
        }
    }
    /* one side is done: the other finishes alone */
    for (; i < nf; i++, wx = i < nf ? c->f_solo[f[i]] : 0) {
        t += fmax(wx, 0.0);
    }
    for (; j < nb; j++, wy = j < nb ? c->b_solo[b[j]] : 0) {
        t += fmax(wy, 0.0);
    }
    return t;
}

/* Why the table does not fit the lists, for the messages: another layer, or another model
 * or build. */
static const char *misfit(const struct hx_overlap_table *t, int layer, char *buf, size_t len)
{
    if (layer != t->layer) {
        snprintf(buf, len, "the table was profiled on layer %d, whose ops differ from layer "
                 "%d's: plan layer %d, or profile layer %d", t->layer, layer, t->layer, layer);
    } else {
        snprintf(buf, len, "the table was profiled for another model or build; re-profile");
    }
    return buf;
}

/* One side: as many keys as the list, each with the graph's op; solo times into @p solo. */
static int side_solo(const struct hx_overlap_table *t, const struct hx_graph *g, int layer,
                     const struct hx_strand_list *s, double *solo)
{
    const char *what = s->side == 'F' ? "forward" : "backward";
    int n = s->side == 'F' ? t->nfwd : t->nbwd;
    const struct hx_overlap_op *ops = t->ops + (s->side == 'F' ? 0 : t->nfwd);
    char why[160];
    if (n != s->n) {
        return HX_ERR(HX_EFORMAT, "overlap table has %d %s ops (%c0..%c%d) but layer %d of this "
                      "model has %d: %s", n, what, s->side, s->side, n - 1, layer, s->n,
                      misfit(t, layer, why, sizeof why));
    }
    for (int k = 0; k < n; k++) {
        const char *want = g != NULL ? hx_op_name(g->nodes[s->node[k]].op) : NULL;
        if (want != NULL && strcmp(want, ops[k].op) != 0) {
            return HX_ERR(HX_EFORMAT, "overlap table: %s is %s, but %s op %d of layer %d is "
                          "%s: %s", ops[k].key, ops[k].op, what, k, layer, want,
                          misfit(t, layer, why, sizeof why));
        }
        solo[k] = ops[k].solo_ms;
    }
    return HX_OK;
}

int hx_strand_costs_from_table(const struct hx_overlap_table *t, const struct hx_graph *g,
                               const struct hx_strand_list *F, const struct hx_strand_list *B,
                               struct hx_strand_costs *c)
{
    int ret = hx_strand_costs_alloc(c, F->n, B->n);
    if (ret != HX_OK) {
        return ret;
    }
    int layer = g != NULL && F->n > 0 ? g->nodes[F->node[0]].layer : t->layer;
    if ((ret = side_solo(t, g, layer, F, c->f_solo)) == HX_OK &&
        (ret = side_solo(t, g, layer, B, c->b_solo)) == HX_OK) {
        /* the table's pair (Fi, Bj) is at i * nbwd + j, as the costs' */
        for (int k = 0; k < t->npairs; k++) {
            const struct hx_overlap_pair *p = &t->pairs[k];
            c->corun_ms[k] = p->corun_ms;
            c->a_ms[k] = p->a_ms;
            c->b_ms[k] = p->b_ms;
            if (p->serialized) {
                /* One channel runs the two back to back (forward first, say): the backward op
                 * waits for the whole forward one, so its own time from the common start is
                 * both solos.  Tables written before 2026-11-27 hold its solo time there, which
                 * pair_rates read as a perfect overlap: on 64 simulated A40s a plan step of two
                 * reduce-scatters was predicted at 117 ms against 231 ms back to back. */
                double sa = t->ops[p->a].solo_ms, sb = t->ops[p->b].solo_ms;
                c->a_ms[k] = sa;
                c->b_ms[k] = sa + sb;
                c->corun_ms[k] = sa + sb;
            }
        }
    }
    if (ret != HX_OK) {
        hx_strand_costs_free(c);
    }
    return ret;
}
