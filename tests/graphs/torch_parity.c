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

static double rel_err(const float *got, const float *ref, size_t n)
{
    double maxdiff = 0, maxref = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - ref[i]);
        if (!isfinite(got[i]) || !isfinite(ref[i])) {
            return INFINITY;
        }
        maxdiff = d > maxdiff ? d : maxdiff;
        maxref = fabs(ref[i]) > maxref ? fabs(ref[i]) : maxref;
    }
    return maxdiff / (maxref > 1e-30 ? maxref : 1e-30);
}

static int write_input(const char *path, hx_gpt_t m, const struct hx_optim_config *o,
                       const int32_t *tokens, const int32_t *targets, size_t ntok)
{
    const struct hx_gpt_config *c = hx_gpt_config_of(m);
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        return -1;
    }
    int32_t h[32] = { 20261122, 1, c->vocab_size, c->max_seq_len, c->num_layers, c->num_heads,
                      c->hidden_size, c->seq_len, c->micro_batch_size, c->num_micro_batches,
                      STEPS, o->warmup_iters, o->decay_iters };
    float hf[16] = { o->lr, o->min_lr, o->beta1, o->beta2, o->eps, o->weight_decay,
                     o->clip_grad, c->ln_eps };
    fwrite(h, sizeof h, 1, f);
    fwrite(hf, sizeof hf, 1, f);
    for (int i = 0; i < hx_gpt_num_param_tensors(m); i++) {
        hx_tensor_t p = hx_gpt_param(m, i);
        hx_tensor_begin_access(p, 'r');
        fwrite(p->data, hx_tensor_bytes(p), 1, f);
        hx_tensor_end_access(p);
    }
    fwrite(tokens, sizeof(int32_t), ntok * STEPS, f);
    fwrite(targets, sizeof(int32_t), ntok * STEPS, f);
    return fclose(f);
}

struct torch_out {
    double loss[STEPS], norm[STEPS];
    size_t nparam;
    float *grads0, *final;
};

static int read_output(const char *path, struct torch_out *t, size_t nparam)
{
    FILE *f = fopen(path, "rb");
    int32_t h[8];
    if (f == NULL || fread(h, sizeof h, 1, f) != 1 || h[0] != 20261123 || h[2] != STEPS ||
        (size_t)h[3] != nparam) {
        if (f) {
            fclose(f);
        }
        return -1;
    }
    t->nparam = nparam;
    t->grads0 = malloc(nparam * sizeof(float));
    t->final = malloc(nparam * sizeof(float));
    int ok = fread(t->loss, sizeof t->loss, 1, f) == 1 && fread(t->norm, sizeof t->norm, 1, f) == 1
             && fread(t->grads0, sizeof(float), nparam, f) == nparam
             && fread(t->final, sizeof(float), nparam, f) == nparam;
    fclose(f);
    return ok ? 0 : -1;
}

/* Compare one parameter-ordered flat vector against the model's tensors. */
static double worst_tensor(hx_gpt_t m, hx_tensor_t (*get)(hx_gpt_t, int), const float *ref,
                           const char **worst_name)
{
    double worst = 0;
    size_t off = 0;
    for (int i = 0; i < hx_gpt_num_param_tensors(m); i++) {
        hx_tensor_t t = get(m, i);
        size_t n = hx_tensor_numel(t);
        hx_tensor_begin_access(t, 'r');
        double e = rel_err(hx_f32(t), ref + off, n);
        hx_tensor_end_access(t);
        if (e > worst || isnan(e)) {
            worst = e;
            *worst_name = hx_gpt_param(m, i)->name;
        }
        off += n;
    }
    return worst;
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
    char in[512], out[512], cmd[2048];
    snprintf(in, sizeof in, "%s/%s.in", dir, k->name);
    snprintf(out, sizeof out, "%s/%s.out", dir, k->name);
    tap_ok(write_input(in, m, &o, tokens, targets, ntok) == 0, "%s: wrote %s", k->name, in);
    const char *src = getenv("HX_SRCDIR");
    snprintf(cmd, sizeof cmd, "%s %s/tests/reference/gpt_ref.py %s %s", torch_python(),
             src ? src : "..", in, out);
    struct torch_out t = { 0 };
    size_t nparam = hx_gpt_num_params(m);
    int ran = system(cmd) == 0 && read_output(out, &t, nparam) == 0;
    tap_ok(ran, "%s: PyTorch reference ran (%s)", k->name, cmd);
    if (!ran) {
        hx_gpt_destroy(m);
        free(tokens);
        free(targets);
        return;
    }

    /* step 0 gradients, before any update */
    struct hx_step_result r;
    int ret = hx_gpt_set_batch(m, tokens, targets);
    ret = ret == HX_OK ? hx_gpt_forward_backward(m, &r) : ret;
    double le = fabs(r.loss - t.loss[0]) / fabs(t.loss[0]);
    tap_ok(ret == HX_OK && le <= 1e-4, "%s: step-0 loss helix %.8f torch %.8f rel err %.2e",
           k->name, r.loss, t.loss[0], le);
    double ne = fabs(r.grad_norm - t.norm[0]) / t.norm[0];
    tap_ok(ne <= 1e-4, "%s: step-0 gradient norm helix %.8f torch %.8f rel err %.2e", k->name,
           r.grad_norm, t.norm[0], ne);
    const char *wn = "";
    double ge = worst_tensor(m, hx_gpt_grad, t.grads0, &wn);
    tap_ok(ge <= 1e-4, "%s: all %d parameter gradients, worst normwise rel err %.2e (%s)",
           k->name, hx_gpt_num_param_tensors(m), ge, wn);

    /* 10 AdamW steps, from a copy of the initial parameters */
    float *init = malloc(nparam * sizeof(float));
    for (int i = 0, off = 0; i < hx_gpt_num_param_tensors(m); i++) {
        hx_tensor_t p = hx_gpt_param(m, i);
        hx_tensor_begin_access(p, 'r');
        memcpy(init + off, p->data, hx_tensor_bytes(p));
        hx_tensor_end_access(p);
        off += (int)hx_tensor_numel(p);
    }
    double worst_loss = 0;
    for (int s = 0; s < STEPS && ret == HX_OK; s++) {
        ret = hx_gpt_set_batch(m, tokens + ntok * s, targets + ntok * s);
        ret = ret == HX_OK ? hx_gpt_step(m, s, &r) : ret;
        double e = fabs(r.loss - t.loss[s]) / fabs(t.loss[s]);
        tap_diag("%s step %d: loss helix %.8f torch %.8f (rel %.1e), norm %.6f / %.6f", k->name,
                 s, r.loss, t.loss[s], e, r.grad_norm, t.norm[s]);
        worst_loss = e > worst_loss ? e : worst_loss;
    }
    tap_ok(ret == HX_OK && worst_loss <= 1e-4, "%s: %d AdamW steps, worst loss rel err %.2e",
           k->name, STEPS, worst_loss);
    /* Adam divides by sqrt(v): for gradients near zero an update is close to +-lr whatever
     * the gradient's last bits, so final parameters are compared through their updates,
     * max |p_helix - p_torch| / max |p_torch - p_init| per tensor, which must stay small. */
    double pe = 0;
    for (int i = 0, off = 0; i < hx_gpt_num_param_tensors(m); i++) {
        hx_tensor_t p = hx_gpt_param(m, i);
        size_t n = hx_tensor_numel(p);
        double diff = 0, upd = 0;
        hx_tensor_begin_access(p, 'r');
        for (size_t j = 0; j < n; j++) {
            double d = fabs((double)hx_f32(p)[j] - t.final[off + j]);
            double u = fabs((double)t.final[off + j] - init[off + j]);
            diff = (d > diff || isnan(d)) ? d : diff;
            upd = u > upd ? u : upd;
        }
        hx_tensor_end_access(p);
        double e = diff / (upd > 1e-30 ? upd : 1e-30);
        if (e > pe || isnan(e)) {
            pe = e;
            wn = p->name;
        }
        off += (int)n;
    }
    tap_ok(pe <= 1e-2, "%s: final parameters after %d steps: worst |helix - torch| is %.2e of "
           "the update (%s)", k->name, STEPS, pe, wn);
    free(init);
    free(t.grads0);
    free(t.final);
    free(tokens);
    free(targets);
    hx_gpt_destroy(m);
    unlink(in);
    unlink(out);
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
    tap_plan(7 * ncases);
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
