/* SPDX-License-Identifier: MIT */
/* tests/codelets/norm_split.c: LayerNorm and RMSNorm over column-split rows (HX_OP_NORM_*,
 * codelets/norm_split.c) give the whole-row CPU kernels' results (hx_cpu_layernorm_fwd,
 * _bwd_data, hx_cpu_rmsnorm_*).  The C_total columns are cut into G = 1, 2, 4 slices by
 * ops.h's split rule (uneven for C_total = 257), standing for the ranks of a group: one graph
 * runs each slice's NORM_PART tasks, adds the slices' partial sums in rank order in float with
 * ADD tasks (what the all-reduce computes), then each slice's APPLY tasks from those sums.
 * Checked: the summed partials against hx_ref_norm_part's whole-row sums (rel. 1e-5), every
 * slice's outputs reassembled against the whole-row kernels' (the rule below), every slice
 * holding the same mean and rstd bit for bit, and the whole-row weight-gradient builders on
 * the slices giving the slices of the whole-row dw, db.  With G = 1 the builders of
 * include/helix/layers.h too (they emit no collective).  Backward inputs mean, rstd are the
 * whole-row forward's.  Shapes as tests/codelets/layernorm.c, one with |mean| >> std.
 * Under HX_TEST_DEVICE=opencl (tests/device/codelets.sh) the tasks run on OpenCL and meet
 * the same CPU results.
 *
 * Tolerance rule (split against whole-row, both fp32): the two differ only in the sums, which
 * both accumulate in double; the split rounds each slice's partial to float and adds G of
 * them in float, a relative change of at most G ulps (u = 2^-24) of sum_j |partial_j|, which
 * reaches rstd halved and g_mean, gx_mean not above G u of the row's scale; then the few
 * float operations per element round once more (and a device may contract them into FMAs):
 * tol = 4 (G + 4) u in the normwise relative error (8.3e-7 for G = 4), with no term in the
 * sum's length C (the sums are double) and none in |mean|/std: LayerNorm's mean is corrected
 * by the second pass's sum (ops.h, HX_NORM_LN_VAR) to double accuracy, so it rounds to the
 * whole-row kernel's float; without that correction the |mean| >> std shape fails out. */
#include "codelets/cpu.h"
#include "codelets/harness.h"
#include "helix/mesh.h"
#include "helix/ops.h"

#define NSHAPES 3
#define NG 3
#define EPS 1e-5f
#define U 0x1.0p-24
#define LN_CHECKS 12
#define RMS_CHECKS 8
#define BUILDER_CHECKS (6 + 5)
#define NCHECKS (NSHAPES * (NG * (LN_CHECKS + RMS_CHECKS) + BUILDER_CHECKS))
#define GMAX 4

struct shape {
    int nseq, T, C;
    int tile_rows;       /* 0: one tile */
    float offset, scale; /* inp = offset + scale * uniform[-1,1) */
};

/* the whole rows (N, C) on the host, and the whole-row kernels' results */
struct rows {
    int N, C;
    float *x, *w, *b, *dout, *resid;
    float *out, *mean, *rstd, *dinp, *dinp_r, *dw, *db;
};

static float *falloc(size_t n)
{
    return xcalloc(n, sizeof(float));
}

static void rows_init(struct rows *h, const struct shape *s, struct rng *r, int rms)
{
    int N = s->nseq * s->T, C = s->C;
    size_t nc = (size_t)N * C;
    h->N = N, h->C = C;
    h->x = falloc(nc), h->dout = falloc(nc), h->resid = falloc(nc);
    h->w = falloc((size_t)C), h->b = falloc((size_t)C);
    fill_uniform(h->x, nc, r, s->scale, s->offset);
    fill_uniform(h->w, (size_t)C, r, 0.5f, 1.0f);
    fill_uniform(h->b, (size_t)C, r, 1.0f, 0.0f);
    fill_uniform(h->dout, nc, r, 1.0f, 0.0f);
    fill_uniform(h->resid, nc, r, 1.0f, 0.0f);
    h->out = falloc(nc), h->dinp = falloc(nc), h->dinp_r = falloc(nc);
    h->mean = falloc((size_t)N), h->rstd = falloc((size_t)N);
    h->dw = falloc((size_t)C), h->db = falloc((size_t)C);
    if (rms) {
        hx_cpu_rmsnorm_fwd(h->out, h->rstd, h->x, h->w, N, C, C, EPS);
        hx_cpu_rmsnorm_bwd_data(h->dinp, h->dout, h->x, h->w, h->rstd, NULL, N, C, C);
        hx_cpu_rmsnorm_bwd_data(h->dinp_r, h->dout, h->x, h->w, h->rstd, h->resid, N, C, C);
        hx_cpu_rmsnorm_bwd_weight(h->dw, h->dout, h->x, h->rstd, N, C, C);
    } else {
        hx_cpu_layernorm_fwd(h->out, h->mean, h->rstd, h->x, h->w, h->b, N, C, C, EPS);
        hx_cpu_layernorm_bwd_data(h->dinp, h->dout, h->x, h->w, h->mean, h->rstd, NULL, N, C,
                                  C);
        hx_cpu_layernorm_bwd_data(h->dinp_r, h->dout, h->x, h->w, h->mean, h->rstd, h->resid,
                                  N, C, C);
        hx_cpu_layernorm_bwd_weight(h->dw, h->db, h->dout, h->x, h->mean, h->rstd, N, C, C);
    }
}

static void rows_free(struct rows *h)
{
    float *p[] = { h->x, h->w, h->b, h->dout, h->resid, h->out, h->mean, h->rstd, h->dinp,
                   h->dinp_r, h->dw, h->db };
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
        free(p[i]);
    }
}

/* ---- the slices, as G ranks would hold them ---- */

struct slice {
    int c0, C;
    hx_tensor_t x, w, b, dout, resid, out, mean, rstd, dinp, dinp_r, dw, db;
    hx_tensor_t p1, p2, pb; /* partial sums: LN_SUM or RMS_SQ, LN_VAR, the backward's */
};

/* columns c0 .. c0+C of the (N, ld) host rows <-> the (N, C) tensor t */
static void put_cols(hx_tensor_t t, const float *full, int ld, int c0)
{
    for (int r = 0; r < t->rows; r++) {
        memcpy(hx_f32(t) + (size_t)r * t->cols, full + (size_t)r * ld + c0,
               sizeof(float) * (size_t)t->cols);
    }
}

static void get_cols(float *full, int ld, int c0, hx_tensor_t t)
{
    if (hx_tensor_begin_access(t, 'r') != HX_OK) {
        tap_diag("cannot acquire %s", t->name);
        return;
    }
    for (int r = 0; r < t->rows; r++) {
        memcpy(full + (size_t)r * ld + c0, hx_f32(t) + (size_t)r * t->cols,
               sizeof(float) * (size_t)t->cols);
    }
    hx_tensor_end_access(t);
}

static hx_tensor_t slice_tensor(hx_graph_t g, const char *what, int j, int rows, int cols,
                                int tr)
{
    return tensor_f32(g, label("%s%d", what, j), rows, cols, tr);
}

/* One node per row tile of x: @p op with args @p a (rows set per tile) on tile i of each
 * tensor of @p ts (single-tile ones: tile 0), one per letter of @p modes ('r' read, 'w'
 * written), in ops.h's buffer order. */
static void emit(hx_graph_t g, enum hx_op op, struct hx_norm_split_args a, hx_tensor_t x,
                 const char *modes, const hx_tensor_t *ts)
{
    int n = (int)strlen(modes);
    for (int i = 0; i < x->ntiles; i++) {
        struct hx_ref refs[8];
        for (int k = 0; k < n; k++) {
            refs[k] = hx_ref_of(ts[k], ts[k]->ntiles > 1 ? i : 0, modes[k] == 'w' ? HX_W : HX_R);
        }
        a.rows = hx_tile_nrows(x, i);
        union hx_op_args u = { .nsplit = a };
        hx_graph_add(g, op, &u, n, refs, 0.0, 0.0);
    }
}

/* field f of every slice, as an array */
#define FIELD(arr, sl, G, f)                                                                  \
    for (int j_ = 0; j_ < (G); j_++) {                                                        \
        (arr)[j_] = (sl)[j_].f;                                                               \
    }

/* the all-reduce's result on one process: sum = p[0] + p[1] + ... in rank order, in float
 * (with one rank, p[0] itself) */
static hx_tensor_t sum_slices(hx_graph_t g, hx_tensor_t sum, const hx_tensor_t *p, int G)
{
    if (G == 1) {
        return p[0];
    }
    hx_add(g, sum, p[0], p[1]);
    for (int j = 2; j < G; j++) {
        hx_accumulate(g, sum, p[j]);
    }
    return sum;
}

/* every slice's mean (or rstd) p[j] the same bits as slice 0's */
static void check_same(const char *name, const hx_tensor_t *p, int G)
{
    size_t diff = 0, n = 0;
    hx_tensor_t t0 = p[0];
    if (hx_tensor_begin_access(t0, 'r') != HX_OK) {
        tap_ok(0, "%s: cannot acquire %s", name, t0->name);
        return;
    }
    for (int j = 1; j < G; j++) {
        hx_tensor_t t = p[j];
        if (hx_tensor_begin_access(t, 'r') == HX_OK) {
            n = hx_tensor_numel(t);
            for (size_t i = 0; i < n; i++) {
                diff += memcmp(&hx_f32(t)[i], &hx_f32(t0)[i], sizeof(float)) != 0;
            }
            hx_tensor_end_access(t);
        }
    }
    hx_tensor_end_access(t0);
    tap_ok(diff == 0, "%s: the same bits on every slice (%zu differ)", name, diff);
}

/* the summed partials s (N, k) against hx_ref_norm_part over the whole rows */
static void check_sums(const char *name, hx_tensor_t s, const struct rows *h, int mode,
                       const float *stat, const float *rstd)
{
    size_t nc = (size_t)h->N * h->C;
    int N = h->N, k = s->cols;
    double *x = dup_f64(h->x, nc), *dout = dup_f64(h->dout, nc), *w = dup_f64(h->w, h->C);
    double *st = stat != NULL ? dup_f64(stat, (size_t)N) : NULL;
    double *rs = rstd != NULL ? dup_f64(rstd, (size_t)N) : NULL;
    double *ref = dalloc((size_t)N * k);
    hx_ref_norm_part(ref, mode, x, dout, w, st, rs, N, h->C, h->C, h->C);
    check_tensor(name, s, ref, TOL);
    free(x), free(dout), free(w), free(st), free(rs), free(ref);
}

static void check_rows(const char *name, const float *got, const float *want, size_t n,
                       double tol)
{
    double *ref = dup_f64(want, n);
    check(name, got, ref, n, tol);
    free(ref);
}

/* The split graph of one norm over G slices; then every check of the case. */
static void test_split(const struct shape *s, struct rng *r, int rms, int G)
{
    struct rows h;
    rows_init(&h, s, r, rms);
    const int N = h.N, Ct = h.C, tr = s->tile_rows;
    const size_t nc = (size_t)N * Ct;
    hx_graph_t g = graph_new();
    struct slice sl[GMAX] = { { 0 } };
    hx_tensor_t p[GMAX] = { NULL };
    for (int j = 0; j < G; j++) {
        struct slice *q = &sl[j];
        q->c0 = (int)hx_split_offset(Ct, G, j), q->C = (int)hx_split_count(Ct, G, j);
        q->x = slice_tensor(g, "x", j, N, q->C, tr);
        q->dout = slice_tensor(g, "dout", j, N, q->C, tr);
        q->resid = slice_tensor(g, "resid", j, N, q->C, tr);
        q->out = slice_tensor(g, "out", j, N, q->C, tr);
        q->dinp = slice_tensor(g, "dinp", j, N, q->C, tr);
        q->dinp_r = slice_tensor(g, "dinp_r", j, N, q->C, tr);
        q->w = slice_tensor(g, "w", j, 1, q->C, 0);
        q->b = slice_tensor(g, "b", j, 1, q->C, 0);
        q->dw = slice_tensor(g, "dw", j, 1, q->C, 0);
        q->db = slice_tensor(g, "db", j, 1, q->C, 0);
        q->mean = slice_tensor(g, "mean", j, N, 1, tr);
        q->rstd = slice_tensor(g, "rstd", j, N, 1, tr);
        q->p1 = slice_tensor(g, "p1_", j, N, 1, tr);
        q->p2 = slice_tensor(g, "p2_", j, N, 2, tr);
        q->pb = slice_tensor(g, "pb", j, N, rms ? 1 : 2, tr);
    }
    /* the backward's mean and rstd: the whole-row forward's, the same on every rank */
    hx_tensor_t bmean = tensor_f32(g, "bmean", N, 1, tr), brstd = tensor_f32(g, "brstd", N, 1, tr);
    hx_tensor_t S1 = tensor_f32(g, "S1", N, 1, tr), S2 = tensor_f32(g, "S2", N, 2, tr);
    hx_tensor_t Sb = tensor_f32(g, "Sb", N, rms ? 1 : 2, tr);
    struct hx_norm_split_args a = { .cols_total = Ct, .rms = rms, .eps = EPS };

    /* forward: LayerNorm's two passes, RMSNorm's one, then the apply */
    for (int j = 0; j < G; j++) {
        a.cols = sl[j].C, a.mode = rms ? HX_NORM_RMS_SQ : HX_NORM_LN_SUM;
        emit(g, HX_OP_NORM_PART, a, sl[j].x, "rw", (hx_tensor_t[]){ sl[j].x, sl[j].p1 });
    }
    FIELD(p, sl, G, p1);
    hx_tensor_t s1 = sum_slices(g, S1, p, G), s2 = NULL;
    for (int j = 0; j < G && !rms; j++) {
        a.cols = sl[j].C, a.mode = HX_NORM_LN_VAR;
        emit(g, HX_OP_NORM_PART, a, sl[j].x, "rrw", (hx_tensor_t[]){ sl[j].x, s1, sl[j].p2 });
    }
    if (!rms) {
        FIELD(p, sl, G, p2);
        s2 = sum_slices(g, S2, p, G);
    }
    for (int j = 0; j < G; j++) {
        struct slice *q = &sl[j];
        a.cols = q->C, a.mode = 0;
        if (rms) {
            emit(g, HX_OP_NORM_FWD_APPLY, a, q->x, "rrrww",
                 (hx_tensor_t[]){ q->x, q->w, s1, q->out, q->rstd });
        } else {
            emit(g, HX_OP_NORM_FWD_APPLY, a, q->x, "rrrrrwww",
                 (hx_tensor_t[]){ q->x, q->w, q->b, s1, s2, q->out, q->mean, q->rstd });
        }
    }
    /* backward: the partials, their sum, the apply without and with the residual */
    for (int j = 0; j < G; j++) {
        struct slice *q = &sl[j];
        a.cols = q->C, a.mode = rms ? HX_NORM_RMS_BWD : HX_NORM_LN_BWD;
        if (rms) {
            emit(g, HX_OP_NORM_PART, a, q->x, "rrrrw",
                 (hx_tensor_t[]){ q->dout, q->x, q->w, brstd, q->pb });
        } else {
            emit(g, HX_OP_NORM_PART, a, q->x, "rrrrrw",
                 (hx_tensor_t[]){ q->dout, q->x, q->w, bmean, brstd, q->pb });
        }
    }
    FIELD(p, sl, G, pb);
    hx_tensor_t sb = sum_slices(g, Sb, p, G);
    for (int j = 0; j < G; j++) {
        struct slice *q = &sl[j];
        a.cols = q->C, a.mode = 0;
        for (int res = 0; res < 2; res++) {
            a.has_resid = res;
            hx_tensor_t d = res ? q->dinp_r : q->dinp;
            if (rms) {
                emit(g, HX_OP_NORM_BWD_APPLY, a, q->x, res ? "rrrrrwr" : "rrrrrw",
                     (hx_tensor_t[]){ q->dout, q->x, q->w, brstd, sb, d, q->resid });
            } else {
                emit(g, HX_OP_NORM_BWD_APPLY, a, q->x, res ? "rrrrrrwr" : "rrrrrrw",
                     (hx_tensor_t[]){ q->dout, q->x, q->w, bmean, brstd, sb, d, q->resid });
            }
        }
        a.has_resid = 0;
        /* the weight halves: the whole-row builders on the slice */
        if (rms) {
            hx_rmsnorm_bwd_weight(g, q->dw, q->dout, q->x, brstd);
        } else {
            hx_layernorm_bwd_weight(g, q->dw, q->db, q->dout, q->x, bmean, brstd);
        }
    }
    graph_realize(g);
    for (int j = 0; j < G; j++) {
        struct slice *q = &sl[j];
        put_cols(q->x, h.x, Ct, q->c0);
        put_cols(q->dout, h.dout, Ct, q->c0);
        put_cols(q->resid, h.resid, Ct, q->c0);
        put_cols(q->w, h.w, Ct, q->c0);
        put_cols(q->b, h.b, Ct, q->c0);
        hx_tensor_t wonly[] = { q->out, q->mean, q->rstd, q->dinp, q->dinp_r };
        for (int k = 0; k < 5; k++) {
            fill_nan(hx_f32(wonly[k]), hx_tensor_numel(wonly[k]));
        }
    }
    memcpy(hx_f32(bmean), h.mean, sizeof(float) * (size_t)N);
    memcpy(hx_f32(brstd), h.rstd, sizeof(float) * (size_t)N);
    graph_run(g);

    /* gather the slices into whole rows */
    float *out = falloc(nc), *dinp = falloc(nc), *dinp_r = falloc(nc);
    float *dw = falloc((size_t)Ct), *db = falloc((size_t)Ct);
    float *mean = falloc((size_t)N), *rstd = falloc((size_t)N), *S1h = falloc((size_t)N);
    for (int j = 0; j < G; j++) {
        struct slice *q = &sl[j];
        get_cols(out, Ct, q->c0, q->out);
        get_cols(dinp, Ct, q->c0, q->dinp);
        get_cols(dinp_r, Ct, q->c0, q->dinp_r);
        get_cols(dw, Ct, q->c0, q->dw);
        get_cols(db, Ct, q->c0, q->db);
    }
    get_cols(rstd, 1, 0, sl[0].rstd);
    get_cols(mean, 1, 0, sl[0].mean);
    get_cols(S1h, 1, 0, s1);

    const char *nm = rms ? "rmsnorm" : "layernorm";
    char sh[64];
    snprintf(sh, sizeof sh, "(%d,%d) %d tile%s, G=%d", N, Ct, sl[0].x->ntiles,
             sl[0].x->ntiles > 1 ? "s" : "", G);
    double tol = 4.0 * (G + 4) * U;
    if (rms) {
        check_sums(label("norm_part rms_sq, summed %s", sh), s1, &h, HX_NORM_RMS_SQ, NULL, NULL);
    } else {
        check_sums(label("norm_part ln_sum, summed %s", sh), s1, &h, HX_NORM_LN_SUM, NULL, NULL);
        check_sums(label("norm_part ln_var, summed %s", sh), s2, &h, HX_NORM_LN_VAR, S1h, NULL);
    }
    check_rows(label("%s fwd split out %s", nm, sh), out, h.out, nc, tol);
    if (!rms) {
        check_rows(label("%s fwd split mean %s", nm, sh), mean, h.mean, (size_t)N, tol);
        FIELD(p, sl, G, mean);
        check_same(label("%s fwd split mean %s", nm, sh), p, G);
    }
    check_rows(label("%s fwd split rstd %s", nm, sh), rstd, h.rstd, (size_t)N, tol);
    FIELD(p, sl, G, rstd);
    check_same(label("%s fwd split rstd %s", nm, sh), p, G);
    check_sums(label("norm_part %s, summed %s", rms ? "rms_bwd" : "ln_bwd", sh), sb, &h,
               rms ? HX_NORM_RMS_BWD : HX_NORM_LN_BWD, rms ? NULL : h.mean, h.rstd);
    check_rows(label("%s bwd split dinp %s", nm, sh), dinp, h.dinp, nc, tol);
    check_rows(label("%s bwd split dinp with resid %s", nm, sh), dinp_r, h.dinp_r, nc, tol);
    check_rows(label("%s bwd_weight on slices dw %s", nm, sh), dw, h.dw, (size_t)Ct, tol);
    if (!rms) {
        check_rows(label("%s bwd_weight on slices db %s", nm, sh), db, h.db, (size_t)Ct, tol);
    }
    float *f[] = { out, dinp, dinp_r, dw, db, mean, rstd, S1h };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        free(f[i]);
    }
    rows_free(&h);
    hx_graph_destroy(g);
}

/* The builders with a group of one rank: no collective, the whole-row kernels' results. */
static void test_builders(const struct shape *s, struct rng *r, int rms)
{
    struct rows h;
    rows_init(&h, s, r, rms);
    const int N = h.N, C = h.C, tr = s->tile_rows;
    const size_t nc = (size_t)N * C;
    hx_graph_t g = graph_new();
    hx_tensor_t x = tensor_f32(g, "x", N, C, tr), w = tensor_f32(g, "w", 1, C, 0);
    hx_tensor_t b = tensor_f32(g, "b", 1, C, 0), dout = tensor_f32(g, "dout", N, C, tr);
    hx_tensor_t resid = tensor_f32(g, "resid", N, C, tr), out = tensor_f32(g, "out", N, C, tr);
    hx_tensor_t mean = tensor_f32(g, "mean", N, 1, tr), rstd = tensor_f32(g, "rstd", N, 1, tr);
    hx_tensor_t bmean = tensor_f32(g, "bmean", N, 1, tr), brstd = tensor_f32(g, "brstd", N, 1, tr);
    hx_tensor_t dinp = tensor_f32(g, "dinp", N, C, tr), dinp_r = tensor_f32(g, "dinp_r", N, C, tr);
    struct hx_norm_split sp = { .channel = HX_GROUP_TP, .group_size = 1, .cols_total = C,
                                .s1 = tensor_f32(g, "s1", N, 1, tr),
                                .s2 = tensor_f32(g, "s2", N, 2, tr) };
    if (rms) {
        hx_rmsnorm_fwd_split(g, out, rstd, x, w, EPS, &sp);
        hx_rmsnorm_bwd_data_split(g, dinp, dout, x, w, brstd, NULL, &sp);
        hx_rmsnorm_bwd_data_split(g, dinp_r, dout, x, w, brstd, resid, &sp);
    } else {
        hx_layernorm_fwd_split(g, out, mean, rstd, x, w, b, EPS, &sp);
        hx_layernorm_bwd_data_split(g, dinp, dout, x, w, bmean, brstd, NULL, &sp);
        hx_layernorm_bwd_data_split(g, dinp_r, dout, x, w, bmean, brstd, resid, &sp);
    }
    int comm = 0;
    for (int i = 0; i < g->nnodes; i++) {
        comm += g->nodes[i].kind == HX_KIND_COMM;
    }
    graph_realize(g);
    memcpy(hx_f32(x), h.x, sizeof(float) * nc);
    memcpy(hx_f32(dout), h.dout, sizeof(float) * nc);
    memcpy(hx_f32(resid), h.resid, sizeof(float) * nc);
    memcpy(hx_f32(w), h.w, sizeof(float) * (size_t)C);
    memcpy(hx_f32(b), h.b, sizeof(float) * (size_t)C);
    memcpy(hx_f32(bmean), h.mean, sizeof(float) * (size_t)N);
    memcpy(hx_f32(brstd), h.rstd, sizeof(float) * (size_t)N);
    hx_tensor_t wonly[] = { out, mean, rstd, dinp, dinp_r };
    for (int k = 0; k < 5; k++) {
        fill_nan(hx_f32(wonly[k]), hx_tensor_numel(wonly[k]));
    }
    graph_run(g);

    const char *nm = rms ? "rmsnorm" : "layernorm";
    char sh[64];
    snprintf(sh, sizeof sh, "(%d,%d) %d tile%s", N, C, x->ntiles, x->ntiles > 1 ? "s" : "");
    double tol = 4.0 * (1 + 4) * U;
    tap_ok(comm == 0, "hx_%s_*_split, one rank %s: %d nodes, no collective (%d)", nm, sh,
           g->nnodes, comm);
    double *ref = dup_f64(h.out, nc);
    check_tensor(label("hx_%s_fwd_split out %s", nm, sh), out, ref, tol);
    free(ref);
    if (!rms) {
        ref = dup_f64(h.mean, (size_t)N);
        check_tensor(label("hx_%s_fwd_split mean %s", nm, sh), mean, ref, tol);
        free(ref);
    }
    ref = dup_f64(h.rstd, (size_t)N);
    check_tensor(label("hx_%s_fwd_split rstd %s", nm, sh), rstd, ref, tol);
    free(ref);
    ref = dup_f64(h.dinp, nc);
    check_tensor(label("hx_%s_bwd_data_split dinp %s", nm, sh), dinp, ref, tol);
    free(ref);
    ref = dup_f64(h.dinp_r, nc);
    check_tensor(label("hx_%s_bwd_data_split dinp with resid %s", nm, sh), dinp_r, ref, tol);
    free(ref);
    rows_free(&h);
    hx_graph_destroy(g);
}

int main(void)
{
    static const struct shape shapes[NSHAPES] = {
        { 3, 17, 96, 17, 0.5f, 2.0f }, /* one sequence per tile: 3 tasks per step and slice */
        { 2, 17, 257, 0, 0.0f, 1.0f }, /* one tile; 257 columns split unevenly */
        { 4, 8, 64, 16, 16.0f, 0.25f }, /* 2 tiles of 2 sequences, |mean| ~ 110 std */
    };
    static const int groups[NG] = { 1, 2, 4 };
    struct rng r = { 0x6e6f726d73706c01ull };

    harness_start(NCHECKS);
    for (int i = 0; i < NSHAPES; i++) {
        for (int k = 0; k < NG; k++) {
            test_split(&shapes[i], &r, 0, groups[k]);
            test_split(&shapes[i], &r, 1, groups[k]);
        }
        test_builders(&shapes[i], &r, 0);
        test_builders(&shapes[i], &r, 1);
    }
    return harness_end();
}
