/* SPDX-License-Identifier: MIT */
/* graphs/graph.c: building the IR.  Tensors and nodes are appended in order; the node
 * order is the sequential task flow every rank submits.  Shapes and buffer counts are checked
 * here, at build time, so a wrong graph never reaches StarPU.  Barriers between nodes that
 * share no data are IR too: control edges, kept sorted by target so a node's are found by
 * binary search, and a strand plan's segments.
 * Tests: tests/graphs/ir_topology.c, tests/graphs/control_edges.c */
#include <stdlib.h>
#include <string.h>

#include "codelets/codelets.h"
#include "helix/error.h"
#include "helix/graph.h"

hx_graph_t hx_graph_create(void)
{
    hx_graph_t g = calloc(1, sizeof *g);
    if (g == NULL) {
        return NULL;
    }
    g->cur.phase = HX_PHASE_FORWARD;
    g->cur.layer = -1;
    g->cur.strand = HX_STRAND_NONE;
    return g;
}

void hx_graph_destroy(hx_graph_t g)
{
    if (g == NULL) {
        return;
    }
    for (int i = 0; i < g->ntensors; i++) {
        hx_tensor_release(g->tensors[i]);
        free(g->tensors[i]);
    }
    free(g->tensors);
    free(g->by_name);
    free(g->nodes);
    free(g->ctrl);
    free(g->tags.nodes);
    free(g->tags.declared);
    free(g);
}

static void *grow(void *p, int *cap, int need, size_t elem)
{
    if (need <= *cap) {
        return p;
    }
    int ncap = *cap ? *cap * 2 : 64;
    while (ncap < need) {
        ncap *= 2;
    }
    void *q = realloc(p, (size_t)ncap * elem);
    HX_ASSERT(q != NULL, "out of memory growing the graph to %d entries", ncap);
    *cap = ncap;
    return q;
}

/* Tensor names to ids: FNV-1a into a power-of-two open-addressing table kept at most half
 * full, so a model's thousands of tensors are found (and checked unique) in constant time
 * rather than by a scan each (a plan prices thousands of graphs). */
static unsigned name_hash(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s != '\0'; s++) {
        h = (h ^ (unsigned char)*s) * 16777619u;
    }
    return h;
}

static void name_put(int *table, int cap, const char *name, int id)
{
    unsigned h = name_hash(name);
    while (table[h & (unsigned)(cap - 1)] != 0) {
        h++;
    }
    table[h & (unsigned)(cap - 1)] = id + 1;
}

static void name_insert(hx_graph_t g, int id)
{
    if (2 * g->ntensors > g->cap_by_name) { /* grow and put every name again */
        int cap = g->cap_by_name ? 2 * g->cap_by_name : 64;
        while (2 * g->ntensors > cap) {
            cap *= 2;
        }
        int *table = calloc((size_t)cap, sizeof *table);
        HX_ASSERT(table != NULL, "out of memory for %d tensor names", g->ntensors);
        for (int k = 0; k < g->ntensors; k++) {
            name_put(table, cap, g->tensors[k]->name, k);
        }
        free(g->by_name);
        g->by_name = table;
        g->cap_by_name = cap;
        return;
    }
    name_put(g->by_name, g->cap_by_name, g->tensors[id]->name, id);
}

struct hx_tensor *hx_graph_tensor(hx_graph_t g, const char *name, enum hx_dtype dt,
                                  enum hx_tensor_role role, int rows, int cols, int tile_rows)
{
    HX_ASSERT(rows > 0 && cols > 0, "tensor %s: shape (%d, %d) must be positive", name, rows,
              cols);
    HX_ASSERT(hx_graph_find(g, name) == NULL, "tensor name %s used twice", name);
    struct hx_tensor *t = calloc(1, sizeof *t);
    HX_ASSERT(t != NULL, "out of memory for tensor %s", name);
    g->tensors = grow(g->tensors, &g->cap_tensors, g->ntensors + 1, sizeof *g->tensors);
    t->id = g->ntensors;
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dtype = dt;
    t->role = role;
    t->rows = rows;
    t->cols = cols;
    t->tile_rows = (tile_rows <= 0 || tile_rows > rows) ? rows : tile_rows;
    t->ntiles = (rows + t->tile_rows - 1) / t->tile_rows;
    t->grad_of = -1;
    g->tensors[g->ntensors++] = t;
    name_insert(g, t->id);
    return t;
}

struct hx_tensor *hx_graph_find(hx_graph_t g, const char *name)
{
    if (g->cap_by_name == 0) {
        return NULL;
    }
    for (unsigned h = name_hash(name);; h++) {
        int id = g->by_name[h & (unsigned)(g->cap_by_name - 1)] - 1;
        if (id < 0 || strcmp(g->tensors[id]->name, name) == 0) {
            return id < 0 ? NULL : g->tensors[id];
        }
    }
}

struct hx_node *hx_graph_add(hx_graph_t g, enum hx_op op, const union hx_op_args *args,
                             int nrefs, const struct hx_ref *refs, double flops, double bytes)
{
    const struct hx_op_info *info = hx_op_info(op);
    HX_ASSERT(nrefs >= info->min_refs && nrefs <= info->max_refs,
              "%s takes %d..%d buffers, got %d", info->name, info->min_refs, info->max_refs,
              nrefs);
    for (int i = 0; i < nrefs; i++) {
        HX_ASSERT(refs[i].tensor >= 0 && refs[i].tensor < g->ntensors, "%s: buffer %d names "
                  "tensor %d of %d", info->name, i, refs[i].tensor, g->ntensors);
        const struct hx_tensor *t = g->tensors[refs[i].tensor];
        HX_ASSERT(refs[i].tile >= 0 && refs[i].tile < t->ntiles, "%s: buffer %d is tile %d of "
                  "%s, which has %d", info->name, i, refs[i].tile, t->name, t->ntiles);
    }
    g->nodes = grow(g->nodes, &g->cap_nodes, g->nnodes + 1, sizeof *g->nodes);
    struct hx_node *n = &g->nodes[g->nnodes];
    memset(n, 0, sizeof *n);
    n->id = g->nnodes++;
    n->op = op;
    n->kind = HX_KIND_COMPUTE;
    n->lane = HX_LANE_COMPUTE;
    n->phase = g->cur.phase;
    n->layer = g->cur.layer;
    n->microbatch = g->cur.microbatch;
    n->strand = g->cur.strand;
    n->segment = -1;
    n->block = -1;
    n->priority = g->cur.priority;
    n->flops = flops;
    n->bytes = bytes;
    n->nrefs = nrefs;
    memcpy(n->refs, refs, sizeof *refs * (size_t)nrefs);
    if (args != NULL) {
        n->args = *args;
    }
    return n;
}

int hx_graph_realize(hx_graph_t g)
{
    for (int i = 0; i < g->ntensors; i++) {
        int ret = hx_tensor_realize(g->tensors[i]);
        if (ret != HX_OK) {
            return ret;
        }
    }
    return HX_OK;
}

/* Position of the first control edge at or after (to, from) in the sorted list */
static int ctrl_lower_bound(const struct hx_graph *g, int to, int from)
{
    int lo = 0, hi = g->nctrl;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        const struct hx_edge *e = &g->ctrl[mid];
        if (e->to < to || (e->to == to && e->from < from)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

int hx_graph_control(hx_graph_t g, int from, int to)
{
    if (from < 0 || to >= g->nnodes || from >= to) {
        return HX_ERR(HX_EINVAL, "control edge %d -> %d: need 0 <= from < to < %d (the node "
                      "order must stay a topological order)", from, to, g->nnodes);
    }
    int at = ctrl_lower_bound(g, to, from);
    if (at < g->nctrl && g->ctrl[at].to == to && g->ctrl[at].from == from) {
        return HX_OK;
    }
    g->ctrl = grow(g->ctrl, &g->cap_ctrl, g->nctrl + 1, sizeof *g->ctrl);
    memmove(&g->ctrl[at + 1], &g->ctrl[at], sizeof *g->ctrl * (size_t)(g->nctrl - at));
    g->ctrl[at] = (struct hx_edge){ from, to };
    g->nctrl++;
    return HX_OK;
}

int hx_graph_serialize_comm(hx_graph_t g, int first, int last)
{
    if (first < 0 || last > g->nnodes || first > last) {
        return HX_ERR(HX_EINVAL, "serialize nodes [%d, %d): the graph has %d", first, last,
                      g->nnodes);
    }
    /* [prev, run): the run before the one that starts at run */
    int prev = first, run = first;
    for (int i = first; i < last; i++) {
        int comm = g->nodes[i].kind == HX_KIND_COMM;
        if (i > first && comm != (g->nodes[i - 1].kind == HX_KIND_COMM)) {
            prev = run, run = i;
        }
        for (int k = prev; k < run; k++) {
            int ret = hx_graph_control(g, k, i);
            if (ret != HX_OK) {
                return ret;
            }
        }
    }
    return HX_OK;
}

/* Is there a control edge k -> i? */
static int has_control(const struct hx_graph *g, int k, int i)
{
    int at = ctrl_lower_bound(g, i, k);
    return at < g->nctrl && g->ctrl[at].to == i && g->ctrl[at].from == k;
}

int hx_graph_barrier_preds(const struct hx_graph *g, int i, int *preds, int max)
{
    const struct hx_node *n = &g->nodes[i];
    int np = 0;
    for (int e = ctrl_lower_bound(g, i, -1); e < g->nctrl && g->ctrl[e].to == i; e++) {
        if (preds != NULL && np < max) {
            preds[np] = g->ctrl[e].from;
        }
        np++;
    }
    for (int k = i - 1; n->block >= 0 && n->segment > 0 && k >= 0 &&
                        g->nodes[k].block == n->block; k--) {
        if (g->nodes[k].segment == n->segment - 1 && !has_control(g, k, i)) {
            if (preds != NULL && np < max) {
                preds[np] = k;
            }
            np++;
        }
    }
    return np;
}
