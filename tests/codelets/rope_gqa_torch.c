/* SPDX-License-Identifier: MIT */
/* tests/codelets/rope_gqa_torch.c: RoPE then grouped-query attention, forward and backward
 * (hx_rope_fwd, hx_gqa_attention_fwd, hx_gqa_attention_bwd, hx_rope_bwd), against the
 * independent PyTorch oracle tests/reference/rope_gqa_ref.py (HF Llama's rotate_half and
 * repeat_interleave, autograd for the gradient) under Debian's /usr/bin/python3.  The oracle
 * takes the angle as HF does, in float32, and computes everything after it in float64, so the
 * codelet rule of tests/codelets/harness.h applies as against codelets/ref: normwise relative
 * error <= 1e-5, no NaN/Inf, on the turned qkv, out, lse and dqkv.  Cases: T = 17, 6 query
 * heads on 2 kv heads of 16 columns, base 1e4, one sequence per tile; and positions up to 2047
 * (2 query heads on 1, hs = 64, base 5e5), where an angle other than HF's float32 one misses
 * by ~1e-4.  Without torch the test skips, unless HX_REQUIRE_TORCH=1. */
#include <unistd.h>

#include "codelets/harness.h"
#include "testutil.h"

#define NCASES 2
#define NCHECKS (NCASES * 4)
#define IN_MAGIC 20261127
#define OUT_MAGIC 20261128

struct torch_case {
    int nseq, T, NH, KV, hs;
    int tile_rows; /* 0: one tile */
    float base;
};

/* the oracle's input (tests/reference/README.md); 0 or -1 */
static int write_input(const char *path, const struct torch_case *s, const float *qkv,
                       size_t nqkv, const float *dout, size_t ndout)
{
    int32_t hdr[8] = { IN_MAGIC, 1, s->nseq, s->T, s->NH, s->KV, s->hs, 0 };
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        return -1;
    }
    int ok = fwrite(hdr, sizeof hdr, 1, f) == 1 && fwrite(&s->base, sizeof(float), 1, f) == 1 &&
             fwrite(qkv, sizeof(float), nqkv, f) == nqkv &&
             fwrite(dout, sizeof(float), ndout, f) == ndout;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* the oracle's output: header, then qkv_rot, out, lse, dqkv in float64; 0 or -1 */
static int read_output(const char *path, double *parts[4], const size_t n[4])
{
    int32_t hdr[4];
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return -1;
    }
    int ok = fread(hdr, sizeof hdr, 1, f) == 1 && hdr[0] == OUT_MAGIC && hdr[1] == 1;
    for (int i = 0; ok && i < 4; i++) {
        ok = fread(parts[i], sizeof(double), n[i], f) == n[i];
    }
    ok = ok && fgetc(f) == EOF;
    fclose(f);
    return ok ? 0 : -1;
}

static void test_case(const struct torch_case *s, const char *dir, struct rng *r)
{
    const int N = s->nseq * s->T, C = s->NH * s->hs, W = C + 2 * s->KV * s->hs;
    const int tr = s->tile_rows;
    hx_graph_t g = graph_new();
    struct hx_tensor *qkv = tensor_f32(g, "qkv", N, W, tr);
    struct hx_tensor *out = tensor_f32(g, "out", N, C, tr);
    struct hx_tensor *lse = tensor_f32(g, "lse", N, s->NH, tr);
    struct hx_tensor *dout = tensor_f32(g, "dout", N, C, tr);
    struct hx_tensor *dqkv = tensor_f32(g, "dqkv", N, W, tr);
    hx_rope_fwd(g, qkv, s->T, s->NH, s->KV, s->base);
    hx_gqa_attention_fwd(g, out, lse, qkv, s->T, s->NH, s->KV, 0);
    hx_gqa_attention_bwd(g, dqkv, qkv, out, dout, lse, s->T, s->NH, s->KV, 0);
    hx_rope_bwd(g, dqkv, s->T, s->NH, s->KV, s->base);
    graph_realize(g);

    const size_t n[4] = { (size_t)N * W, (size_t)N * C, (size_t)N * s->NH, (size_t)N * W };
    fill_uniform(hx_f32(qkv), n[0], r, 2.0f, 0.0f);
    fill_uniform(hx_f32(dout), n[1], r, 1.0f, 0.0f);
    fill_nan(hx_f32(out), n[1]);
    fill_nan(hx_f32(lse), n[2]);
    fill_nan(hx_f32(dqkv), n[3]);

    char in[256], res[256], script[1024], cmd[2048];
    const char *src = getenv("HX_SRCDIR");
    snprintf(script, sizeof script, "%.900s/tests/reference/rope_gqa_ref.py", src ? src : "..");
    snprintf(in, sizeof in, "%s/rope_gqa.in", dir);
    snprintf(res, sizeof res, "%s/rope_gqa.out", dir);
    snprintf(cmd, sizeof cmd, "%s %s %s %s", torch_python(), script, in, res);
    double *ref[4];
    for (int i = 0; i < 4; i++) {
        ref[i] = dalloc(n[i]);
    }
    int ran = write_input(in, s, hx_f32(qkv), n[0], hx_f32(dout), n[1]) == 0 &&
              system(cmd) == 0 && read_output(res, ref, n) == 0;
    unlink(in);
    unlink(res);
    if (!ran) {
        tap_diag("the PyTorch oracle did not run: %s", cmd);
    }

    graph_run(g);

    char sh[96];
    snprintf(sh, sizeof sh, "nseq=%d T=%d NH=%d KV=%d hs=%d base=%g, %d tile%s", s->nseq, s->T,
             s->NH, s->KV, s->hs, (double)s->base, qkv->ntiles, qkv->ntiles > 1 ? "s" : "");
    struct hx_tensor *got[4] = { qkv, out, lse, dqkv };
    static const char *const what[4] = { "rope_fwd qkv", "attention_fwd out",
                                         "attention_fwd lse", "attention_bwd, rope_bwd dqkv" };
    for (int i = 0; i < 4; i++) {
        if (ran) {
            check_tensor(label("%s vs torch %s", what[i], sh), got[i], ref[i], TOL);
        } else {
            tap_ok(0, "%s vs torch %s: no PyTorch result", what[i], sh);
        }
        free(ref[i]);
    }
    hx_graph_destroy(g);
}

int main(void)
{
    require_torch();
    static const struct torch_case cases[NCASES] = {
        { 3, 17, 6, 2, 16, 17, 10000.0f },
        { 1, 2048, 2, 1, 64, 0, 500000.0f },
    };
    struct rng r = { 0x746f72636801ull };
    harness_start(NCHECKS);
    char dir[] = "/tmp/helix-rope-gqa-XXXXXX";
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    for (int i = 0; i < NCASES; i++) {
        test_case(&cases[i], dir, &r);
    }
    rmdir(dir);
    return harness_end();
}
