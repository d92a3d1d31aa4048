/* SPDX-License-Identifier: MIT */
/* codelets/ref/adamw_ref.c: reference optimizer pieces: gradient sum of squares, global-norm
 * clip coefficient (torch.nn.utils.clip_grad_norm_), one AdamW step (torch.optim.AdamW,
 * decoupled weight decay, bias correction, 1-based t) and the warmup + cosine learning rate.
 * param, m, v, grad (n); the step updates param, m, v in place.
 * Test: tests/ref/hand_values.c (one step by hand, clip coef, lr at warmup/peak/end). */
#include <math.h>

#include "codelets/ref/ref.h"

double hx_ref_sumsq(const double *x, int n)
{
    double acc = 0.0;
    for (int i = 0; i < n; i++) {
        acc += x[i] * x[i];
    }
    return acc;
}

/* PyTorch: clip_coef = max_norm / (total_norm + 1e-6), clamped to at most 1 */
double hx_ref_clip_coef(double sumsq, double max_norm)
{
    if (max_norm <= 0.0) {
        return 1.0;
    }
    return fmin(1.0, max_norm / (sqrt(sumsq) + 1e-6));
}

void hx_ref_adamw(double *param, double *m, double *v, const double *grad, int n, double lr,
                  double b1, double b2, double eps, double wd, double clip_coef, int t)
{
    double bc1 = 1.0 - pow(b1, t);
    double bc2 = 1.0 - pow(b2, t);
    for (int i = 0; i < n; i++) {
        double g = clip_coef * grad[i];
        /* decoupled weight decay acts on the parameter before the Adam update */
        param[i] *= 1.0 - lr * wd;
        m[i] = b1 * m[i] + (1.0 - b1) * g;
        v[i] = b2 * v[i] + (1.0 - b2) * g * g;
        double mhat = m[i] / bc1;
        double vhat = v[i] / bc2;
        param[i] -= lr * mhat / (sqrt(vhat) + eps);
    }
}

/* Linear warmup over `warmup` steps to max_lr, then half a cosine down to min_lr at
 * decay_iters, flat after.  max(1, ...) keeps decay_iters <= warmup from dividing by zero. */
double hx_ref_lr(int s, double max_lr, double min_lr, int warmup, int decay_iters)
{
    if (s < warmup) {
        return max_lr * (s + 1) / warmup;
    }
    int span = decay_iters - warmup > 1 ? decay_iters - warmup : 1;
    double ratio = fmin(1.0, (double)(s - warmup) / span);
    return min_lr + (max_lr - min_lr) * 0.5 * (1.0 + cos(3.14159265358979323846 * ratio));
}
