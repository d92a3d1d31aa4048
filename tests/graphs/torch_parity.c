/* SPDX-License-Identifier: MIT */
/* tests/graphs/torch_parity.c: whole-model parity with an independent PyTorch implementation
 * (tests/reference/gpt_ref.py under Debian's /usr/bin/python3).  Two configurations: the
 * small one of the issue (L=2, C=64, NH=4, T=32, V=256, 4 sequences as 2 micro-batches of 2,
 * so gradient accumulation is covered) and an odd one (T=17, C=96, NH=3, V=257).  Checked:
 * the step-0 loss, global norm and every parameter gradient (normwise relative error <= 1e-4),
 * the losses of 10 AdamW steps (<= 1e-4) with warmup, cosine decay and clipping active, and
 * the final parameters.  Without torch the test skips, unless HX_REQUIRE_TORCH=1 (CI). */
#include <math.h>
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
    snprintf(script, sizeof script, "%s/tests/reference/gpt_ref.py", src ? src : "..");
    struct parity_result r;
    int ret = parity_run(m, &o, STEPS, tokens, targets, torch_python(), script, dir, &r);
    tap_ok(ret == HX_OK, "%s: helix and the PyTorch reference ran (%s)", k->name, script);
    tap_ok(ret == HX_OK && r.step0_loss_err <= 1e-4, "%s: step-0 loss helix %.8f torch %.8f "
           "rel err %.2e", k->name, r.loss_helix[0], r.loss_torch[0], r.step0_loss_err);
    tap_ok(ret == HX_OK && r.step0_norm_err <= 1e-4, "%s: step-0 gradient norm helix %.8f "
           "torch %.8f rel err %.2e", k->name, r.norm_helix[0], r.norm_torch[0],
           r.step0_norm_err);
    tap_ok(ret == HX_OK && r.grad_err <= 1e-4, "%s: all %d parameter gradients, worst "
           "normwise rel err %.2e (%s)", k->name, hx_gpt_num_param_tensors(m), r.grad_err,
           r.grad_worst ? r.grad_worst : "");
    for (int s = 0; ret == HX_OK && s < STEPS; s++) {
        tap_diag("%s step %d: loss helix %.8f torch %.8f, norm %.6f / %.6f", k->name, s,
                 r.loss_helix[s], r.loss_torch[s], r.norm_helix[s], r.norm_torch[s]);
    }
    tap_ok(ret == HX_OK && r.loss_err <= 1e-4, "%s: %d AdamW steps, worst loss rel err %.2e",
           k->name, STEPS, r.loss_err);
    /* Adam amplifies last bits where gradients are near zero: see tools/parity.c */
    tap_ok(ret == HX_OK && r.update_err <= 1e-2, "%s: final parameters after %d steps: worst "
           "|helix - torch| is %.2e of the update (%s)", k->name, STEPS, r.update_err,
           r.update_worst ? r.update_worst : "");
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
