/* SPDX-License-Identifier: MIT */
/* tools/parity.c: see parity.h.  Exchange format: tests/reference/README.md (INPUT.bin with
 * the header, the initial parameters and the batches; OUTPUT.bin with losses, norms, the
 * step-0 gradients and the final parameters). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/parity.h"

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
                       const int32_t *tokens, const int32_t *targets, size_t ntok, int steps)
{
    const struct hx_gpt_config *c = hx_gpt_config_of(m);
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        return -1;
    }
    int32_t h[32] = { 20261122, 1, c->vocab_size, c->max_seq_len, c->num_layers, c->num_heads,
                      c->hidden_size, c->seq_len, c->micro_batch_size, c->num_micro_batches,
                      steps, o->warmup_iters, o->decay_iters };
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
    fwrite(tokens, sizeof(int32_t), ntok * (size_t)steps, f);
    fwrite(targets, sizeof(int32_t), ntok * (size_t)steps, f);
    return fclose(f);
}

struct torch_out {
    double loss[PARITY_MAX_STEPS], norm[PARITY_MAX_STEPS];
    size_t nparam;
    float *grads0, *final;
};

static int read_output(const char *path, struct torch_out *t, size_t nparam, int steps)
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
    t->nparam = nparam;
    t->grads0 = malloc(nparam * sizeof(float));
    t->final = malloc(nparam * sizeof(float));
    int ok = fread(t->loss, sizeof(double), (size_t)steps, f) == (size_t)steps &&
             fread(t->norm, sizeof(double), (size_t)steps, f) == (size_t)steps
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

/* Adam divides by sqrt(v): for gradients near zero an update is close to +-lr whatever the
 * gradient's last bits, so final parameters are compared through their updates:
 * max |p_helix - p_torch| / max |p_torch - p_init| per tensor. */
static double worst_update(hx_gpt_t m, const float *init, const float *final, const char **name)
{
    double worst = 0;
    size_t off = 0;
    for (int i = 0; i < hx_gpt_num_param_tensors(m); i++) {
        hx_tensor_t p = hx_gpt_param(m, i);
        size_t n = hx_tensor_numel(p);
        double diff = 0, upd = 0;
        hx_tensor_begin_access(p, 'r');
        for (size_t j = 0; j < n; j++) {
            double d = fabs((double)hx_f32(p)[j] - final[off + j]);
            double u = fabs((double)final[off + j] - init[off + j]);
            diff = (d > diff || isnan(d)) ? d : diff;
            upd = u > upd ? u : upd;
        }
        hx_tensor_end_access(p);
        double e = diff / (upd > 1e-30 ? upd : 1e-30);
        if (e > worst || isnan(e)) {
            worst = e;
            *name = p->name;
        }
        off += n;
    }
    return worst;
}

int parity_run(hx_gpt_t m, const struct hx_optim_config *o, int steps, const int32_t *tokens,
               const int32_t *targets, const char *python, const char *script, const char *dir,
               struct parity_result *r)
{
    const struct hx_gpt_config *c = hx_gpt_config_of(m);
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
    struct torch_out t = { 0 };
    if (write_input(in, m, o, tokens, targets, ntok, steps) != 0 || system(cmd) != 0 ||
        read_output(out, &t, nparam, steps) != 0) {
        unlink(in);
        unlink(out);
        free(t.grads0);
        free(t.final);
        return HX_ERR(HX_ERUNTIME, "the PyTorch reference did not run: %s", cmd);
    }
    /* step 0: loss, norm and every gradient before any update */
    struct hx_step_result s;
    int ret = hx_gpt_set_batch(m, tokens, targets);
    ret = ret == HX_OK ? hx_gpt_forward_backward(m, &s) : ret;
    r->step0_loss_err = fabs(s.loss - t.loss[0]) / fabs(t.loss[0]);
    r->step0_norm_err = fabs(s.grad_norm - t.norm[0]) / t.norm[0];
    r->grad_err = worst_tensor(m, hx_gpt_grad, t.grads0, &r->grad_worst);
    /* the AdamW steps, from a copy of the initial parameters */
    float *init = malloc(nparam * sizeof(float));
    for (int i = 0, off = 0; init != NULL && i < hx_gpt_num_param_tensors(m); i++) {
        hx_tensor_read(hx_gpt_param(m, i), init + off);
        off += (int)hx_tensor_numel(hx_gpt_param(m, i));
    }
    for (int k = 0; k < steps && ret == HX_OK; k++) {
        ret = hx_gpt_set_batch(m, tokens + ntok * k, targets + ntok * k);
        ret = ret == HX_OK ? hx_gpt_step(m, k, &s) : ret;
        r->loss_helix[k] = s.loss;
        r->loss_torch[k] = t.loss[k];
        r->norm_helix[k] = s.grad_norm;
        r->norm_torch[k] = t.norm[k];
        double e = fabs(s.loss - t.loss[k]) / fabs(t.loss[k]);
        r->loss_err = e > r->loss_err || isnan(e) ? e : r->loss_err;
    }
    if (ret == HX_OK && init != NULL) {
        r->update_err = worst_update(m, init, t.final, &r->update_worst);
    }
    free(init);
    free(t.grads0);
    free(t.final);
    unlink(in);
    unlink(out);
    return ret;
}
