/* SPDX-License-Identifier: MIT */
/* tests/graphs/gpt_grad_fd.c: the whole model's backward against finite differences of its
 * own forward, independent of PyTorch.  For one parameter tensor of every kind (embeddings,
 * each weight and bias of a block, final LayerNorm) the coordinate with the largest gradient
 * is perturbed by +-h and (L(p+h) - L(p-h)) / 2h compared with the analytic gradient.  The
 * model runs in fp32, so the loss carries ~1e-7 relative noise: h = 1e-2 gives differences
 * good to ~3e-4 here, and the tolerance is 2e-3 (a wrong or dropped term is off by far more). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/helix.h"
#include "tap.h"

static double loss_of(hx_gpt_t m)
{
    struct hx_step_result r;
    return hx_gpt_forward_backward(m, &r) == HX_OK ? r.loss : NAN;
}

int main(void)
{
    struct hx_gpt_config c = { .vocab_size = 256, .num_layers = 2, .num_heads = 2,
                               .hidden_size = 32, .seq_len = 8, .micro_batch_size = 2,
                               .num_micro_batches = 2 };
    struct hx_optim_config o;
    hx_optim_config_default(&o, 1);
    struct hx_runtime_opts ro;
    hx_runtime_opts_init(&ro);
    ro.workers = 2;
    if (hx_runtime_init(&ro) != HX_OK) {
        tap_skip_all("StarPU did not start");
    }
    hx_gpt_t m;
    if (hx_gpt_build(&m, &c, &o) != HX_OK || hx_gpt_realize(m) != HX_OK) {
        tap_plan(1);
        tap_ok(0, "build");
        return tap_exit();
    }
    hx_gpt_init_params(m, 5);
    /* larger weights than GPT-2's 0.02 so every path carries a visible gradient */
    int nt = hx_gpt_num_param_tensors(m);
    for (int i = 0; i < nt; i++) {
        hx_tensor_t p = hx_gpt_param(m, i);
        hx_tensor_begin_access(p, 'w');
        for (size_t j = 0; j < hx_tensor_numel(p); j++) {
            hx_f32(p)[j] = p->rows > 1 ? hx_f32(p)[j] * 10.0f
                                       : hx_f32(p)[j] + 0.1f * (float)sin((double)j + i);
        }
        hx_tensor_end_access(p);
    }
    int n = c.seq_len * c.micro_batch_size * c.num_micro_batches;
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)n), *tgt = malloc(sizeof(int32_t) * (size_t)n);
    for (int i = 0; i < n; i++) {
        tok[i] = (i * 37 + 11) % 256;
        tgt[i] = (i * 53 + 7) % 256;
    }
    hx_gpt_set_batch(m, tok, tgt);
    tap_plan(nt);
    double base = loss_of(m);
    /* snapshot the gradients before perturbing */
    float **grads = calloc((size_t)nt, sizeof(float *));
    for (int i = 0; i < nt; i++) {
        hx_tensor_t gt = hx_gpt_grad(m, i);
        grads[i] = malloc(hx_tensor_bytes(gt));
        hx_tensor_begin_access(gt, 'r');
        memcpy(grads[i], gt->data, hx_tensor_bytes(gt));
        hx_tensor_end_access(gt);
    }
    const double h = 1e-2;
    for (int i = 0; i < nt; i++) {
        hx_tensor_t p = hx_gpt_param(m, i);
        size_t best = 0, numel = hx_tensor_numel(p);
        for (size_t j = 1; j < numel; j++) {
            if (fabsf(grads[i][j]) > fabsf(grads[i][best])) {
                best = j;
            }
        }
        double lp, lm;
        hx_tensor_begin_access(p, 'w');
        float orig = hx_f32(p)[best];
        hx_f32(p)[best] = (float)(orig + h);
        hx_tensor_end_access(p);
        lp = loss_of(m);
        hx_tensor_begin_access(p, 'w');
        hx_f32(p)[best] = (float)(orig - h);
        hx_tensor_end_access(p);
        lm = loss_of(m);
        hx_tensor_begin_access(p, 'w');
        hx_f32(p)[best] = orig;
        hx_tensor_end_access(p);
        double fd = (lp - lm) / (2 * h), g = grads[i][best];
        double err = fabs(fd - g) / fmax(fabs(g), 1e-3);
        tap_ok(err <= 2e-3, "%s[%zu]: analytic %.6e, finite difference %.6e, rel err %.1e",
               p->name, best, g, fd, err);
    }
    tap_diag("base loss %.6f", base);
    for (int i = 0; i < nt; i++) {
        free(grads[i]);
    }
    free(grads);
    free(tok);
    free(tgt);
    hx_gpt_destroy(m);
    hx_runtime_shutdown();
    return tap_exit();
}
