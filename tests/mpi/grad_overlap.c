/* SPDX-License-Identifier: MIT */
/* tests/mpi/grad_overlap.c: what --overlap-grad-reduce and --no-overlap-grad-reduce mean, as
 * graph structure (built for rank 0 of a dp=4 mesh without running it; the losses of both
 * modes are compared by tests/mpi/parity_dp.sh).
 *  - Serialized, every gradient all-reduce depends on every backward task: no bucket can
 *    start before the backward ends, whatever order the scheduler picks.  Submitting the
 *    buckets late is not enough: a bucket would start as soon as its own gradients are done.
 *  - Overlapped, the first bucket depends on only part of the backward, so it can run while
 *    the rest of the backward does.
 *  - Both cut the same buckets (the same gradients in the same all-reduces, in order), so
 *    they sum in the same order and give bitwise the same gradients. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "helix/error.h"
#include "helix/gpt.h"
#include "helix/graph.h"
#include "helix/mesh.h"
#include "tap.h"

struct shape {
    int nbuckets;       /* gradient all-reduces on the replica channel */
    int first_backward; /* backward tasks the first bucket depends on */
    int min_backward;   /* the least any bucket depends on */
    int nbackward;      /* backward tasks in the graph */
    uint64_t buckets;   /* hash of the buckets' tensors, in order */
};

static int is_backward(const struct hx_node *n)
{
    return n->kind == HX_KIND_COMPUTE &&
           (n->phase == HX_PHASE_BACKWARD_DATA || n->phase == HX_PHASE_BACKWARD_WEIGHT);
}

/* Every node's ancestors as a bitset row (n x n bits: a few MB for this model). */
static int analyse(hx_graph_t g, struct shape *s)
{
    struct hx_deps d;
    if (hx_graph_deps(g, &d) != HX_OK) {
        return 0;
    }
    int n = g->nnodes, words = (n + 63) / 64;
    uint64_t *anc = calloc((size_t)n * words, sizeof *anc);
    if (anc == NULL) {
        hx_deps_free(&d);
        return 0;
    }
    memset(s, 0, sizeof *s);
    s->min_backward = n;
    s->buckets = 1469598103934665603ULL;
    for (int i = 0; i < n; i++) {
        uint64_t *row = anc + (size_t)i * words;
        for (int k = d.off[i]; k < d.off[i + 1]; k++) {
            int p = d.pred[k];
            const uint64_t *prow = anc + (size_t)p * words;
            for (int w = 0; w < words; w++) {
                row[w] |= prow[w];
            }
            row[p / 64] |= 1ULL << (p % 64);
        }
        const struct hx_node *nd = &g->nodes[i];
        s->nbackward += is_backward(nd);
        if (nd->op != HX_OP_ALLREDUCE || nd->args.coll.channel != HX_GROUP_REPLICA) {
            continue;
        }
        int deps = 0;
        for (int j = 0; j < i; j++) {
            deps += is_backward(&g->nodes[j]) && (row[j / 64] >> (j % 64) & 1);
        }
        if (s->nbuckets++ == 0) {
            s->first_backward = deps;
        }
        s->min_backward = deps < s->min_backward ? deps : s->min_backward;
        for (int r = 1; r < nd->nrefs; r++) { /* refs[0] is the channel token */
            s->buckets = (s->buckets ^ (uint64_t)(nd->refs[r].tensor + 1)) * 1099511628211ULL;
        }
        s->buckets = (s->buckets ^ 0xffu) * 1099511628211ULL; /* bucket boundary */
    }
    free(anc);
    hx_deps_free(&d);
    return 1;
}

static int build(int serialize, long bucket, struct shape *s)
{
    struct hx_gpt_config c = { .vocab_size = 256, .num_layers = 2, .num_heads = 4,
                               .hidden_size = 64, .seq_len = 32, .micro_batch_size = 2,
                               .num_micro_batches = 8 };
    struct hx_optim_config o;
    hx_optim_config_default(&o, 10);
    struct hx_mesh_request q = { .world_size = 4, .world_rank = 0, .tp = 1, .ranks_per_node = 2 };
    struct hx_mesh mesh;
    struct hx_parallel_config par = { .mesh = &mesh, .ddp_bucket_size = bucket,
                                      .serialize_grad_reduce = serialize };
    hx_gpt_t m;
    if (hx_mesh_init(&mesh, &q, 0) != HX_OK || hx_gpt_build_parallel(&m, &c, &o, &par) != HX_OK) {
        return 0;
    }
    int ok = analyse(hx_gpt_graph(m), s);
    hx_gpt_destroy(m);
    return ok;
}

int main(void)
{
    static const long buckets[] = { 20000, 60000 };
    tap_plan(4 * 2);
    for (int k = 0; k < 2; k++) {
        struct shape ov = { 0 }, se = { 0 };
        int ok = build(0, buckets[k], &ov) && build(1, buckets[k], &se);
        tap_ok(ok && ov.nbuckets > 1 && se.nbuckets == ov.nbuckets && se.buckets == ov.buckets,
               "bucket %ld: both modes cut the same %d buckets (serialized %d)", buckets[k],
               ov.nbuckets, se.nbuckets);
        tap_ok(ok && se.min_backward == se.nbackward,
               "bucket %ld: serialized, every bucket waits for all %d backward tasks (least: "
               "%d)", buckets[k], se.nbackward, se.min_backward);
        tap_ok(ok && ov.first_backward < ov.nbackward,
               "bucket %ld: overlapped, the first bucket waits for %d of %d backward tasks",
               buckets[k], ov.first_backward, ov.nbackward);
        tap_ok(ok && ov.nbackward == se.nbackward,
               "bucket %ld: the same %d backward tasks in both modes", buckets[k],
               ov.nbackward);
    }
    return tap_exit();
}
