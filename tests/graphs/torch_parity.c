/* SPDX-License-Identifier: MIT */
/* tests/graphs/torch_parity.c: whole-model parity with an independent PyTorch implementation
 * (tests/reference/gpt_ref.py, and llama_ref.py for the Llama settings, under Debian's
 * /usr/bin/python3).  Three configurations: the small one of the issue (L=2, C=64, NH=4,
 * T=32, V=256, 4 sequences as 2 micro-batches of 2, so gradient accumulation is covered), an
 * odd one (T=17, C=96, NH=3, V=257), and Llama at odd shapes (T=17, C=96, 6 heads in 2
 * key/value groups, FFN 256, V=257).  Checked:
 * the step-0 loss, global norm and every parameter gradient, the losses and gradient norms of
 * 10 AdamW steps with warmup, cosine decay and clipping active, and the final parameters
 * (through their updates), each by the tolerance rule of every parity test (tests/README.md,
 * "Parity tolerances"; tools/parity.h): within PARITY_K x max(E, floor) of PyTorch's, E the
 * same metric between helix and helix with another row-tile split.  Each metric prints a
 * "# parity-ratio torch CASE METRIC measured tolerance ratio" line.  Without torch the test
 * skips, unless HX_REQUIRE_TORCH=1 (CI). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helix/helix.h"
#include "testutil.h"
#include "tools/parity.h"

#define STEPS 10

struct case_cfg {
    const char *name;
    struct hx_gpt_config cfg;
};

static uint64_t rng_state = 42;

static uint64_t next_u64(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* One check of the rule for metrics a (and b, unless -1), helix against PyTorch. */
static void check(const char *name, int ret, const struct parity_result *r, int a, int b,
                  const char *what, ...) __attribute__((format(printf, 6, 7)));
static void check(const char *name, int ret, const struct parity_result *r, int a, int b,
                  const char *what, ...)
{
    char desc[256], line[256] = "";
    va_list ap;
    va_start(ap, what);
    vsnprintf(desc, sizeof desc, what, ap);
    va_end(ap);
    int pass = ret == HX_OK;
    for (int k = a; ret == HX_OK && k >= 0; k = k == a ? b : -1) {
        size_t n = strlen(line);
        snprintf(line + n, sizeof line - n, "%s%s %.2e <= %.2e (E %.2e)%s%s", n ? ", " : "",
                 parity_metric_name(k), r->measured[k], r->tolerance[k], r->envelope[k],
                 r->worst[k] ? " " : "", r->worst[k] ? r->worst[k] : "");
        pass &= r->measured[k] <= r->tolerance[k];
    }
    tap_ok(pass, "%s: %s: %s", name, desc, line);
}

static void run_case(const struct case_cfg *k, const char *dir)
{
    struct hx_optim_config o;
    hx_optim_config_default(&o, STEPS);
    o.lr = 1e-3f;
    o.min_lr = 1e-4f;
    o.warmup_iters = 3;
    o.clip_grad = 1.0f;
    hx_gpt_t m;
    if (hx_gpt_build(&m, &k->cfg, &o) != HX_OK || hx_gpt_realize(m) != HX_OK) {
        tap_ok(0, "%s: build", k->name);
        return;
    }
    hx_gpt_init_params(m, 7);
    const struct hx_gpt_config *c = hx_gpt_config_of(m);
    size_t ntok = (size_t)c->seq_len * c->micro_batch_size * c->num_micro_batches;
    int32_t *tokens = malloc(ntok * STEPS * sizeof(int32_t));
    int32_t *targets = malloc(ntok * STEPS * sizeof(int32_t));
    for (size_t i = 0; i < ntok * STEPS; i++) {
        tokens[i] = (int32_t)(next_u64() % (uint64_t)c->vocab_size);
        targets[i] = (int32_t)(next_u64() % (uint64_t)c->vocab_size);
    }
    char script[1024];
    const char *src = getenv("HX_SRCDIR");
    snprintf(script, sizeof script, "%s/tests/reference", src ? src : "..");
    struct parity_result r;
    int ret = parity_run(m, &o, STEPS, tokens, targets, torch_python(), script, dir, &r);
    tap_ok(ret == HX_OK, "%s: helix, the PyTorch reference and helix with another row-tile "
           "split ran (%s)", k->name, script);
    for (int s = 0; ret == HX_OK && s < STEPS; s++) {
        tap_diag("%s step %d: loss helix %.8f torch %.8f, norm %.6f / %.6f", k->name, s,
                 r.loss_helix[s], r.loss_torch[s], r.norm_helix[s], r.norm_torch[s]);
    }
    for (int i = 0; ret == HX_OK && i < PARITY_NMETRICS; i++) {
        tap_diag("parity-ratio torch %s %s %.3g %.3g %.3g", k->name, parity_metric_name(i),
                 r.measured[i], r.tolerance[i], r.measured[i] / r.tolerance[i]);
    }
    check(k->name, ret, &r, PARITY_STEP0_LOSS, -1, "step-0 loss");
    check(k->name, ret, &r, PARITY_STEP0_NORM, -1, "step-0 gradient norm");
    check(k->name, ret, &r, PARITY_STEP0_GRADS, -1, "step-0 gradients of every parameter, the "
          "worst tensor's max |helix - torch| / max |torch|");
    check(k->name, ret, &r, PARITY_LOSS, PARITY_NORM, "losses and gradient norms of %d AdamW "
          "steps", STEPS);
    /* Adam amplifies last bits where gradients are near zero: see tools/parity.c */
    check(k->name, ret, &r, PARITY_UPDATE, -1, "final parameters after %d steps, the worst "
          "tensor's max |helix - torch| / max |update|", STEPS);
    free(tokens);
    free(targets);
    hx_gpt_destroy(m);
}

int main(void)
{
    require_torch();
    static const struct case_cfg cases[] = {
        { "small", { .vocab_size = 256, .num_layers = 2, .num_heads = 4, .hidden_size = 64,
                     .seq_len = 32, .micro_batch_size = 2, .num_micro_batches = 2 } },
        { "odd", { .vocab_size = 257, .max_seq_len = 20, .num_layers = 2, .num_heads = 3,
                   .hidden_size = 96, .seq_len = 17, .micro_batch_size = 3,
                   .num_micro_batches = 1, .attn_block = 8 } },
        /* Llama-3's architecture (tests/reference/llama_ref.py) at the odd shapes:
         * 6 heads of 16 in 2 key/value groups, SwiGLU of 256, RoPE over 17 positions.  4
         * sequences a micro-batch: with 3, helix and PyTorch's updates of h1.fc_w differed
         * by 1.4e-3 while helix's own second order gave E = 3.8e-5 (OpenBLAS's Sandybridge
         * kernels; 3.5e-4 with Haswell's), 0.75 of the rule's bound; with 4 the difference
         * is 3.4-6.4e-4 against E of 0.9-1.6e-4 under the machine's own kernels, Haswell's,
         * Sandybridge's and Nehalem's: ratios 0.01-0.08. */
        { "llama-odd", { .vocab_size = 257, .num_layers = 2, .num_heads = 6, .hidden_size = 96,
                         .seq_len = 17, .micro_batch_size = 4, .num_micro_batches = 2,
                         .attn_block = 8, .normalization = HX_NORM_RMSNORM, .swiglu = 1,
                         .ffn_hidden_size = 256, .position_embedding = HX_POS_ROPE,
                         .num_query_groups = 2, .untie_embeddings = 1, .disable_bias = 1 } },
    };
    int ncases = (int)(sizeof cases / sizeof cases[0]);
    tap_plan(6 * ncases);
    struct hx_runtime_opts ro;
    hx_runtime_opts_init(&ro);
    ro.workers = 2;
    if (hx_runtime_init(&ro) != HX_OK) {
        tap_skip_all("StarPU did not start");
    }
    char dir[] = "/tmp/helix-parity-XXXXXX";
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    for (int i = 0; i < ncases; i++) {
        run_case(&cases[i], dir);
    }
    rmdir(dir);
    hx_runtime_shutdown();
    return tap_exit();
}
