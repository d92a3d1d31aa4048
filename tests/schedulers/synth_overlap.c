/* SPDX-License-Identifier: MIT */
/* tests/schedulers/synth_overlap.c: writes a synthetic overlap table (schema helix-overlap-1)
 * for tests/cli/plan_strands.sh, with the keys of a GPT built here by the profiler's rule and
 * times from flops and bytes instead of measurements (deterministic; nothing is timed):
 *   solo = 0.01 + flops / 1e8 ms (compute) or 0.01 + bytes / 2e5 ms (collectives)
 *   compute || collective: each op 10% slower; compute || compute: each runs at the speed of
 *   sharing, own time = its solo + 80% of the other's ("overlap" mode), or no overlap at all,
 *   the forward op first: a_ms = solo a, b_ms = corun = solo a + solo b ("serial" mode).
 * usage: synth_overlap OUT L C H T B V TP SP DP M LAYER overlap|serial
 * The table is filled in memory and written by hx_overlap_table_write, so hx_overlap_table_load
 * reads it; that writer puts one op and one pair per line, so a test can delete one with sed
 * and keep valid JSON. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/error.h"
#include "helix/gpt.h"
#include "helix/overlap.h"

static double solo(const struct hx_node *n)
{
    return 0.01 + (n->kind == HX_KIND_COMM ? n->bytes / 2e5 : n->flops / 1e8);
}

static int in_fwd(const struct hx_node *n, int layer)
{
    return n->phase == HX_PHASE_FORWARD && n->layer == layer && n->microbatch == 0;
}

static int in_bwd(const struct hx_node *n, int layer, int mb)
{
    return (n->phase == HX_PHASE_BACKWARD_DATA || n->phase == HX_PHASE_BACKWARD_WEIGHT) &&
           n->layer == layer && n->microbatch == mb;
}

int main(int argc, char **argv)
{
    if (argc != 14) {
        fprintf(stderr, "usage: %s OUT L C H T B V TP SP DP M LAYER overlap|serial\n", argv[0]);
        return 2;
    }
    int v[11];
    for (int k = 0; k < 11; k++) {
        v[k] = atoi(argv[2 + k]);
    }
    int L = v[0], C = v[1], H = v[2], T = v[3], B = v[4], V = v[5], tp = v[6], sp = v[7];
    int dp = v[8], M = v[9], layer = v[10], serial = strcmp(argv[13], "serial") == 0;
    struct hx_gpt_config c = { .vocab_size = V, .num_layers = L, .num_heads = H,
                               .hidden_size = C, .seq_len = T, .micro_batch_size = B,
                               .num_micro_batches = M };
    struct hx_optim_config o;
    hx_optim_config_default(&o, 1);
    struct hx_mesh_request q = { .world_size = tp * dp, .world_rank = 0, .tp = tp, .dp = dp,
                                 .sequence_parallel = sp };
    struct hx_mesh mesh;
    struct hx_parallel_config par = { .mesh = &mesh };
    hx_gpt_t m;
    if (hx_mesh_init(&mesh, &q, 0) != HX_OK || hx_gpt_build_parallel(&m, &c, &o, &par) != HX_OK) {
        return 1;
    }
    hx_graph_t g = hx_gpt_graph(m);
    int last = M / dp - 1, nf = 0, nb = 0;
    int *f = malloc(sizeof(int) * (size_t)g->nnodes), *b = malloc(sizeof(int) * (size_t)g->nnodes);
    for (int i = 0; i < g->nnodes; i++) {
        if (in_fwd(&g->nodes[i], layer)) {
            f[nf++] = i;
        } else if (in_bwd(&g->nodes[i], layer, last)) {
            b[nb++] = i;
        }
    }
    struct hx_overlap_table t;
    if (hx_overlap_table_init(&t, nf, nb) != HX_OK) {
        return 1;
    }
    t.model = (struct hx_overlap_model){ .num_layers = L, .hidden_size = C, .num_heads = H,
                                         .seq_length = T, .micro_batch_size = B,
                                         .vocab_size = V, .tp = tp, .sequence_parallel = sp,
                                         .dp = dp, .num_micro_batches = M }; /* GPT-2 */
    t.layer = layer, t.workers = 2, t.ranks = tp * dp, t.repeats = 1;
    snprintf(t.host, sizeof t.host, "synthetic");
    snprintf(t.date, sizeof t.date, "1970-01-01T00:00:00Z");
    for (int k = 0; k < nf + nb; k++) {
        const struct hx_node *n = &g->nodes[k < nf ? f[k] : b[k - nf]];
        struct hx_overlap_op *op = &t.ops[k];
        snprintf(op->op, sizeof op->op, "%s", hx_op_name(n->op));
        op->comm = n->kind == HX_KIND_COMM;
        op->lane = n->lane;
        op->flops = n->flops, op->bytes = n->bytes;
        op->solo_ms = op->solo_ms_min = solo(n);
    }
    for (int x = 0; x < nf; x++) {
        for (int y = 0; y < nb; y++) {
            const struct hx_node *a = &g->nodes[f[x]], *bn = &g->nodes[b[y]];
            struct hx_overlap_pair *p = &t.pairs[x * nb + y];
            double sa = solo(a), sb = solo(bn);
            if (serial) {
                p->a_ms = sa, p->b_ms = sa + sb;
            } else if (a->kind != bn->kind) {
                p->a_ms = 1.1 * sa, p->b_ms = 1.1 * sb;
            } else {
                p->a_ms = sa + 0.8 * sb, p->b_ms = sb + 0.8 * sa;
            }
            p->corun_ms = fmax(p->a_ms, p->b_ms);
            p->oef = hx_oef(sa, sb, p->corun_ms);
            p->serialized = serial;
        }
    }
    int ret = hx_overlap_table_write(&t, argv[1]);
    hx_overlap_table_free(&t);
    free(f), free(b);
    hx_gpt_destroy(m);
    return ret == HX_OK ? 0 : 1;
}
