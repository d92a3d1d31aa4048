/* SPDX-License-Identifier: MIT */
/* tools/parity.h: helix against the independent PyTorch model (tests/reference/gpt_ref.py) on
 * one configuration: the same initial parameters and batches go to both, and the step-0 loss,
 * gradient norm and every gradient, the losses of `steps` AdamW steps, and the final
 * parameters are compared.  Used by tests/graphs/torch_parity.c and by `helix bench`, whose
 * speedups count only when this check passes in the same run. */
#ifndef HX_PARITY_H
#define HX_PARITY_H

#include "helix/helix.h"

#define PARITY_MAX_STEPS 32

struct parity_result {
    int steps;
    double loss_helix[PARITY_MAX_STEPS], loss_torch[PARITY_MAX_STEPS];
    double norm_helix[PARITY_MAX_STEPS], norm_torch[PARITY_MAX_STEPS];
    double step0_loss_err, step0_norm_err;  /* relative errors */
    double grad_err;                        /* worst normwise relative error over tensors */
    const char *grad_worst;                 /* its tensor */
    double loss_err;                        /* worst relative error over the steps' losses */
    double update_err;                      /* worst max|p_helix - p_torch| / max|update| */
    const char *update_worst;
};

/**
 * Run both on model @p m (realized, initialised, built with @p o) for @p steps steps of
 * @p tokens / @p targets (steps x M*B*T each); @p dir holds the exchange files.
 * @return HX_OK, or HX_ERUNTIME when the reference could not run (message printed).
 */
int parity_run(hx_gpt_t m, const struct hx_optim_config *o, int steps, const int32_t *tokens,
               const int32_t *targets, const char *python, const char *script, const char *dir,
               struct parity_result *r);

#endif /* HX_PARITY_H */
