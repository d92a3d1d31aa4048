/* SPDX-License-Identifier: MIT */
/* graphs/gpt_internal.h: the GPT model's tensors, shared by gpt.c (forward, build),
 * gpt_backward.c, optimizer.c and gpt_params.c.  Activations are one set reused by every
 * micro-batch (StarPU orders the reuse); backward temporaries alternate between two sets by
 * layer parity so layer l's weight gradients overlap layer l-1's data path. */
#ifndef HX_GPT_INTERNAL_H
#define HX_GPT_INTERNAL_H

#include "helix/gpt.h"

/* per-layer parameter offsets, in the documented order */
enum { P_LN1_W, P_LN1_B, P_QKV_W, P_QKV_B, P_PROJ_W, P_PROJ_B, P_LN2_W, P_LN2_B, P_FC_W, P_FC_B,
       P_FCPROJ_W, P_FCPROJ_B, P_PER_LAYER };
#define P_WTE 0
#define P_WPE 1
#define P_LAYER(l, k) (2 + (l) * P_PER_LAYER + (k))

struct gpt_layer_acts {
    hx_tensor_t ln1, ln1_mean, ln1_rstd; /* (N,C), (N,1), (N,1) */
    hx_tensor_t qkv, atty, att_lse;      /* (N,3C), (N,C), (N,NH) */
    hx_tensor_t res_mid;                 /* x + attention branch (N,C) */
    hx_tensor_t ln2, ln2_mean, ln2_rstd;
    hx_tensor_t fch, fch_gelu;           /* (N,4C) */
    hx_tensor_t dres;                    /* gradient of the layer's input (N,C) */
    hx_tensor_t dres_mid;                /* gradient of res_mid (N,C) */
};

struct gpt_bwd_temps {                   /* two sets, by layer parity */
    hx_tensor_t dfch_gelu, dfch;         /* (N,4C) */
    hx_tensor_t dln2, datty, dln1;       /* (N,C) */
    hx_tensor_t dqkv;                    /* (N,3C) */
};

struct hx_gpt {
    struct hx_gpt_config cfg;
    struct hx_optim_config opt;
    hx_graph_t g;
    int N;                               /* rows per micro-batch = B*T */
    int nparams;
    hx_tensor_t *params, *grads, *adam_m, *adam_v;
    hx_tensor_t *tokens, *targets;       /* per micro-batch (N,1) i32 */
    hx_tensor_t emb;                     /* res[0]: embedding output (N,C) */
    hx_tensor_t *res_out;                /* res_out[l]: output of layer l (N,C) */
    struct gpt_layer_acts *layers;
    struct gpt_bwd_temps bwd[2];
    hx_tensor_t branch_out;              /* projection outputs before the residual add (N,C) */
    hx_tensor_t lnf, lnf_mean, lnf_rstd, logits, losses, xent_lse, dlnf;
    hx_tensor_t dtop;                    /* gradient of the last layer's output (N,C) */
    hx_tensor_t loss_sum, gnorm_sumsq;   /* (1,1) f64 */
    int first_opt_node;
    int zero_loss_node;                  /* the fill of loss_sum */
    int fwd0_begin, fwd0_end;            /* micro-batch 0's forward up to the logits */
    int eval_begin;                      /* evaluation's loss nodes: [eval_begin, nnodes) */
};

/* graphs/gpt_backward.c: the backward of micro-batch mb (after its forward) */
void hx_gpt_emit_backward(struct hx_gpt *m, int mb);
/* graphs/optimizer.c: zero the gradients and accumulators; the norm; AdamW for every param */
void hx_gpt_emit_zero(struct hx_gpt *m);
void hx_gpt_emit_grad_norm(struct hx_gpt *m);
void hx_gpt_emit_adamw(struct hx_gpt *m);

#endif /* HX_GPT_INTERNAL_H */
