/* SPDX-License-Identifier: MIT */
/* tests/mpi/mesh.c: process meshes as plain data (runtime/mesh.c), no MPI needed.
 * Checks, for every rank of several meshes, that each group's members are what the rank
 * formulas of include/helix/mesh.h say, that groups partition the world consistently (every
 * member of my group sees the same group), the intra-/inter-node flags, the AMSP factor
 * splits and presets, and that every invalid request is refused with its message. */
#include <string.h>

#include "helix/mesh.h"
#include "tap.h"
#include "testutil.h"

/* Every member of rank r's group k has the same member list, and r is at index rank. */
static int groups_consistent(const struct hx_mesh_request *req, int k)
{
    for (int r = 0; r < req->world_size; r++) {
        struct hx_mesh_request q = *req;
        struct hx_mesh a, b;
        q.world_rank = r;
        if (hx_mesh_init(&a, &q, 1) != HX_OK) {
            return 0;
        }
        const struct hx_group *g = &a.groups[k];
        if (hx_group_member(g, g->rank) != r) {
            return 0;
        }
        for (int i = 0; i < g->size; i++) {
            q.world_rank = hx_group_member(g, i);
            if (hx_mesh_init(&b, &q, 1) != HX_OK || b.groups[k].first != g->first ||
                b.groups[k].size != g->size || b.groups[k].stride != g->stride) {
                return 0;
            }
        }
    }
    return 1;
}

static int refused(const struct hx_mesh_request *r, const char *words)
{
    struct hx_mesh m;
    char buf[1024];
    int s = capture_begin(".");
    int ret = hx_mesh_init(&m, r, 0);
    const char *msg = capture_end(s, buf, sizeof buf);
    int ok = ret == HX_EINVAL && strstr(msg, words) != NULL;
    if (!ok) {
        tap_diag("expected a refusal naming '%s', got status %d: %s", words, ret, msg);
    }
    return ok;
}

int main(void)
{
    tap_plan(25);
    struct hx_mesh m;
    /* 8 ranks, 4 per node: tp 2 x dp 4 */
    struct hx_mesh_request r = { .world_size = 8, .world_rank = 5, .tp = 2,
                                 .ranks_per_node = 4, .num_heads = 4, .hidden_size = 64,
                                 .vocab_size = 256, .num_layers = 2, .seq_len = 32,
                                 .micro_batches = 8 };
    tap_ok(hx_mesh_init(&m, &r, 0) == HX_OK && m.dp == 4 && m.tp_rank == 1 && m.dp_rank == 2,
           "rank 5 of tp 2 x dp 4 is tp rank 1, dp rank 2");
    tap_ok(m.groups[HX_GROUP_TP].first == 4 && m.groups[HX_GROUP_TP].intra_node,
           "its tp group is ranks 4,5, inside node 1");
    tap_ok(m.groups[HX_GROUP_DP].first == 1 && m.groups[HX_GROUP_DP].stride == 2 &&
               !m.groups[HX_GROUP_DP].intra_node && m.groups[HX_GROUP_DP].nodes == 2,
           "its dp group is ranks 1,3,5,7 over 2 nodes");
    int all = 1;
    for (int k = 0; k < HX_GROUP_COUNT; k++) {
        all &= groups_consistent(&r, k);
    }
    tap_ok(all, "every group of every rank agrees with its members' view");

    /* AMSP on dp 8, 4 per node: s_p 2, s_g = s_os = 8 (2 nodes) */
    struct hx_mesh_request a = { .world_size = 8, .world_rank = 6, .ranks_per_node = 4,
                                 .shard_p = 2, .shard_g = 8, .shard_os = 8 };
    tap_ok(hx_mesh_init(&m, &a, 0) == HX_OK && m.sp.s0 == 2 && m.sp.s1 == 1 &&
               m.sos.s0 == 4 && m.sos.s1 == 2, "s_p 2 = 2x1, s_os 8 = 4x2 on 4 ranks per node");
    tap_ok(m.groups[HX_GROUP_SHARD_P].first == 6 && m.groups[HX_GROUP_SHARD_P].size == 2,
           "rank 6's parameter shard group is 6,7");
    tap_ok(m.groups[HX_GROUP_REPLICA].first == 0 && m.groups[HX_GROUP_REPLICA].stride == 2 &&
               m.groups[HX_GROUP_REPLICA].size == 4, "its replica group is 0,2,4,6");
    tap_ok(m.groups[HX_GROUP_SHARD_OS].size == 4 && m.groups[HX_GROUP_SHARD_OS].rank == 3,
           "its OS group has the 4 replica members, rank 6 the last");
    all = 1;
    for (int k = 0; k < HX_GROUP_COUNT; k++) {
        all &= groups_consistent(&a, k);
    }
    tap_ok(all, "AMSP groups agree with their members' views");

    struct hx_mesh_request z = { .world_size = 4, .ranks_per_node = 2, .zero_stage = 3 };
    tap_ok(hx_mesh_init(&m, &z, 0) == HX_OK && m.sp.s == 4 && m.sg.s == 4 && m.sos.s == 4,
           "ZeRO-3 shards all three over dp");
    struct hx_mesh_request mi = { .world_size = 4, .ranks_per_node = 2, .mics = 1 };
    tap_ok(hx_mesh_init(&m, &mi, 0) == HX_OK && m.sp.s == 2 && m.sos.s == 2 &&
               m.groups[HX_GROUP_SHARD_P].intra_node, "MiCS shards inside a node");

    /* AxoNN's grid 2x2x2 on 16 ranks, 4 per node: x innermost, then y, z, data (papers.md
     * §1.2); rank 13 = x 1, y 0, z 1, data 1 */
    struct hx_mesh_request gr = { .world_size = 16, .world_rank = 13, .ranks_per_node = 4,
                                  .tp_grid = { 2, 2, 2 }, .num_heads = 4, .hidden_size = 64,
                                  .vocab_size = 256, .num_layers = 2, .micro_batches = 8 };
    tap_ok(hx_mesh_init(&m, &gr, 0) == HX_OK && m.tp == 4 && m.dp == 4 && m.tpx_rank == 1 &&
               m.tpy_rank == 0 && m.dp_rank == 3 && m.sp.s == 2 && m.sg.s == 2 && m.sos.s == 2,
           "grid 2x2x2, rank 13: x 1, y 0, dp rank 3 (z 1, data 1), everything sharded over Z");
    tap_ok(m.groups[HX_GROUP_TP_X].first == 12 && m.groups[HX_GROUP_TP_X].size == 2 &&
               m.groups[HX_GROUP_TP_Y].first == 13 && m.groups[HX_GROUP_TP_Y].stride == 2 &&
               m.groups[HX_GROUP_SHARD_P].first == 9 && m.groups[HX_GROUP_SHARD_P].stride == 4,
           "its X group is 12,13, its Y group 13,15, its Z (shard) group 9,13");
    tap_ok(m.groups[HX_GROUP_REPLICA].first == 5 && m.groups[HX_GROUP_REPLICA].size == 2,
           "its data group (replicas of its Z shard) is 5,13");
    all = 1;
    for (int k = 0; k < HX_GROUP_COUNT; k++) {
        all &= groups_consistent(&gr, k);
    }
    tap_ok(all, "grid groups agree with their members' views");
    struct hx_mesh_request bad = gr;
    bad.tp = 2;
    tap_ok(refused(&bad, "drop --tensor-model-parallel-size"), "grid against a different tp");
    bad = gr;
    bad.world_size = 12;
    bad.world_rank = 1;
    tap_ok(refused(&bad, "launch a multiple of 8"), "12 ranks for a 2x2x2 grid");

    /* refusals, each with its message */
    bad = r;
    bad.world_size = 6;
    bad.tp = 4;
    tap_ok(refused(&bad, "cannot form a mesh"), "6 ranks with tp 4: refused");
    bad = r;
    bad.num_heads = 3;
    tap_ok(refused(&bad, "does not divide --num-attention-heads 3"), "tp not dividing heads");
    bad = r;
    bad.vocab_size = 257;
    tap_ok(refused(&bad, "--vocab-size 257"), "tp not dividing the vocabulary");
    bad = r;
    bad.micro_batches = 6;
    tap_ok(refused(&bad, "micro-batches"), "micro-batches not divisible by dp");
    bad = r;
    bad.pp = 4;
    bad.tp = 1;
    bad.num_layers = 2;
    tap_ok(refused(&bad, "exceeds --num-layers 2"), "more pipeline stages than layers");
    struct hx_mesh_request f = { .world_size = 4, .ranks_per_node = 2, .shard_p = 4,
                                 .shard_g = 2, .shard_os = 4 };
    tap_ok(refused(&f, "dependency rule"), "s_p > s_g breaks the dependency rule");
    f.shard_p = 1, f.shard_g = 2, f.shard_os = 4;
    tap_ok(refused(&f, "must equal --shard-params"), "s_g outside {s_p, s_os}");
    f.shard_p = 2, f.shard_p0 = 1, f.shard_g = 2, f.shard_os = 2;
    tap_ok(refused(&f, "constraint 7"), "a 1x2 split where 2x1 fits one node");
    return tap_exit();
}
