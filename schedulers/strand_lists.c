/* SPDX-License-Identifier: MIT */
/* schedulers/strand_lists.c: the two operator lists of the pairing plan, read from the IR.
 * A list is the nodes of one layer, one micro-batch and one phase group in submission order;
 * its DAG is reachability in the whole graph restricted to the list (an n x n matrix, n <=
 * a few hundred), so a path through nodes outside the list - a gradient bucket's all-reduce,
 * a channel token, the other tile's accumulation - orders the two ends as the runtime will.
 * Test: tests/schedulers/strand_plan.c */
#include <stdlib.h>
#include <string.h>

#include "helix/error.h"
#include "helix/plan.h"

static int in_side(const struct hx_node *n, char side, int layer, int microbatch)
{
    if (n->layer != layer || n->microbatch != microbatch) {
        return 0;
    }
    if (side == 'F') {
        return n->phase == HX_PHASE_FORWARD;
    }
    return n->phase == HX_PHASE_BACKWARD_DATA || n->phase == HX_PHASE_BACKWARD_WEIGHT;
}

/* reach[k1 * n + k2] = 1 if list node k2 depends (transitively, through any nodes) on k1.
 * Only nodes between the list's first and last ids can lie on such a path. */
static int list_reach(const struct hx_deps *deps, const int *node, int n, unsigned char *reach)
{
    int lo = node[0], hi = node[n - 1], w = hi - lo + 1;
    int *soff = calloc((size_t)w + 1, sizeof *soff), *idx = malloc(sizeof(int) * (size_t)w);
    int *stack = malloc(sizeof(int) * (size_t)w);
    unsigned char *seen = malloc((size_t)w);
    int *succ = NULL, ret = HX_OK;
    if (soff == NULL || idx == NULL || stack == NULL || seen == NULL) {
        ret = HX_ENOMEM;
        goto out;
    }
    /* successor CSR of the window, from the predecessor lists */
    for (int v = lo; v <= hi; v++) {
        for (int e = deps->off[v]; e < deps->off[v + 1]; e++) {
            if (deps->pred[e] >= lo) {
                soff[deps->pred[e] - lo + 1]++;
            }
        }
    }
    for (int i = 0; i < w; i++) {
        soff[i + 1] += soff[i];
        idx[i] = -1;
    }
    succ = malloc(sizeof(int) * ((size_t)soff[w] + 1));
    int *fill = calloc((size_t)w + 1, sizeof *fill);
    if (succ == NULL || fill == NULL) {
        free(fill);
        ret = HX_ENOMEM;
        goto out;
    }
    for (int v = lo; v <= hi; v++) {
        for (int e = deps->off[v]; e < deps->off[v + 1]; e++) {
            int p = deps->pred[e] - lo;
            if (p >= 0) {
                succ[soff[p] + fill[p]++] = v - lo;
            }
        }
    }
    free(fill);
    for (int k = 0; k < n; k++) {
        idx[node[k] - lo] = k;
    }
    for (int k = 0; k < n; k++) {
        memset(seen, 0, (size_t)w);
        int top = 0;
        stack[top++] = node[k] - lo;
        seen[node[k] - lo] = 1;
        while (top > 0) {
            int v = stack[--top];
            for (int e = soff[v]; e < soff[v + 1]; e++) {
                int s = succ[e];
                if (!seen[s]) {
                    seen[s] = 1;
                    stack[top++] = s;
                    if (idx[s] >= 0) {
                        reach[(size_t)k * n + idx[s]] = 1;
                    }
                }
            }
        }
    }
out:
    free(soff), free(idx), free(stack), free(seen), free(succ);
    return ret;
}

int hx_strand_list_build(const struct hx_graph *g, const struct hx_deps *deps, char side,
                         int layer, int microbatch, int movable_desc, struct hx_strand_list *s)
{
    memset(s, 0, sizeof *s);
    s->side = side;
    HX_ASSERT(side == 'F' || side == 'B', "side '%c' is neither F nor B", side);
    for (int i = 0; i < g->nnodes; i++) {
        s->n += in_side(&g->nodes[i], side, layer, microbatch);
    }
    if (s->n == 0) {
        return HX_ERR(HX_EINVAL, "the graph has no %s node of layer %d, micro-batch %d",
                      side == 'F' ? "forward" : "backward", layer, microbatch);
    }
    int n = s->n;
    unsigned char *reach = calloc((size_t)n * n, 1);
    s->node = malloc(sizeof(int) * (size_t)n);
    s->ndesc = calloc((size_t)n, sizeof(int));
    s->movable = calloc((size_t)n, sizeof(int));
    s->dag.n = n;
    s->dag.off = calloc((size_t)n + 1, sizeof(int));
    if (reach == NULL || s->node == NULL || s->ndesc == NULL || s->movable == NULL ||
        s->dag.off == NULL) {
        free(reach);
        hx_strand_list_free(s);
        return HX_ERR(HX_ENOMEM, "a list of %d ops", n);
    }
    for (int i = 0, k = 0; i < g->nnodes; i++) {
        if (in_side(&g->nodes[i], side, layer, microbatch)) {
            s->node[k++] = i;
        }
    }
    int ret = list_reach(deps, s->node, n, reach);
    int nedges = 0;
    for (int a = 0; a < n && ret == HX_OK; a++) {
        for (int b = 0; b < n; b++) {
            nedges += reach[(size_t)a * n + b];
            s->ndesc[a] += reach[(size_t)a * n + b];
        }
        s->movable[a] = s->ndesc[a] <= movable_desc;
    }
    s->dag.pred = malloc(sizeof(int) * ((size_t)nedges + 1));
    if (ret != HX_OK || s->dag.pred == NULL) {
        free(reach);
        hx_strand_list_free(s);
        return HX_ERR(HX_ENOMEM, "the DAG of a list of %d ops", n);
    }
    /* predecessors of b: every a that reaches it (a < b, since ids grow along edges) */
    int e = 0;
    for (int b = 0; b < n; b++) {
        s->dag.off[b] = e;
        for (int a = 0; a < b; a++) {
            if (reach[(size_t)a * n + b]) {
                s->dag.pred[e++] = a;
            }
        }
    }
    s->dag.off[n] = e;
    free(reach);
    return HX_OK;
}

void hx_strand_list_free(struct hx_strand_list *s)
{
    free(s->node);
    free(s->ndesc);
    free(s->movable);
    hx_deps_free(&s->dag);
    memset(s, 0, sizeof *s);
}
