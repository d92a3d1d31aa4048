/* SPDX-License-Identifier: MIT */
/* codelets/adamw.h: the host side of one AdamW task that every backend shares (internal):
 * the CPU function (codelets/adamw.c) and the device launchers (codelets/opencl/adamw.c,
 * codelets/cuda/adamw.cu) read the reduced squared gradient norm, then take the clip factor
 * and the bias corrections from here, so all of them update with the same three floats and
 * refuse a non-finite norm with the same error. */
#ifndef HX_CODELETS_ADAMW_H
#define HX_CODELETS_ADAMW_H

#include "helix/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

struct hx_adamw_scalars {
    float clip_coef; /* min(1, max_norm / (sqrt(sumsq) + 1e-6)), or 1 when max_norm <= 0 */
    float rbc1;      /* 1 / (1 - beta1^t) */
    float rbc2;      /* 1 / (1 - beta2^t) */
};

/* 1 / (1 - b1^t) and 1 / (1 - b2^t), computed in double and rounded once */
void hx_adamw_bias_corrections(float b1, float b2, int t, float *rbc1, float *rbc2);

/* The scalars of the task with args @p a, given the squared global gradient norm @p sumsq
 * (the f64 gnorm_sumsq buffer).  HX_OK; or, when sumsq is not finite, the task's error
 * HX_ENONFINITE is reported (naming the step) and returned: the caller must not update. */
int hx_adamw_scalars(const struct hx_adamw_args *a, double sumsq, struct hx_adamw_scalars *s);

#ifdef __cplusplus
}
#endif

#endif /* HX_CODELETS_ADAMW_H */
