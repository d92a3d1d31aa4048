/* SPDX-License-Identifier: MIT */
/**
 * @file helix/model.h
 * @brief The model interface the parallel passes consume (issue 24), part 1: a model's
 *        parameters as plain data.  Each parameter says what it is (role), how tensor
 *        parallelism cuts it (split), where it lives (a layer, or the embedding or head
 *        side of the pipeline) and which sharding unit moves it; the passes derive every
 *        rank's layout from that alone: tp shards (Megatron 1D), pipeline stages, AMSP
 *        pieces and owners, the sequence-parallel sums of norm gradients, weight decay and
 *        the initialisation.  graphs/gpt_spec.c declares GPT-2's.
 *
 * Shapes are the serial model's, PyTorch's Linear convention: a weight is (out, in), a bias
 * (1, out), a norm weight (1, C), an embedding (V, C).
 */
#ifndef HELIX_MODEL_H
#define HELIX_MODEL_H

#include "helix/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What a parameter is.  Weights and embeddings decay (AdamW's decoupled weight decay);
 *  biases and norm weights do not.  Under sequence parallelism a norm weight's gradient is a
 *  partial sum over the tp group (each rank saw its sequence shard), summed after the
 *  backward. */
enum hx_param_role { HX_PARAM_WEIGHT, HX_PARAM_BIAS, HX_PARAM_NORM, HX_PARAM_EMBEDDING };

/** How tensor parallelism (Megatron 1D) cuts a parameter over the tp group. */
enum hx_tp_split {
    HX_TP_REPLICATED, /**< whole on every tp rank: norm weights, a row-parallel linear's bias
                       *   (added once, by tp rank 0) */
    HX_TP_COLUMN,     /**< a column-parallel linear: its output features split, the rows of
                       *   a weight (out, in) or the columns of its bias (1, out) */
    HX_TP_ROW,        /**< a row-parallel linear's weight: its input features (columns) split */
    HX_TP_VOCAB,      /**< an embedding or output layer (V, C): vocabulary rows split */
};

/** Where a parameter outside the layers lives in a pipeline. */
enum hx_param_site {
    HX_SITE_LAYER,    /**< in layer `layer`: on the stage that runs it */
    HX_SITE_EMBED,    /**< with the input embedding: the first stage */
    HX_SITE_HEAD,     /**< with the output layer and loss: the last stage */
    HX_SITE_TIED,     /**< both: an embedding tied to the output layer; the two stages each
                       *   keep a copy and sum their gradients before the update */
};

/** How a parameter starts (hx_gpt_init_params draws every normal value of the serial model
 *  in parameter order, so a seed means the same model on every mesh). */
enum hx_param_init { HX_INIT_ZERO, HX_INIT_ONE, HX_INIT_NORMAL };

#define HX_PARAM_MAX_BLOCKS 4

struct hx_param_spec {
    char name[HX_NAME_MAX];  /**< "h3.qkv_w", "wte": checkpoints and messages use it */
    int rows, cols;          /**< serial shape */
    int role;                /**< enum hx_param_role */
    int split;               /**< enum hx_tp_split */
    /** A packed column-parallel tensor whose parts tp cuts separately, so heads stay whole:
     *  the sizes along the split dimension, in order (q | k | v: C, C, C; grouped-query
     *  attention's C, G hs, G hs; SwiGLU's gate | up: F, F); nblocks 0 means one block. */
    int nblocks, block[HX_PARAM_MAX_BLOCKS];
    int site;                /**< enum hx_param_site */
    int layer;               /**< with HX_SITE_LAYER: the transformer layer; else -1 */
    int unit;                /**< with HX_SITE_LAYER: the sharding unit inside the layer,
                              *   0 .. units-1 (under AMSP's s_p > 1 a unit's parameters are
                              *   gathered, and their gradients reduce-scattered, as one
                              *   packed message) */
    int init;                /**< enum hx_param_init */
    double init_std;         /**< HX_INIT_NORMAL: the standard deviation */
};

#ifdef __cplusplus
}
#endif

#endif /* HELIX_MODEL_H */
