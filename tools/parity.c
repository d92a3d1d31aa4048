/* SPDX-License-Identifier: MIT */
/* tools/parity.c: see parity.h.  Exchange format: tests/reference/README.md (INPUT.bin with
 * the header, the initial parameters and the batches; OUTPUT.bin with losses, norms, the
 * step-0 gradients and the final parameters).  Each side of a comparison is a trace: the
 * numbers one implementation produced on the run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/parity.h"

struct trace {
    double loss[PARITY_MAX_STEPS], norm[PARITY_MAX_STEPS]; /* of each step, before its update */
    double loss0, norm0;                                   /* step 0 (forward and backward) */
    float *grads0, *final;                                 /* parameter order, nparam each */
};

static void trace_free(struct trace *t)
{
    free(t->grads0);
    free(t->final);
}

static const char *const metric_names[PARITY_NMETRICS] = {
    "step0_loss", "step0_norm", "step0_grads", "loss", "grad_norm", "update",
};

const char *parity_metric_name(enum parity_metric k)
{
    return metric_names[k];
}

static double rel_diff(double got, double ref)
{
    return isfinite(got) && isfinite(ref) ? fabs(got - ref) / fabs(ref) : INFINITY;
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

/* Adam divides by sqrt(v): for gradients near zero an update is close to +-lr whatever the
 * gradient's last bits, so final parameters are compared through their updates:
 * max |p_got - p_ref| / max |p_ref - p_init| per tensor. */
static double update_err(const float *got, const float *ref, const float *init, size_t n)
{
    double diff = 0, upd = 0;
    for (size_t j = 0; j < n; j++) {
        double d = fabs((double)got[j] - ref[j]), u = fabs((double)ref[j] - init[j]);
        diff = (d > diff || isnan(d)) ? d : diff;
        upd = u > upd ? u : upd;
    }
    return diff / (upd > 1e-30 ? upd : 1e-30);
}

/* The metrics of trace b against reference trace a (parity.h); worst tensors named from m */
static void compare(hx_gpt_t m, const struct trace *a, const struct trace *b, int steps,
                    const float *init, double *d, const char **worst)
{
    memset(d, 0, sizeof(double) * PARITY_NMETRICS);
    d[PARITY_STEP0_LOSS] = rel_diff(b->loss0, a->loss0);
    d[PARITY_STEP0_NORM] = rel_diff(b->norm0, a->norm0);
    for (int k = 0; k < steps; k++) {
        d[PARITY_LOSS] = fmax(d[PARITY_LOSS], rel_diff(b->loss[k], a->loss[k]));
        d[PARITY_NORM] = fmax(d[PARITY_NORM], rel_diff(b->norm[k], a->norm[k]));
    }
    size_t off = 0;
    for (int i = 0; i < hx_gpt_num_param_tensors(m); i++) {
        size_t n = hx_tensor_numel(hx_gpt_param(m, i));
        double g = rel_err(b->grads0 + off, a->grads0 + off, n);
        double u = update_err(b->final + off, a->final + off, init + off, n);
        if (!(g <= d[PARITY_STEP0_GRADS])) {
            d[PARITY_STEP0_GRADS] = g;
            worst[PARITY_STEP0_GRADS] = hx_gpt_param_name(m, i);
        }
        if (!(u <= d[PARITY_UPDATE])) {
            d[PARITY_UPDATE] = u;
            worst[PARITY_UPDATE] = hx_gpt_param_name(m, i);
        }
        off += n;
    }
}

int parity_is_llama(const struct hx_gpt_config *c)
{
    return c->normalization == HX_NORM_RMSNORM && c->swiglu &&
           c->position_embedding == HX_POS_ROPE && c->untie_embeddings && c->disable_bias;
}

static int write_input(const char *path, hx_gpt_t m, const struct hx_optim_config *o,
                       const float *init, size_t nparam, const int32_t *tokens,
                       const int32_t *targets, size_t ntok, int steps)
{
    const struct hx_gpt_config *c = hx_gpt_config_of(m);
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        return -1;
    }
    /* version 1: GPT-2 (gpt_ref.py); version 2 adds Llama's key/value heads, MLP width and
     * RoPE base (llama_ref.py) */
    int llama = parity_is_llama(c);
    int32_t h[32] = { 20261122, llama ? 2 : 1, c->vocab_size, c->max_seq_len, c->num_layers,
                      c->num_heads, c->hidden_size, c->seq_len, c->micro_batch_size,
                      c->num_micro_batches, steps, o->warmup_iters, o->decay_iters,
                      !llama ? 0 : c->num_query_groups ? c->num_query_groups : c->num_heads,
                      !llama ? 0 : c->ffn_hidden_size ? c->ffn_hidden_size
                                                      : 4 * c->hidden_size };
    float hf[16] = { o->lr, o->min_lr, o->beta1, o->beta2, o->eps, o->weight_decay,
                     o->clip_grad, c->ln_eps,
                     !llama ? 0.0f : c->rotary_base != 0 ? c->rotary_base : 10000.0f };
    fwrite(h, sizeof h, 1, f);
    fwrite(hf, sizeof hf, 1, f);
    fwrite(init, sizeof(float), nparam, f);
    fwrite(tokens, sizeof(int32_t), ntok * (size_t)steps, f);
    fwrite(targets, sizeof(int32_t), ntok * (size_t)steps, f);
    return fclose(f);
}

/* The PyTorch trace from OUTPUT.bin (its step 0 is its first step's loss and norm). */
static int read_output(const char *path, struct trace *t, size_t nparam, int steps)
{
    FILE *f = fopen(path, "rb");
    int32_t h[8];
    if (f == NULL || fread(h, sizeof h, 1, f) != 1 || h[0] != 20261123 || h[2] != steps ||
        (size_t)h[3] != nparam) {
        if (f) {
            fclose(f);
        }
        return -1;
    }
    t->grads0 = malloc(nparam * sizeof(float));
    t->final = malloc(nparam * sizeof(float));
    int ok = t->grads0 != NULL && t->final != NULL &&
             fread(t->loss, sizeof(double), (size_t)steps, f) == (size_t)steps &&
             fread(t->norm, sizeof(double), (size_t)steps, f) == (size_t)steps &&
             fread(t->grads0, sizeof(float), nparam, f) == nparam &&
             fread(t->final, sizeof(float), nparam, f) == nparam;
    fclose(f);
    t->loss0 = t->loss[0];
    t->norm0 = t->norm[0];
    return ok ? 0 : -1;
}

/* Copy every tensor of a parameter-ordered state (params or grads) into / out of one vector */
static int flat_io(hx_gpt_t m, hx_tensor_t (*get)(hx_gpt_t, int), float *v, int write)
{
    int ret = HX_OK;
    size_t off = 0;
    for (int i = 0; ret == HX_OK && i < hx_gpt_num_param_tensors(m); i++) {
        hx_tensor_t t = get(m, i);
        ret = write ? hx_tensor_write(t, v + off) : hx_tensor_read(t, v + off);
        off += hx_tensor_numel(t);
    }
    return ret;
}

/* helix's trace on model m from parameters init (Adam moments as m has them: zero) */
static int helix_trace(hx_gpt_t m, int steps, const float *init, size_t nparam,
                       const int32_t *tokens, const int32_t *targets, size_t ntok,
                       struct trace *t)
{
    struct hx_step_result s;
    t->grads0 = malloc(nparam * sizeof(float));
    t->final = malloc(nparam * sizeof(float));
    int ret = t->grads0 != NULL && t->final != NULL
                  ? flat_io(m, hx_gpt_param, (float *)init, 1)
                  : HX_ERR(HX_ENOMEM, "parity: %zu parameters", nparam);
    /* step 0: loss, norm and every gradient before any update */
    ret = ret == HX_OK ? hx_gpt_set_batch(m, tokens, targets) : ret;
    ret = ret == HX_OK ? hx_gpt_forward_backward(m, &s) : ret;
    t->loss0 = s.loss;
    t->norm0 = s.grad_norm;
    ret = ret == HX_OK ? flat_io(m, hx_gpt_grad, t->grads0, 0) : ret;
    for (int k = 0; k < steps && ret == HX_OK; k++) {
        ret = hx_gpt_set_batch(m, tokens + ntok * k, targets + ntok * k);
        ret = ret == HX_OK ? hx_gpt_step(m, k, &s) : ret;
        t->loss[k] = s.loss;
        t->norm[k] = s.grad_norm;
    }
    return ret == HX_OK ? flat_io(m, hx_gpt_param, t->final, 0) : ret;
}

/* helix in the second, equally exact summation order: m's model with one row tile per
 * micro-batch instead of m's split (or one sequence per tile if m already has one tile) */
static int helix_other_order(hx_gpt_t m, const struct hx_optim_config *o, int steps,
                             const float *init, size_t nparam, const int32_t *tokens,
                             const int32_t *targets, size_t ntok, struct trace *t)
{
    struct hx_gpt_config c = *hx_gpt_config_of(m);
    c.tile_seqs = c.tile_seqs == c.micro_batch_size ? 1 : c.micro_batch_size;
    if (c.tile_seqs == hx_gpt_config_of(m)->tile_seqs) {
        return HX_ERR(HX_EINVAL, "parity: one sequence per micro-batch has no second row-tile "
                      "split, so the tolerance rule has no envelope; use micro-batches of 2 or "
                      "more sequences");
    }
    hx_gpt_t m2 = NULL;
    int ret = hx_gpt_build(&m2, &c, o);
    ret = ret == HX_OK ? hx_gpt_realize(m2) : ret;
    if (ret == HX_OK) {
        hx_gpt_init_params(m2, 0); /* zero Adam moments; parameters overwritten from init */
        ret = helix_trace(m2, steps, init, nparam, tokens, targets, ntok, t);
    }
    hx_gpt_destroy(m2);
    return ret;
}

int parity_run(hx_gpt_t m, const struct hx_optim_config *o, int steps, const int32_t *tokens,
               const int32_t *targets, const char *python, const char *refdir, const char *dir,
               struct parity_result *r)
{
    const struct hx_gpt_config *c = hx_gpt_config_of(m);
    if (!parity_is_llama(c) && !hx_gpt_is_gpt2(c)) {
        return HX_ERR(HX_EINVAL, "parity: the PyTorch references are GPT-2's (gpt_ref.py) and "
                      "Llama-3's (llama_ref.py: RMSNorm, SwiGLU, RoPE, untied, no biases); "
                      "this mix of the Llama switches has neither");
    }
    char script[512];
    snprintf(script, sizeof script, "%s/%s", refdir,
             parity_is_llama(c) ? "llama_ref.py" : "gpt_ref.py");
    size_t ntok = (size_t)c->seq_len * c->micro_batch_size * c->num_micro_batches;
    size_t nparam = hx_gpt_num_params(m);
    char in[512], out[512], cmd[2048];
    memset(r, 0, sizeof *r);
    if (steps < 1 || steps > PARITY_MAX_STEPS) {
        return HX_ERR(HX_EINVAL, "parity: %d steps, expected 1..%d", steps, PARITY_MAX_STEPS);
    }
    r->steps = steps;
    snprintf(in, sizeof in, "%s/parity.in", dir);
    snprintf(out, sizeof out, "%s/parity.out", dir);
    snprintf(cmd, sizeof cmd, "%s %s %s %s", python, script, in, out);
    struct trace torch = { 0 }, helix = { 0 }, other = { 0 };
    float *init = malloc(nparam * sizeof(float));
    int ret = init != NULL ? flat_io(m, hx_gpt_param, init, 0)
                           : HX_ERR(HX_ENOMEM, "parity: %zu parameters", nparam);
    if (ret == HX_OK &&
        (write_input(in, m, o, init, nparam, tokens, targets, ntok, steps) != 0 ||
         system(cmd) != 0 || read_output(out, &torch, nparam, steps) != 0)) {
        ret = HX_ERR(HX_ERUNTIME, "the PyTorch reference did not run: %s", cmd);
    }
    ret = ret == HX_OK ? helix_trace(m, steps, init, nparam, tokens, targets, ntok, &helix) : ret;
    ret = ret == HX_OK ? helix_other_order(m, o, steps, init, nparam, tokens, targets, ntok,
                                           &other)
                       : ret;
    if (ret == HX_OK) {
        const char *unused[PARITY_NMETRICS] = { 0 };
        compare(m, &torch, &helix, steps, init, r->measured, r->worst);
        compare(m, &helix, &other, steps, init, r->envelope, unused);
        int differs = 0;
        for (int k = 0; k < PARITY_NMETRICS; k++) {
            differs |= r->envelope[k] != 0;
            r->tolerance[k] = PARITY_K * fmax(r->envelope[k], PARITY_FLOOR);
            double ratio = r->measured[k] / r->tolerance[k];
            r->worst_ratio = ratio > r->worst_ratio || isnan(ratio) ? ratio : r->worst_ratio;
        }
        if (!differs) {
            ret = HX_ERR(HX_ERUNTIME, "parity: helix with another row-tile split gave bitwise "
                         "the same numbers, so the tolerance rule's envelope measures nothing");
        }
        for (int k = 0; k < steps; k++) {
            r->loss_helix[k] = helix.loss[k];
            r->loss_torch[k] = torch.loss[k];
            r->norm_helix[k] = helix.norm[k];
            r->norm_torch[k] = torch.norm[k];
        }
        r->step0_loss_err = r->measured[PARITY_STEP0_LOSS];
        r->grad_err = r->measured[PARITY_STEP0_GRADS];
        r->loss_err = r->measured[PARITY_LOSS];
    }
    free(init);
    trace_free(&torch);
    trace_free(&helix);
    trace_free(&other);
    unlink(in);
    unlink(out);
    return ret;
}
