/* SPDX-License-Identifier: MIT */
/* tests/codelets/crossentropy.c: the cross-entropy codelets, built with hx_xent_fwd then
 * hx_xent_bwd (in place on the logits, from the codelet's own lse) and run on 2 workers,
 * match hx_ref_xent_fwd / hx_ref_xent_bwd (normwise rel. error <= 1e-5, no NaN/Inf): losses,
 * lse, and dlogits = scale (softmax - onehot) for scales 1/N and 0.37.  Vocabularies of 257
 * and 1000, T = 17, with 3 tiles of one sequence, one tile, and 2 tiles whose logits sit
 * around +20; targets include 0 and V-1.  losses and lse start as NaN.  The same logits
 * through hx_xent_fused (forward then backward per row, in place; what the GPT graph uses)
 * match the same references, and a target = V given to it is reported (HX_EINVAL) with
 * the row and the range. */
#include "codelets/harness.h"

#include "testutil.h"

#define NSHAPES 3
#define NCHECKS (NSHAPES * 6 + 1)

struct shape {
    int nseq, T, V;
    int tile_rows;       /* 0: one tile */
    float offset, width; /* logits = offset + width * uniform[-1,1) */
    float scale;         /* gradient scale; 0: 1/N */
};

static void test_shape(const struct shape *s, struct rng *r)
{
    const int N = s->nseq * s->T, V = s->V, tr = s->tile_rows;
    const size_t nv = (size_t)N * V;
    const float scale = s->scale > 0.0f ? s->scale : 1.0f / (float)N;
    hx_graph_t g = graph_new();
    struct hx_tensor *logits = tensor_f32(g, "logits", N, V, tr);
    struct hx_tensor *targets = hx_graph_tensor(g, "targets", HX_I32, HX_ROLE_INPUT, N, 1, tr);
    struct hx_tensor *losses = tensor_f32(g, "losses", N, 1, tr);
    struct hx_tensor *lse = tensor_f32(g, "lse", N, 1, tr);
    struct hx_tensor *flogits = tensor_f32(g, "fused_logits", N, V, tr);
    struct hx_tensor *flosses = tensor_f32(g, "fused_losses", N, 1, tr);
    struct hx_tensor *flse = tensor_f32(g, "fused_lse", N, 1, tr);
    hx_xent_fwd(g, losses, lse, logits, targets);
    hx_xent_bwd(g, logits, lse, targets, scale);
    hx_xent_fused(g, flosses, flse, flogits, targets, scale);
    graph_realize(g);

    fill_uniform(hx_f32(logits), nv, r, s->width, s->offset);
    memcpy(hx_f32(flogits), hx_f32(logits), nv * sizeof(float));
    int *tgt = xcalloc((size_t)N, sizeof *tgt);
    for (int i = 0; i < N; i++) {
        tgt[i] = i == 0 ? 0 : i == N - 1 ? V - 1 : rng_int(r, V);
        hx_i32(targets)[i] = tgt[i];
    }
    fill_nan(hx_f32(losses), (size_t)N);
    fill_nan(hx_f32(lse), (size_t)N);
    fill_nan(hx_f32(flosses), (size_t)N);
    fill_nan(hx_f32(flse), (size_t)N);
    double *x_d = dup_f64(hx_f32(logits), nv);

    graph_run(g);

    char sh[96];
    snprintf(sh, sizeof sh, "(%d,%d) %d tile%s logits %g+-%g", N, V, logits->ntiles,
             logits->ntiles > 1 ? "s" : "", s->offset, s->width);
    double *loss_ref = dalloc((size_t)N), *lse_ref = dalloc((size_t)N), *dx_ref = dalloc(nv);
    hx_ref_xent_fwd(loss_ref, lse_ref, x_d, tgt, N, V);
    hx_ref_xent_bwd(dx_ref, x_d, tgt, N, V, scale);
    check_tensor(label("xent_fwd losses %s", sh), losses, loss_ref, TOL);
    check_tensor(label("xent_fwd lse %s", sh), lse, lse_ref, TOL);
    check_tensor(label("xent_bwd dlogits in place, scale %.4g, %s", scale, sh), logits, dx_ref,
                 TOL);
    check_tensor(label("xent_fused losses %s", sh), flosses, loss_ref, TOL);
    check_tensor(label("xent_fused lse %s", sh), flse, lse_ref, TOL);
    check_tensor(label("xent_fused dlogits in place, scale %.4g, %s", scale, sh), flogits,
                 dx_ref, TOL);

    free(loss_ref);
    free(lse_ref);
    free(dx_ref);
    free(x_d);
    free(tgt);
    hx_graph_destroy(g);
}

/* A target outside [0,V) is the data's fault: reported as HX_EINVAL with its row and the
 * range, nothing indexed with it. */
static void test_bad_target(void)
{
    const int N = 17, V = 257;
    hx_graph_t g = graph_new();
    struct hx_tensor *logits = tensor_f32(g, "logits", N, V, 0);
    struct hx_tensor *targets = hx_graph_tensor(g, "targets", HX_I32, HX_ROLE_INPUT, N, 1, 0);
    struct hx_tensor *losses = tensor_f32(g, "losses", N, 1, 0);
    struct hx_tensor *lse = tensor_f32(g, "lse", N, 1, 0);
    hx_xent_fused(g, losses, lse, logits, targets, 1.0f);
    graph_realize(g);
    hx_i32(targets)[6] = V;
    char dir[] = "/tmp/hx-xent-XXXXXX", msg[512] = "";
    int status = HX_OK;
    if (mkdtemp(dir) != NULL) {
        int saved = capture_begin(dir);
        hx_graph_submit(g, 0, -1);
        hx_graph_wait(g);
        status = hx_run_status();
        capture_end(saved, msg, sizeof msg);
        rmdir(dir);
    }
    int ok = status == HX_EINVAL && strstr(msg, "row 6 target 257 outside [0,257)");
    tap_ok(ok, "xent_fused (%d,%d): target %d reported (status %s)", N, V, V,
           hx_status_str(status));
    if (!ok) {
        tap_diag_lines(msg);
    }
    hx_run_status_reset();
    hx_graph_destroy(g);
}

int main(void)
{
    static const struct shape shapes[NSHAPES] = {
        { 3, 17, 257, 17, 0.0f, 4.0f, 0.0f },   /* one sequence per tile: 3 tasks */
        { 2, 17, 257, 0, 0.0f, 8.0f, 0.37f },   /* one tile, peaked softmax */
        { 4, 17, 1000, 34, 20.0f, 2.0f, 0.0f }, /* 2 tiles, large logits */
    };
    struct rng r = { 0x78656e7401ull };

    harness_start(NCHECKS);
    for (int i = 0; i < NSHAPES; i++) {
        test_shape(&shapes[i], &r);
    }
    test_bad_target();
    return harness_end();
}
