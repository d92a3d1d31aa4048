/* SPDX-License-Identifier: MIT */
/* tests/codelets/rmsnorm.c: the rmsnorm codelets, built with hx_rmsnorm_* and run on 2 workers,
 * match hx_ref_rmsnorm_fwd / hx_ref_rmsnorm_bwd (normwise rel. error <= 1e-5, no NaN/Inf):
 * forward out, rstd; backward data without and with the residual gradient (from the codelet's
 * own rstd); backward weight dw, pre-filled so that it must accumulate over the row tiles;
 * the fused residual add + RMSNorm.  Every op is bitwise repeatable: the same tasks twice in
 * one graph give the same bits.  Shapes: C = 96, 257, 64, T = 17, with 3 tiles of one
 * sequence, one tile, and 2 tiles of 2 sequences; one input has |mean| >> std (RMSNorm does
 * not center it).  Outputs written (=) start as NaN. */
#include "codelets/harness.h"

#define NSHAPES 3
#define NCHECKS (NSHAPES * 5 + 3 + 5)
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
    struct hx_tensor *out = tensor_f32(g, "out", N, C, tr);
    struct hx_tensor *rstd = tensor_f32(g, "rstd", N, 1, tr);
    struct hx_tensor *dout = tensor_f32(g, "dout", N, C, tr);
    struct hx_tensor *resid = tensor_f32(g, "resid", N, C, tr);
    struct hx_tensor *dinp = tensor_f32(g, "dinp", N, C, tr);
    struct hx_tensor *dinp_r = tensor_f32(g, "dinp_r", N, C, tr);
    struct hx_tensor *dw = tensor_f32(g, "dw", 1, C, 0);
    hx_rmsnorm_fwd(g, out, rstd, inp, w, EPS);
    hx_rmsnorm_bwd_data(g, dinp, dout, inp, w, rstd, NULL);
    hx_rmsnorm_bwd_data(g, dinp_r, dout, inp, w, rstd, resid);
    hx_rmsnorm_bwd_weight(g, dw, dout, inp, rstd);
    graph_realize(g);

    fill_uniform(hx_f32(inp), nc, r, s->scale, s->offset);
    fill_uniform(hx_f32(w), (size_t)C, r, 0.5f, 1.0f);
    fill_uniform(hx_f32(dout), nc, r, 1.0f, 0.0f);
    fill_uniform(hx_f32(resid), nc, r, 1.0f, 0.0f);
    fill_uniform(hx_f32(dw), (size_t)C, r, 1.0f, 0.0f);
    struct hx_tensor *wonly[] = { out, rstd, dinp, dinp_r };
    for (int i = 0; i < 4; i++) {
        fill_nan(hx_f32(wonly[i]), hx_tensor_numel(wonly[i]));
    }
    double *x_d = dup_f64(hx_f32(inp), nc), *w_d = dup_f64(hx_f32(w), (size_t)C);
    double *dout_d = dup_f64(hx_f32(dout), nc), *resid_d = dup_f64(hx_f32(resid), nc);
    double *dw_ref = dup_f64(hx_f32(dw), (size_t)C);

    graph_run(g);

    char sh[64];
    snprintf(sh, sizeof sh, "(%d,%d) %d tile%s", N, C, inp->ntiles, inp->ntiles > 1 ? "s" : "");
    double *ref = dalloc(nc), *rstd_ref = dalloc((size_t)N);
    hx_ref_rmsnorm_fwd(ref, rstd_ref, x_d, w_d, N, C, EPS);
    check_tensor(label("rmsnorm_fwd out %s", sh), out, ref, TOL);
    check_tensor(label("rmsnorm_fwd rstd %s", sh), rstd, rstd_ref, TOL);
    hx_ref_rmsnorm_bwd(ref, NULL, dout_d, x_d, w_d, rstd_ref, NULL, N, C);
    check_tensor(label("rmsnorm_bwd_data dinp %s", sh), dinp, ref, TOL);
    hx_ref_rmsnorm_bwd(ref, NULL, dout_d, x_d, w_d, rstd_ref, resid_d, N, C);
    check_tensor(label("rmsnorm_bwd_data dinp with resid %s", sh), dinp_r, ref, TOL);
    hx_ref_rmsnorm_bwd(NULL, dw_ref, dout_d, x_d, w_d, rstd_ref, NULL, N, C);
    check_tensor(label("rmsnorm_bwd_weight dw += %s", sh), dw, dw_ref, TOL);

    double *bufs[] = { x_d, w_d, dout_d, resid_d, dw_ref, ref, rstd_ref };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        free(bufs[i]);
    }
    hx_graph_destroy(g);
}

/* hx_add_rmsnorm_fwd: sum = a + b, then RMSNorm(sum), against add + rmsnorm refs */
static void test_add_rmsnorm(struct rng *r)
{
    const int N = 3 * 17, C = 96;
    const size_t nc = (size_t)N * C;
    hx_graph_t g = graph_new();
    struct hx_tensor *a = tensor_f32(g, "a", N, C, 17), *b = tensor_f32(g, "b", N, C, 17);
    struct hx_tensor *w = tensor_f32(g, "w", 1, C, 0);
    struct hx_tensor *sum = tensor_f32(g, "sum", N, C, 17), *out = tensor_f32(g, "out", N, C, 17);
    struct hx_tensor *rstd = tensor_f32(g, "rstd", N, 1, 17);
    hx_add_rmsnorm_fwd(g, sum, out, rstd, a, b, w, EPS);
    graph_realize(g);
    fill_uniform(hx_f32(a), nc, r, 1.0f, 0.5f);
    fill_uniform(hx_f32(b), nc, r, 1.0f, 0.0f);
    fill_uniform(hx_f32(w), (size_t)C, r, 0.5f, 1.0f);
    fill_nan(hx_f32(sum), nc);
    fill_nan(hx_f32(out), nc);
    fill_nan(hx_f32(rstd), (size_t)N);
    double *a_d = dup_f64(hx_f32(a), nc), *b_d = dup_f64(hx_f32(b), nc);
    double *w_d = dup_f64(hx_f32(w), (size_t)C);
    double *s_d = dalloc(nc), *o_d = dalloc(nc), *r_d = dalloc((size_t)N);
    graph_run(g);
    hx_ref_add(s_d, a_d, b_d, (int)nc);
    hx_ref_rmsnorm_fwd(o_d, r_d, s_d, w_d, N, C, EPS);
    check_tensor(label("add_rmsnorm sum (%d,%d), 3 tiles", N, C), sum, s_d, TOL);
    check_tensor(label("add_rmsnorm out"), out, o_d, TOL);
    check_tensor(label("add_rmsnorm rstd"), rstd, r_d, TOL);
    free(a_d), free(b_d), free(w_d), free(s_d), free(o_d), free(r_d);
    hx_graph_destroy(g);
}

/* Every op twice on the same inputs, in one graph of 3 row tiles (C = 96): the second copy
 * may run on the other worker and after other tasks, and must give the same bits; the two dw
 * start equal and accumulate the same tiles in the same order. */
static void test_repeatable(struct rng *r)
{
    const int N = 3 * 17, C = 96;
    const size_t nc = (size_t)N * C;
    hx_graph_t g = graph_new();
    struct hx_tensor *a = tensor_f32(g, "a", N, C, 17), *b = tensor_f32(g, "b", N, C, 17);
    struct hx_tensor *w = tensor_f32(g, "w", 1, C, 0), *dout = tensor_f32(g, "dout", N, C, 17);
    struct hx_tensor *resid = tensor_f32(g, "resid", N, C, 17);
    struct hx_tensor *sum[2], *out[2], *rstd[2], *out1[2], *rstd1[2], *dinp[2], *dw[2];
    for (int k = 0; k < 2; k++) {
        sum[k] = tensor_f32(g, label("sum%d", k), N, C, 17);
        out[k] = tensor_f32(g, label("out%d", k), N, C, 17);
        rstd[k] = tensor_f32(g, label("rstd%d", k), N, 1, 17);
        out1[k] = tensor_f32(g, label("out1_%d", k), N, C, 17);
        rstd1[k] = tensor_f32(g, label("rstd1_%d", k), N, 1, 17);
        dinp[k] = tensor_f32(g, label("dinp%d", k), N, C, 17);
        dw[k] = tensor_f32(g, label("dw%d", k), 1, C, 0);
    }
    for (int k = 0; k < 2; k++) {
        hx_add_rmsnorm_fwd(g, sum[k], out[k], rstd[k], a, b, w, EPS);
        hx_rmsnorm_fwd(g, out1[k], rstd1[k], a, w, EPS);
        hx_rmsnorm_bwd_data(g, dinp[k], dout, a, w, rstd1[0], resid);
        hx_rmsnorm_bwd_weight(g, dw[k], dout, a, rstd1[0]);
    }
    graph_realize(g);
    fill_uniform(hx_f32(a), nc, r, 1.0f, 0.5f);
    fill_uniform(hx_f32(b), nc, r, 1.0f, 0.0f);
    fill_uniform(hx_f32(w), (size_t)C, r, 0.5f, 1.0f);
    fill_uniform(hx_f32(dout), nc, r, 1.0f, 0.0f);
    fill_uniform(hx_f32(resid), nc, r, 1.0f, 0.0f);
    fill_uniform(hx_f32(dw[0]), (size_t)C, r, 1.0f, 0.0f);
    memcpy(hx_f32(dw[1]), hx_f32(dw[0]), (size_t)C * sizeof(float));
    graph_run(g);
    check_bitwise("add_rmsnorm_fwd out (51,96), 3 tiles, twice", out[0], out[1]);
    check_bitwise("rmsnorm_fwd out, twice", out1[0], out1[1]);
    check_bitwise("rmsnorm_fwd rstd, twice", rstd1[0], rstd1[1]);
    check_bitwise("rmsnorm_bwd_data dinp with resid, twice", dinp[0], dinp[1]);
    check_bitwise("rmsnorm_bwd_weight dw += over 3 tiles, twice", dw[0], dw[1]);
    hx_graph_destroy(g);
}

int main(void)
{
    static const struct shape shapes[NSHAPES] = {
        { 3, 17, 96, 17, 0.5f, 2.0f }, /* one sequence per tile: 3 tasks per builder */
        { 2, 17, 257, 0, 0.0f, 1.0f }, /* one tile */
        { 4, 8, 64, 16, 4.0f, 1.0f },  /* 2 tiles of 2 sequences, |mean| >> std */
    };
    struct rng r = { 0x726d736e6f726d01ull };

    harness_start(NCHECKS);
    for (int i = 0; i < NSHAPES; i++) {
        test_shape(&shapes[i], &r);
    }
    test_add_rmsnorm(&r);
    test_repeatable(&r);
    return harness_end();
}
