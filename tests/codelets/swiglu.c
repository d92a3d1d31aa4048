/* SPDX-License-Identifier: MIT */
/* tests/codelets/swiglu.c: the swiglu codelets, built with hx_swiglu_fwd / hx_swiglu_bwd and
 * run on 2 workers, match hx_ref_swiglu_fwd / hx_ref_swiglu_bwd (normwise rel. error <= 1e-5,
 * no NaN/Inf) on inp (N,2F) = [gate | up], out (N,F) with T = 17, F = 96 and 257: 3 tiles of
 * one sequence, one tile, 2 tiles of 2 sequences; gates up to |g| = 12 reach both tails of
 * the sigmoid, and gates of -100 and +100 (e^100 overflows a float) must still give finite
 * results.  Both ops are bitwise repeatable: the same tasks twice in one graph give the same
 * bits.  Outputs written (=) start as NaN. */
#include "codelets/harness.h"

#define NSHAPES 3
#define NCHECKS (NSHAPES * 2 + 2)

struct shape {
    int nseq, T, F;
    int tile_rows; /* 0: one tile */
    float scale;   /* gate uniform in [-scale, scale); up in [-1, 1) */
    int extremes;  /* first row's first two gates = -100, +100 */
};

static void test_shape(const struct shape *s, struct rng *r)
{
    const int N = s->nseq * s->T, F = s->F, tr = s->tile_rows;
    const size_t nf = (size_t)N * F;
    hx_graph_t g = graph_new();
    struct hx_tensor *inp = tensor_f32(g, "inp", N, 2 * F, tr);
    struct hx_tensor *out = tensor_f32(g, "out", N, F, tr);
    struct hx_tensor *dout = tensor_f32(g, "dout", N, F, tr);
    struct hx_tensor *dinp = tensor_f32(g, "dinp", N, 2 * F, tr);
    hx_swiglu_fwd(g, out, inp);
    hx_swiglu_bwd(g, dinp, inp, dout);
    graph_realize(g);

    float *x = hx_f32(inp);
    for (int row = 0; row < N; row++) {
        fill_uniform(x + (size_t)row * 2 * F, (size_t)F, r, s->scale, 0.0f);
        fill_uniform(x + (size_t)row * 2 * F + F, (size_t)F, r, 1.0f, 0.0f);
    }
    if (s->extremes) {
        x[0] = -100.0f;
        x[1] = 100.0f;
    }
    fill_uniform(hx_f32(dout), nf, r, 1.0f, 0.0f);
    fill_nan(hx_f32(out), nf);
    fill_nan(hx_f32(dinp), 2 * nf);
    double *x_d = dup_f64(x, 2 * nf), *dout_d = dup_f64(hx_f32(dout), nf);

    graph_run(g);

    char sh[80];
    snprintf(sh, sizeof sh, "(%d,2x%d) %d tile%s |gate|<%g%s", N, F, inp->ntiles,
             inp->ntiles > 1 ? "s" : "", s->scale, s->extremes ? " and +-100" : "");
    double *ref = dalloc(2 * nf);
    hx_ref_swiglu_fwd(ref, x_d, N, F);
    check_tensor(label("swiglu_fwd %s", sh), out, ref, TOL);
    hx_ref_swiglu_bwd(ref, x_d, dout_d, N, F);
    check_tensor(label("swiglu_bwd %s", sh), dinp, ref, TOL);

    free(ref);
    free(x_d);
    free(dout_d);
    hx_graph_destroy(g);
}

/* Both ops twice on the same inputs, in one graph of 3 row tiles (F = 96): the second copy may
 * run on the other worker and must give the same bits. */
static void test_repeatable(struct rng *r)
{
    const int N = 3 * 17, F = 96;
    hx_graph_t g = graph_new();
    struct hx_tensor *inp = tensor_f32(g, "inp", N, 2 * F, 17);
    struct hx_tensor *dout = tensor_f32(g, "dout", N, F, 17);
    struct hx_tensor *out[2], *dinp[2];
    for (int k = 0; k < 2; k++) {
        out[k] = tensor_f32(g, label("out%d", k), N, F, 17);
        dinp[k] = tensor_f32(g, label("dinp%d", k), N, 2 * F, 17);
    }
    for (int k = 0; k < 2; k++) {
        hx_swiglu_fwd(g, out[k], inp);
        hx_swiglu_bwd(g, dinp[k], inp, dout);
    }
    graph_realize(g);
    fill_uniform(hx_f32(inp), (size_t)N * 2 * F, r, 4.0f, 0.0f);
    fill_uniform(hx_f32(dout), (size_t)N * F, r, 1.0f, 0.0f);
    graph_run(g);
    check_bitwise("swiglu_fwd out (51,96), 3 tiles, twice", out[0], out[1]);
    check_bitwise("swiglu_bwd dinp (51,192), 3 tiles, twice", dinp[0], dinp[1]);
    hx_graph_destroy(g);
}

int main(void)
{
    static const struct shape shapes[NSHAPES] = {
        { 3, 17, 96, 17, 3.0f, 0 },  /* one sequence per tile: 3 tasks per builder */
        { 1, 17, 257, 0, 12.0f, 1 }, /* one tile, both tails */
        { 4, 17, 96, 34, 1.0f, 0 },  /* 2 tiles of 2 sequences */
    };
    struct rng r = { 0x737769676c7501ull };

    harness_start(NCHECKS);
    for (int i = 0; i < NSHAPES; i++) {
        test_shape(&shapes[i], &r);
    }
    test_repeatable(&r);
    return harness_end();
}
