/* SPDX-License-Identifier: MIT */
/* graphs/gpt_internal.h: the GPT model's tensors, shared by gpt.c (forward, build),
 * gpt_backward.c, gpt_params.c and the other gpt_*.c.  Activations are one set reused by every
 * micro-batch (StarPU orders the reuse); backward temporaries alternate between two sets by
 * layer parity so layer l's weight gradients overlap layer l-1's data path.  What the
 * model-agnostic passes read (graph, mesh, pipeline layout, strands, the parameters and
 * their distribution) is the struct hx_model at the head of struct hx_gpt
 * (graphs/model_internal.h): m->base. */
#ifndef HX_GPT_INTERNAL_H
#define HX_GPT_INTERNAL_H

#include <stddef.h>

#include "graphs/model_internal.h"
#include "helix/gpt.h"
#include "helix/model.h"

/* a layer's parameters, in the documented order (GPT-2 has all twelve; hx_gpt_pi says where
 * each is, or that a variant has none) */
enum { P_LN1_W, P_LN1_B, P_QKV_W, P_QKV_B, P_PROJ_W, P_PROJ_B, P_LN2_W, P_LN2_B, P_FC_W, P_FC_B,
       P_FCPROJ_W, P_FCPROJ_B, P_PER_LAYER };

/* Shapes below are those of the serial run.  Under tensor parallelism (tp) the columns of
 * qkv, atty, att_lse, fch, fch_gelu and their gradients are divided by tp; under sequence
 * parallelism the residual stream and LayerNorm tensors (ln*, res_*, d*res*, dln*, dtop,
 * lnf*) hold Ns = N/tp rows (a tile's rows split rank-major), and the *g tensors are their
 * gathered (N,C) versions (aliases without SP). */
struct gpt_layer_acts {
    hx_tensor_t ln1, ln1_mean, ln1_rstd; /* (N,C), (N,1), (N,1) */
    hx_tensor_t ln1g, ln2g;              /* gathered LN outputs the tp GEMMs read (N,C) */
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
    hx_tensor_t dln2_part, dln1_part;    /* tp partial sums before their reduction (N,C) */
    hx_tensor_t dqkv;                    /* (N,3C) */
};

/* What a micro-batch keeps per layer from its forward to its backward, pooled
 * (graphs/gpt_acts.c): any set serves any layer of this stage (same shapes). */
struct gpt_set {
    struct gpt_layer_acts a;             /* dres, dres_mid unused: per layer, not pooled */
    hx_tensor_t out;                     /* the layer's output (N,C) */
};

/* What a micro-batch keeps outside its layers, one slot per micro-batch in flight */
struct gpt_slot {
    hx_tensor_t emb;                     /* chunk 0's input: embedding output, or received */
    hx_tensor_t emb_part;                /* the lookup before its tp reduction (alias of emb
                                          * without SP) */
    hx_tensor_t in2;                     /* chunk 1's input (folded pipeline), received */
    hx_tensor_t lnf, lnf_mean, lnf_rstd, lnfg, logits, losses, xent_lse;
};

struct hx_gpt {
    /* first, so hx_gpt_of gets the model back from what a pass hands its emitters: the graph
     * g, mesh, par, Ml, the pipeline layout (nvs, Lc, nchunks, cv, cvn, clo, chi,
     * first_stage, last_stage), strands, L, the parameters as the passes see them (nparams,
     * spec, pd, units, params, grads, adam_m, adam_v, pfull, gfull, mbg, gfinal), loss_sum,
     * gnorm_sumsq and the records of the schedule and distribution passes */
    struct hx_model base;
    struct hx_gpt_config cfg;
    struct hx_optim_config opt;
    int N;                               /* rows per micro-batch = B*T */
    int Ns;                              /* rows of a sequence shard: N/tp with SP, else N */
    int V;                               /* this rank's vocabulary shard: V/tp (the grid's Gx) */
    int Cy;                              /* this rank's columns of the residual stream: C, or
                                          * C/Gy under --tp-grid */
    int nslots;                          /* micro-batches in flight */
    struct gpt_slot *slots;
    /* the pool of layer sets: set_of[mb * L + l] is the set micro-batch mb's layer l uses
     * (-1: none now); named[l] counts the sets first used by layer l (for their names) */
    struct gpt_set *sets;
    int nsets, cap_sets, *free_sets, nfree, *set_of, *named, live_sets, peak_sets;
    /* this rank's widths (tensor parallelism divides each): attention heads and key/value
     * heads, qkv's columns (NH + 2 G) hs / tp, the MLP's fc outputs (2F with SwiGLU, else F)
     * / tp and its activation's F / tp */
    int heads, kv_heads, qkv_cols, fc_cols, ffn_cols;
    float rope_base;                     /* RoPE's base, resolved (cfg keeps 0 for 10000) */
    /* where the variant's parameters are (graphs/gpt_spec.c): parameter k (P_*) of layer l is
     * pix[l * P_PER_LAYER + k]; -1 where there is none (biases under --disable-bias-linear,
     * norm shifts under RMSNorm, wpe under RoPE, head_w when tied) */
    int *pix;
    int p_wte, p_wpe, p_lnf_w, p_lnf_b, p_head;
    /* --recompute-activations (graphs/gpt_recompute.c): recompute is enum hx_recompute;
     * selective drops atty, att_lse, fch_gelu from the sets and works in rc[l % 2]; full
     * keeps each layer's output in its own pool (keep_of[mb * L + l] indexes keeps, -1:
     * none) and drops the rest of the set after the layer's forward */
    int recompute;
    struct gpt_layer_acts rc[2];
    hx_tensor_t *keeps;
    int nkeeps, cap_keeps, *free_keeps, nfree_keeps, *keep_of, named_keeps;
    /* the sequence-parallel region: shards of N/tp rows (aliases of the full tensors
     * without SP) and the gathered full tensors the tensor-parallel GEMMs read */
    hx_tensor_t emb_part;                /* vocab-parallel embedding before its sum (N,C) */
    hx_tensor_t branch_s;                /* a branch's output after its tp reduction */
    hx_tensor_t lnfg;                    /* gathered final LN output (N,C) */
    hx_tensor_t dlnf_part;               /* head's partial input gradient (N,C) */
    hx_tensor_t dy_full, dmid_full;      /* gathered block-output and mid gradients (N,C) */
    hx_tensor_t xent_stats, xent_all;    /* vocab-parallel loss: (N,2), (tp*N,2) */
    hx_tensor_t *tokens, *targets;       /* per micro-batch (N,1) i32 */
    /* the micro-batch being emitted (hx_gpt_use_mb): its slot's tensors, its layers' sets
     * (layers[l], res_out[l]: output of layer l) and the per-layer gradients */
    hx_tensor_t emb, in2;
    hx_tensor_t *res_out;
    struct gpt_layer_acts *layers;
    hx_tensor_t *dres, *dres_mid;        /* [L]: gradients of layer l's input and middle */
    struct gpt_bwd_temps bwd[2];
    hx_tensor_t branch_out;              /* projection outputs before the residual add (N,C) */
    hx_tensor_t lnf, lnf_mean, lnf_rstd, logits, losses, xent_lse, dlnf;
    hx_tensor_t dtop;                    /* gradient of the last layer's output (N,C) */
};

/* The GPT model a pass's struct hx_model belongs to (base is its first member) */
static inline struct hx_gpt *hx_gpt_of(struct hx_model *b)
{
    return (struct hx_gpt *)((char *)b - offsetof(struct hx_gpt, base));
}

/* graphs/gpt_spec.c: base.spec[], base.nparams and the indices above, in the documented
 * order */
void hx_gpt_param_specs(struct hx_gpt *m);
/* Parameter k (P_*) of layer l: its index, or -1 */
static inline int hx_gpt_pi(const struct hx_gpt *m, int l, int k)
{
    return m->pix[l * P_PER_LAYER + k];
}
/* T[i] of a per-parameter array (pfull, gfull, ...), NULL for an absent parameter (i < 0) */
static inline hx_tensor_t hx_gpt_pt(hx_tensor_t *T, int i)
{
    return i >= 0 ? T[i] : NULL;
}

/* graphs/gpt_blocks.c: the pieces the Llama settings switch; norms take parameter indices
 * (wi, bi: bi unused by RMSNorm) */
void hx_gpt_norm_fwd(struct hx_gpt *m, hx_tensor_t out, hx_tensor_t mean, hx_tensor_t rstd,
                     hx_tensor_t x, int wi, int bi);
void hx_gpt_add_norm_fwd(struct hx_gpt *m, hx_tensor_t sum, hx_tensor_t out, hx_tensor_t mean,
                         hx_tensor_t rstd, hx_tensor_t a, hx_tensor_t b, int wi, int bi);
void hx_gpt_norm_bwd_data(struct hx_gpt *m, hx_tensor_t dinp, hx_tensor_t dout, hx_tensor_t inp,
                          hx_tensor_t mean, hx_tensor_t rstd, hx_tensor_t resid, int wi);
void hx_gpt_norm_bwd_weight(struct hx_gpt *m, hx_tensor_t dout, hx_tensor_t inp,
                            hx_tensor_t mean, hx_tensor_t rstd, int wi, int bi);
void hx_gpt_rope_fwd(struct hx_gpt *m, hx_tensor_t qkv);
void hx_gpt_attention_fwd(struct hx_gpt *m, hx_tensor_t out, hx_tensor_t lse, hx_tensor_t qkv);
void hx_gpt_attention_bwd(struct hx_gpt *m, hx_tensor_t dqkv, hx_tensor_t qkv, hx_tensor_t out,
                          hx_tensor_t dout, hx_tensor_t lse);
void hx_gpt_mlp_in_fwd(struct hx_gpt *m, int l, hx_tensor_t fch, hx_tensor_t act, hx_tensor_t x);
void hx_gpt_mlp_act_fwd(struct hx_gpt *m, hx_tensor_t act, hx_tensor_t fch);
void hx_gpt_mlp_act_bwd(struct hx_gpt *m, hx_tensor_t dfch, hx_tensor_t fch, hx_tensor_t dact);

/* graphs/gpt_acts.c: activation tensors (N rows; sequence shards; the full companion of a
 * shard under SP), the pool of layer sets and the per-micro-batch slots */
hx_tensor_t hx_gpt_act(struct hx_gpt *m, const char *name, int cols);
hx_tensor_t hx_gpt_actf(struct hx_gpt *m, int cols, const char *fmt, int l);
hx_tensor_t hx_gpt_actf_s(struct hx_gpt *m, int cols, const char *fmt, int l);
hx_tensor_t hx_gpt_full_of(struct hx_gpt *m, hx_tensor_t s, const char *suffix);
void hx_gpt_make_activations(struct hx_gpt *m);
void hx_gpt_free_acts(struct hx_gpt *m);
void hx_gpt_take_layer(struct hx_gpt *m, int mb, int l); /* a set for (mb, l), if none yet */
void hx_gpt_give_layer(struct hx_gpt *m, int mb, int l); /* back to the pool */
void hx_gpt_use_mb(struct hx_gpt *m, int mb);            /* the model's fields show mb's */

/* graphs/gpt.c, graphs/gpt_backward.c: one chunk's forward or backward of a micro-batch in
 * pieces, so two can be interleaved layer by layer (strands): begin (input), each layer
 * (forward lo..hi-1, backward hi-1..lo), end (output).  The schedule pass calls them in its
 * order through hx_gpt_model_ops (graphs/gpt_model.c); nothing else calls them. */
void hx_gpt_forward_begin(struct hx_gpt *m, int mb, int c);
void hx_gpt_forward_layer(struct hx_gpt *m, int mb, int c, int l);
void hx_gpt_layer_to_gelu(struct hx_gpt *m, int l, hx_tensor_t x); /* ln1 .. GELU of layer l */
void hx_gpt_forward_end(struct hx_gpt *m, int mb, int c);
void hx_gpt_backward_begin(struct hx_gpt *m, int mb, int c);
void hx_gpt_backward_layer(struct hx_gpt *m, int mb, int c, int l);
/* graphs/gpt_recompute.c */
void hx_gpt_recompute_tensors(struct hx_gpt *m);           /* rc scratch, keep pool */
void hx_gpt_recompute_forward_done(struct hx_gpt *m, int mb, int l); /* full: drop the set */
void hx_gpt_recompute_layer(struct hx_gpt *m, int mb, int c, int l);  /* before l's backward */
void hx_gpt_recompute_backward_done(struct hx_gpt *m, int mb, int l);
void hx_gpt_take_keep(struct hx_gpt *m, int mb, int l);
void hx_gpt_backward_end(struct hx_gpt *m, int mb, int c);
/* The loss of the logits (with @p grad, the logits become their gradient) */
void hx_gpt_emit_loss(struct hx_gpt *m, hx_tensor_t targets, int grad);
/* graphs/gpt_model.c: the chunk emitters above and the training loss (hx_gpt_emit_loss of
 * the micro-batch's targets, with the gradient) as struct hx_model_ops, for the schedule
 * pass (graphs/schedule.c); hx_gpt_build_parallel sets base.ops to it */
extern const struct hx_model_ops hx_gpt_model_ops;
/* graphs/gpt.c: the channels of the edge v -> v+1 */
int hx_gpt_edge_channel(const struct hx_gpt *m, int v, int backward);

#endif /* HX_GPT_INTERNAL_H */
