/* SPDX-License-Identifier: MIT */
/* codelets/adamw.c: one AdamW step (torch.optim.AdamW semantics) on one parameter tile, with
 * the global-norm clip factor min(1, max_norm / (sqrt(gnorm_sumsq) + 1e-6)) applied to the
 * gradient (torch.nn.utils.clip_grad_norm_).  param, grad, m, v: n floats, contiguous;
 * gnorm_sumsq (1,1) f64 is the squared global gradient norm reduced by gradnorm.c.
 * Device form: codelets/kernels/adamw.cl, with the clip factor and bias corrections from
 * hx_adamw_scalars below (codelets/adamw.h), as the CPU's.
 * Reference: codelets/ref/adamw_ref.c.  Test: tests/codelets/adamw.c. */
#include <math.h>

#include "codelets/adamw.h"
#include "codelets/codelets.h"
#include "codelets/cpu.h"
#include "codelets/vecmath.h"

void hx_adamw_bias_corrections(float b1, float b2, int t, float *rbc1, float *rbc2)
{
    /* in double: 1 - b2^t for b2 = 0.999 and small t is a difference of nearly equal numbers */
    *rbc1 = (float)(1.0 / (1.0 - pow((double)b1, t)));
    *rbc2 = (float)(1.0 / (1.0 - pow((double)b2, t)));
}

/* g = clip_coef grad;  param *= 1 - lr wd;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
 * param -= lr (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps).  Decay comes first and uses the
 * old param (decoupled weight decay), and eps is added after the square root, as PyTorch. */
HX_VECTOR_CLONES
void hx_cpu_adamw(float *param, float *m, float *v, const float *grad, long n, float lr,
                  float b1, float b2, float eps, float wd, float clip_coef, int t)
{
    float rbc1, rbc2;
    hx_adamw_bias_corrections(b1, b2, t, &rbc1, &rbc2);
    for (long i = 0; i < n; i++) {
        float g = clip_coef * grad[i];
        float mi = b1 * m[i] + (1.0f - b1) * g;
        float vi = b2 * v[i] + (1.0f - b2) * g * g;
        m[i] = mi;
        v[i] = vi;
        /* p (1 - lr wd) - lr u  ==  p - lr (wd p + u): the whole step is formed first and
         * rounded into p once, instead of rounding 1 - lr wd (~1e-4 away from 1) and then p */
        float u = (mi * rbc1) / (sqrtf(vi * rbc2) + eps);
        param[i] -= lr * (wd * param[i] + u);
    }
}

int hx_adamw_scalars(const struct hx_adamw_args *a, double sumsq, struct hx_adamw_scalars *s)
{
    HX_ASSERT(a->t >= 1, "adamw: step t = %d, must be 1-based", a->t);
    double clip = 1.0;
    if (!isfinite(sumsq)) {
        /* refuse to step, clipping or not: every AdamW task of the step reads the same norm,
         * so no parameter moves, and a checkpoint saved later still holds finite values */
        return hx_task_error_at(__FILE__, __LINE__, "adamw", HX_ENONFINITE,
                                "step %d: the gradient norm is not finite (squared %g); the "
                                "update was not applied", a->t, sumsq);
    }
    if (a->max_norm > 0.0f) {
        double c = (double)a->max_norm / (sqrt(sumsq) + 1e-6);
        clip = c < 1.0 ? c : 1.0;
    }
    s->clip_coef = (float)clip;
    hx_adamw_bias_corrections(a->beta1, a->beta2, a->t, &s->rbc1, &s->rbc2);
    return HX_OK;
}

/* buffers: param, grad, m, v, gnorm_sumsq */
static void adamw_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_adamw_args *a = &node->args.adamw;
    if (hx_run_failed()) {
        return;
    }
    /* the tile is updated as one flat array: every buffer contiguous and of the same size */
    long n = (long)HX_BUF_ROWS(buffers, 0) * HX_BUF_COLS(buffers, 0);
    for (int i = 0; i < 4; i++) {
        HX_ASSERT(HX_BUF_LD(buffers, i) == HX_BUF_COLS(buffers, i) &&
                      (long)HX_BUF_ROWS(buffers, i) * HX_BUF_COLS(buffers, i) == n,
                  "adamw: buffer %d is (%d,%d) ld %d, expected %ld contiguous elements", i,
                  HX_BUF_ROWS(buffers, i), HX_BUF_COLS(buffers, i), HX_BUF_LD(buffers, i), n);
    }
    struct hx_adamw_scalars sc;
    if (hx_adamw_scalars(a, HX_BUF_F64(buffers, 4)[0], &sc) != HX_OK) {
        return;
    }
    hx_cpu_adamw(HX_BUF_F32(buffers, 0), HX_BUF_F32(buffers, 2), HX_BUF_F32(buffers, 3),
                 HX_BUF_F32(buffers, 1), n, a->lr, a->beta1, a->beta2, a->eps, a->weight_decay,
                 sc.clip_coef, a->t);
}

HX_CODELET_DEV(adamw, "adamw", adamw_cpu);
