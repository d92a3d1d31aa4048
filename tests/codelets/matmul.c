/* SPDX-License-Identifier: MIT */
/* tests/codelets/matmul.c: the matmul and bias_bwd codelets, run through the graph on 2
 * workers, match hx_ref_matmul / hx_ref_bias_bwd (normwise rel. error <= 1e-5, no NaN/Inf):
 * - raw HX_OP_MATMUL nodes, all four transposes, on odd shapes: beta 0 (C pre-filled with NaN
 *   must never be read), beta 0 with a bias, beta 1 with alpha != 1 (C accumulates);
 * - hx_linear_fwd with and without bias, hx_linear_bwd_data, hx_linear_bwd_weight (dw, db
 *   pre-filled: they accumulate over the row tiles), with 3 row tiles and with one tile.
 * Outputs that are written (=) start as NaN, so an element left unwritten fails. */
#include "codelets/harness.h"

#define NRAW_SHAPES 3
#define NLINEAR 2
#define NCHECKS (NRAW_SHAPES * 12 + NLINEAR * 5)

struct raw_shape {
    int m, n, k;
};

/* One graph with the 12 variants (4 transposes x 3 kinds) of C(m,n) = alpha op(A) op(B) ... */
static void test_raw(const struct raw_shape *s, struct rng *r)
{
    const int m = s->m, n = s->n, k = s->k;
    hx_graph_t g = graph_new();
    /* A stored (m,k) or, transposed, (k,m); B stored (k,n) or (n,k) */
    struct hx_tensor *a[2] = { tensor_f32(g, "A", m, k, 0), tensor_f32(g, "At", k, m, 0) };
    struct hx_tensor *b[2] = { tensor_f32(g, "B", k, n, 0), tensor_f32(g, "Bt", n, k, 0) };
    struct hx_tensor *bias = tensor_f32(g, "bias", 1, n, 0);
    struct hx_tensor *c[2][2][3];
    static const float alpha[3] = { 1.0f, 0.5f, 0.75f };
    static const float beta[3] = { 0.0f, 0.0f, 1.0f };
    for (int ta = 0; ta < 2; ta++) {
        for (int tb = 0; tb < 2; tb++) {
            for (int v = 0; v < 3; v++) {
                c[ta][tb][v] = tensor_f32(g, label("C%d%d%d", ta, tb, v), m, n, 0);
                union hx_op_args args = { .mm = { .transa = ta, .transb = tb, .m = m, .n = n,
                                                  .k = k, .alpha = alpha[v], .beta = beta[v],
                                                  .has_bias = v == 1 } };
                struct hx_ref refs[4] = { hx_ref_of(a[ta], 0, HX_R), hx_ref_of(b[tb], 0, HX_R),
                                          hx_ref_of(c[ta][tb][v], 0, v == 2 ? HX_RW : HX_W),
                                          hx_ref_of(bias, 0, HX_R) };
                hx_graph_add(g, HX_OP_MATMUL, &args, v == 1 ? 4 : 3, refs, 0.0, 0.0);
            }
        }
    }
    graph_realize(g);
    for (int i = 0; i < 2; i++) {
        fill_uniform(hx_f32(a[i]), hx_tensor_numel(a[i]), r, 1.0f, 0.0f);
        fill_uniform(hx_f32(b[i]), hx_tensor_numel(b[i]), r, 1.0f, 0.0f);
    }
    fill_uniform(hx_f32(bias), (size_t)n, r, 1.0f, 0.0f);
    size_t mn = (size_t)m * n;
    double *c0[2][2];
    for (int ta = 0; ta < 2; ta++) {
        for (int tb = 0; tb < 2; tb++) {
            for (int v = 0; v < 2; v++) {
                /* write-only: garbage (NaN) must not leak into the result */
                fill_nan(hx_f32(c[ta][tb][v]), mn);
            }
            fill_uniform(hx_f32(c[ta][tb][2]), mn, r, 1.0f, 0.0f);
            c0[ta][tb] = dup_f64(hx_f32(c[ta][tb][2]), mn);
        }
    }
    double *da[2], *db[2];
    for (int i = 0; i < 2; i++) {
        da[i] = dup_f64(hx_f32(a[i]), hx_tensor_numel(a[i]));
        db[i] = dup_f64(hx_f32(b[i]), hx_tensor_numel(b[i]));
    }
    double *dbias = dup_f64(hx_f32(bias), (size_t)n);

    graph_run(g);

    static const char *kind[3] = { "beta 0, C NaN", "beta 0 + bias, alpha 0.5",
                                   "beta 1, alpha 0.75" };
    double *ref = dalloc(mn);
    for (int ta = 0; ta < 2; ta++) {
        for (int tb = 0; tb < 2; tb++) {
            for (int v = 0; v < 3; v++) {
                if (v == 2) {
                    memcpy(ref, c0[ta][tb], mn * sizeof *ref);
                }
                hx_ref_matmul(ref, da[ta], db[tb], v == 1 ? dbias : NULL, ta, tb, m, n, k,
                              alpha[v], beta[v]);
                check_tensor(label("matmul %c%c m=%d n=%d k=%d (%s)", ta ? 'T' : 'N',
                                   tb ? 'T' : 'N', m, n, k, kind[v]),
                             c[ta][tb][v], ref, TOL);
            }
            free(c0[ta][tb]);
        }
    }
    for (int i = 0; i < 2; i++) {
        free(da[i]);
        free(db[i]);
    }
    free(dbias);
    free(ref);
    hx_graph_destroy(g);
}

struct linear_shape {
    int nseq, T, C, OC;
    int tile_rows; /* 0: one tile */
};

/* hx_linear_*: out = inp w^T [+ b]; dinp = dout w; dw += dout^T inp; db += colsum(dout) */
static void test_linear(const struct linear_shape *s, struct rng *r)
{
    const int N = s->nseq * s->T, C = s->C, OC = s->OC, tr = s->tile_rows;
    hx_graph_t g = graph_new();
    struct hx_tensor *inp = tensor_f32(g, "inp", N, C, tr);
    struct hx_tensor *w = tensor_f32(g, "w", OC, C, 0);
    struct hx_tensor *b = tensor_f32(g, "b", 1, OC, 0);
    struct hx_tensor *out_b = tensor_f32(g, "out_b", N, OC, tr);
    struct hx_tensor *out = tensor_f32(g, "out", N, OC, tr);
    struct hx_tensor *dout = tensor_f32(g, "dout", N, OC, tr);
    struct hx_tensor *dinp = tensor_f32(g, "dinp", N, C, tr);
    struct hx_tensor *dw = tensor_f32(g, "dw", OC, C, 0);
    struct hx_tensor *dbias = tensor_f32(g, "db", 1, OC, 0);
    hx_linear_fwd(g, out_b, inp, w, b);
    hx_linear_fwd(g, out, inp, w, NULL);
    hx_linear_bwd_data(g, dinp, dout, w);
    hx_linear_bwd_weight(g, dw, dbias, dout, inp);
    graph_realize(g);

    struct hx_tensor *in[] = { inp, w, b, dout, dw, dbias };
    double *d[6];
    for (int i = 0; i < 6; i++) {
        fill_uniform(hx_f32(in[i]), hx_tensor_numel(in[i]), r, 1.0f, 0.0f);
        d[i] = dup_f64(hx_f32(in[i]), hx_tensor_numel(in[i]));
    }
    fill_nan(hx_f32(out_b), hx_tensor_numel(out_b));
    fill_nan(hx_f32(out), hx_tensor_numel(out));
    fill_nan(hx_f32(dinp), hx_tensor_numel(dinp));
    /* double copies of the inputs; dw, db start from their pre-filled values */
    const double *x_d = d[0], *w_d = d[1], *b_d = d[2], *dout_d = d[3];
    double *dw_ref = d[4], *db_ref = d[5];

    graph_run(g);

    char tl[32];
    snprintf(tl, sizeof tl, "%d tile%s", inp->ntiles, inp->ntiles > 1 ? "s" : "");
    double *ref = dalloc((size_t)N * OC);
    hx_ref_matmul(ref, x_d, w_d, b_d, 0, 1, N, OC, C, 1.0, 0.0);
    check_tensor(label("linear_fwd + bias inp (%d,%d) w (%d,%d), %s", N, C, OC, C, tl), out_b,
                 ref, TOL);
    hx_ref_matmul(ref, x_d, w_d, NULL, 0, 1, N, OC, C, 1.0, 0.0);
    check_tensor(label("linear_fwd inp (%d,%d) w (%d,%d), %s", N, C, OC, C, tl), out, ref, TOL);
    hx_ref_matmul(ref, dout_d, w_d, NULL, 0, 0, N, C, OC, 1.0, 0.0);
    check_tensor(label("linear_bwd_data dout (%d,%d) w (%d,%d), %s", N, OC, OC, C, tl), dinp,
                 ref, TOL);
    hx_ref_matmul(dw_ref, dout_d, x_d, NULL, 1, 0, OC, C, N, 1.0, 1.0);
    check_tensor(label("linear_bwd_weight dw (%d,%d) += over %s", OC, C, tl), dw, dw_ref, TOL);
    hx_ref_bias_bwd(db_ref, dout_d, N, OC);
    check_tensor(label("linear_bwd_weight db (1,%d) += over %s", OC, tl), dbias, db_ref, TOL);

    free(ref);
    for (int i = 0; i < 6; i++) {
        free(d[i]);
    }
    hx_graph_destroy(g);
}

int main(void)
{
    static const struct raw_shape raw[NRAW_SHAPES] = {
        { 17, 96, 33 },
        { 51, 257, 96 },
        { 1, 257, 17 },
    };
    static const struct linear_shape lin[NLINEAR] = {
        { 3, 17, 96, 257, 17 }, /* one sequence per tile: 3 tasks per builder */
        { 2, 17, 96, 288, 0 },  /* one tile */
    };
    struct rng r = { 0x6d61746d756c0001ull };

    harness_start(NCHECKS);
    for (int i = 0; i < NRAW_SHAPES; i++) {
        test_raw(&raw[i], &r);
    }
    for (int i = 0; i < NLINEAR; i++) {
        test_linear(&lin[i], &r);
    }
    return harness_end();
}
