/* SPDX-License-Identifier: MIT */
/* schedulers/strand_orders.c: candidate topological orders of one list (papers.md §2.4 step
 * 2).  Only movable ops (weight-gradient GEMMs and the like) leave their submission places;
 * a move takes one out and puts it back anywhere between its last predecessor and its first
 * successor.  Breadth first from the submission order, so the cap keeps the orders closest
 * to it; duplicates are found through an open-addressing hash of the permutations.  When
 * every op is movable the orders reached are all the linear extensions of the DAG (adjacent
 * swaps of independent ops connect them).  Test: tests/schedulers/strand_plan.c */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "helix/error.h"
#include "helix/plan.h"

struct order_store {
    struct hx_order_set *set;
    uint64_t *hash;          /* [max orders] */
    int *slot;               /* [nslot] order index + 1, 0 = empty */
    int nslot;
};

static uint64_t fnv(const int *v, int n)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) {
        h = (h ^ (uint64_t)(unsigned)v[i]) * 1099511628211ull;
    }
    return h;
}

/* Add @p ord unless held; returns 1 if added. */
static int store_add(struct order_store *st, const int *ord)
{
    struct hx_order_set *o = st->set;
    uint64_t h = fnv(ord, o->len);
    int s = (int)(h & (uint64_t)(st->nslot - 1));
    while (st->slot[s] != 0) {
        int q = st->slot[s] - 1;
        if (st->hash[q] == h && memcmp(o->orders + (size_t)q * o->len, ord,
                                       sizeof(int) * (size_t)o->len) == 0) {
            return 0;
        }
        s = (s + 1) & (st->nslot - 1);
    }
    memcpy(o->orders + (size_t)o->n * o->len, ord, sizeof(int) * (size_t)o->len);
    st->hash[o->n] = h;
    st->slot[s] = ++o->n;
    return 1;
}

/* Successor lists (CSR) from the DAG's predecessor lists: @p off has n + 2 zeroed entries
 * and ends with the offsets in off[0..n]. */
static void successors(const struct hx_strand_list *s, int *off, int *succ)
{
    int n = s->n;
    for (int e = 0; e < s->dag.off[n]; e++) {
        off[s->dag.pred[e] + 2]++;
    }
    for (int k = 0; k < n; k++) {
        off[k + 2] += off[k + 1];
    }
    /* off[p + 1] is now the start of p's list; filling advances it to the end, which is
     * the start of p + 1's: off ends as the CSR offsets */
    for (int k = 0; k < n; k++) {
        for (int e = s->dag.off[k]; e < s->dag.off[k + 1]; e++) {
            succ[off[s->dag.pred[e] + 1]++] = k;
        }
    }
}

/* Insertion places of op @p v in @p ord with v removed: [*lo, *hi] of the shorter sequence. */
static void window(const struct hx_strand_list *s, const int *succ_off, const int *succ,
                   const int *pos, int v, int *lo, int *hi)
{
    *lo = 0;
    *hi = s->n - 1;
    for (int e = s->dag.off[v]; e < s->dag.off[v + 1]; e++) {
        int q = pos[s->dag.pred[e]];          /* before p: unchanged by the removal */
        *lo = q + 1 > *lo ? q + 1 : *lo;
    }
    for (int e = succ_off[v]; e < succ_off[v + 1]; e++) {
        int q = pos[succ[e]] - 1;             /* after p: one place earlier once v is out */
        *hi = q < *hi ? q : *hi;
    }
}

/* Targets of one op, in the order they are tried: latest, earliest, then far to near. */
static int targets(int lo, int hi, int p, int *t)
{
    int n = 0;
    if (hi != p) {
        t[n++] = hi;
    }
    if (lo != p && lo != hi) {
        t[n++] = lo;
    }
    for (int d = hi - lo; d >= 1; d--) {
        if (p + d < hi && p + d > lo) {
            t[n++] = p + d;
        }
        if (p - d > lo && p - d < hi) {
            t[n++] = p - d;
        }
    }
    return n;
}

int hx_strand_orders(const struct hx_strand_list *s, int max_orders, struct hx_order_set *o)
{
    int n = s->n;
    memset(o, 0, sizeof *o);
    if (max_orders < 1) {
        return HX_ERR(HX_EINVAL, "max_orders %d: at least the submission order (1) is needed",
                      max_orders);
    }
    struct order_store st = { o, NULL, NULL, 1 };
    while (st.nslot < 2 * max_orders) {
        st.nslot *= 2;
    }
    o->len = n;
    o->orders = malloc(sizeof(int) * (size_t)max_orders * (size_t)n);
    st.hash = malloc(sizeof(uint64_t) * (size_t)max_orders);
    st.slot = calloc((size_t)st.nslot, sizeof(int));
    int *succ_off = calloc((size_t)n + 2, sizeof(int));
    int *succ = malloc(sizeof(int) * ((size_t)s->dag.off[n] + 1));
    int *pos = malloc(sizeof(int) * (size_t)n), *cur = malloc(sizeof(int) * (size_t)n);
    int *cand = malloc(sizeof(int) * (size_t)n), *mov = malloc(sizeof(int) * (size_t)n);
    int *tgt = malloc(sizeof(int) * (size_t)n * (size_t)n), *ntgt = malloc(sizeof(int) * (size_t)n);
    int ret = HX_OK;
    if (o->orders == NULL || st.hash == NULL || st.slot == NULL || succ_off == NULL ||
        succ == NULL || pos == NULL || cur == NULL || cand == NULL || mov == NULL ||
        tgt == NULL || ntgt == NULL) {
        ret = HX_ERR(HX_ENOMEM, "orders of a list of %d ops (max %d)", n, max_orders);
        hx_order_set_free(o);
        goto out;
    }
    successors(s, succ_off, succ);
    for (int k = 0; k < n; k++) {
        cur[k] = k;
    }
    store_add(&st, cur);
    int q;
    for (q = 0; q < o->n && o->n < max_orders; q++) {
        memcpy(cur, o->orders + (size_t)q * n, sizeof(int) * (size_t)n);
        for (int i = 0; i < n; i++) {
            pos[cur[i]] = i;
        }
        /* each movable op's targets, ops in list order */
        int nm = 0, most = 0;
        for (int v = 0; v < n; v++) {
            if (!s->movable[v]) {
                continue;
            }
            int lo, hi;
            window(s, succ_off, succ, pos, v, &lo, &hi);
            mov[nm] = v;
            ntgt[nm] = targets(lo, hi, pos[v], tgt + (size_t)nm * n);
            most = ntgt[nm] > most ? ntgt[nm] : most;
            nm++;
        }
        /* ops take turns: every op's r-th target before any op's (r+1)-th */
        for (int r = 0; r < most && o->n < max_orders; r++) {
            for (int m = 0; m < nm && o->n < max_orders; m++) {
                if (r >= ntgt[m]) {
                    continue;
                }
                int v = mov[m], t = tgt[(size_t)m * n + r], k = 0;
                for (int i = 0; i < n; i++) { /* cur without v, v inserted at t */
                    if (cur[i] == v) {
                        continue;
                    }
                    if (k == t) {
                        cand[k++] = v;
                    }
                    cand[k++] = cur[i];
                }
                if (k == t) {
                    cand[k++] = v;
                }
                store_add(&st, cand);
            }
        }
    }
    o->complete = q >= o->n; /* every held order was expanded without reaching the cap */
out:
    free(st.hash), free(st.slot), free(succ_off), free(succ), free(pos), free(cur);
    free(cand), free(mov), free(tgt), free(ntgt);
    return ret;
}

void hx_order_set_free(struct hx_order_set *o)
{
    free(o->orders);
    memset(o, 0, sizeof *o);
}
