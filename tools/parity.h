/* SPDX-License-Identifier: MIT */
/* tools/parity.h: helix against an independent PyTorch model (tests/reference/gpt_ref.py for
 * GPT-2, llama_ref.py for the Llama settings) on one configuration: the same initial parameters and batches go to both, and the step-0 loss,
 * gradient norm and every gradient, the losses and gradient norms of `steps` AdamW steps, and
 * the final parameters are compared.  Each difference is judged by the tolerance rule of every
 * parity test (tests/README.md, "Parity tolerances"): the envelope E is the difference between
 * helix and helix in a second, equally exact summation order (one row tile per micro-batch),
 * and a difference passes when it is <= PARITY_K x max(E, PARITY_FLOOR).  Used by
 * tests/graphs/torch_parity.c and by `helix bench`, whose speedups count only when this check
 * passes in the same run. */
#ifndef HX_PARITY_H
#define HX_PARITY_H

#include "helix/helix.h"

/* The rule's two constants, also read by tests/mpi/parity_lib.sh (one definition) */
#define PARITY_K 50
#define PARITY_FLOOR 4.76837158203125e-07 /* 4 float32 ulps of 1: 4 x 2^-23 */

#define PARITY_MAX_STEPS 32

/* The metrics the rule judges, each a difference of run b from reference run a */
enum parity_metric {
    PARITY_STEP0_LOSS,  /* relative */
    PARITY_STEP0_NORM,  /* relative, the global gradient norm */
    PARITY_STEP0_GRADS, /* worst tensor: max |g_b - g_a| / max |g_a| */
    PARITY_LOSS,        /* worst relative over the steps */
    PARITY_NORM,        /* worst relative over the steps */
    PARITY_UPDATE,      /* worst tensor: max |p_b - p_a| / max |p_a - p_init| */
    PARITY_NMETRICS
};

struct parity_result {
    int steps;
    double loss_helix[PARITY_MAX_STEPS], loss_torch[PARITY_MAX_STEPS];
    double norm_helix[PARITY_MAX_STEPS], norm_torch[PARITY_MAX_STEPS];
    double measured[PARITY_NMETRICS];   /* helix against torch */
    double envelope[PARITY_NMETRICS];   /* E: helix against helix in the second order */
    double tolerance[PARITY_NMETRICS];  /* PARITY_K x max(E, PARITY_FLOOR) */
    const char *worst[PARITY_NMETRICS]; /* the worst tensor, where a metric has one */
    double worst_ratio;                 /* the largest measured / tolerance */
    /* kept for `helix bench`'s report */
    double step0_loss_err, grad_err, loss_err;
};

/** The metric's name in messages and parity-ratio lines ("step0_loss", ...). */
const char *parity_metric_name(enum parity_metric k);

/**
 * Run both on model @p m (realized, initialised, built with @p o) for @p steps steps of
 * @p tokens / @p targets (steps x M*B*T each), and helix once more on a copy of @p m in the
 * second summation order; @p dir holds the exchange files.  @p refdir is tests/reference:
 * the model's architecture picks gpt_ref.py or llama_ref.py there.
 * @return HX_OK (whether the rule passed: r->worst_ratio <= 1), HX_EINVAL for an
 *         architecture neither reference has, or HX_ERUNTIME when the reference could not
 *         run, or a helix error (message printed).
 */
int parity_run(hx_gpt_t m, const struct hx_optim_config *o, int steps, const int32_t *tokens,
               const int32_t *targets, const char *python, const char *refdir, const char *dir,
               struct parity_result *r);
/** 1 when @p c is Llama-3's architecture (every Llama switch of helix/gpt.h on) */
int parity_is_llama(const struct hx_gpt_config *c);

#endif /* HX_PARITY_H */
