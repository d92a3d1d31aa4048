/* SPDX-License-Identifier: MIT */
/**
 * @file helix/model.h
 * @brief The model interface the parallel passes consume (issue 24): a model's parameters
 *        as plain data, and the settings and results of any model's training step (the
 *        optimizer, the parallel configuration, a step's loss and norm).  Each parameter says what it is (role), how tensor
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

#include <stdint.h>

#include "helix/graph.h"
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

/** How a parameter starts (hx_model_init_params draws every normal value of the serial model
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

/* ---- what any model's training step takes and gives ---- */

struct hx_mesh;
struct hx_plan;

/** Learning-rate decay after warmup (Megatron's --lr-decay-style). */
enum hx_lr_decay { HX_LR_COSINE = 0, HX_LR_LINEAR = 1, HX_LR_CONSTANT = 2 };

struct hx_optim_config {
    float lr, min_lr;         /**< peak and final learning rate */
    int decay_style;          /**< enum hx_lr_decay */
    int warmup_iters;         /**< linear warmup steps */
    int decay_iters;          /**< step at which the cosine reaches min_lr */
    float beta1, beta2, eps;  /**< Adam */
    float weight_decay;       /**< decoupled, on 2-D weights only (not biases, LayerNorm) */
    float clip_grad;          /**< global-norm clip; <= 0 disables */
};

/** Megatron-style defaults: lr 6e-4, min_lr 6e-5, betas 0.9/0.95, eps 1e-8, wd 0.1, clip 1. */
void hx_optim_config_default(struct hx_optim_config *o, int train_iters);

/** Learning rate of 0-based step @p s: linear warmup, then the decay style down to min_lr
 *  at decay_iters (constant stays at lr). */
float hx_lr_at(const struct hx_optim_config *o, int s);

/** Per-step results read back after the step's tasks finished. */
struct hx_step_result {
    double loss;       /**< mean cross-entropy over the M*B*T tokens of the step */
    double grad_norm;  /**< global L2 norm of the gradients before clipping */
    float lr;          /**< learning rate used by this step */
};

/** How one rank of a distributed run takes part (design/architecture.md §5). */
struct hx_parallel_config {
    const struct hx_mesh *mesh;  /**< this rank's mesh; NULL = the serial run */
    long ddp_bucket_size;        /**< gradient elements per bucket; 0 = Megatron's default
                                  *   max(40M, 1M x dp) */
    int serialize_grad_reduce;   /**< 1: every gradient collective after the whole backward
                                  *   (--no-overlap-grad-reduce, the baseline); 0: each bucket
                                  *   as soon as the backward completed it */
    int pipeline_schedule;       /**< enum hx_pipeline_schedule, with mesh->pp > 1 */
    int strands;                 /**< 1: two strands (DHelix): micro-batches alternate alpha,
                                  *   beta; a backward and the next forward of the other
                                  *   strand are emitted interleaved layer by layer, the
                                  *   forward reusing the activations the backward frees */
    const struct hx_plan *strand_plan; /**< with strands: DHelix's pairing plan of a layer
                                  *   (helix/plan.h), applied to every (forward layer, backward
                                  *   layer) pair of an SI block whose ops match it; NULL:
                                  *   none (the layers' ops in emission order) */
    unsigned sched_needs;        /**< what the policy that runs the graph needs from it
                                  *   (hx_sched_needs of include/helix/sched.h):
                                  *   HX_SCHED_NEEDS_PREFETCH turns prefetch on,
                                  *   HX_SCHED_NEEDS_SERIAL_COMM adds serial-comm's control
                                  *   edges (hx_graph_serialize_comm) to the step and to
                                  *   evaluation's tail */
    int prefetch;                /**< 1 (or HX_SCHED_NEEDS_PREFETCH; 1 alone gives it to
                                  *   another policy: serial-comm's baseline of it):
                                  *   hx-prefetch's graph order under parameter sharding
                                  *   (s_p > 1): each layer's parameters all-gathered
                                  *   prefetch-depth layers ahead into depth + 1 rotating
                                  *   slots, a gather skipped while its slot still holds the
                                  *   layer (the backward reuses the forward's last layers,
                                  *   the next forward the backward's), and each layer's
                                  *   gradient reduce-scatters emitted after the next
                                  *   gather, so they never hold it back on the channel */
    int tp_comm_overlap;         /**< 1 (Megatron's --tp-comm-overlap; needs tp > 1 and
                                  *   sequence parallelism): Flux's tile-level AG+GEMM and
                                  *   GEMM+RS (helix/tp_overlap.h) instead of one all-gather
                                  *   or reduce-scatter per row tile; the sequence shards
                                  *   become whole row tiles, dealt out tile-cyclically, and
                                  *   tile_seqs counts the sequences of one such tile */
    int recompute;               /**< enum hx_recompute: activations dropped after the
                                  *   forward and computed again in the backward */
    double prefetch_memory;      /**< with prefetch: bytes for gathered layer parameters;
                                  *   the depth is the layers that fit, less the one in use
                                  *   (at least 1); 0 = depth 1 (AxoNN's one layer ahead) */
    unsigned no_overlap;         /**< AxoNN's four overlap optimisations (papers.md §1.6)
                                  *   turned off, for measuring them (enum hx_no_overlap
                                  *   bits; 0: all on).  Off, a collective blocks: every node
                                  *   emitted after it waits for it, as after a blocking MPI
                                  *   call; the numbers stay bitwise the same */
};

/** The bits of hx_parallel_config.no_overlap (--no-overlap LIST) */
enum hx_no_overlap {
    HX_NO_OVERLAP_DGRAD_AR = 1u << 0, /**< O1: a backward all-reduce of input gradients (tp,
                                       *   the grid's X or Y) blocks, instead of running under
                                       *   the weight-gradient GEMM */
    HX_NO_OVERLAP_DEFER_RS = 1u << 1, /**< O2: a reduce-scatter of weight gradients (s_p > 1,
                                       *   the grid's Z) blocks, instead of being waited for
                                       *   only by the optimizer */
    HX_NO_OVERLAP_PREFETCH = 1u << 2, /**< O3: a parameter all-gather (s_p > 1) blocks,
                                       *   instead of running layers ahead under compute */
    HX_NO_OVERLAP_CACHE = 1u << 3,    /**< O4: a layer's parameters are gathered again for
                                       *   its backward (and recomputation) instead of reused
                                       *   while still in their slot from the forward */
    HX_NO_OVERLAP_ALL = 15u,
};

/** Activation recomputation (Megatron's --recompute-activations), a graph transformation:
 *  the dropped activations are computed again by the same codelets on the same inputs right
 *  before the layer's backward, so every number stays bitwise the same. */
enum hx_recompute {
    HX_RECOMPUTE_NONE,
    HX_RECOMPUTE_SELECTIVE, /**< the attention core (its output and log-sum-exp, from qkv)
                             *   and the GELU (from its input): no GEMM with a weight runs
                             *   again, 5C of a layer's ~16C floats per token are dropped */
    HX_RECOMPUTE_FULL,      /**< only each layer's output is kept; the backward of layer l
                             *   runs its forward again from layer l-1's output (the
                             *   parameters gathered for the backward serve it) */
};

/** The order in which a pipeline stage runs its micro-batches' forwards (F) and backwards
 *  (B); every order gives the same gradients (B runs micro-batches in order). */
enum hx_pipeline_schedule {
    HX_PIPE_1F1B,   /**< stage s: p-s-1 warm-up forwards, then F and B alternate (p-s in
                     *   flight), then the remaining B (PipeDream-flush, Megatron's default) */
    HX_PIPE_GPIPE,  /**< every forward, then every backward (M in flight) */
    HX_PIPE_FOLD,   /**< DHelix's model folding: 2p chunks, stage s holds chunk s and its
                     *   mirror 2p-1-s; a micro-batch goes down the stages and back up (a V),
                     *   forward then backward (a W); embedding and head both on stage 0 */
};


/* ---- a model of your own under the parallel passes ----
 *
 * A model is its parameters (struct hx_param_spec, above) and seven emitters (struct
 * hx_model_ops).  helix owns the step around them: the parameters' tensors on every rank
 * (tp shards, pipeline stages, AMSP pieces), the order of the micro-batches' forwards and
 * backwards (pipelines, the W fold, two strands), the parameter gathers and gradient
 * buckets (DDP, ZeRO/AMSP), recomputation's place, the loss sum, the gradient norm and
 * AdamW.  The emitters append the model's own nodes to the step's graph with the builders
 * of helix/layers.h; helix calls them while it builds the step, never while it runs.
 * examples/custom_model.c is a whole model in one file; examples/README.md teaches it.
 *
 * The lifecycle:
 *   hx_model_create()      checks the description against the mesh, lays the parameters
 *                          out and makes their tensors;
 *   (your code)            declares the activations on hx_model_graph(), one set per
 *                          micro-batch of this rank (hx_model_micro_batches()), in row
 *                          tiles of whole sequences;
 *   hx_model_emit_step()   calls the emitters in the schedule's order, then adds the
 *                          distribution's collectives, the norm and AdamW;
 *   hx_graph_realize(hx_model_graph(m)), hx_model_init_params(), then per step: write the
 *   inputs of this rank's micro-batches, hx_model_step().
 *
 * The contract of an emitter: helix has already stamped the node metadata (phase,
 * micro-batch, layer, strand: hx_model_stamp) and, under parameter sharding, gathered the
 * parameters the layer reads, before it calls the emitter.  The emitter reads parameter i
 * as hx_model_compute_param(m, i) and accumulates (+=) its gradient into
 * hx_model_compute_grad(m, i), in the tp-local shape (hx_model_param_local_shape); it
 * crosses tensor-parallel regions only through hx_model_tp_gather and hx_model_tp_reduce
 * (Megatron's f and g); and it calls hx_model_grad_done(m, i, mb) once
 * parameter i's gradient of micro-batch mb is complete, as early as it can (that is when
 * its bucket or reduce-scatter can leave).  Every parameter of a layer is done by the end
 * of that layer's backward_layer; the embedding's and head's by their chunk's
 * backward_end / backward_begin.  A parameter that tp splits is split as its spec says;
 * the emitters see only their shard. */

typedef struct hx_model *hx_model_t;

/** A model's emitters.  mb is the micro-batch (0 .. hx_model_micro_batches()-1 of this
 *  rank), c a chunk of this pipeline stage (0 with no pipeline), l a layer of the chunk.
 *  Begin and end come once per (mb, c); the layers in between one by one, forward upward
 *  and backward downward, and with two strands the schedule interleaves the layers of one
 *  micro-batch's forward with another's backward, so an emitter names its tensors from mb,
 *  never from the previous call. */
struct hx_model_ops {
    /** The chunk's input (N,C): the embedding of mb's tokens on the first virtual stage,
     *  else received from the stage before (hx_model_vstage_rank). */
    void (*forward_begin)(hx_model_t m, int mb, int c);
    /** Layer l's forward of mb, keeping what its backward reads. */
    void (*forward_layer)(hx_model_t m, int mb, int c, int l);
    /** The chunk's output: sent on, or the head's logits on the last virtual stage. */
    void (*forward_end)(hx_model_t m, int mb, int c);
    /** The gradient of the chunk's output: from the loss through the head, or received. */
    void (*backward_begin)(hx_model_t m, int mb, int c);
    /** Layer l's backward of mb: its input's gradient, its parameters' gradients (+=). */
    void (*backward_layer)(hx_model_t m, int mb, int c, int l);
    /** The gradient of the chunk's input: sent back, or into the embedding's gradients. */
    void (*backward_end)(hx_model_t m, int mb, int c);
    /** mb's loss, right after the forward_end of its last virtual stage: added into
     *  hx_model_loss_sum(m), the logits made their gradient, scaled by 1/loss_count. */
    void (*loss)(hx_model_t m, int mb);
    /** Optional (required for par.recompute): what layer l's backward needs again, emitted
     *  right before backward_layer, after the layer's parameters were gathered.  Its nodes
     *  should carry HX_PHASE_RECOMPUTE. */
    void (*recompute_layer)(hx_model_t m, int mb, int c, int l);
};

/** What hx_model_create needs to know of a model. */
struct hx_model_desc {
    const struct hx_model_ops *ops;
    void *user;                  /**< the model's own state: hx_model_user() */
    int num_layers;              /**< L, cut into equal pipeline chunks */
    int nparams;
    const struct hx_param_spec *params; /**< [nparams], copied; layer parameters carry
                                  *   site HX_SITE_LAYER and a unit in 0 .. units-1 */
    int num_micro_batches;       /**< M of the global batch; dp divides it */
    double loss_count;           /**< what the step's loss sum is divided by (the global
                                  *   batch's tokens or samples: M x rows per micro-batch) */
};

/**
 * Check @p d against the mesh of @p par (NULL: serial) and lay the model out: every problem
 * (a tp that does not divide a split dimension, layers that do not cut into the pipeline's
 * chunks, micro-batches that dp does not divide, recomputation without recompute_layer)
 * returns HX_EINVAL with a message that names it and the fix, before anything is built.
 */
int hx_model_create(hx_model_t *m, const struct hx_model_desc *d,
                    const struct hx_parallel_config *par);
/** Emit the whole step (the model's activations must be declared by now). */
int hx_model_emit_step(hx_model_t m, const struct hx_optim_config *o);
void hx_model_destroy(hx_model_t m);

/* what an emitter reads */
hx_graph_t hx_model_graph(hx_model_t m);
void *hx_model_user(hx_model_t m);
const struct hx_mesh *hx_model_mesh(hx_model_t m);
int hx_model_micro_batches(hx_model_t m); /**< this rank's: M / dp */
/** Stamp the nodes emitted next with (phase, micro-batch mb, layer; -1 outside the layers)
 *  and mb's strand. */
void hx_model_stamp(hx_model_t m, int mb, enum hx_phase phase, int layer);
/** The pipeline stage that runs virtual stage @p v (hx_recv_tiles / hx_send_tiles peers). */
int hx_model_vstage_rank(const struct hx_model *m, int v);
hx_tensor_t hx_model_compute_param(hx_model_t m, int i); /**< NULL: not on this stage */
hx_tensor_t hx_model_compute_grad(hx_model_t m, int i);
void hx_model_param_local_shape(hx_model_t m, int i, int *rows, int *cols);
hx_tensor_t hx_model_loss_sum(hx_model_t m);  /**< (1,1) f64 */
/** Tensor-parallel region boundaries (Megatron's f and g): the full input (N,K) a
 *  column-parallel GEMM reads, from its sequence shard (all-gather under SP; without, the
 *  shard itself, returned); and the partial sums a row-parallel GEMM wrote, reduced into the
 *  shard (reduce-scatter under SP; without, an all-reduce in place, shard and partial one
 *  tensor).  The backward mirrors them: a column-parallel GEMM's input gradient is partial
 *  (reduce it), a row-parallel GEMM's output gradient is whole.  No-ops with tp 1. */
hx_tensor_t hx_model_tp_gather(hx_model_t m, hx_tensor_t full, hx_tensor_t shard);
void hx_model_tp_reduce(hx_model_t m, hx_tensor_t shard, hx_tensor_t partial);
/** The channel of the nodes being emitted's tp collectives (strand beta has its own; the
 *  grid's X under --tp-grid). */
int hx_model_tp_channel(const struct hx_model *m);

/* AxoNN's 3D grid (--tp-grid GxxGyxGz, papers.md §1.3-1.4): Megatron's tp above is the
 * grid's X; Y splits the hidden size C, so every tensor of the residual stream is this
 * rank's (N, C/Gy) column slice and a parameter is cut as hx_param_spec's split says on X
 * and along its hidden dimension on Y; Z is the innermost part of data parallelism with
 * every parameter sharded over it (gathered before a layer, gradients reduce-scattered).
 * A normal layer (column-parallel) all-reduces its output over Y and its input gradient
 * over X; a transposed one (row-parallel) its output over X and its input gradient over
 * Y, so consecutive layers need no redistribution.  All three are no-ops with Gy = 1. */
/** All-reduce over Y in place: the partial sums of a GEMM contracting over the hidden size
 *  (a column-parallel linear's output, a row-parallel linear's input gradient). */
void hx_model_tp_reduce_y(hx_model_t m, hx_tensor_t partial);
/** 1 if this rank adds the bias of a linear of this split: a row-parallel output is
 *  partial over X (x rank 0 adds it), a column-parallel one over Y (y rank 0). */
int hx_model_tp_adds_bias(const struct hx_model *m, enum hx_tp_split split);
struct hx_norm_split;
/** A norm over the hidden size of @p inp (this rank's (N, C/Gy) slice): the row statistics'
 *  all-reduce over Y for the *_split builders of helix/layers.h; NULL with Gy = 1 (use the
 *  whole-row builders). */
const struct hx_norm_split *hx_model_norm_split(hx_model_t m, hx_tensor_t inp);
/** Parameter i's gradient of micro-batch mb is complete. */
void hx_model_grad_done(hx_model_t m, int i, int mb);

/* running it */

/** What a parameter's state means in hx_model_gather_state / hx_model_scatter_state. */
enum hx_state_kind { HX_STATE_PARAM = 0, HX_STATE_ADAM_M = 1, HX_STATE_ADAM_V = 2 };

/** Draw every parameter as its spec says, from one generator in parameter order (every rank
 *  draws the serial model and keeps its shard, so a seed means one model on every mesh);
 *  Adam states to zero. */
void hx_model_init_params(hx_model_t m, uint64_t seed);
/** One training step (0-based @p step picks the learning rate): submit, wait, read the mean
 *  loss and the gradient norm.  A loss that is not finite is an error. */
int hx_model_step(hx_model_t m, const struct hx_optim_config *o, int step,
                  struct hx_step_result *r);
/** The whole (unsharded) value of parameter i's state, (rows, cols) of the serial model, on
 *  every rank.  Collective: every rank calls it with the same arguments, between steps. */
int hx_model_gather_state(hx_model_t m, int i, enum hx_state_kind k, float *dst);
/** The inverse: every rank passes the whole value and keeps its shard (no communication). */
int hx_model_scatter_state(hx_model_t m, int i, enum hx_state_kind k, const float *src);
/** This rank's own copy of parameter i's state: its shard (a flat piece under parameter or
 *  optimizer sharding), NULL where another rank or stage keeps it. */
hx_tensor_t hx_model_state_tensor(hx_model_t m, int i, enum hx_state_kind k);
int hx_model_num_param_tensors(hx_model_t m);
/** Nodes [0, this) of hx_model_graph(m) are the training step (a built-in model's
 *  evaluation tail follows them). */
int hx_model_step_nodes(hx_model_t m);
const char *hx_model_param_name(hx_model_t m, int i);
void hx_model_param_shape(hx_model_t m, int i, int *rows, int *cols); /**< serial shape */

#ifdef __cplusplus
}
#endif

#endif /* HELIX_MODEL_H */
