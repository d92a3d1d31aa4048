/* SPDX-License-Identifier: MIT */
/* tests/codelets/gelu.c: the gelu codelets, built with hx_gelu_fwd / hx_gelu_bwd and run on
 * 2 workers, match hx_ref_gelu_fwd / hx_ref_gelu_bwd (GPT-2 tanh approximation; normwise
 * rel. error <= 1e-5, no NaN/Inf) on (N,C) with T = 17, C = 96 and 257: 3 tiles of one
 * sequence, one tile, 2 tiles of 2 sequences; inputs up to |x| = 6 reach both tails.
 * Outputs written (=) start as NaN. */
#include "codelets/harness.h"

#define NSHAPES 3
#define NCHECKS (NSHAPES * 2 + 2)

struct shape {
    int nseq, T, C;
    int tile_rows; /* 0: one tile */
    float scale;   /* inp uniform in [-scale, scale) */
};

static void test_shape(const struct shape *s, struct rng *r)
{
    const int N = s->nseq * s->T, C = s->C, tr = s->tile_rows;
    const size_t nc = (size_t)N * C;
    hx_graph_t g = graph_new();
    struct hx_tensor *inp = tensor_f32(g, "inp", N, C, tr);
    struct hx_tensor *out = tensor_f32(g, "out", N, C, tr);
    struct hx_tensor *dout = tensor_f32(g, "dout", N, C, tr);
    struct hx_tensor *dinp = tensor_f32(g, "dinp", N, C, tr);
    hx_gelu_fwd(g, out, inp);
    hx_gelu_bwd(g, dinp, inp, dout);
    graph_realize(g);

    fill_uniform(hx_f32(inp), nc, r, s->scale, 0.0f);
    fill_uniform(hx_f32(dout), nc, r, 1.0f, 0.0f);
    fill_nan(hx_f32(out), nc);
    fill_nan(hx_f32(dinp), nc);
    double *x_d = dup_f64(hx_f32(inp), nc), *dout_d = dup_f64(hx_f32(dout), nc);

    graph_run(g);

    char sh[64];
    snprintf(sh, sizeof sh, "(%d,%d) %d tile%s |x|<%g", N, C, inp->ntiles,
             inp->ntiles > 1 ? "s" : "", s->scale);
    double *ref = dalloc(nc);
    hx_ref_gelu_fwd(ref, x_d, (int)nc);
    check_tensor(label("gelu_fwd %s", sh), out, ref, TOL);
    hx_ref_gelu_bwd(ref, x_d, dout_d, (int)nc);
    check_tensor(label("gelu_bwd %s", sh), dinp, ref, TOL);

    free(ref);
    free(x_d);
    free(dout_d);
    hx_graph_destroy(g);
}

/* hx_linear_gelu_fwd: pre = inp w^T + b and out = gelu(pre), against matmul + gelu refs */
static void test_linear_gelu(struct rng *r)
{
    const int N = 3 * 17, C = 96, OC = 4 * 96;
    hx_graph_t g = graph_new();
    struct hx_tensor *inp = tensor_f32(g, "inp", N, C, 17);
    struct hx_tensor *w = tensor_f32(g, "w", OC, C, 0);
    struct hx_tensor *b = tensor_f32(g, "b", 1, OC, 0);
    struct hx_tensor *pre = tensor_f32(g, "pre", N, OC, 17);
    struct hx_tensor *out = tensor_f32(g, "out", N, OC, 17);
    hx_linear_gelu_fwd(g, pre, out, inp, w, b);
    graph_realize(g);
    fill_uniform(hx_f32(inp), (size_t)N * C, r, 1.0f, 0.0f);
    fill_uniform(hx_f32(w), (size_t)OC * C, r, 0.3f, 0.0f);
    fill_uniform(hx_f32(b), (size_t)OC, r, 0.5f, 0.0f);
    fill_nan(hx_f32(pre), (size_t)N * OC);
    fill_nan(hx_f32(out), (size_t)N * OC);
    double *x_d = dup_f64(hx_f32(inp), (size_t)N * C), *w_d = dup_f64(hx_f32(w), (size_t)OC * C);
    double *b_d = dup_f64(hx_f32(b), (size_t)OC), *ref = dalloc((size_t)N * OC);
    double *act = dalloc((size_t)N * OC);
    graph_run(g);
    hx_ref_matmul(ref, x_d, w_d, b_d, 0, 1, N, OC, C, 1.0, 0.0);
    check_tensor(label("matmul_gelu pre (%d,%d) x (%d,%d)^T, 3 tiles", N, C, OC, C), pre, ref,
                 TOL);
    hx_ref_gelu_fwd(act, ref, N * OC);
    check_tensor(label("matmul_gelu out = gelu(pre), 3 tiles"), out, act, TOL);
    free(x_d);
    free(w_d);
    free(b_d);
    free(ref);
    free(act);
    hx_graph_destroy(g);
}

int main(void)
{
    static const struct shape shapes[NSHAPES] = {
        { 3, 17, 96, 17, 3.0f }, /* one sequence per tile: 3 tasks per builder */
        { 1, 17, 257, 0, 6.0f }, /* one tile */
        { 4, 17, 96, 34, 1.0f }, /* 2 tiles of 2 sequences */
    };
    struct rng r = { 0x67656c7501ull };

    harness_start(NCHECKS);
    for (int i = 0; i < NSHAPES; i++) {
        test_shape(&shapes[i], &r);
    }
    test_linear_gelu(&r);
    return harness_end();
}
