/* SPDX-License-Identifier: MIT */
/* tests/mpi/prefetch_order.c: hx-prefetch's graph order under ZeRO-3 (rank 0 of dp 2, a
 * 6-layer model, 4 micro-batches), as graph structure, built without running:
 *  - look-ahead: in micro-batch 0's forward, layer l+d's parameter all-gather is emitted
 *    before layer l+1's first compute task (d = 1 by default, 3 from prefetch_memory), and
 *    hx_gpt_prefetch_depth reports d;
 *  - the slots: d+1 rotating slots of gathered layers (gathered-parameter tensors named
 *    slot<k>.*), so memory follows the depth;
 *  - caching: a layer still in its slot is not gathered again, so hx-prefetch emits fewer
 *    all-gathers than the default order (which re-gathers every micro-batch's first layer);
 *  - deferral: on the shard channel, no reduce-scatter of layer l's gradients sits before
 *    the all-gather the backward of layer l-1 issues (the default order puts them first);
 *  - packing: every layer gather and reduce-scatter moves one whole unit of that layer (its
 *    6 attention-block or 6 MLP-block tensors) in one message, and carries the layer.
 * Orders only: the parity tests (tests/mpi/parity_sched.sh) show the numbers do not move. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/error.h"
#include "helix/gpt.h"
#include "helix/graph.h"
#include "helix/mesh.h"
#include "tap.h"

#define L 6

struct shape {
    int depth, slots, gathers;
    int ahead;        /* forward of mb 0: gather of layer l+d before layer l+1 computes */
    int rs_first;     /* reduce-scatters of layer l emitted before backward(l-1)'s gather */
    int msgs, units;  /* layer gathers and reduce-scatters; those moving one whole unit */
};

/* Does shard-channel collective n move one whole unit of layer l, and say so?  Its 2k data
 * refs are k pieces and k full tensors; the unit is 6 tensors of one layer, all of the
 * attention block (ln1 .. proj_b) or all of the MLP block (ln2 .. fcproj_b). */
static int whole_unit(hx_graph_t g, const struct hx_node *n, int l)
{
    static const char *mlp[] = { ".ln2_", ".fc_", ".fcproj_" };
    int k = (n->nrefs - 1) / 2, in_mlp = 0;
    for (int r = 1; r < n->nrefs; r++) {
        const char *name = g->tensors[n->refs[r].tensor]->name;
        int tl = -1, m = 0;
        for (size_t q = 0; q < sizeof mlp / sizeof *mlp; q++) {
            m |= strstr(name, mlp[q]) != NULL;
        }
        if (r == 1) {
            in_mlp = m;
        }
        /* pieces are named h<l>.<param>, full tensors slot<s>.<param> (gather) */
        if ((sscanf(name, "h%d.", &tl) == 1 && tl != l) || m != in_mlp) {
            return 0;
        }
    }
    return k == 6 && n->layer == l;
}

/* Layer of the parameter piece an all-gather reads ("h3.qkv_w": 3) or a reduce-scatter
 * writes ("h3.qkv_w.grad"); -1 otherwise.  (The node's own layer is the cursor's when it
 * was emitted, which deferral changes.) */
static int piece_layer(hx_graph_t g, const struct hx_node *n)
{
    enum hx_access mode = n->op == HX_OP_ALLGATHER ? HX_R : HX_W;
    for (int r = 1; r < n->nrefs; r++) { /* refs[0] is the channel token */
        int l;
        if ((n->refs[r].mode & mode) &&
            sscanf(g->tensors[n->refs[r].tensor]->name, "h%d.", &l) == 1) {
            return l;
        }
    }
    return -1;
}

static int build(int prefetch, double memory, struct shape *s)
{
    struct hx_gpt_config c = { .vocab_size = 256, .num_layers = L, .num_heads = 4,
                               .hidden_size = 64, .seq_len = 32, .micro_batch_size = 2,
                               .num_micro_batches = 4 };
    struct hx_optim_config o;
    hx_optim_config_default(&o, 10);
    struct hx_mesh_request q = { .world_size = 2, .world_rank = 0, .tp = 1, .ranks_per_node = 2,
                                 .zero_stage = 3 };
    struct hx_mesh mesh;
    struct hx_parallel_config par = { .mesh = &mesh, .prefetch = prefetch,
                                      .prefetch_memory = memory };
    hx_gpt_t m;
    if (hx_mesh_init(&mesh, &q, 0) != HX_OK || hx_gpt_build_parallel(&m, &c, &o, &par) != HX_OK) {
        return 0;
    }
    hx_graph_t g = hx_gpt_graph(m);
    memset(s, 0, sizeof *s);
    s->depth = hx_gpt_prefetch_depth(m);
    for (int t = 0; t < g->ntensors; t++) {
        s->slots += strncmp(g->tensors[t]->name, "slot", 4) == 0 &&
                    strstr(g->tensors[t]->name, ".qkv_w") != NULL;
    }
    /* forward of micro-batch 0: where each layer's gather and first compute task are */
    int gather_at[L], first_compute[L];
    for (int l = 0; l < L; l++) {
        gather_at[l] = first_compute[l] = -1;
    }
    for (int i = 0; i < g->nnodes; i++) {
        const struct hx_node *n = &g->nodes[i];
        if ((n->op == HX_OP_ALLGATHER || n->op == HX_OP_REDUCE_SCATTER) &&
            n->args.coll.channel == HX_GROUP_SHARD_P && piece_layer(g, n) >= 0) {
            s->msgs++;
            s->units += whole_unit(g, n, piece_layer(g, n));
        }
        if (n->op == HX_OP_ALLGATHER && n->args.coll.channel == HX_GROUP_SHARD_P) {
            int l = piece_layer(g, n);
            s->gathers += l >= 0;
            if (l >= 0 && n->microbatch == 0 && n->phase == HX_PHASE_FORWARD &&
                gather_at[l] < 0) {
                gather_at[l] = i;
            }
        }
        if (n->kind == HX_KIND_COMPUTE && n->microbatch == 0 && n->phase == HX_PHASE_FORWARD &&
            n->layer >= 0 && first_compute[n->layer] < 0) {
            first_compute[n->layer] = i;
        }
    }
    /* look-ahead: gather(l + d) is out before layer l + 1 computes */
    s->ahead = 1;
    for (int l = 0; l + s->depth < L; l++) {
        s->ahead &= gather_at[l + s->depth] >= 0 &&
                    gather_at[l + s->depth] < first_compute[l + 1];
    }
    /* deferral: the first reduce-scatter of layer l (mb 0) against the gather emitted at
     * backward(l-1)'s begin: the one reading layer l-1-d */
    s->rs_first = 0;
    for (int l = L - 1; l >= 2; l--) {
        int rs = -1, ag = -1, target = l - 1 - s->depth;
        for (int i = 0; i < g->nnodes; i++) {
            const struct hx_node *n = &g->nodes[i];
            if (rs < 0 && n->op == HX_OP_REDUCE_SCATTER && n->microbatch == 0 &&
                piece_layer(g, n) == l) {
                rs = i;
            }
            if (ag < 0 && n->op == HX_OP_ALLGATHER && n->microbatch == 0 &&
                n->phase != HX_PHASE_FORWARD && piece_layer(g, n) == target) {
                ag = i;
            }
        }
        if (target >= 0 && rs >= 0 && ag >= 0 && rs < ag) {
            s->rs_first++;
        }
    }
    hx_gpt_destroy(m);
    return 1;
}

int main(void)
{
    tap_plan(9);
    struct shape def = { 0 }, one = { 0 }, three = { 0 };
    /* one 6-layer slot set: 12 C^2 + 13 C floats of 4 bytes, C = 64: 199936 bytes */
    int ok = build(0, 0, &def) && build(1, 0, &one) && build(1, 4 * 199936.0, &three);
    tap_ok(ok && def.depth == 1 && one.depth == 1 && three.depth == 3,
           "look-ahead: default %d, hx-prefetch %d, with 4 layers of --prefetch-memory %d",
           def.depth, one.depth, three.depth);
    tap_ok(ok && def.slots == 2 && one.slots == 2 && three.slots == 4,
           "rotating slots: %d, %d, %d (depth + 1)", def.slots, one.slots, three.slots);
    tap_ok(ok && def.ahead && one.ahead && three.ahead,
           "forward: layer l+d's gather is emitted before layer l+1 computes (d = 1, 1, 3)");
    tap_ok(ok && one.gathers < def.gathers,
           "caching: hx-prefetch gathers %d times, the default order %d", one.gathers,
           def.gathers);
    tap_ok(ok && three.gathers <= one.gathers, "caching: depth 3 gathers %d times (depth 1: %d)",
           three.gathers, one.gathers);
    tap_ok(ok && def.rs_first > 0,
           "the default order emits %d layers' reduce-scatters before the next gather",
           def.rs_first);
    tap_ok(ok && one.rs_first == 0 && three.rs_first == 0,
           "hx-prefetch: every reduce-scatter behind the next gather (depth 1: %d, depth 3: %d "
           "in front)", one.rs_first, three.rs_first);
    tap_ok(ok && def.msgs > 0 && def.units == def.msgs && one.units == one.msgs &&
               three.units == three.msgs,
           "packing: every layer gather and reduce-scatter is one message of a whole unit "
           "(%d of %d, %d of %d, %d of %d)", def.units, def.msgs, one.units, one.msgs,
           three.units, three.msgs);
    int ok2 = build(1, 1.0, &one); /* less than a layer: still one ahead */
    tap_ok(ok2 && one.depth == 1, "a --prefetch-memory below two layers still looks 1 ahead");
    return tap_exit();
}
