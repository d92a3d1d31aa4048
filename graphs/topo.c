/* SPDX-License-Identifier: MIT */
/* graphs/topo.c: the dependencies the sequential task flow implies, as StarPU derives them:
 * on each tile, a reader depends on the last writer (RAW), a writer on the readers since the
 * last write (WAR) and on the last writer (WAW).  From them: critical path and levels for
 * priorities and planning, and a topological-order check for schedule tests.
 * Test: tests/graphs/ir_topology.c */
#include <stdlib.h>
#include <string.h>

#include "helix/error.h"
#include "helix/graph.h"

struct tile_state {
    int last_writer;
    int nreaders, cap;
    int *readers;     /* readers since last_writer */
};

struct edge_buf {
    int n, cap;
    int *v;
};

static void push(struct edge_buf *b, int x)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 256;
        b->v = realloc(b->v, sizeof(int) * (size_t)b->cap);
        HX_ASSERT(b->v != NULL, "out of memory for %d edges", b->cap);
    }
    b->v[b->n++] = x;
}

int hx_graph_deps(const struct hx_graph *g, struct hx_deps *d)
{
    int *tile_base = malloc(sizeof(int) * (size_t)(g->ntensors + 1));
    if (tile_base == NULL) {
        return HX_ERR(HX_ENOMEM, "deps of %d tensors", g->ntensors);
    }
    int ntiles = 0;
    for (int i = 0; i < g->ntensors; i++) {
        tile_base[i] = ntiles;
        ntiles += g->tensors[i]->ntiles;
    }
    struct tile_state *ts = calloc((size_t)ntiles + 1, sizeof *ts);
    d->n = g->nnodes;
    d->off = malloc(sizeof(int) * (size_t)(g->nnodes + 1));
    if (ts == NULL || d->off == NULL) {
        free(tile_base);
        free(ts);
        free(d->off);
        return HX_ERR(HX_ENOMEM, "deps of %d nodes", g->nnodes);
    }
    for (int i = 0; i < ntiles; i++) {
        ts[i].last_writer = -1;
    }
    struct edge_buf e = { 0, 0, NULL };
    for (int i = 0; i < g->nnodes; i++) {
        const struct hx_node *n = &g->nodes[i];
        int start = e.n;
        d->off[i] = start;
        for (int r = 0; r < n->nrefs; r++) {
            struct tile_state *s = &ts[tile_base[n->refs[r].tensor] + n->refs[r].tile];
            if (s->last_writer >= 0) {
                push(&e, s->last_writer);
            }
            if (n->refs[r].mode & HX_W) {
                for (int k = 0; k < s->nreaders; k++) {
                    push(&e, s->readers[k]);
                }
            }
        }
        /* a strand plan's barrier */
        int nb = hx_graph_barrier_preds(g, i, NULL, 0);
        if (nb > 0) {
            int *b = malloc(sizeof(int) * (size_t)nb);
            HX_ASSERT(b != NULL, "out of memory");
            hx_graph_barrier_preds(g, i, b, nb);
            for (int k = 0; k < nb; k++) {
                push(&e, b[k]);
            }
            free(b);
        }
        /* remove self-edges and duplicates (a node may touch one tile twice) */
        int m = start;
        for (int k = start; k < e.n; k++) {
            int dup = e.v[k] == i;
            for (int q = start; q < m && !dup; q++) {
                dup = e.v[q] == e.v[k];
            }
            if (!dup) {
                e.v[m++] = e.v[k];
            }
        }
        e.n = m;
        for (int r = 0; r < n->nrefs; r++) {
            struct tile_state *s = &ts[tile_base[n->refs[r].tensor] + n->refs[r].tile];
            if (n->refs[r].mode & HX_W) {
                s->last_writer = i;
                s->nreaders = 0;
            } else {
                if (s->nreaders == s->cap) {
                    s->cap = s->cap ? s->cap * 2 : 4;
                    s->readers = realloc(s->readers, sizeof(int) * (size_t)s->cap);
                    HX_ASSERT(s->readers != NULL, "out of memory");
                }
                s->readers[s->nreaders++] = i;
            }
        }
    }
    d->off[g->nnodes] = e.n;
    d->pred = e.v;
    for (int i = 0; i < ntiles; i++) {
        free(ts[i].readers);
    }
    free(ts);
    free(tile_base);
    return HX_OK;
}

void hx_deps_free(struct hx_deps *d)
{
    free(d->off);
    free(d->pred);
    memset(d, 0, sizeof *d);
}

double hx_graph_critical_path(const struct hx_graph *g, const struct hx_deps *d, int *level)
{
    double *finish = calloc((size_t)d->n + 1, sizeof *finish);
    double best = 0;
    HX_ASSERT(finish != NULL, "out of memory");
    /* nodes are already in a topological order (predecessors have smaller ids) */
    for (int i = 0; i < d->n; i++) {
        double start = 0;
        int lv = 0;
        for (int k = d->off[i]; k < d->off[i + 1]; k++) {
            int p = d->pred[k];
            if (finish[p] > start) {
                start = finish[p];
            }
            if (level != NULL && level[p] + 1 > lv) {
                lv = level[p] + 1;
            }
        }
        finish[i] = start + g->nodes[i].flops;
        if (level != NULL) {
            level[i] = lv;
        }
        if (finish[i] > best) {
            best = finish[i];
        }
    }
    free(finish);
    return best;
}

/* A node's weight on the critical path, in flops: its own, or for a collective the flops a
 * worker could do while its bytes cross the link (~100 GFLOP/s against ~100 MB/s between
 * nodes and ~2 GB/s inside one).  Without it a gradient bucket's all-reduce weighs nothing,
 * the weight-gradient tasks that feed it fall to the bottom of the queue, and the
 * all-reduce cannot start before the backward ends. */
static double node_cost(const struct hx_node *n)
{
    if (n->kind == HX_KIND_COMM) {
        return n->bytes * (n->lane == HX_LANE_COMM_INTER ? 1000.0 : 50.0);
    }
    return n->flops;
}

void hx_graph_prioritize(struct hx_graph *g, const struct hx_deps *d, int max_prio)
{
    double *bottom = calloc((size_t)d->n + 1, sizeof *bottom), top = 0;
    HX_ASSERT(bottom != NULL, "out of memory");
    /* reverse topological order: a node's successors come later in submission order */
    for (int i = d->n - 1; i >= 0; i--) {
        bottom[i] += node_cost(&g->nodes[i]) + 1.0; /* +1: every task costs something */
        top = bottom[i] > top ? bottom[i] : top;
        for (int k = d->off[i]; k < d->off[i + 1]; k++) {
            int p = d->pred[k];
            if (bottom[i] > bottom[p]) {
                bottom[p] = bottom[i];
            }
        }
    }
    for (int i = 0; i < d->n; i++) {
        g->nodes[i].priority = (int)(max_prio * (bottom[i] / top));
    }
    free(bottom);
}

int hx_deps_is_topological(const struct hx_deps *d, const int *order)
{
    int *pos = malloc(sizeof(int) * (size_t)(d->n + 1));
    int ok = 1;
    HX_ASSERT(pos != NULL, "out of memory");
    for (int i = 0; i < d->n; i++) {
        pos[i] = -1;
    }
    for (int i = 0; i < d->n && ok; i++) {
        if (order[i] < 0 || order[i] >= d->n || pos[order[i]] >= 0) {
            ok = 0;
        } else {
            pos[order[i]] = i;
        }
    }
    for (int i = 0; i < d->n && ok; i++) {
        for (int k = d->off[i]; k < d->off[i + 1]; k++) {
            if (pos[d->pred[k]] > pos[i]) {
                ok = 0;
                break;
            }
        }
    }
    free(pos);
    return ok;
}
