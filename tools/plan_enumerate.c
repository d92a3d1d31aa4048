/* SPDX-License-Identifier: MIT */
/* tools/plan_enumerate.c: the configurations `helix plan` prices (tools/plan_enumerate.h):
 * every mesh, grid, sharding, micro-batch size and recomputation mode the fixed choices
 * allow, each priced by tools/plan_model.c.
 * Test: tests/cli/plan.sh. */
#include <stdlib.h>

#include "helix/error.h"
#include "tools/plan_enumerate.h"

/* The AMSP factor sets worth pricing for dp ranks, k of them in a node: AMSP's search space
 * (papers.md 4.6, constraints 3-7): every factor is a divisor of k (inside one node) or k
 * times a divisor of dp / k (whole nodes: a node is filled first), s_p | s_g | s_os, and s_g
 * is s_p or s_os.  That is none, ZeRO-1/2/3, MiCS (k, k, k) and every partial mix, such as
 * AMSP's (4, 4, 8) and (8, 8, 32) on nodes of 8.  Every factor divides dp (at most 240
 * divisors for dp <= 2^20), so @p f needs room for SHARDING_VALUES^2 sets; returns how
 * many. */
#define SHARDING_VALUES 256
static int shardings(int dp, int k, int (*f)[3])
{
    int v[SHARDING_VALUES], nv = 0, n = 0;
    for (int d = 1; d <= k && nv < SHARDING_VALUES; d++) { /* inside a node */
        v[nv] = d;
        nv += k % d == 0 && dp % d == 0;
    }
    for (int d = 2; k > 0 && d <= dp / k && nv < SHARDING_VALUES; d++) { /* whole nodes */
        v[nv] = k * d;
        nv += dp % (k * d) == 0;
    }
    for (int a = 0; a < nv; a++) { /* in (s_p, s_g, s_os) order */
        for (int b = a; b < nv; b++) {
            for (int c = b; c < nv; c++) {
                if (v[b] % v[a] == 0 && v[c] % v[b] == 0 && (b == a || b == c)) {
                    f[n][0] = v[a], f[n][1] = v[b], f[n][2] = v[c];
                    n++;
                }
            }
        }
    }
    return n;
}

int plan_zero_matches(const int *f, int dp, int zero)
{
    static const int stage[4][3] = { { 0, 0, 0 }, { 0, 0, 1 }, { 0, 1, 1 }, { 1, 1, 1 } };
    for (int i = 0; i < 3; i++) {
        if (f[i] != (stage[zero][i] ? dp : 1)) {
            return 0;
        }
    }
    return 1;
}

/* A micro-batch whose logits or MLP tensor would pass helix's 2^31 elements a tensor
 * (hx_gpt_config_check's rule, asked quietly here) */
static int too_wide(const struct hx_gpt_config *m, int mbs)
{
    long long F = m->ffn_hidden_size ? m->ffn_hidden_size : 4LL * m->hidden_size;
    long long fc = (m->swiglu ? 2 : 1) * F, widest = m->vocab_size > fc ? m->vocab_size : fc;
    return (long long)m->seq_len * mbs * widest > (1LL << 31);
}

/* The data-parallel ranks of one node in the mesh (tp, pp): MiCS's and AMSP's k.  Rank 0's
 * dp group is ranks 0, tp, 2 tp, ... (include/helix/mesh.h's order): its size over the
 * nodes it spans. */
int plan_dp_in_node(int tp, int pp, const struct plan_bed *bed)
{
    int dp = bed->gpus / (tp * pp), nodes = 0, prev = -1;
    for (int d = 0; d < dp; d++) {
        int node = d * tp / bed->per_node;
        nodes += node != prev;
        prev = node;
    }
    return nodes > 0 ? dp / nodes : dp;
}

/* The rows being enumerated */
struct rows {
    struct row *r;
    int n, cap;
    int (*f)[3];               /* scratch for shardings() */
};

/* Price every configuration of one mesh: tp ranks (a grid's Gx Gy when gz > 0: Megatron's
 * sequence-parallel tp otherwise) x pp, plain or folded, each micro-batch size, sharding
 * and recomputation the fixed choices allow */
static int enumerate_mesh(const struct hx_gpt_config *m, const struct train_args *a,
                          const struct fixed *x, const struct plan_bed *bed, int tp, int gy,
                          int gz, int pp, struct rows *rs)
{
    int dp = bed->gpus / (tp * pp), k_node = plan_dp_in_node(tp, pp, bed);
    for (int fold = 0; fold <= (pp > 1); fold++) {
        if ((x->fold && fold != x->fold - 1) || (fold && m->num_layers % (2 * pp))) {
            continue;
        }
        for (int mbs = 1; mbs <= a->global_batch; mbs *= 2) {
            if ((x->mbs ? mbs != x->mbs : mbs > 16) || a->global_batch % (mbs * dp) ||
                too_wide(m, mbs)) {
                continue;
            }
            int nf = shardings(dp, k_node, rs->f);
            for (int s = 0; s < nf; s++) {
                const int *f = rs->f[s];
                /* a grid shards over its Z exactly: s_p above Gz is the grid Gx x Gy x s_p */
                if ((x->zero && !plan_zero_matches(f, dp, x->zero - 1)) || (gz > 0 && f[0] != gz)) {
                    continue;
                }
                for (int rc = 0; rc <= (pp == 1 ? 2 : 0); rc++) {
                    if (x->recompute && rc != x->recompute - 1) {
                        continue;
                    }
                    struct plan_config c = {
                        .tp = tp, .pp = pp, .fold = fold, .dp = dp, .gy = gy, .gz = gz,
                        .mbs = mbs, .M = a->global_batch / mbs, .s_p = f[0], .s_g = f[1],
                        .s_os = f[2], .recompute = rc };
                    struct hx_mesh_request q;
                    struct hx_mesh mesh;
                    plan_mesh_request(&c, bed, m, 0, &q);
                    if (hx_mesh_init(&mesh, &q, 1) != HX_OK) {
                        continue;
                    }
                    if (rs->n == rs->cap) {
                        rs->cap = rs->cap ? 2 * rs->cap : 64;
                        struct row *g = realloc(rs->r, sizeof *g * (size_t)rs->cap);
                        if (g == NULL) {
                            return HX_ERR(HX_ENOMEM, "%d configurations", rs->cap);
                        }
                        rs->r = g;
                    }
                    struct row *r = &rs->r[rs->n];
                    r->c = c;
                    r->id = rs->n;
                    if (plan_estimate(m, &c, bed, &r->e) == HX_OK) {
                        rs->n++;
                    }
                }
            }
        }
    }
    return HX_OK;
}

/* Every configuration the fixed choices allow: priced, or counted as not buildable.
 * Megatron's tp stays inside a node; AxoNN's grids take any factorisation Gx x Gy x Gz, as
 * its placement-aware model ranks them, without a pipeline (AxoNN has none; Z shards). */
int plan_enumerate(const struct hx_gpt_config *m, const struct train_args *a,
                     const struct fixed *x, const struct plan_bed *bed, struct row **out,
                     int *nrows)
{
    int N = bed->gpus, G = m->num_query_groups ? m->num_query_groups : m->num_heads;
    int F = m->ffn_hidden_size ? m->ffn_hidden_size : 4 * m->hidden_size, ret = HX_OK;
    struct rows rs = { .f = malloc(sizeof *rs.f * SHARDING_VALUES * SHARDING_VALUES) };
    if (rs.f == NULL) {
        return HX_ERR(HX_ENOMEM, "the sharding factors");
    }
    for (int tp = 1; tp <= N && tp <= bed->per_node && !x->grid[0] && ret == HX_OK; tp++) {
        if (N % tp || (x->tp && tp != x->tp) || m->num_heads % tp || G % tp || F % tp ||
            m->vocab_size % tp || m->seq_len % tp) {
            continue;
        }
        for (int pp = 1; pp <= N / tp && ret == HX_OK; pp++) {
            if ((N / tp) % pp || m->num_layers % pp || (x->pp && pp != x->pp)) {
                continue;
            }
            ret = enumerate_mesh(m, a, x, bed, tp, 0, 0, pp, &rs);
        }
    }
    for (int gx = 1; gx <= N && !x->tp && (!x->pp || x->pp == 1) && ret == HX_OK; gx++) {
        for (int gy = 1; gx * gy <= N && ret == HX_OK; gy++) {
            for (int gz = 1; gx * gy * gz <= N && ret == HX_OK; gz++) {
                const int *g = x->grid;
                /* 1 x 1 x Gz is sharded data parallelism, priced as tp 1; Gx x 1 x 1 is
                 * Megatron's tp without sequence parallelism, left out unless asked for */
                if (N % (gx * gy * gz) || (gy == 1 && (gz == 1 || gx == 1) && !g[0]) ||
                    m->num_heads % gx ||
                    G % gx || F % gx || m->vocab_size % gx || m->hidden_size % gy ||
                    (g[0] && (g[0] != gx || g[1] != gy || g[2] != gz))) {
                    continue;
                }
                ret = enumerate_mesh(m, a, x, bed, gx * gy, gy, gz, 1, &rs);
            }
        }
    }
    free(rs.f);
    *out = rs.r;
    *nrows = rs.n;
    return ret;
}

