/* SPDX-License-Identifier: MIT */
/**
 * @file helix/gpt.h
 * @brief A GPT-2 style model as one training-step graph: token + learned position
 *        embeddings, pre-LayerNorm blocks (causal multi-head self-attention, GELU MLP), final
 *        LayerNorm, LM head tied to the token embedding, softmax cross-entropy, the full
 *        backward with gradient accumulation over micro-batches, global-norm clipping and
 *        AdamW with decoupled weight decay under a warmup + cosine learning rate.
 *
 * Shapes: V vocabulary, C hidden, L layers, NH heads (hs = C/NH), T sequence length,
 * B sequences per micro-batch, M micro-batches per step, N = B*T rows per micro-batch.
 * Parameters, in the order of hx_gpt_param() (and of checkpoints and tests/reference):
 *   wte (V,C), wpe (maxT,C), then per layer ln1_w, ln1_b (1,C), qkv_w (3C,C), qkv_b (1,3C),
 *   proj_w (C,C), proj_b (1,C), ln2_w, ln2_b (1,C), fc_w (4C,C), fc_b (1,4C),
 *   fcproj_w (C,4C), fcproj_b (1,C); then lnf_w, lnf_b (1,C).
 * The Llama settings (struct hx_gpt_config, Megatron's flags) keep this order and drop or
 * reshape some (graphs/gpt_spec.c): no wpe with RoPE, no norm shifts with RMSNorm, no biases
 * with --disable-bias-linear, qkv_w (C + 2 G hs, C) with G key/value heads, fc_w (2F, C)
 * with SwiGLU and fcproj_w (C, F), and head_w (V,C) last when the output layer is untied.
 */
#ifndef HELIX_GPT_H
#define HELIX_GPT_H

#include <stddef.h>
#include <stdint.h>

#include "helix/graph.h"
#include "helix/mesh.h"
#include "helix/model.h"

#ifdef __cplusplus
extern "C" {
#endif

struct hx_gpt_config {
    int vocab_size;        /**< V (256 for bytes) */
    int max_seq_len;       /**< rows of the position embedding; 0 = seq_len */
    int num_layers;        /**< L */
    int num_heads;         /**< NH */
    int hidden_size;       /**< C */
    int seq_len;           /**< T */
    int micro_batch_size;  /**< B sequences per micro-batch */
    int num_micro_batches; /**< M micro-batches accumulated per step */
    int tile_seqs;         /**< sequences per row tile; 0 = auto (<= 1024 rows, >= 2 tiles) */
    int attn_block;        /**< attention query/key block; 0 = 64 */
    float ln_eps;          /**< LayerNorm (or RMSNorm) epsilon; 0 = 1e-5 */
    /* The Llama family as Megatron-LM builds it: its GPT model with these switches (the
     * flags of the same names; all 0 is GPT-2).  Llama-3: RMSNorm, SwiGLU, RoPE, grouped-
     * query attention, an untied output layer, no biases. */
    int normalization;     /**< enum hx_normalization */
    int swiglu;            /**< 1: the MLP is fcproj(silu(gate) * up), fc = [gate | up] */
    int ffn_hidden_size;   /**< F, the MLP's inner width; 0 = 4C */
    int position_embedding; /**< enum hx_position_embedding */
    float rotary_base;     /**< RoPE's base; 0 = 10000 (Llama-3: 500000) */
    int num_query_groups;  /**< key/value heads of grouped-query attention; 0 = num_heads */
    int untie_embeddings;  /**< 1: an output layer (V,C) of its own, not wte */
    int disable_bias;      /**< 1: no biases in the linear layers (--disable-bias-linear) */
};

/** --normalization */
enum hx_normalization { HX_NORM_LAYERNORM = 0, HX_NORM_RMSNORM = 1 };
/** --position-embedding-type */
enum hx_position_embedding { HX_POS_LEARNED = 0, HX_POS_ROPE = 1 };

/** 1 when no Llama setting is on: GPT-2's architecture (F = 4C and as many key/value heads
 *  as heads, given or left 0). */
int hx_gpt_is_gpt2(const struct hx_gpt_config *c);

/** Check a configuration; on error prints what is wrong and how to fix it. */
int hx_gpt_config_check(const struct hx_gpt_config *c);
/** --tp-comm-overlap's conditions on @p mesh (tp > 1 with sequence parallelism; whole row
 *  tiles dealt out to the tp ranks); @p quiet: no message.  hx_gpt_build_parallel checks
 *  them too. */
struct hx_mesh;
int hx_gpt_check_tp_overlap(const struct hx_gpt_config *cfg, const struct hx_mesh *mesh,
                            int quiet);

struct hx_gpt;
typedef struct hx_gpt *hx_gpt_t;

/**
 * Build the graph of one rank of a distributed training step.  The configuration describes
 * the whole job: num_micro_batches is the global count, shared by the dp ranks (M/dp each);
 * tensors are this rank's shards (tensor parallel, sequence parallel, AMSP factors) and the
 * graph holds the collectives between them.  With @p p NULL or a serial mesh it is
 * hx_gpt_build.  @return HX_OK, HX_EINVAL or HX_EUNSUPPORTED (message already printed).
 */
int hx_gpt_build_parallel(hx_gpt_t *m, const struct hx_gpt_config *c,
                          const struct hx_optim_config *o, const struct hx_parallel_config *p);

/**
 * Build the graph of one training step (no memory is allocated, StarPU is not needed).
 * @return HX_OK or HX_EINVAL (message already printed).
 */
int hx_gpt_build(hx_gpt_t *m, const struct hx_gpt_config *c, const struct hx_optim_config *o);
void hx_gpt_destroy(hx_gpt_t m);

/** The parameters of a model of configuration @p c in the order above, as the parallel
 *  passes see them (helix/model.h): fills @p s unless NULL and returns their number.  A pure
 *  function of the configuration, so a checkpoint's header can be checked against its
 *  records before any model exists. */
struct hx_param_spec;
int hx_gpt_param_table(const struct hx_gpt_config *c, struct hx_param_spec *s);

/** The step graph (read-only use: planners, DOT export, tests). */
/** The model as the parallel passes see it (helix/model.h): its parameters' shards and
 *  states, which checkpoints read and write through. */
hx_model_t hx_gpt_model(hx_gpt_t m);
hx_graph_t hx_gpt_graph(hx_gpt_t m);
const struct hx_gpt_config *hx_gpt_config_of(hx_gpt_t m);
/** Number of parameter tensors and of parameter elements (wte counted once). */
int hx_gpt_num_param_tensors(hx_gpt_t m);
size_t hx_gpt_num_params(hx_gpt_t m);  /* of the whole (serial) model */
/** Parameter i, its gradient and Adam moments, in the documented order. */
hx_tensor_t hx_gpt_param(hx_gpt_t m, int i);
hx_tensor_t hx_gpt_grad(hx_gpt_t m, int i);
hx_tensor_t hx_gpt_adam_m(hx_gpt_t m, int i);
hx_tensor_t hx_gpt_adam_v(hx_gpt_t m, int i);
/** Nodes [0, n) compute the gradients; then come the optimizer's, and last the evaluation
 *  loss nodes that hx_gpt_eval adds to micro-batch 0's forward (never part of a step). */
int hx_gpt_first_optimizer_node(hx_gpt_t m);

/** Allocate and register every tensor.  @note after hx_runtime_init. */
int hx_gpt_realize(hx_gpt_t m);
/** GPT-2 initialisation from @p seed: N(0, 0.02) weights, residual projections
 *  N(0, 0.02/sqrt(2L)), zero biases, unit LayerNorm weights; Adam moments zeroed. */
void hx_gpt_init_params(hx_gpt_t m, uint64_t seed);

/**
 * Copy the step's tokens and targets (M*B*T int32 each, micro-batch major, the whole global
 * batch: a data-parallel rank takes its own M/dp micro-batches) into the graph.
 * Every id is checked against V first.  @return HX_OK or HX_EINVAL.
 */
int hx_gpt_set_batch(hx_gpt_t m, const int32_t *tokens, const int32_t *targets);

/**
 * One training step: forward and backward of every micro-batch, clipping and AdamW with the
 * learning rate of 0-based @p step.  Waits for the tasks, then reads loss and norm back.
 * @return HX_OK, a task's failure status, or HX_ENONFINITE when the loss or the gradient
 *         norm is NaN/Inf.  With clipping on (clip_grad > 0) AdamW refuses a non-finite norm
 *         and leaves every parameter as it was; without clipping, reload a checkpoint.
 */
int hx_gpt_step(hx_gpt_t m, int step, struct hx_step_result *r);
/** Forward and backward only (gradients of the batch, no update). */
int hx_gpt_forward_backward(hx_gpt_t m, struct hx_step_result *r);

/**
 * Loss of one micro-batch without touching gradients or parameters (validation): runs only
 * the forward of micro-batch 0 on @p tokens / @p targets (B*T each, ids checked).
 */
int hx_gpt_eval(hx_gpt_t m, const int32_t *tokens, const int32_t *targets, double *loss);
/** After hx_gpt_eval: copy the logits (B*T, V) of that micro-batch to @p dst. */
int hx_gpt_read_logits(hx_gpt_t m, float *dst);

/* enum hx_state_kind: helix/model.h */

/**
 * The whole (unsharded) value of parameter @p i's state, (rows, cols) of the serial model,
 * assembled from every rank's shards into @p dst on every rank.  Collective: every rank of
 * the job calls it with the same arguments, between steps.  Serial runs just read.
 */
int hx_gpt_gather_state(hx_gpt_t m, int i, enum hx_state_kind k, float *dst);
/** The inverse: every rank passes the whole value and keeps its shard (no communication). */
int hx_gpt_scatter_state(hx_gpt_t m, int i, enum hx_state_kind k, const float *src);
/** Rows and columns of parameter @p i in the serial model. */
void hx_gpt_param_shape(hx_gpt_t m, int i, int *rows, int *cols);
/** Name of parameter @p i ("h3.qkv_w"). */
const char *hx_gpt_param_name(hx_gpt_t m, int i);
/** The mesh the model was built for (the serial mesh for hx_gpt_build). */
const struct hx_mesh *hx_gpt_mesh(hx_gpt_t m);

/** Bytes this rank allocates, by role (memory accounting, printed at start). */
struct hx_gpt_memory {
    double params, grads, optim;   /**< model states this rank keeps */
    double activations;            /**< forward activations and backward temporaries */
    double comm;                   /**< gather buffers, per-micro-batch gradient buffers, tokens */
    double inputs;                 /**< token and target tensors */
    double formula_model_state;    /**< AMSP's model-state formula for the factors, fp32:
                                    *   4 Phi/s_p + 4 Phi/s_g + 8 Phi/s_os, Phi = params of
                                    *   this tensor-parallel rank */
};
void hx_gpt_memory(hx_gpt_t m, struct hx_gpt_memory *mem);
/** With strands: (backward layer, forward layer) pairs in SI blocks, how many of them a
 *  strand plan was applied to, and how many sit in blocks no plan may couple (their forward
 *  and backward exchange with one stage in opposite directions, so barriers between them
 *  could close a cycle across stages; graphs/schedule.c, may_couple). */
void hx_gpt_strand_stats(hx_gpt_t m, int *pairs, int *planned, int *uncoupled);
/** Under parameter sharding (s_p > 1): how many layers ahead parameters are all-gathered
 *  (1, or hx-prefetch's depth from prefetch_memory); 0 without sharding. */
int hx_gpt_prefetch_depth(hx_gpt_t m);

#ifdef __cplusplus
}
#endif

#endif /* HELIX_GPT_H */
