/* SPDX-License-Identifier: MIT */
/* tests/codelets/residual.c: the element-wise codelets, built with hx_add, hx_accumulate,
 * hx_reduce and hx_fill and run on 2 workers, match the double references (normwise rel.
 * error <= 1e-5, no NaN/Inf): out = a + b (3 tiles of one sequence of T = 17, and one tile
 * with C = 257); the accumulating form acc += x (2 buffers per task, 3 tiles); sum and sum
 * of squares reduced tile by tile, in order, into one f64 (1,1) accumulator (zeroed by a
 * fill task, or pre-set so that it must accumulate; one accumulator fed by two tensors, as
 * the global gradient norm is); fill of an f32 tensor of 3 tiles with a value and of an f64
 * tensor of 2 tiles with zero, over non-zero contents.  add's out starts NaN. */
#include "codelets/harness.h"

#define NCHECKS 9

static void test_add(int N, int C, int tile_rows, struct rng *r)
{
    const size_t nc = (size_t)N * C;
    hx_graph_t g = graph_new();
    struct hx_tensor *a = tensor_f32(g, "a", N, C, tile_rows);
    struct hx_tensor *b = tensor_f32(g, "b", N, C, tile_rows);
    struct hx_tensor *out = tensor_f32(g, "out", N, C, tile_rows);
    hx_add(g, out, a, b);
    graph_realize(g);
    fill_uniform(hx_f32(a), nc, r, 1.0f, 0.0f);
    fill_uniform(hx_f32(b), nc, r, 1.0f, 0.0f);
    fill_nan(hx_f32(out), nc);
    double *a_d = dup_f64(hx_f32(a), nc), *b_d = dup_f64(hx_f32(b), nc), *ref = dalloc(nc);

    graph_run(g);

    hx_ref_add(ref, a_d, b_d, (int)nc);
    check_tensor(label("add (%d,%d) %d tile%s", N, C, out->ntiles, out->ntiles > 1 ? "s" : ""),
                 out, ref, TOL);
    free(a_d);
    free(b_d);
    free(ref);
    hx_graph_destroy(g);
}

/* acc += x: add's 2-buffer form (x R, acc RW), as gradient shards accumulate */
static void test_accumulate(int N, int C, int tile_rows, struct rng *r)
{
    const size_t nc = (size_t)N * C;
    hx_graph_t g = graph_new();
    struct hx_tensor *x = tensor_f32(g, "x", N, C, tile_rows);
    struct hx_tensor *acc = tensor_f32(g, "acc", N, C, tile_rows);
    hx_accumulate(g, acc, x);
    graph_realize(g);
    fill_uniform(hx_f32(x), nc, r, 1.0f, 0.0f);
    fill_uniform(hx_f32(acc), nc, r, 1.0f, 0.0f);
    double *x_d = dup_f64(hx_f32(x), nc), *acc_d = dup_f64(hx_f32(acc), nc), *ref = dalloc(nc);

    graph_run(g);

    hx_ref_add(ref, acc_d, x_d, (int)nc);
    check_tensor(label("accumulate acc (%d,%d) += x, %d tiles", N, C, acc->ntiles), acc, ref,
                 TOL);
    free(x_d);
    free(acc_d);
    free(ref);
    hx_graph_destroy(g);
}

static double sum_f32(const float *x, size_t n, int sumsq)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) {
        s += sumsq ? (double)x[i] * x[i] : (double)x[i];
    }
    return s;
}

static void test_reduce_fill(struct rng *r)
{
    hx_graph_t g = graph_new();
    struct hx_tensor *losses = tensor_f32(g, "losses", 51, 1, 17);
    struct hx_tensor *x = tensor_f32(g, "x", 51, 96, 17);
    struct hx_tensor *y = tensor_f32(g, "y", 17, 257, 0);
    struct hx_tensor *acc[4];
    for (int i = 0; i < 4; i++) {
        acc[i] = hx_graph_tensor(g, label("acc%d", i), HX_F64, HX_ROLE_SCALAR, 1, 1, 0);
    }
    struct hx_tensor *f = tensor_f32(g, "f", 51, 96, 17);
    struct hx_tensor *f64 = hx_graph_tensor(g, "f64", HX_F64, HX_ROLE_SCALAR, 4, 3, 2);
    /* acc0: fill 0, sum of losses; acc1: pre-set, += sumsq(x); acc2: fill 0, sumsq(x) then
     * sumsq(y); acc3: fill 0, sum(x) */
    hx_fill(g, acc[0], 0.0f);
    hx_reduce(g, acc[0], losses, 0);
    hx_reduce(g, acc[1], x, 1);
    hx_fill(g, acc[2], 0.0f);
    hx_reduce(g, acc[2], x, 1);
    hx_reduce(g, acc[2], y, 1);
    hx_fill(g, acc[3], 0.0f);
    hx_reduce(g, acc[3], x, 0);
    hx_fill(g, f, -1.5f);
    hx_fill(g, f64, 0.0f);
    graph_realize(g);

    fill_uniform(hx_f32(losses), 51, r, 2.0f, 5.0f);
    fill_uniform(hx_f32(x), hx_tensor_numel(x), r, 1.0f, 0.0f);
    fill_uniform(hx_f32(y), hx_tensor_numel(y), r, 1.0f, 0.0f);
    fill_uniform(hx_f32(f), hx_tensor_numel(f), r, 1.0f, 0.0f);
    for (int i = 0; i < 4; i++) {
        hx_f64(acc[i])[0] = 7.0; /* overwritten by the fill, or accumulated onto */
    }
    for (size_t i = 0; i < hx_tensor_numel(f64); i++) {
        hx_f64(f64)[i] = 3.0 + (double)i;
    }
    double sq_x = sum_f32(hx_f32(x), hx_tensor_numel(x), 1);
    double sq_y = sum_f32(hx_f32(y), hx_tensor_numel(y), 1);
    double ref[4] = { sum_f32(hx_f32(losses), 51, 0), 7.0 + sq_x, sq_x + sq_y,
                      sum_f32(hx_f32(x), hx_tensor_numel(x), 0) };

    graph_run(g);

    check_tensor("reduce sum losses (51,1) 3 tiles into f64 acc zeroed by fill", acc[0], &ref[0],
                 TOL);
    check_tensor("reduce sumsq (51,96) 3 tiles += onto f64 acc 7", acc[1], &ref[1], TOL);
    check_tensor("reduce sumsq (51,96) 3 tiles then (17,257) 1 tile into one f64 acc", acc[2],
                 &ref[2], TOL);
    check_tensor("reduce sum (51,96) 3 tiles into f64 acc zeroed by fill", acc[3], &ref[3], TOL);
    double *fref = dalloc(hx_tensor_numel(f));
    for (size_t i = 0; i < hx_tensor_numel(f); i++) {
        fref[i] = -1.5;
    }
    check_tensor("fill f32 (51,96) 3 tiles with -1.5", f, fref, TOL);
    double zero[12] = { 0.0 };
    check_tensor("fill f64 (4,3) 2 tiles with 0", f64, zero, TOL);
    free(fref);
    hx_graph_destroy(g);
}

int main(void)
{
    struct rng r = { 0x726573696401ull };

    harness_start(NCHECKS);
    test_add(51, 96, 17, &r); /* one sequence per tile: 3 tasks */
    test_add(17, 257, 0, &r); /* one tile */
    test_accumulate(51, 96, 17, &r);
    test_reduce_fill(&r);
    return harness_end();
}
