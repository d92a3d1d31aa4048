/* SPDX-License-Identifier: MIT */
/* runtime/mesh.c: process meshes as plain data (include/helix/mesh.h).  Every group is an
 * arithmetic progression of world ranks, so membership is (first, stride, size):
 *   dp index d, base = pp_rank*dp*tp + tp_rank, world rank of d = base + d*tp
 *   dp       d = 0..dp-1                          first base,                 stride tp
 *   shard_p  the block of s_p consecutive d       first base + (d/s_p)*s_p*tp, stride tp
 *   replica  d' = d mod s_p (mod s_p)             first base + (d mod s_p)*tp, stride s_p*tp
 *   shard_g  replica members inside d's block of s_g (likewise shard_os with s_os)
 * Validation happens here, before any work: one message with the numbers and the fix.
 * Test: tests/mpi/mesh.c. */
#include <stdio.h>
#include <string.h>

#include "helix/error.h"
#include "helix/mesh.h"

static const char *const group_names[HX_GROUP_COUNT] = {
    [HX_GROUP_WORLD] = "world", [HX_GROUP_DP] = "dp", [HX_GROUP_TP] = "tp",
    [HX_GROUP_PP] = "pp", [HX_GROUP_SHARD_P] = "shard_p", [HX_GROUP_REPLICA] = "replica",
    [HX_GROUP_SHARD_G] = "shard_g", [HX_GROUP_SHARD_OS] = "shard_os",
    [HX_GROUP_PP_BWD] = "pp_bwd", [HX_GROUP_EMBED] = "embed", [HX_GROUP_FOLD_F] = "fold_f",
    [HX_GROUP_FOLD_B] = "fold_b", [HX_GROUP_TP_BETA] = "tp_beta", [HX_GROUP_TP_X] = "tp_x",
    [HX_GROUP_TP_Y] = "tp_y",
};

const char *hx_group_name(enum hx_group_kind k)
{
    return (int)k >= 0 && k < HX_GROUP_COUNT ? group_names[k] : "unknown";
}

int hx_group_member(const struct hx_group *g, int i)
{
    return g->first + i * g->stride;
}

static void set_group(struct hx_mesh *m, enum hx_group_kind k, int first, int stride, int size)
{
    struct hx_group *g = &m->groups[k];
    g->kind = k;
    g->first = first;
    g->stride = stride;
    g->size = size;
    g->rank = (m->world_rank - first) / stride;
    int me = hx_mesh_node(m, m->world_rank), prev = -1;
    g->intra_node = 1;
    g->nodes = 0;
    for (int i = 0; i < size; i++) {
        int node = hx_mesh_node(m, hx_group_member(g, i));
        g->intra_node &= node == me;
        g->nodes += node != prev; /* members ascend, so nodes do */
        prev = node;
    }
}

static void build_groups(struct hx_mesh *m)
{
    int tp = m->tp, dp = m->dp, d = m->dp_rank;
    int base = m->pp_rank * dp * tp + m->tp_rank;
    int sp = m->sp.s, sg = m->sg.s, sos = m->sos.s, j = d % sp;
    set_group(m, HX_GROUP_WORLD, 0, 1, m->world_size);
    set_group(m, HX_GROUP_DP, base, tp, dp);
    set_group(m, HX_GROUP_TP, (m->pp_rank * dp + d) * tp, 1, tp);
    set_group(m, HX_GROUP_PP, d * tp + m->tp_rank, dp * tp, m->pp);
    set_group(m, HX_GROUP_SHARD_P, base + (d / sp) * sp * tp, tp, sp);
    set_group(m, HX_GROUP_REPLICA, base + j * tp, sp * tp, dp / sp);
    set_group(m, HX_GROUP_SHARD_G, base + ((d / sg) * sg + j) * tp, sp * tp, sg / sp);
    set_group(m, HX_GROUP_SHARD_OS, base + ((d / sos) * sos + j) * tp, sp * tp, sos / sp);
    set_group(m, HX_GROUP_PP_BWD, d * tp + m->tp_rank, dp * tp, m->pp);
    set_group(m, HX_GROUP_FOLD_F, d * tp + m->tp_rank, dp * tp, m->pp);
    set_group(m, HX_GROUP_FOLD_B, d * tp + m->tp_rank, dp * tp, m->pp);
    set_group(m, HX_GROUP_TP_BETA, (m->pp_rank * dp + d) * tp, 1, tp);
    /* the grid inside the tp group: X consecutive, Y strided by Gx */
    int tp0 = (m->pp_rank * dp + d) * tp;
    set_group(m, HX_GROUP_TP_X, tp0 + m->tpy_rank * m->tpx, 1, m->tpx);
    set_group(m, HX_GROUP_TP_Y, tp0 + m->tpx_rank, m->tpx, m->tpy);
    int ends = m->pp > 1 && (m->pp_rank == 0 || m->pp_rank == m->pp - 1);
    set_group(m, HX_GROUP_EMBED, ends ? d * tp + m->tp_rank : m->world_rank,
              ends ? (m->pp - 1) * dp * tp : 1, ends ? 2 : 1);
}

void hx_mesh_serial(struct hx_mesh *m)
{
    struct hx_mesh_request r = { .world_size = 1 };
    int ret = hx_mesh_init(m, &r, 1);
    HX_ASSERT(ret == HX_OK, "the serial mesh is always valid");
}

/* dp ranks of one dp group that share a node: the group strides tp world ranks */
static int dp_per_node(const struct hx_mesh *m)
{
    int n = m->ranks_per_node >= m->tp ? m->ranks_per_node / m->tp : 1;
    return n < m->dp ? n : m->dp;
}

/* Split factor s into s0 ranks per node x s1 nodes the way contiguous blocks fall (AMSP's
 * constraint 7: fill a node before spanning nodes), and check a user-given split. */
static int split_factor(const struct hx_mesh *m, const char *flag, int s, int want0,
                        struct hx_factor *f, int quiet)
{
    int r0 = dp_per_node(m);
    if (s < 1 || m->dp % s != 0) {
        return quiet ? HX_EINVAL : HX_ERR(HX_EINVAL, "%s %d does not divide the data-parallel "
                                          "size %d; choose a divisor of %d", flag, s, m->dp,
                                          m->dp);
    }
    if (s > r0 && s % r0 != 0) {
        return quiet ? HX_EINVAL : HX_ERR(HX_EINVAL, "%s %d spans nodes unevenly: %d data-"
                                          "parallel ranks share a node; choose a multiple of %d "
                                          "or at most %d", flag, s, r0, r0, r0);
    }
    f->s = s;
    f->s0 = s < r0 ? s : r0;
    f->s1 = s / f->s0;
    if (want0 > 0 && want0 != f->s0) {
        return quiet ? HX_EINVAL : HX_ERR(HX_EINVAL, "%s %dx%d: helix places a shard group on "
                                          "as few nodes as possible (AMSP's constraint 7), so "
                                          "%d ranks give %dx%d with %d data-parallel ranks per "
                                          "node; write %dx%d or just %d", flag, want0, s / want0,
                                          s, f->s0, f->s1, r0, f->s0, f->s1, s);
    }
    return HX_OK;
}

#define MESH_ERR(...) (quiet ? HX_EINVAL : HX_ERR(HX_EINVAL, __VA_ARGS__))

static int check_model(const struct hx_mesh *m, const struct hx_mesh_request *r, int quiet)
{
    /* Megatron's tp (the grid's X) cuts heads and vocabulary, and the hidden size with
     * them; the grid's Y cuts the hidden size alone */
    struct { const char *what; int v, by; } div[] = {
        { "--num-attention-heads", r->num_heads, m->tpx },
        { "--hidden-size", r->hidden_size, m->tpy > 1 ? m->tpy : m->tpx },
        { "--vocab-size", r->vocab_size, m->tpx },
    };
    for (size_t i = 0; i < sizeof div / sizeof div[0]; i++) {
        if (div[i].v > 0 && div[i].v % div[i].by != 0 && m->tp_grid) {
            return MESH_ERR("--tp-grid %dx%dx%d: its %s %d splits %s %d evenly; choose a grid "
                            "whose %s divides %d", m->tpx, m->tpy, m->tpz, i == 1 ? "Gy" : "Gx",
                            div[i].by, div[i].what, div[i].v, i == 1 ? "Gy" : "Gx", div[i].v);
        }
        if (div[i].v > 0 && div[i].v % div[i].by != 0) {
            return MESH_ERR("--tensor-model-parallel-size %d does not divide %s %d; tensor "
                            "parallelism splits it evenly: choose a tp that divides %d",
                            m->tp, div[i].what, div[i].v, div[i].v);
        }
    }
    if (r->num_layers > 0 && m->pp > r->num_layers) {
        return MESH_ERR("--pipeline-model-parallel-size %d exceeds --num-layers %d; every "
                        "pipeline stage needs at least one layer", m->pp, r->num_layers);
    }
    if (r->num_layers > 0 && r->num_layers % m->pp != 0) {
        return MESH_ERR("--num-layers %d is not divisible by --pipeline-model-parallel-size "
                        "%d; every stage holds the same number of layers: choose a pp that "
                        "divides %d", r->num_layers, m->pp, r->num_layers);
    }
    if (m->sequence_parallel && r->seq_len > 0 && r->seq_len % m->tp != 0) {
        return MESH_ERR("--sequence-parallel splits each sequence's %d tokens over %d tensor-"
                        "parallel ranks; choose --seq-length divisible by %d", r->seq_len,
                        m->tp, m->tp);
    }
    if (r->micro_batches > 0 && r->micro_batches % m->dp != 0) {
        return MESH_ERR("the global batch has %d micro-batches, which %d data-parallel ranks "
                        "cannot share evenly; make --global-batch-size / --micro-batch-size a "
                        "multiple of %d", r->micro_batches, m->dp, m->dp);
    }
    return HX_OK;
}

static int choose_factors(struct hx_mesh *m, const struct hx_mesh_request *r, int quiet)
{
    int sp = r->shard_p > 0 ? r->shard_p : 1, sg = r->shard_g > 0 ? r->shard_g : 1;
    int sos = r->shard_os > 0 ? r->shard_os : 1;
    int explicit_f = r->shard_p > 0 || r->shard_g > 0 || r->shard_os > 0;
    if ((r->zero_stage > 0) + (r->mics != 0) + explicit_f > 1) {
        return MESH_ERR("--zero-stage, --mics and --shard-params/--shard-grads/--shard-optim "
                        "each set the sharding factors; give only one of them");
    }
    if (r->zero_stage < 0 || r->zero_stage > 3) {
        return MESH_ERR("--zero-stage %d is not 0, 1, 2 or 3", r->zero_stage);
    }
    if (r->zero_stage >= 1) {
        sos = m->dp;
    }
    if (r->zero_stage >= 2) {
        sg = m->dp;
    }
    if (r->zero_stage == 3) {
        sp = m->dp;
    }
    if (r->mics) {
        sp = sg = sos = dp_per_node(m);
    }
    if (m->tpz > 1) { /* AxoNN's Z shards every parameter, gradient and optimizer state */
        int z = m->tpz;
        if (r->shard_p > 0 && r->shard_p % z != 0) {
            return MESH_ERR("--tp-grid's Gz %d shards the parameters over Z, so --shard-params "
                            "%d must be a multiple of %d", z, r->shard_p, z);
        }
        sp = sp > z ? sp : z;
        sg = sg > sp ? sg : sp;
        sos = sos > sg ? sos : sg;
        if (sp % z != 0 || sg % z != 0 || sos % z != 0) {
            return MESH_ERR("--tp-grid's Gz %d shards over Z, so every sharding factor must "
                            "be a multiple of %d (s_p %d, s_g %d, s_os %d)", z, z, sp, sg, sos);
        }
    }
    if (!(sp <= sg && sg <= sos)) {
        return MESH_ERR("sharding factors break AMSP's dependency rule s_p <= s_g <= s_os "
                        "(--shard-params %d, --shard-grads %d, --shard-optim %d): a rank must "
                        "hold the parameters of the gradients and optimizer states it owns; "
                        "raise the later factors", sp, sg, sos);
    }
    if (sg % sp != 0 || sos % sg != 0) {
        return MESH_ERR("each sharding factor must divide the next (--shard-params %d, "
                        "--shard-grads %d, --shard-optim %d)", sp, sg, sos);
    }
    if (sg != sp && sg != sos) {
        return MESH_ERR("--shard-grads %d must equal --shard-params %d or --shard-optim %d "
                        "(AMSP: gradients are sharded like the parameters or like the "
                        "optimizer states)", sg, sp, sos);
    }
    int ret = split_factor(m, "--shard-params", sp, r->shard_p0, &m->sp, quiet);
    if (ret == HX_OK) {
        ret = split_factor(m, "--shard-grads", sg, r->shard_g0, &m->sg, quiet);
    }
    if (ret == HX_OK) {
        ret = split_factor(m, "--shard-optim", sos, r->shard_os0, &m->sos, quiet);
    }
    return ret;
}

/* --tp-grid GxxGyxGz against the other flags: the grid is the tp group (Gx Gy) and the
 * innermost Gz of dp, sequence parallelism has no place in it (Z splits the batch) */
static int check_grid(const struct hx_mesh_request *r, int quiet)
{
    const int *g = r->tp_grid;
    if (g[0] < 1 || g[1] < 1 || g[2] < 1) {
        return MESH_ERR("--tp-grid %dx%dx%d: each of Gx, Gy and Gz must be at least 1", g[0],
                        g[1], g[2]);
    }
    if (r->tp > 1 && r->tp != g[0] * g[1]) { /* 1: the default of the flag */
        return MESH_ERR("--tp-grid %dx%dx%d makes the tensor-parallel group Gx x Gy = %d "
                        "ranks, but --tensor-model-parallel-size is %d; drop "
                        "--tensor-model-parallel-size", g[0], g[1], g[2], g[0] * g[1], r->tp);
    }
    if (r->sequence_parallel && g[0] * g[1] > 1) {
        return MESH_ERR("--tp-grid %dx%dx%d and --sequence-parallel: in AxoNN's grid Z splits "
                        "the batch and the layers' activations stay whole sequences; drop "
                        "--sequence-parallel", g[0], g[1], g[2]);
    }
    return HX_OK;
}

int hx_mesh_init(struct hx_mesh *m, const struct hx_mesh_request *r, int quiet)
{
    memset(m, 0, sizeof *m);
    int grid = r->tp_grid[0] > 0;
    if (grid) {
        int ret = check_grid(r, quiet);
        if (ret != HX_OK) {
            return ret;
        }
    }
    int W = r->world_size, pp = r->pp > 0 ? r->pp : 1;
    int tp = grid ? r->tp_grid[0] * r->tp_grid[1] : r->tp > 0 ? r->tp : 1;
    if (W < 1 || W > HX_MESH_MAX_RANKS || r->world_rank < 0 || r->world_rank >= W) {
        return MESH_ERR("world of %d ranks (this is rank %d): helix runs 1..%d ranks", W,
                        r->world_rank, HX_MESH_MAX_RANKS);
    }
    if (W % (tp * pp) != 0) {
        return MESH_ERR("%d ranks cannot form a mesh with --tensor-model-parallel-size %d x "
                        "--pipeline-model-parallel-size %d (= %d ranks per data-parallel "
                        "replica); launch a multiple of %d ranks or change the sizes", W, tp, pp,
                        tp * pp, tp * pp);
    }
    int dp = W / (tp * pp);
    if (grid && dp % r->tp_grid[2] != 0) {
        return MESH_ERR("--tp-grid %dx%dx%d needs Gx Gy Gz = %d ranks a replica (times pp %d), "
                        "but %d ranks leave %d for Z and data parallelism; launch a multiple "
                        "of %d ranks", r->tp_grid[0], r->tp_grid[1], r->tp_grid[2],
                        tp * r->tp_grid[2], pp, W, dp, tp * r->tp_grid[2] * pp);
    }
    if (r->dp > 0 && r->dp != dp) {
        return MESH_ERR("--data-parallel-size %d x tp %d x pp %d = %d ranks, but %d were "
                        "launched; launch %d ranks or drop --data-parallel-size", r->dp, tp, pp,
                        r->dp * tp * pp, W, r->dp * tp * pp);
    }
    int rpn = r->ranks_per_node > 0 ? r->ranks_per_node : W;
    if (rpn > W || W % rpn != 0) {
        return MESH_ERR("--ranks-per-node %d does not divide the %d ranks of the job; give the "
                        "ranks each node runs (the job must fill its nodes evenly)", rpn, W);
    }
    m->world_size = W;
    m->world_rank = r->world_rank;
    m->tp = tp;
    m->pp = pp;
    m->dp = dp;
    m->ranks_per_node = rpn;
    m->sequence_parallel = r->sequence_parallel && tp > 1;
    m->tp_rank = r->world_rank % tp;
    m->tp_grid = grid;
    m->tpx = grid ? r->tp_grid[0] : tp;
    m->tpy = grid ? r->tp_grid[1] : 1;
    m->tpz = grid ? r->tp_grid[2] : 1;
    m->tpx_rank = m->tp_rank % m->tpx;
    m->tpy_rank = m->tp_rank / m->tpx;
    m->dp_rank = (r->world_rank / tp) % dp;
    m->pp_rank = r->world_rank / (tp * dp);
    int ret = check_model(m, r, quiet);
    if (ret == HX_OK) {
        ret = choose_factors(m, r, quiet);
    }
    if (ret == HX_OK && pp > 1 && m->sp.s > 1) {
        /* the gathered layers sit in two slots by layer parity, which assumes one
         * micro-batch at a time; a pipeline keeps several in flight */
        ret = MESH_ERR("sharded parameters (s_p %d: --shard-params, --zero-stage 3, --mics) "
                       "are not supported with --pipeline-model-parallel-size %d yet; use "
                       "--zero-stage 1 or 2 (s_p 1) with a pipeline", m->sp.s, pp);
    }
    if (ret != HX_OK) {
        return ret;
    }
    build_groups(m);
    return HX_OK;
}

void hx_mesh_describe(const struct hx_mesh *m, char *buf, int len)
{
    char grid[64] = "";
    if (m->tp_grid) {
        snprintf(grid, sizeof grid, " (grid %dx%dx%d, %d data)", m->tpx, m->tpy, m->tpz,
                 m->dp / m->tpz);
    }
    snprintf(buf, (size_t)len, "world %d = pp %d x dp %d x tp %d%s%s, %d ranks/node; sharding "
             "s_p %d (%dx%d) s_g %d (%dx%d) s_os %d (%dx%d)", m->world_size, m->pp, m->dp,
             m->tp, grid, m->sequence_parallel ? " (sequence parallel)" : "", m->ranks_per_node,
             m->sp.s, m->sp.s0, m->sp.s1, m->sg.s, m->sg.s0, m->sg.s1, m->sos.s, m->sos.s0,
             m->sos.s1);
}
