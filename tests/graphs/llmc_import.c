/* SPDX-License-Identifier: MIT */
/* tests/graphs/llmc_import.c: llm.c GPT-2 model files import exactly.  tests/reference/llmc_ref.py
 * writes a random model (V=300, maxT=24, L=2, NH=4, C=64) in llm.c's grouped layout, version 3
 * (wte padded to 320 rows of noise) and version 1 (unpadded), a token shard of B*T+1 ids, and
 * PyTorch's float64 loss on it.  Checked: hx_llmc_peek gives the shape; hx_llmc_import zeroes
 * the Adam moments; hx_gpt_eval's loss (B=2, T=16) equals PyTorch's to rel. err. <= 1e-5.
 * Errors: missing file HX_EIO; truncated, extra bytes, short header, bad magic, version 2,
 * C % NH != 0, a header field out of range, Vp < V, a NaN value (found by peek, which reads
 * every value) HX_EFORMAT; a model of another shape HX_EINVAL; each message names the file.
 * Without torch the test skips, unless HX_REQUIRE_TORCH=1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helix/checkpoint.h"
#include "helix/helix.h"
#include "testutil.h"

#define B 2
#define T 16

static char dir[] = "/tmp/helix-llmc-XXXXXX";
static char errbuf[4096];

static void path_in(char *dst, size_t n, const char *name)
{
    snprintf(dst, n, "%s/%s", dir, name);
}

/* Reads OUT.txt's "loss X" line. */
static int read_ref_loss(const char *path, double *loss, double *loss32)
{
    FILE *f = fopen(path, "r");
    int ok = f != NULL && fscanf(f, "loss %lf loss_f32 %lf", loss, loss32) == 2;
    if (f) {
        fclose(f);
    }
    return ok ? 0 : -1;
}

static hx_gpt_t build(const struct hx_gpt_config *shape)
{
    struct hx_gpt_config c = *shape;
    c.seq_len = T;
    c.micro_batch_size = B;
    c.num_micro_batches = 1;
    struct hx_optim_config o;
    hx_optim_config_default(&o, 1);
    hx_gpt_t m = NULL;
    if (hx_gpt_build(&m, &c, &o) != HX_OK) {
        return NULL;
    }
    if (hx_gpt_realize(m) != HX_OK) {
        hx_gpt_destroy(m);
        return NULL;
    }
    return m;
}

/* Fills every Adam moment with 1 so that the import has something to zero. */
static void dirty_moments(hx_gpt_t m)
{
    for (int i = 0; i < hx_gpt_num_param_tensors(m); i++) {
        hx_tensor_t s[2] = { hx_gpt_adam_m(m, i), hx_gpt_adam_v(m, i) };
        for (int q = 0; q < 2; q++) {
            hx_tensor_begin_access(s[q], 'w');
            for (size_t j = 0; j < hx_tensor_numel(s[q]); j++) {
                hx_f32(s[q])[j] = 1.0f;
            }
            hx_tensor_end_access(s[q]);
        }
    }
}

static size_t nonzero_moments(hx_gpt_t m)
{
    size_t bad = 0;
    for (int i = 0; i < hx_gpt_num_param_tensors(m); i++) {
        hx_tensor_t s[2] = { hx_gpt_adam_m(m, i), hx_gpt_adam_v(m, i) };
        for (int q = 0; q < 2; q++) {
            hx_tensor_begin_access(s[q], 'r');
            for (size_t j = 0; j < hx_tensor_numel(s[q]); j++) {
                bad += hx_f32(s[q])[j] != 0.0f;
            }
            hx_tensor_end_access(s[q]);
        }
    }
    return bad;
}

/* 5 checks: the reference ran, peek, import, the batch shard, the loss. */
static void import_case(int version, int seed)
{
    char model[512], batch[512], out[512], cmd[2048];
    snprintf(model, sizeof model, "%s/v%d.bin", dir, version);
    snprintf(batch, sizeof batch, "%s/v%d.tokens.bin", dir, version);
    snprintf(out, sizeof out, "%s/v%d.loss.txt", dir, version);
    const char *src = getenv("HX_SRCDIR");
    snprintf(cmd, sizeof cmd, "%s %s/tests/reference/llmc_ref.py --version %d --seed %d %s %s %s",
             torch_python(), src ? src : "..", version, seed, model, batch, out);
    double ref = NAN, ref32 = NAN;
    int ran = system(cmd) == 0 && read_ref_loss(out, &ref, &ref32) == 0;
    if (!tap_ok(ran, "v%d: reference ran (%s)", version, cmd)) {
        for (int i = 0; i < 4; i++) {
            tap_ok(0, "v%d: skipped, no reference", version);
        }
        return;
    }

    struct hx_gpt_config c = { 0 };
    int ret = hx_llmc_peek(model, &c);
    tap_ok(ret == HX_OK && c.vocab_size == 300 && c.max_seq_len == 24 && c.num_layers == 2 &&
           c.num_heads == 4 && c.hidden_size == 64,
           "v%d: peek -> V=%d maxT=%d L=%d NH=%d C=%d (status %d)", version, c.vocab_size,
           c.max_seq_len, c.num_layers, c.num_heads, c.hidden_size, ret);

    hx_gpt_t m = ret == HX_OK ? build(&c) : NULL;
    if (m != NULL) {
        dirty_moments(m);
        ret = hx_llmc_import(model, m);
    }
    size_t bad = m != NULL ? nonzero_moments(m) : 1;
    tap_ok(m != NULL && ret == HX_OK && bad == 0,
           "v%d: import (status %d), %zu nonzero Adam moment entries after it", version, ret, bad);

    struct hx_dataset d;
    int dret = hx_data_load(&d, batch);
    tap_ok(dret == HX_OK && d.id_bytes == 2 && d.max_id < 300 && d.ntokens == B * T + 1,
           "v%d: token shard: status %d, %d-byte ids up to %lu (< V = 300), %zu tokens", version,
           dret, d.id_bytes, (unsigned long)d.max_id, d.ntokens);

    double loss = NAN;
    if (m != NULL && ret == HX_OK && dret == HX_OK) {
        int32_t tok[B * T], tgt[B * T];
        hx_data_next_batch(&d, B, T, tok, tgt);
        ret = hx_gpt_eval(m, tok, tgt, &loss);
    }
    double rel = fabs(loss - ref) / fabs(ref);
    tap_ok(ret == HX_OK && rel <= 1e-5,
           "v%d: loss helix %.9f, PyTorch %.9f (float32 run %.9f): rel err %.2e <= 1e-5",
           version, loss, ref, ref32, rel);
    if (dret == HX_OK) {
        hx_data_free(&d);
    }
    if (m != NULL) {
        hx_gpt_destroy(m);
    }
    unlink(batch);
    unlink(out);
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    rewind(f);
    unsigned char *b = malloc(*n + 16);
    if (b != NULL && fread(b, 1, *n, f) != *n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    return b;
}

static void spit(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f != NULL) {
        fwrite(b, 1, n, f);
        fclose(f);
    }
}

/* One check: peek (and import into @p m when given) of a damaged copy gives @p want and a
 * message naming the file. */
static void bad_file(const char *what, const unsigned char *orig, size_t n, size_t newlen,
                     int field, int32_t value, hx_gpt_t m, int want)
{
    char path[512];
    snprintf(path, sizeof path, "%s/bad.bin", dir);
    unsigned char *b = malloc(n + 16);
    memcpy(b, orig, n);
    memset(b + n, 0, 16);
    if (field >= 0) {
        memcpy(b + 4 * field, &value, sizeof value);
    }
    spit(path, b, newlen);
    free(b);
    struct hx_gpt_config c = { 0 };
    int saved = capture_begin(dir);
    int r1 = hx_llmc_peek(path, &c);
    int r2 = m != NULL ? hx_llmc_import(path, m) : want;
    const char *msg = capture_end(saved, errbuf, sizeof errbuf);
    tap_ok(r1 == want && r2 == want && strstr(msg, path) != NULL,
           "%s: peek %d, import %d (want %d)", what, r1, r2, want);
    tap_diag_lines(msg);
    unlink(path);
}

int main(void)
{
    require_torch();
    struct hx_runtime_opts ro;
    hx_runtime_opts_init(&ro);
    ro.workers = 2;
    if (hx_runtime_init(&ro) != HX_OK) {
        tap_skip_all("StarPU did not start");
    }
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    tap_plan(2 * 5 + 13);
    import_case(3, 1);
    import_case(1, 2);

    char v3[512], missing[512];
    path_in(v3, sizeof v3, "v3.bin");
    path_in(missing, sizeof missing, "no-such-model.bin");
    size_t n = 0;
    unsigned char *orig = slurp(v3, &n);
    struct hx_gpt_config c = { 0 };
    hx_gpt_t m = orig != NULL && hx_llmc_peek(v3, &c) == HX_OK ? build(&c) : NULL;
    if (m == NULL) {
        for (int i = 0; i < 13; i++) {
            tap_ok(0, "error cases: no version-3 model file to damage");
        }
    } else {
        int saved = capture_begin(dir);
        int r1 = hx_llmc_peek(missing, &c), r2 = hx_llmc_import(missing, m);
        const char *msg = capture_end(saved, errbuf, sizeof errbuf);
        tap_ok(r1 == HX_EIO && r2 == HX_EIO && strstr(msg, missing) != NULL,
               "missing file: peek %d, import %d (want HX_EIO %d)", r1, r2, HX_EIO);
        tap_diag_lines(msg);
        bad_file("truncated by 4 bytes", orig, n, n - 4, -1, 0, m, HX_EFORMAT);
        bad_file("4 extra bytes", orig, n, n + 4, -1, 0, m, HX_EFORMAT);
        bad_file("100 bytes, shorter than the header", orig, n, 100, -1, 0, m, HX_EFORMAT);
        bad_file("bad magic (a token shard's)", orig, n, n, 0, 20240520, m, HX_EFORMAT);
        bad_file("version 2 (bfloat16)", orig, n, n, 1, 2, m, HX_EFORMAT);
        bad_file("NH=5 does not divide C=64", orig, n, n, 5, 5, m, HX_EFORMAT);
        bad_file("L=5000, beyond --num-layers' range", orig, n, n, 4, 5000, m, HX_EFORMAT);
        bad_file("padded vocabulary 299 < V=300", orig, n, n, 7, 299, m, HX_EFORMAT);
        bad_file("a NaN in wte (peek reads every value)", orig, n, n, 256 + 5, 0x7fc00000, m,
                 HX_EFORMAT);
        hx_gpt_destroy(m);

        /* a model of another shape: the import refuses it and names the differing flag */
        const char *flags[] = { "vocab-size", "max-position-embeddings", "num-layers" };
        for (int k = 0; k < 3; k++) {
            struct hx_gpt_config other = c;
            if (k == 0) {
                other.vocab_size = 256;
            } else if (k == 1) {
                other.max_seq_len = 0;   /* = T = 16, not the file's 24 */
            } else {
                other.num_layers = 1;
            }
            hx_gpt_t mo = build(&other);
            saved = capture_begin(dir);
            int r = mo != NULL ? hx_llmc_import(v3, mo) : HX_OK;
            msg = capture_end(saved, errbuf, sizeof errbuf);
            tap_ok(r == HX_EINVAL && strstr(msg, flags[k]) != NULL && strstr(msg, v3) != NULL,
                   "model with another --%s: import %d (want HX_EINVAL %d)", flags[k], r,
                   HX_EINVAL);
            tap_diag_lines(msg);
            if (mo != NULL) {
                hx_gpt_destroy(mo);
            }
        }
    }
    free(orig);
    char v1[512];
    path_in(v1, sizeof v1, "v1.bin");
    unlink(v1);
    unlink(v3);
    rmdir(dir);
    hx_runtime_shutdown();
    return tap_exit();
}
