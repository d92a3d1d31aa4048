/* SPDX-License-Identifier: MIT */
/* codelets/xent_vp.c: vocabulary-parallel cross-entropy (Megatron).  Rank t of tp holds the
 * logits columns [v0, v0+Vl) of (N, V): logits (N,Vl) row stride ld; targets (N,1) int32,
 * global ids; stats (N,2); all (parts*N, 2) = every shard's stats of the same row tile,
 * gathered rank-major (rows t*N + n for shard t); losses, lse (N,1).
 *   xent_vp_stats: stats[n] = { log sum_j exp(logits[n][j]) (max-shifted), logits[n][target
 *                  - v0] if v0 <= target < v0+Vl else 0 }
 *   xent_vp:       lse = log sum_t exp(all[t*N+n][0]), loss = lse - sum_t all[t*N+n][1]
 *                  (one shard holds the target); with grad, logits := scale (exp(logits -
 *                  lse) - onehot) in place, this shard's columns of the unsharded gradient.
 * Only (N,2) floats per shard cross the network instead of the (N,V) logits.  A negative
 * target is reported (HX_EINVAL); the upper bound needs the whole vocabulary, which the
 * batch loader checks.  Device forms: codelets/kernels/xent_vp.cl (launchers
 * codelets/opencl/xent_vp.c, codelets/cuda/xent_vp.cu).  Reference:
 * codelets/ref/xent_vp_ref.c.  Test: tests/codelets/xent_vp.c. */
#include <math.h>

#include "codelets/codelets.h"
#include "codelets/ids.h"
#include "codelets/vecmath.h"

/* Targets come from the data loader, not from us: a bad one is the world's fault. */
int hx_xent_vp_targets_ok(const int32_t *targets, int N, const char *op)
{
    for (int r = 0; r < N; r++) {
        if (targets[r] < 0) {
            HX_TASK_ERR(HX_EINVAL, "%s: row %d target %d is negative (bad token file?)", op, r,
                        (int)targets[r]);
            return 0;
        }
    }
    return 1;
}

/* Column of the shard holding target tgt, or -1 (64-bit: tgt - v0 cannot overflow). */
static inline int64_t shard_col(int32_t tgt, int v0, int V)
{
    int64_t j = (int64_t)tgt - v0;
    return j >= 0 && j < V ? j : -1;
}

/* stats (N,2) row stride lds from logits (N,V) row stride ld */
HX_VECTOR_CLONES
static void xent_vp_stats_rows(float *stats, int lds, const float *logits, int ld,
                               const int32_t *targets, int N, int V, int v0)
{
    for (int r = 0; r < N; r++) {
        const float *x = logits + (size_t)r * ld;
        int64_t jt = shard_col(targets[r], v0, V);
        stats[(size_t)r * lds] = (float)hx_row_lse(x, V);
        stats[(size_t)r * lds + 1] = jt >= 0 ? x[jt] : 0.0f;
    }
}

/* Row r's log-sum-exp over the shards from the gathered stats all (parts*N, 2) row stride
 * lda, max-shifted so no exp() overflows; *target_logit = the sum of the shards' column 1
 * (exactly one is nonzero). */
static double combine_row(const float *all, int lda, int N, int parts, int r,
                          double *target_logit)
{
    double mx = -INFINITY, sum = 0.0, tl = 0.0;
    for (int t = 0; t < parts; t++) {
        mx = fmax(mx, all[((size_t)t * N + r) * lda]);
    }
    for (int t = 0; t < parts; t++) {
        const float *s = all + ((size_t)t * N + r) * lda;
        sum += exp(s[0] - mx);
        tl += s[1];
    }
    *target_logit = tl;
    return mx + log(sum);
}

/* logits (V columns of row x) := scale (exp(x - lse) - onehot(jt)), jt < 0: not here */
HX_VECTOR_CLONES
static void xent_vp_grad_row(float *x, int V, float lse, int64_t jt, float scale)
{
    for (int j = 0; j < V; j++) {
        x[j] = scale * hx_expf(x[j] - lse);
    }
    if (jt >= 0) {
        x[jt] -= scale;
    }
}

/* The node's shapes against the tiles: a mismatch is a graph-building bug.  all < 0: the
 * stats op (out is stats (N,2)); else the combine (all (parts*N,2), out is losses (N,1)). */
static void check_shapes(void *buffers[], const struct hx_xent_vp_args *a, int out, int all,
                         const char *op)
{
    int N = a->rows;
    HX_ASSERT(a->V >= 1 && a->v0 >= 0 && a->parts >= 1,
              "%s: shard [%d,%d) of %d parts: needs v0 >= 0, at least one column and one part",
              op, a->v0, a->v0 + a->V, a->parts);
    HX_ASSERT(HX_BUF_ROWS(buffers, 0) == N && HX_BUF_COLS(buffers, 0) == a->V,
              "%s: args (%d,%d) but logits tile (%d,%d)", op, N, a->V, HX_BUF_ROWS(buffers, 0),
              HX_BUF_COLS(buffers, 0));
    HX_ASSERT(HX_BUF_ROWS(buffers, 1) == N && HX_BUF_ROWS(buffers, out) == N &&
                  HX_BUF_COLS(buffers, out) == (all < 0 ? 2 : 1),
              "%s: %d rows of logits but targets has %d, %s (%d,%d)", op, N,
              HX_BUF_ROWS(buffers, 1), all < 0 ? "stats" : "losses", HX_BUF_ROWS(buffers, out),
              HX_BUF_COLS(buffers, out));
    if (all >= 0) {
        HX_ASSERT(HX_BUF_ROWS(buffers, all) == a->parts * N && HX_BUF_COLS(buffers, all) == 2 &&
                      HX_BUF_ROWS(buffers, 4) == N,
                  "%s: gathered stats tile is (%d,%d), expected (%d x %d, 2); lse has %d rows",
                  op, HX_BUF_ROWS(buffers, all), HX_BUF_COLS(buffers, all), a->parts, N,
                  HX_BUF_ROWS(buffers, 4));
    }
}

void hx_xent_vp_stats_check_shapes(void *buffers[], const struct hx_xent_vp_args *a)
{
    check_shapes(buffers, a, 2, -1, "xent_vp_stats");
}

void hx_xent_vp_check_shapes(void *buffers[], const struct hx_xent_vp_args *a)
{
    check_shapes(buffers, a, 3, 2, "xent_vp");
}

/* buffers: logits R, targets R, stats W */
static void xent_vp_stats_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_xent_vp_args *a = &node->args.xvp;
    if (hx_run_failed()) {
        return;
    }
    hx_xent_vp_stats_check_shapes(buffers, a);
    const int32_t *targets = HX_BUF_I32(buffers, 1);
    if (!hx_xent_vp_targets_ok(targets, a->rows, "xent_vp_stats")) {
        return;
    }
    xent_vp_stats_rows(HX_BUF_F32(buffers, 2), HX_BUF_LD(buffers, 2), HX_BUF_F32(buffers, 0),
                       HX_BUF_LD(buffers, 0), targets, a->rows, a->V, a->v0);
}

/* buffers: logits (RW with grad, else R), targets R, all R, losses W, lse W */
static void xent_vp_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_xent_vp_args *a = &node->args.xvp;
    if (hx_run_failed()) {
        return;
    }
    hx_xent_vp_check_shapes(buffers, a);
    const int32_t *targets = HX_BUF_I32(buffers, 1);
    if (!hx_xent_vp_targets_ok(targets, a->rows, "xent_vp")) {
        return;
    }
    float *logits = HX_BUF_F32(buffers, 0), *losses = HX_BUF_F32(buffers, 3);
    float *lse = HX_BUF_F32(buffers, 4);
    const float *all = HX_BUF_F32(buffers, 2);
    int ld = HX_BUF_LD(buffers, 0), lda = HX_BUF_LD(buffers, 2);
    int ldl = HX_BUF_LD(buffers, 3), ldlse = HX_BUF_LD(buffers, 4);
    for (int r = 0; r < a->rows; r++) {
        double tl;
        double l = combine_row(all, lda, a->rows, a->parts, r, &tl);
        losses[(size_t)r * ldl] = (float)(l - tl);
        lse[(size_t)r * ldlse] = (float)l;
        if (a->grad) {
            xent_vp_grad_row(logits + (size_t)r * ld, a->V, (float)l,
                             shard_col(targets[r], a->v0, a->V), a->scale);
        }
    }
}

HX_CODELET_DEV(xent_vp_stats, "xent_vp_stats", xent_vp_stats_cpu);
HX_CODELET_DEV(xent_vp, "xent_vp", xent_vp_cpu);
