/* SPDX-License-Identifier: MIT */
/* graphs/dot.c: Graphviz export of the IR.  One box per node labelled op / layer / micro-batch,
 * filled by phase (forward, backward-data, backward-weight, optimizer) and outlined by kind;
 * edges are the dependencies of topo.c, dashed where only a barrier (a control edge, a strand
 * plan's step) orders two tasks that share no data.  `helix train --dump-dot FILE` writes one step. */
#include <stdio.h>
#include <stdlib.h>

#include "helix/error.h"
#include "helix/graph.h"

static const char *phase_color[HX_PHASE_COUNT] = { "#cfe2ff", "#ffd6a5", "#fdffb6", "#caffbf",
                                                   "#e0c3fc" };
static const char *phase_name[HX_PHASE_COUNT] = { "forward", "backward-data", "backward-weight",
                                                  "optimizer", "recompute" };

int hx_graph_write_dot(const struct hx_graph *g, FILE *f)
{
    struct hx_deps d;
    int ret = hx_graph_deps(g, &d);
    if (ret != HX_OK) {
        return ret;
    }
    fprintf(f, "digraph helix {\n  rankdir=TB;\n  node [shape=box, style=filled, "
            "fontname=\"Helvetica\", fontsize=10];\n");
    for (int i = 0; i < g->nnodes; i++) {
        const struct hx_node *n = &g->nodes[i];
        const struct hx_tensor *out = NULL;
        for (int r = n->nrefs - 1; r >= 0 && out == NULL; r--) {
            if (n->refs[r].mode & HX_W) {
                out = g->tensors[n->refs[r].tensor];
            }
        }
        fprintf(f, "  n%d [label=\"%s\\n%s", i, hx_op_name(n->op), out ? out->name : "");
        if (out != NULL && out->ntiles > 1) {
            int tile = 0;
            for (int r = 0; r < n->nrefs; r++) {
                if (g->tensors[n->refs[r].tensor] == out) {
                    tile = n->refs[r].tile;
                }
            }
            fprintf(f, "[%d]", tile);
        }
        fprintf(f, "\\nL%d mb%d %s\", fillcolor=\"%s\"%s, tooltip=\"%.3g flop\"];\n", n->layer,
                n->microbatch, phase_name[n->phase], phase_color[n->phase],
                n->kind == HX_KIND_COMM ? ", penwidth=3, color=\"#d00000\"" : "", n->flops);
    }
    int cap = 0, *barrier = NULL;
    for (int i = 0; i < d.n && ret == HX_OK; i++) {
        int nb = hx_graph_barrier_preds(g, i, NULL, 0);
        if (nb > cap) {
            int *b = realloc(barrier, sizeof *barrier * (size_t)nb);
            if (b == NULL) {
                ret = HX_ERR(HX_ENOMEM, "DOT export: the %d barriers of node %d", nb, i);
                break;
            }
            barrier = b, cap = nb;
        }
        hx_graph_barrier_preds(g, i, barrier, nb);
        for (int k = d.off[i]; k < d.off[i + 1]; k++) {
            int is_barrier = 0;
            for (int q = 0; q < nb && !is_barrier; q++) {
                is_barrier = barrier[q] == d.pred[k];
            }
            fprintf(f, "  n%d -> n%d%s;\n", d.pred[k], i, is_barrier ? " [style=dashed]" : "");
        }
    }
    free(barrier);
    fprintf(f, "}\n");
    hx_deps_free(&d);
    if (ret != HX_OK) {
        return ret;
    }
    return ferror(f) ? HX_ERR(HX_EIO, "writing the DOT graph failed") : HX_OK;
}
