/* SPDX-License-Identifier: MIT */
/* tests/codelets/rope.c: the RoPE codelets, built with hx_rope_fwd / hx_rope_bwd and run on 2
 * workers (or the device of HX_TEST_DEVICE), match the double hx_ref_rope (normwise rel.
 * error <= 1e-5, no NaN/Inf) on the whole qkv tile, so the v heads must come back untouched:
 *   - forward, and backward on a separate gradient tile;
 *   - forward then backward returns the input (a rotation's transpose is its inverse);
 *   - a second forward run from the same input is bitwise the first.
 * Shapes: T = 17, NH = 6 query and KV = 2 key/value heads of hs = 16, one sequence per tile
 * (3 tasks); multi-head (KV = NH = 4, hs = 8, base 5e5) in one tile of 2 sequences; and
 * T = 3000 (hs = 64, Llama's shape of position), where the reference's float32 angle
 * (codelets/rope.h) differs from the exact pos base^(-2i/hs) by up to 2e-4 rad: a kernel that
 * took another angle fails here. */
#include "codelets/harness.h"

#define NCASES 3
#define NCHECKS (NCASES * 4)

struct rope_case {
    int nseq, T, NH, KV, hs;
    int tile_rows; /* 0: one tile */
    float base;
};

/* x := the fp32 values in, in a realized tensor (acquired for writing: a device may hold
 * the latest copy) */
static void load(struct hx_tensor *t, const float *in)
{
    if (hx_tensor_begin_access(t, 'w') == HX_OK) {
        memcpy(hx_f32(t), in, hx_tensor_numel(t) * sizeof(float));
        hx_tensor_end_access(t);
    }
}

static void test_case(const struct rope_case *s, struct rng *r)
{
    const int N = s->nseq * s->T, W = (s->NH + 2 * s->KV) * s->hs, tr = s->tile_rows;
    const size_t n = (size_t)N * W;
    hx_graph_t fwd = graph_new(), bwd = graph_new(), both = graph_new();
    struct hx_tensor *qkv = tensor_f32(fwd, "qkv", N, W, tr);
    struct hx_tensor *dqkv = tensor_f32(bwd, "dqkv", N, W, tr);
    struct hx_tensor *x = tensor_f32(both, "x", N, W, tr);
    hx_rope_fwd(fwd, qkv, s->T, s->NH, s->KV, s->base);
    hx_rope_bwd(bwd, dqkv, s->T, s->NH, s->KV, s->base);
    hx_rope_fwd(both, x, s->T, s->NH, s->KV, s->base);
    hx_rope_bwd(both, x, s->T, s->NH, s->KV, s->base);
    graph_realize(fwd);
    graph_realize(bwd);
    graph_realize(both);

    float *in = malloc(n * sizeof(float)), *din = malloc(n * sizeof(float));
    float *first = malloc(n * sizeof(float));
    if (in == NULL || din == NULL || first == NULL) {
        tap_diag("out of memory");
        exit(1);
    }
    fill_uniform(in, n, r, 1.0f, 0.0f);
    fill_uniform(din, n, r, 1.0f, 0.0f);
    load(qkv, in);
    load(dqkv, din);
    load(x, in);
    graph_run(fwd);
    graph_run(bwd);
    graph_run(both);

    char sh[96];
    snprintf(sh, sizeof sh, "nseq=%d T=%d NH=%d KV=%d hs=%d base=%g, %d tile%s", s->nseq, s->T,
             s->NH, s->KV, s->hs, (double)s->base, qkv->ntiles, qkv->ntiles > 1 ? "s" : "");
    double *ref = dup_f64(in, n), *dref = dup_f64(din, n);
    hx_ref_rope(ref, N, s->T, s->NH, s->KV, s->hs, s->base, 0);
    hx_ref_rope(dref, N, s->T, s->NH, s->KV, s->hs, s->base, 1);
    check_tensor(label("rope_fwd qkv %s", sh), qkv, ref, TOL);
    check_tensor(label("rope_bwd dqkv %s", sh), dqkv, dref, TOL);
    f32_to_f64(ref, in, n);
    check_tensor(label("rope_fwd then rope_bwd is the identity, %s", sh), x, ref, TOL);

    /* bitwise: the same input through the forward again */
    hx_tensor_begin_access(qkv, 'r');
    memcpy(first, hx_f32(qkv), n * sizeof(float));
    hx_tensor_end_access(qkv);
    load(qkv, in);
    graph_run(fwd);
    hx_tensor_begin_access(qkv, 'r');
    int same = memcmp(first, hx_f32(qkv), n * sizeof(float)) == 0;
    hx_tensor_end_access(qkv);
    tap_ok(same && hx_run_status() == HX_OK, "rope_fwd is bitwise repeatable, %s", sh);

    free(ref);
    free(dref);
    free(in);
    free(din);
    free(first);
    hx_graph_destroy(fwd);
    hx_graph_destroy(bwd);
    hx_graph_destroy(both);
}

int main(void)
{
    static const struct rope_case cases[NCASES] = {
        { 3, 17, 6, 2, 16, 17, 10000.0f }, /* grouped-query, one sequence per tile */
        { 2, 17, 4, 4, 8, 0, 500000.0f },  /* multi-head, one tile of 2 sequences */
        { 1, 3000, 2, 1, 64, 0, 10000.0f }, /* positions up to 2999 */
    };
    struct rng r = { 0x726f706501ull };

    harness_start(NCHECKS);
    for (int i = 0; i < NCASES; i++) {
        test_case(&cases[i], &r);
    }
    return harness_end();
}
