/* SPDX-License-Identifier: MIT */
/* schedulers/strand_plan.c: the pairing DP (papers.md §2.4) over operator prefixes of one
 * forward order and one backward order, and the search over pairs of candidate orders.
 * O(nf nb S^2) transitions per order pair, each an O(S) two-lane simulation
 * (strand_cost.c); S = max_segment bounds the work when per-tile lists are 30-80 ops long.
 * Row i only reads F[0, i) and column j only B[0, j): orders are visited sorted, so that
 * neighbours share long prefixes, and only the rows or columns past the shared prefix are
 * recomputed.  Test: tests/schedulers/strand_plan.c */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/error.h"
#include "helix/plan.h"

#define TIE_EPS 1e-12 /* relative: differences below it are summation noise, i.e. ties */
#define TABLES_MAX (256.0 * 1024 * 1024) /* bytes of DP tables kept across orders */

void hx_plan_options_default(struct hx_plan_options *o)
{
    o->max_orders = 64;
    o->max_segment = 8;
    o->barrier_ms = 0.0;
    o->movable_desc = 4;
}

static int better(double v, double best)
{
    return isinf(best) ? v < best : v < best - TIE_EPS * fabs(best);
}

struct dp {
    int nf, nb, S;
    double barrier;
    double *T;         /* [(nf+1)(nb+1)], index i*(nb+1)+j */
    int *from;         /* predecessor state of the best transition, same index */
};

#define AT(d, i, j) ((size_t)(i) * (size_t)((d)->nb + 1) + (size_t)(j))

/* The table, for F (nf ops) against B (nb ops):
 *
 *        j = 0   1   2  ...  nb          T(i,j): best time of F[0,i) and B[0,j)
 *   i=0    0 -> solo B ->                  co-run step: (i',j') -> (i,j), 1 <= i-i' <= S
 *   1      |  \                                          and 1 <= j-j' <= S
 *   ...  solo F  co-run                    solo step:  (i-1,j) or (i,j-1)
 *   nf                     T(nf,nb)
 *
 * Recompute every cell (i, j) with i >= r0 or j >= c0; the others hold the values of an
 * earlier pair of orders sharing F[0, r0) and B[0, c0), which are all they depend on.
 * Row-major, so a cell's predecessors (i' <= i, j' <= j) are ready when it is computed. */
static void dp_fill(struct dp *d, const struct hx_strand_costs *c, const int *F, const int *B,
                    int r0, int c0)
{
    for (int i = 0; i <= d->nf; i++) {
        for (int j = i >= r0 ? 0 : c0; j <= d->nb; j++) {
            if (i == 0 && j == 0) {
                d->T[0] = 0;
                d->from[0] = -1;
                continue;
            }
            double best = INFINITY;
            int from = -1;
            /* solo steps first: at equal time no barrier is better than one */
            if (i > 0 && better(d->T[AT(d, i - 1, j)] + c->f_solo[F[i - 1]], best)) {
                best = d->T[AT(d, i - 1, j)] + c->f_solo[F[i - 1]];
                from = (int)AT(d, i - 1, j);
            }
            if (j > 0 && better(d->T[AT(d, i, j - 1)] + c->b_solo[B[j - 1]], best)) {
                best = d->T[AT(d, i, j - 1)] + c->b_solo[B[j - 1]];
                from = (int)AT(d, i, j - 1);
            }
            /* co-run steps, longer segments first */
            for (int a = i < d->S ? i : d->S; a >= 1; a--) {
                for (int b = j < d->S ? j : d->S; b >= 1; b--) {
                    double v = d->T[AT(d, i - a, j - b)] + d->barrier +
                               hx_strand_step_time(c, F + i - a, a, B + j - b, b);
                    if (better(v, best)) {
                        best = v;
                        from = (int)AT(d, i - a, j - b);
                    }
                }
            }
            d->T[AT(d, i, j)] = best;
            d->from[AT(d, i, j)] = from;
        }
    }
}

/* Walk the best transitions back into steps, merging runs of solo steps of one side. */
static int dp_steps(const struct dp *d, const struct hx_strand_costs *c, const int *F,
                    const int *B, struct hx_plan *p)
{
    int cap = d->nf + d->nb + 1, n = 0;
    struct hx_plan_step *back = malloc(sizeof *back * (size_t)cap);
    struct hx_plan_step *st = malloc(sizeof *st * (size_t)cap);
    if (back == NULL || st == NULL) {
        free(back), free(st);
        return HX_ERR(HX_ENOMEM, "%d plan steps", cap);
    }
    for (int s = (int)AT(d, d->nf, d->nb); d->from[s] >= 0; s = d->from[s]) {
        int i = s / (d->nb + 1), j = s % (d->nb + 1);
        int pi = d->from[s] / (d->nb + 1), pj = d->from[s] % (d->nb + 1);
        back[n++] = (struct hx_plan_step){ pi, i, pj, j, 0, 0 };
    }
    /* into plan order, merging runs of solo steps of one side */
    int m = 0;
    for (int k = n - 1; k >= 0; k--) {
        struct hx_plan_step x = back[k];
        int fsolo = x.b0 == x.b1, bsolo = x.f0 == x.f1;
        if (m > 0) {
            struct hx_plan_step *y = &st[m - 1];
            if ((fsolo && y->b0 == y->b1 && y->f1 == x.f0) ||
                (bsolo && y->f0 == y->f1 && y->b1 == x.b0)) {
                y->f1 = x.f1;
                y->b1 = x.b1;
                continue;
            }
        }
        st[m++] = x;
    }
    free(back);
    for (int k = 0; k < m; k++) {
        struct hx_plan_step *x = &st[k];
        double seq = 0;
        for (int i = x->f0; i < x->f1; i++) {
            seq += c->f_solo[F[i]];
        }
        for (int j = x->b0; j < x->b1; j++) {
            seq += c->b_solo[B[j]];
        }
        int corun = x->f1 > x->f0 && x->b1 > x->b0;
        x->sequential_ms = seq;
        x->predicted_ms = corun ? hx_strand_step_time(c, F + x->f0, x->f1 - x->f0, B + x->b0,
                                                      x->b1 - x->b0) + d->barrier
                                : seq;
    }
    free(p->steps);
    p->steps = st;
    p->nsteps = m;
    return HX_OK;
}

static int dp_init(struct dp *d, int nf, int nb, int S, double barrier)
{
    d->nf = nf, d->nb = nb, d->S = S, d->barrier = barrier;
    size_t n = (size_t)(nf + 1) * (size_t)(nb + 1);
    d->T = malloc(sizeof(double) * n);
    d->from = malloc(sizeof(int) * n);
    if (d->T == NULL || d->from == NULL) {
        free(d->T), free(d->from);
        return HX_ERR(HX_ENOMEM, "DP table of %d x %d", nf + 1, nb + 1);
    }
    return HX_OK;
}

static void dp_fini(struct dp *d)
{
    free(d->T), free(d->from);
}

double hx_plan_dp(const struct hx_strand_costs *c, const int *f_order, int nf,
                  const int *b_order, int nb, int max_segment, double barrier_ms,
                  struct hx_plan *plan)
{
    struct dp d;
    if (dp_init(&d, nf, nb, max_segment, barrier_ms) != HX_OK) {
        return NAN;
    }
    dp_fill(&d, c, f_order, b_order, 0, 0);
    double t = d.T[AT(&d, nf, nb)];
    if (plan != NULL && dp_steps(&d, c, f_order, b_order, plan) != HX_OK) {
        t = NAN;
    }
    dp_fini(&d);
    return t;
}

/* order indices sorted so that backward orders sharing a prefix are neighbours (insertion
 * sort: a few hundred orders at most) */
static int lex_less(const struct hx_order_set *o, int a, int b)
{
    const int *x = o->orders + (size_t)a * o->len, *y = o->orders + (size_t)b * o->len;
    for (int k = 0; k < o->len; k++) {
        if (x[k] != y[k]) {
            return x[k] < y[k];
        }
    }
    return 0;
}

static void sort_orders(const struct hx_order_set *o, int *idx)
{
    for (int k = 0; k < o->n; k++) {
        int v = k, q = k;
        while (q > 0 && lex_less(o, v, idx[q - 1])) {
            idx[q] = idx[q - 1];
            q--;
        }
        idx[q] = v;
    }
}

static int common_prefix(const int *a, const int *b, int n)
{
    int k = 0;
    while (k < n && a[k] == b[k]) {
        k++;
    }
    return k;
}

static void fill_ops(const struct hx_graph *g, const struct hx_strand_list *s,
                     char (*names)[HX_PLAN_OPNAME])
{
    for (int k = 0; k < s->n; k++) {
        snprintf(names[k], HX_PLAN_OPNAME, "%s",
                 g != NULL ? hx_op_name(g->nodes[s->node[k]].op) : "op");
    }
}

/* The pair of candidate orders with the least DP time: (*bf, *bb) index fo and bo.
 *
 * One table per backward order when they fit in TABLES_MAX bytes: table k then holds the
 * previous forward order's DP against backward order k, and forward orders sorted by their
 * sequences differ mostly near the end (movable ops sit low in the DAG), so only the rows
 * past their common prefix are recomputed.  The first forward order fills the tables in
 * sorted backward order, each starting from its predecessor's columns.  Otherwise one
 * table, reused by columns only. */
static int best_orders(const struct hx_strand_costs *c, const struct hx_plan_options *o,
                       const struct hx_order_set *fo, const struct hx_order_set *bo, int *bf,
                       int *bb)
{
    int nf = fo->len, nb = bo->len;
    size_t cells = (size_t)(nf + 1) * (size_t)(nb + 1);
    int ntab = (double)cells * (sizeof(double) + sizeof(int)) * bo->n <= TABLES_MAX ? bo->n : 1;
    struct dp *tab = calloc((size_t)ntab, sizeof *tab);
    int *fsorted = malloc(sizeof(int) * (size_t)fo->n);
    int *bsorted = malloc(sizeof(int) * (size_t)bo->n);
    int nok = 0, ret = HX_OK;
    while (tab != NULL && nok < ntab &&
           dp_init(&tab[nok], nf, nb, o->max_segment, o->barrier_ms) == HX_OK) {
        nok++;
    }
    if (tab == NULL || nok < ntab || fsorted == NULL || bsorted == NULL) {
        ret = HX_ERR(HX_ENOMEM, "plan search over %d x %d orders", fo->n, bo->n);
        goto out;
    }
    sort_orders(fo, fsorted);
    sort_orders(bo, bsorted);
    double best = INFINITY; /* earlier candidates win ties: (time, fi, bi) */
    *bf = *bb = 0;
    const int *prevF = NULL;
    for (int x = 0; x < fo->n; x++) {
        int fi = fsorted[x];
        const int *F = fo->orders + (size_t)fi * nf, *prevB = NULL;
        int r0 = prevF == NULL ? 0 : common_prefix(prevF, F, nf) + 1;
        for (int y = 0; y < bo->n; y++) {
            int bi = bsorted[y];
            const int *B = bo->orders + (size_t)bi * nb;
            struct dp *d = &tab[ntab > 1 ? bi : 0];
            if (ntab > 1 && prevF != NULL) { /* table bi: this B, the last F: new rows */
                dp_fill(d, c, F, B, r0, nb + 1);
            } else if (prevB != NULL) {      /* this F, the last B's columns */
                if (ntab > 1) {
                    const struct dp *pd = &tab[bsorted[y - 1]];
                    memcpy(d->T, pd->T, sizeof(double) * cells);
                    memcpy(d->from, pd->from, sizeof(int) * cells);
                }
                dp_fill(d, c, F, B, nf + 1, common_prefix(prevB, B, nb) + 1);
            } else {
                dp_fill(d, c, F, B, 0, 0);
            }
            prevB = B;
            double t = d->T[AT(d, nf, nb)];
            int tie = !better(t, best) && !better(best, t);
            if (better(t, best) || (tie && (fi < *bf || (fi == *bf && bi < *bb)))) {
                best = t, *bf = fi, *bb = bi;
            }
        }
        prevF = F;
    }
out:
    for (int k = 0; k < nok; k++) {
        dp_fini(&tab[k]);
    }
    free(tab), free(fsorted), free(bsorted);
    return ret;
}

int hx_plan_search(const struct hx_graph *g, const struct hx_strand_list *F,
                   const struct hx_strand_list *B, const struct hx_strand_costs *c,
                   const struct hx_plan_options *o, struct hx_plan *p)
{
    memset(p, 0, sizeof *p);
    if (o->max_segment < 1 || o->max_orders < 1 || !(o->barrier_ms >= 0)) {
        return HX_ERR(HX_EINVAL, "max_segment %d and max_orders %d must be >= 1, barrier %g ms "
                      ">= 0", o->max_segment, o->max_orders, o->barrier_ms);
    }
    HX_ASSERT(c->nf == F->n && c->nb == B->n, "costs of %d x %d ops for lists of %d and %d",
              c->nf, c->nb, F->n, B->n);
    struct hx_order_set fo = { 0 }, bo = { 0 };
    int bf = 0, bb = 0, ret = hx_strand_orders(F, o->max_orders, &fo);
    if (ret == HX_OK) {
        ret = hx_strand_orders(B, o->max_orders, &bo);
    }
    if (ret == HX_OK) {
        ret = best_orders(c, o, &fo, &bo, &bf, &bb);
    }
    if (ret == HX_OK) {
        p->layer = g != NULL ? g->nodes[F->node[0]].layer : 0;
        p->nf = F->n, p->nb = B->n;
        p->f_order = malloc(sizeof(int) * (size_t)F->n);
        p->b_order = malloc(sizeof(int) * (size_t)B->n);
        p->f_op = malloc(sizeof *p->f_op * (size_t)F->n);
        p->b_op = malloc(sizeof *p->b_op * (size_t)B->n);
        if (p->f_order == NULL || p->b_order == NULL || p->f_op == NULL || p->b_op == NULL) {
            ret = HX_ERR(HX_ENOMEM, "a plan of %d + %d ops", F->n, B->n);
        }
    }
    if (ret == HX_OK) {
        memcpy(p->f_order, fo.orders + (size_t)bf * F->n, sizeof(int) * (size_t)F->n);
        memcpy(p->b_order, bo.orders + (size_t)bb * B->n, sizeof(int) * (size_t)B->n);
        fill_ops(g, F, p->f_op);
        fill_ops(g, B, p->b_op);
        p->f_orders = fo.n, p->b_orders = bo.n;
        p->f_all = fo.complete, p->b_all = bo.complete;
        p->max_segment = o->max_segment;
        p->barrier_ms = o->barrier_ms;
        if (isnan(hx_plan_dp(c, p->f_order, F->n, p->b_order, B->n, o->max_segment,
                             o->barrier_ms, p))) {
            ret = HX_ENOMEM; /* reported */
        }
    }
    if (ret == HX_OK) {
        p->predicted_ms = p->sequential_ms = 0;
        for (int k = 0; k < p->nsteps; k++) {
            p->predicted_ms += p->steps[k].predicted_ms;
        }
        for (int k = 0; k < F->n; k++) { /* every op alone, in list order */
            p->sequential_ms += c->f_solo[k];
        }
        for (int k = 0; k < B->n; k++) {
            p->sequential_ms += c->b_solo[k];
        }
    } else {
        hx_plan_free(p);
    }
    hx_order_set_free(&fo), hx_order_set_free(&bo);
    return ret;
}

void hx_plan_free(struct hx_plan *p)
{
    free(p->f_order), free(p->b_order), free(p->f_op), free(p->b_op), free(p->steps);
    memset(p, 0, sizeof *p);
}
