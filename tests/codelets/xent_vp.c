/* SPDX-License-Identifier: MIT */
/* tests/codelets/xent_vp.c: the vocabulary-parallel cross-entropy codelets, built with
 * hx_xent_vp_stats then hx_xent_vp for every shard of a V = 257 vocabulary split into 1, 2
 * (129 | 128) and 3 (86 | 1 | 170) shards, and run on 2 workers, against the unsharded
 * references (normwise rel. error <= 1e-5, no NaN/Inf):
 *   (a) every shard's stats (N,2) match hx_ref_xent_vp_stats;
 *   (b) every shard's losses and lse, computed from the stats gathered on the host as the
 *       all-gather lays them out (tile i of all (parts*N, 2): rows t*n + r for shard t, n rows
 *       in the tile), match hx_ref_xent_fwd on the whole (N,V) logits, with and without grad;
 *   (c) the shards' dlogits, concatenated, match hx_ref_xent_bwd on the whole logits;
 * plus hx_ref_xent_vp itself against hx_ref_xent_fwd/bwd (1e-12), and a negative target
 * reported.  T = 17: 3 tiles of one sequence (logits in +-4, scale 1/N) and one tile of two
 * (logits 20+-8, peaked, scale 0.37); targets include 0, V-1 and both ends of every shard. */
#include "codelets/harness.h"

#define V 257
#define MAXPARTS 3
#define NSHAPES 2
/* per shape, for parts = 1, 2, 3: parts stats checks + losses, lse, losses without grad,
 * dlogits, and the reference's own check */
#define NCHECKS (NSHAPES * (1 + 2 + 3 + 3 * 5) + 1)

struct shape {
    int nseq, T;
    int tile_rows;       /* 0: one tile */
    float offset, width; /* logits = offset + width * uniform[-1,1) */
    float scale;         /* gradient scale; 0: 1/N */
};

struct split {
    int parts;
    int cols[MAXPARTS]; /* Vl of each shard, summing to V, in vocabulary order */
};

/* Every shard's stats tensor copied into the gathered layout the all-gather produces: tile i
 * of all holds, for shard t, the n rows of logits tile i at rows t*n .. t*n + n-1. */
static void gather_stats(struct hx_tensor *all, struct hx_tensor *const *stats, int parts)
{
    const struct hx_tensor *s0 = stats[0];
    float *dst = hx_f32(all);
    for (int i = 0; i < s0->ntiles; i++) {
        int row0 = hx_tile_row0(s0, i), n = hx_tile_nrows(s0, i);
        for (int t = 0; t < parts; t++) {
            const float *src = hx_f32(stats[t]) + (size_t)row0 * 2;
            memcpy(dst + ((size_t)parts * row0 + (size_t)t * n) * 2, src,
                   (size_t)n * 2 * sizeof *src);
        }
    }
}

/* The same layout in double, from shard stats of the reference (parts arrays of (N,2)). */
static void gather_ref(double *all, double *const *stats, int parts, int N)
{
    for (int t = 0; t < parts; t++) {
        memcpy(all + (size_t)t * N * 2, stats[t], (size_t)N * 2 * sizeof *all);
    }
}

/* columns [v0, v0+Vl) of x (N, V) into out (N, Vl), or back with dir < 0 */
static void copy_cols(float *shard, float *x, int N, int v0, int Vl, int dir)
{
    for (int r = 0; r < N; r++) {
        float *a = shard + (size_t)r * Vl, *b = x + (size_t)r * V + v0;
        if (dir > 0) {
            memcpy(a, b, (size_t)Vl * sizeof *a);
        } else {
            memcpy(b, a, (size_t)Vl * sizeof *a);
        }
    }
}

static void test_split(const struct shape *s, const struct split *sp, struct rng *r)
{
    const int N = s->nseq * s->T, P = sp->parts;
    const size_t nv = (size_t)N * V;
    const float scale = s->scale > 0.0f ? s->scale : 1.0f / (float)N;
    int v0[MAXPARTS];
    for (int t = 0, acc = 0; t < P; t++) {
        v0[t] = acc;
        acc += sp->cols[t];
    }

    hx_graph_t g = graph_new();
    struct hx_tensor *targets = hx_graph_tensor(g, "targets", HX_I32, HX_ROLE_INPUT, N, 1,
                                                s->tile_rows);
    struct hx_tensor *logits[MAXPARTS] = { 0 }, *stats[MAXPARTS] = { 0 };
    struct hx_tensor *losses[MAXPARTS] = { 0 }, *lse[MAXPARTS] = { 0 };
    struct hx_tensor *losses_ng[MAXPARTS] = { 0 }, *lse_ng[MAXPARTS] = { 0 };
    for (int t = 0; t < P; t++) {
        logits[t] = tensor_f32(g, label("logits%d", t), N, sp->cols[t], s->tile_rows);
        stats[t] = tensor_f32(g, label("stats%d", t), N, 2, s->tile_rows);
        losses[t] = tensor_f32(g, label("losses%d", t), N, 1, s->tile_rows);
        lse[t] = tensor_f32(g, label("lse%d", t), N, 1, s->tile_rows);
        losses_ng[t] = tensor_f32(g, label("losses_nograd%d", t), N, 1, s->tile_rows);
        lse_ng[t] = tensor_f32(g, label("lse_nograd%d", t), N, 1, s->tile_rows);
    }
    struct hx_tensor *all = tensor_f32(g, "all_stats", P * N, 2, P * logits[0]->tile_rows);
    for (int t = 0; t < P; t++) {
        hx_xent_vp_stats(g, stats[t], logits[t], targets, v0[t]);
    }
    int nstats = g->nnodes;
    for (int t = 0; t < P; t++) {
        hx_xent_vp(g, losses_ng[t], lse_ng[t], logits[t], targets, all, v0[t], P, 0, 0.0f);
        hx_xent_vp(g, losses[t], lse[t], logits[t], targets, all, v0[t], P, 1, scale);
    }
    graph_realize(g);

    /* the whole logits and targets, then each shard's columns */
    float *x = xcalloc(nv, sizeof *x);
    fill_uniform(x, nv, r, s->width, s->offset);
    int *tgt = xcalloc((size_t)N, sizeof *tgt);
    for (int i = 0; i < N; i++) {
        int t = i % (2 * P), edge = t / 2;
        tgt[i] = i == 0 ? 0 : i == N - 1 ? V - 1 : i % 3 == 0 ? rng_int(r, V)
               : t % 2 == 0 ? v0[edge] : v0[edge] + sp->cols[edge] - 1;
        hx_i32(targets)[i] = tgt[i];
    }
    double *x_d = dup_f64(x, nv);
    double *stats_ref[MAXPARTS];
    for (int t = 0; t < P; t++) {
        copy_cols(hx_f32(logits[t]), x, N, v0[t], sp->cols[t], 1);
        fill_nan(hx_f32(stats[t]), (size_t)N * 2);
        fill_nan(hx_f32(losses[t]), (size_t)N);
        fill_nan(hx_f32(lse[t]), (size_t)N);
        fill_nan(hx_f32(losses_ng[t]), (size_t)N);
        fill_nan(hx_f32(lse_ng[t]), (size_t)N);
        stats_ref[t] = dalloc((size_t)N * 2);
        double *xs = dup_f64(hx_f32(logits[t]), (size_t)N * sp->cols[t]);
        hx_ref_xent_vp_stats(stats_ref[t], xs, tgt, N, sp->cols[t], v0[t]);
        free(xs);
    }
    fill_nan(hx_f32(all), (size_t)P * N * 2);

    char sh[128];
    snprintf(sh, sizeof sh, "V=%d in %d part%s, (%d,%d) %d tile%s logits %g+-%g", V, P,
             P > 1 ? "s" : "", N, V, logits[0]->ntiles, logits[0]->ntiles > 1 ? "s" : "",
             s->offset, s->width);

    /* (a) the stats, then the all-gather done here */
    int ret = hx_graph_submit(g, 0, nstats);
    int wret = hx_graph_wait(g);
    if (ret != HX_OK || wret != HX_OK) {
        tap_diag("stats run failed: %s", hx_status_str(ret != HX_OK ? ret : wret));
    }
    for (int t = 0; t < P; t++) {
        check_tensor(label("xent_vp_stats shard %d [%d,%d) %s", t, v0[t], v0[t] + sp->cols[t],
                           sh),
                     stats[t], stats_ref[t], TOL);
    }
    for (int t = 0; t < P; t++) {
        if (hx_tensor_begin_access(stats[t], 'r') != HX_OK) {
            tap_diag("cannot acquire %s", stats[t]->name);
        }
    }
    if (hx_tensor_begin_access(all, 'w') == HX_OK) {
        gather_stats(all, stats, P);
        hx_tensor_end_access(all);
    }
    for (int t = 0; t < P; t++) {
        hx_tensor_end_access(stats[t]);
    }

    /* (b), (c): the combine on every shard against the unsharded references */
    ret = hx_graph_submit(g, nstats, -1);
    wret = hx_graph_wait(g);
    if (ret != HX_OK || wret != HX_OK) {
        tap_diag("combine run failed: %s", hx_status_str(ret != HX_OK ? ret : wret));
    }
    double *loss_ref = dalloc((size_t)N), *lse_ref = dalloc((size_t)N), *dx_ref = dalloc(nv);
    hx_ref_xent_fwd(loss_ref, lse_ref, x_d, tgt, N, V);
    hx_ref_xent_bwd(dx_ref, x_d, tgt, N, V, scale);
    /* every shard computes the same losses and lse: compare all P copies at once */
    double *rep_loss = dalloc((size_t)P * N), *rep_lse = dalloc((size_t)P * N);
    float *got = xcalloc((size_t)P * N, sizeof *got);
    struct { struct hx_tensor **t; const char *what; double *ref; } outs[3] = {
        { losses, "losses", rep_loss }, { lse, "lse", rep_lse }, { losses_ng, "losses", rep_loss },
    };
    for (int t = 0; t < P; t++) {
        memcpy(rep_loss + (size_t)t * N, loss_ref, (size_t)N * sizeof *rep_loss);
        memcpy(rep_lse + (size_t)t * N, lse_ref, (size_t)N * sizeof *rep_lse);
    }
    for (int k = 0; k < 3; k++) {
        for (int t = 0; t < P; t++) {
            hx_tensor_read(outs[k].t[t], got + (size_t)t * N);
        }
        check(label("xent_vp %s (every shard)%s vs unsharded xent_fwd, %s", outs[k].what,
                    k == 2 ? " without grad" : "", sh),
              got, outs[k].ref, (size_t)P * N, TOL);
    }
    float *dx = xcalloc(nv, sizeof *dx);
    for (int t = 0; t < P; t++) {
        float *shard = xcalloc((size_t)N * sp->cols[t], sizeof *shard);
        hx_tensor_read(logits[t], shard);
        copy_cols(shard, dx, N, v0[t], sp->cols[t], -1);
        free(shard);
    }
    check(label("xent_vp dlogits (shards concatenated) vs unsharded xent_bwd, scale %.4g, %s",
                scale, sh),
          dx, dx_ref, nv, TOL);

    /* the reference against itself: sharded double math equals the unsharded one */
    double *all_ref = dalloc((size_t)P * N * 2), *dx_vp = dalloc(nv);
    double *l_vp = dalloc((size_t)N), *lse_vp = dalloc((size_t)N);
    gather_ref(all_ref, stats_ref, P, N);
    double err = 0.0;
    for (int t = 0; t < P; t++) {
        double *xs = dalloc((size_t)N * sp->cols[t]), *dxs = dalloc((size_t)N * sp->cols[t]);
        for (int rr = 0; rr < N; rr++) {
            memcpy(xs + (size_t)rr * sp->cols[t], x_d + (size_t)rr * V + v0[t],
                   (size_t)sp->cols[t] * sizeof *xs);
        }
        hx_ref_xent_vp(l_vp, lse_vp, dxs, xs, tgt, all_ref, N, sp->cols[t], v0[t], P, scale);
        for (int rr = 0; rr < N; rr++) {
            memcpy(dx_vp + (size_t)rr * V + v0[t], dxs + (size_t)rr * sp->cols[t],
                   (size_t)sp->cols[t] * sizeof *dx_vp);
        }
        err = fmax(err, fmax(rel_err_f64(l_vp, loss_ref, (size_t)N),
                             rel_err_f64(lse_vp, lse_ref, (size_t)N)));
        free(xs);
        free(dxs);
    }
    err = fmax(err, rel_err_f64(dx_vp, dx_ref, nv));
    tap_ok(err <= 1e-12, "hx_ref_xent_vp (losses, lse, dlogits) vs hx_ref_xent_fwd/bwd, %s: "
           "rel err %.2e (tol 1e-12)", sh, err);

    for (int t = 0; t < P; t++) {
        free(stats_ref[t]);
    }
    free(all_ref);
    free(dx_vp);
    free(l_vp);
    free(lse_vp);
    free(dx);
    free(got);
    free(rep_loss);
    free(rep_lse);
    free(loss_ref);
    free(lse_ref);
    free(dx_ref);
    free(x_d);
    free(x);
    free(tgt);
    hx_graph_destroy(g);
}

/* A negative target is the data's fault: reported as HX_EINVAL, nothing read out of bounds. */
static void test_bad_target(void)
{
    const int N = 17, Vl = 40;
    hx_graph_t g = graph_new();
    struct hx_tensor *logits = tensor_f32(g, "logits", N, Vl, 0);
    struct hx_tensor *targets = hx_graph_tensor(g, "targets", HX_I32, HX_ROLE_INPUT, N, 1, 0);
    struct hx_tensor *stats = tensor_f32(g, "stats", N, 2, 0);
    hx_xent_vp_stats(g, stats, logits, targets, 100);
    graph_realize(g);
    hx_i32(targets)[5] = -3;
    tap_diag("one error message about row 5's target -3 is expected next:");
    hx_graph_submit(g, 0, -1);
    hx_graph_wait(g);
    int status = hx_run_status();
    hx_run_status_reset();
    tap_ok(status == HX_EINVAL, "xent_vp_stats: a negative target is reported (status %s)",
           hx_status_str(status));
    hx_graph_destroy(g);
}

int main(void)
{
    static const struct shape shapes[NSHAPES] = {
        { 3, 17, 17, 0.0f, 4.0f, 0.0f },  /* one sequence per tile: 3 tasks per shard */
        { 2, 17, 0, 20.0f, 8.0f, 0.37f }, /* one tile, large and peaked logits */
    };
    static const struct split splits[] = {
        { 1, { 257 } },
        { 2, { 129, 128 } },   /* the uneven rule of the collectives: 257/2 + (t < 1) */
        { 3, { 86, 1, 170 } }, /* any split: a one-column shard in the middle */
    };
    struct rng r = { 0x78656e747670ull };

    harness_start(NCHECKS);
    for (int i = 0; i < NSHAPES; i++) {
        for (size_t k = 0; k < sizeof splits / sizeof splits[0]; k++) {
            test_split(&shapes[i], &splits[k], &r);
        }
    }
    test_bad_target();
    return harness_end();
}
