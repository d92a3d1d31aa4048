/* SPDX-License-Identifier: MIT */
/* tests/codelets/layernorm.c: the layernorm codelets, built with hx_layernorm_* and run on 2
 * workers, match hx_ref_layernorm_fwd / hx_ref_layernorm_bwd (normwise rel. error <= 1e-5,
 * no NaN/Inf): forward out, mean, rstd; backward data without and with the residual
 * gradient (from the codelet's own mean and rstd); backward weight dw, db, pre-filled so that
 * they must accumulate over the row tiles.  Shapes: C = 96, 257, 64, T = 17, with 3 tiles of
 * one sequence, one tile, and 2 tiles of 2 sequences; one input has |mean| >> std.
 * Outputs written (=) start as NaN. */
#include "codelets/harness.h"

#define NSHAPES 3
#define NCHECKS (NSHAPES * 7 + 4)
#define EPS 1e-5f

struct shape {
    int nseq, T, C;
    int tile_rows;       /* 0: one tile */
    float offset, scale; /* inp = offset + scale * uniform[-1,1) */
};

static void test_shape(const struct shape *s, struct rng *r)
{
    const int N = s->nseq * s->T, C = s->C, tr = s->tile_rows;
    const size_t nc = (size_t)N * C;
    hx_graph_t g = graph_new();
    struct hx_tensor *inp = tensor_f32(g, "inp", N, C, tr);
    struct hx_tensor *w = tensor_f32(g, "w", 1, C, 0);
    struct hx_tensor *b = tensor_f32(g, "b", 1, C, 0);
    struct hx_tensor *out = tensor_f32(g, "out", N, C, tr);
    struct hx_tensor *mean = tensor_f32(g, "mean", N, 1, tr);
    struct hx_tensor *rstd = tensor_f32(g, "rstd", N, 1, tr);
    struct hx_tensor *dout = tensor_f32(g, "dout", N, C, tr);
    struct hx_tensor *resid = tensor_f32(g, "resid", N, C, tr);
    struct hx_tensor *dinp = tensor_f32(g, "dinp", N, C, tr);
    struct hx_tensor *dinp_r = tensor_f32(g, "dinp_r", N, C, tr);
    struct hx_tensor *dw = tensor_f32(g, "dw", 1, C, 0);
    struct hx_tensor *db = tensor_f32(g, "db", 1, C, 0);
    hx_layernorm_fwd(g, out, mean, rstd, inp, w, b, EPS);
    hx_layernorm_bwd_data(g, dinp, dout, inp, w, mean, rstd, NULL);
    hx_layernorm_bwd_data(g, dinp_r, dout, inp, w, mean, rstd, resid);
    hx_layernorm_bwd_weight(g, dw, db, dout, inp, mean, rstd);
    graph_realize(g);

    fill_uniform(hx_f32(inp), nc, r, s->scale, s->offset);
    fill_uniform(hx_f32(w), (size_t)C, r, 0.5f, 1.0f);
    fill_uniform(hx_f32(b), (size_t)C, r, 1.0f, 0.0f);
    fill_uniform(hx_f32(dout), nc, r, 1.0f, 0.0f);
    fill_uniform(hx_f32(resid), nc, r, 1.0f, 0.0f);
    fill_uniform(hx_f32(dw), (size_t)C, r, 1.0f, 0.0f);
    fill_uniform(hx_f32(db), (size_t)C, r, 1.0f, 0.0f);
    struct hx_tensor *wonly[] = { out, mean, rstd, dinp, dinp_r };
    for (int i = 0; i < 5; i++) {
        fill_nan(hx_f32(wonly[i]), hx_tensor_numel(wonly[i]));
    }
    double *x_d = dup_f64(hx_f32(inp), nc), *w_d = dup_f64(hx_f32(w), (size_t)C);
    double *b_d = dup_f64(hx_f32(b), (size_t)C), *dout_d = dup_f64(hx_f32(dout), nc);
    double *resid_d = dup_f64(hx_f32(resid), nc);
    double *dw_ref = dup_f64(hx_f32(dw), (size_t)C), *db_ref = dup_f64(hx_f32(db), (size_t)C);

    graph_run(g);

    char sh[64];
    snprintf(sh, sizeof sh, "(%d,%d) %d tile%s", N, C, inp->ntiles, inp->ntiles > 1 ? "s" : "");
    double *ref = dalloc(nc), *mean_ref = dalloc((size_t)N), *rstd_ref = dalloc((size_t)N);
    hx_ref_layernorm_fwd(ref, mean_ref, rstd_ref, x_d, w_d, b_d, N, C, EPS);
    check_tensor(label("layernorm_fwd out %s", sh), out, ref, TOL);
    check_tensor(label("layernorm_fwd mean %s", sh), mean, mean_ref, TOL);
    check_tensor(label("layernorm_fwd rstd %s", sh), rstd, rstd_ref, TOL);
    hx_ref_layernorm_bwd(ref, NULL, NULL, dout_d, x_d, w_d, mean_ref, rstd_ref, NULL, N, C);
    check_tensor(label("layernorm_bwd_data dinp %s", sh), dinp, ref, TOL);
    hx_ref_layernorm_bwd(ref, NULL, NULL, dout_d, x_d, w_d, mean_ref, rstd_ref, resid_d, N, C);
    check_tensor(label("layernorm_bwd_data dinp with resid %s", sh), dinp_r, ref, TOL);
    hx_ref_layernorm_bwd(NULL, dw_ref, db_ref, dout_d, x_d, w_d, mean_ref, rstd_ref, NULL, N, C);
    check_tensor(label("layernorm_bwd_weight dw += %s", sh), dw, dw_ref, TOL);
    check_tensor(label("layernorm_bwd_weight db += %s", sh), db, db_ref, TOL);

    double *bufs[] = { x_d, w_d, b_d, dout_d, resid_d, dw_ref, db_ref, ref, mean_ref, rstd_ref };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        free(bufs[i]);
    }
    hx_graph_destroy(g);
}

/* hx_add_layernorm_fwd: sum = a + b, then LayerNorm(sum), against add + layernorm refs */
static void test_add_layernorm(struct rng *r)
{
    const int N = 3 * 17, C = 96;
    const size_t nc = (size_t)N * C;
    hx_graph_t g = graph_new();
    struct hx_tensor *a = tensor_f32(g, "a", N, C, 17), *b = tensor_f32(g, "b", N, C, 17);
    struct hx_tensor *w = tensor_f32(g, "w", 1, C, 0), *bias = tensor_f32(g, "bias", 1, C, 0);
    struct hx_tensor *sum = tensor_f32(g, "sum", N, C, 17), *out = tensor_f32(g, "out", N, C, 17);
    struct hx_tensor *mean = tensor_f32(g, "mean", N, 1, 17);
    struct hx_tensor *rstd = tensor_f32(g, "rstd", N, 1, 17);
    hx_add_layernorm_fwd(g, sum, out, mean, rstd, a, b, w, bias, 1e-5f);
    graph_realize(g);
    fill_uniform(hx_f32(a), nc, r, 1.0f, 0.5f);
    fill_uniform(hx_f32(b), nc, r, 1.0f, 0.0f);
    fill_uniform(hx_f32(w), (size_t)C, r, 0.5f, 1.0f);
    fill_uniform(hx_f32(bias), (size_t)C, r, 0.5f, 0.0f);
    fill_nan(hx_f32(sum), nc);
    fill_nan(hx_f32(out), nc);
    double *a_d = dup_f64(hx_f32(a), nc), *b_d = dup_f64(hx_f32(b), nc);
    double *w_d = dup_f64(hx_f32(w), (size_t)C), *bias_d = dup_f64(hx_f32(bias), (size_t)C);
    double *s_d = dalloc(nc), *o_d = dalloc(nc), *m_d = dalloc((size_t)N), *r_d = dalloc((size_t)N);
    graph_run(g);
    hx_ref_add(s_d, a_d, b_d, (int)nc);
    hx_ref_layernorm_fwd(o_d, m_d, r_d, s_d, w_d, bias_d, N, C, 1e-5);
    check_tensor(label("add_layernorm sum (%d,%d), 3 tiles", N, C), sum, s_d, TOL);
    check_tensor(label("add_layernorm out"), out, o_d, TOL);
    check_tensor(label("add_layernorm mean"), mean, m_d, TOL);
    check_tensor(label("add_layernorm rstd"), rstd, r_d, TOL);
    free(a_d), free(b_d), free(w_d), free(bias_d), free(s_d), free(o_d), free(m_d), free(r_d);
    hx_graph_destroy(g);
}

int main(void)
{
    static const struct shape shapes[NSHAPES] = {
        { 3, 17, 96, 17, 0.5f, 2.0f }, /* one sequence per tile: 3 tasks per builder */
        { 2, 17, 257, 0, 0.0f, 1.0f }, /* one tile */
        { 4, 8, 64, 16, 4.0f, 1.0f },  /* 2 tiles of 2 sequences, |mean| >> std */
    };
    struct rng r = { 0x6c61796e6f726d01ull };

    harness_start(NCHECKS);
    for (int i = 0; i < NSHAPES; i++) {
        test_shape(&shapes[i], &r);
    }
    test_add_layernorm(&r);
    return harness_end();
}
