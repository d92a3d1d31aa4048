/* SPDX-License-Identifier: MIT */
/* graphs/model_internal.h: what the model-agnostic passes of graphs/ see of a model (issue 24:
 * models are clients of the parallel passes, never the other way round).  A built-in model
 * embeds struct hx_model (a user's model gets one from hx_model_create, helix/model.h),
 * fills its layout in through graphs/model.c and hands it to the passes; a pass reaches the
 * model's own work only through ops, its per-layer emitters, and the model's parameters
 * only through their specs (helix/model.h) and the tensors below.  The step (graphs/
 * model.c, graphs/model_state.c), the schedule pass (graphs/schedule.c), the distribution
 * pass (graphs/dist.c) and the optimizer (graphs/optimizer.c) take it; no file of these
 * names a model. */
#ifndef HX_MODEL_INTERNAL_H
#define HX_MODEL_INTERNAL_H

#include "helix/graph.h"
#include "helix/layers.h"
#include "helix/mesh.h"
#include "helix/model.h"
#include "helix/pipeline.h"

/* parameters of one sharding unit (one packed message), and of one layer */
#define HX_UNIT_MAX 32
#define HX_NORM_SPLIT_MAX 4

/* The emitters (struct hx_model_ops) and what they may call are public: helix/model.h.  The
 * schedule pass calls them in its order and does around each what every model needs (the
 * stamps, parameter gathers, recomputation's place, the backward's distribution hooks), so
 * an emitter emits only the model's own nodes. */

/* How one parameter is split on this rank (graphs/dist.c, from its struct hx_param_spec).
 * Tensor parallelism cuts the serial (rows, cols) along tp_dim, each of its blocks (GPT-2's
 * qkv: q, k, v) separately, and keeps part tp_rank of each; AMSP's s_p then cuts that
 * tp-local tensor flat into pieces, this rank's being [piece_off, piece_off + piece_cnt);
 * gradients and Adam states of the piece belong to one member of the G / OS group. */
struct hx_param_dist {
    int rows, cols;          /* serial shape */
    int tp_dim;              /* -1 replicated over tp (the grid's X), 0 rows split, 1 columns
                              * split */
    int y_dim;               /* the grid's Y (the hidden size): -1 replicated, 0 or 1 as tp_dim */
    int nblocks;             /* blocks along tp_dim, each split separately (3 for q|k|v) */
    int block[HX_PARAM_MAX_BLOCKS]; /* their serial sizes, summing to the dimension */
    int lrows, lcols;        /* tp-local shape */
    long piece_off, piece_cnt; /* this rank's flat piece of the tp-local tensor */
    int os_owner;            /* OS-group rank that updates the piece */
    int owns_grad;           /* this rank keeps the piece's accumulated gradient */
    int owns_optim;          /* this rank keeps its Adam states and runs AdamW */
    int sp_partial;          /* a norm under sequence parallelism: tp partial sums */
    int layer, k;            /* transformer layer and index among its parameters (in spec
                              * order), or -1 */
    int held;                /* this pipeline stage keeps it (a tied embedding: first and
                              * last stage) */
    int stage;               /* the stage that owns it (a tied embedding: the first) */
    char name[HX_NAME_MAX];  /* "h3.qkv_w", "wte", ... (also for parameters not held) */
};

/* Gradient pieces waiting for their all-reduce, cut into buckets (graphs/dist.c) */
struct hx_grad_queue {
    int ch, accumulate;      /* channel; G group: owners accumulate the result */
    int *ids, n;             /* parameter ids in completion order */
    int *cuts, ncuts;        /* ends of the closed buckets */
    int open, emitted;       /* start of the open bucket; entries already emitted */
    long open_elems;
};

/* --tp-comm-overlap: a reduce-scatter target's own scratch for the partials it receives
 * (tp - 1 tensors shaped like it), so no two targets wait on one scratch */
struct hx_rs_scratch {
    hx_tensor_t shard, *recv;
};

/* The model-agnostic part of a model: its graph, where it runs, its pipeline layout, its
 * parameters as the passes see them and what the schedule and distribution passes record.
 * The model fills everything above the schedule's fields and its parameter tensors (params,
 * grads, adam_m, adam_v, after hx_dist_layout) before calling hx_dist_tensors and
 * hx_schedule_emit. */
struct hx_model {
    const struct hx_model_ops *ops;
    void *user;                          /* a model made by hx_model_create: its own state */
    int owned;                           /* made by hx_model_create (hx_model_destroy frees
                                          * it); 0: embedded in a built-in model (GPT) */
    hx_graph_t g;                        /* the step's graph, which the emitters append to */
    struct hx_mesh mesh;
    struct hx_parallel_config par;       /* par.mesh points at mesh */
    int M, Ml;                           /* micro-batches of the global batch, of this rank */
    double loss_count;                   /* the step's loss sum / loss_count = its loss */
    /* pipeline: the layers are cut into nvs virtual stages of Lc layers (include/helix/
     * pipeline.h); this stage runs nchunks chunks, chunk c = virtual stages cv[c] ..
     * cv[c]+cvn[c]-1 = layers [clo[c], chi[c]) */
    int nvs, Lc, nchunks;
    int cv[2], cvn[2], clo[2], chi[2];
    int first_stage, last_stage;         /* holds the embedding / the head and the loss */
    int strands;                         /* 2: forward and backward interleaved by layer */
    int L;                               /* transformer layers of the whole model */
    /* parameters: spec[i] says what parameter i is, pd[i] where it lives on this rank
     * (hx_dist_layout).  The model makes params[i], the piece this rank keeps ((1,
     * pd[i].piece_cnt) under s_p > 1, else the tp-local (lrows, lcols); NULL where another
     * pipeline stage holds the parameter), grads[i] its accumulated gradient (owners, else
     * NULL) and adam_m/v its Adam states (OS owners, else NULL).  hx_dist_tensors makes the
     * rest: pfull[i] what compute reads (params[i], or a gather buffer (lrows, lcols) under
     * s_p > 1); gfull[i] what the backward accumulates into; mbg[i] a micro-batch's gradient
     * piece when s_g > s_p (else NULL); gfinal[i] the reduced gradient AdamW and the norm
     * read */
    int nparams;
    struct hx_param_spec *spec;          /* [nparams], the model's; the model frees it */
    struct hx_param_dist *pd;            /* [nparams] */
    int units;                           /* sharding units of a layer (spec[].unit < units) */
    /* --tp-grid with Gy > 1: the norms' row statistics over Y (hx_model_norm_split) */
    struct hx_norm_split norm_split[HX_NORM_SPLIT_MAX];
    int nnorm_split;
    /* par.no_overlap: the node ranges [first, last) of blocking collectives, in emission
     * order; hx_model_finish makes every later node wait for them (hx_model_blocking) */
    int (*blocking)[2];
    int nblocking, cap_blocking;
    int layer_params_max;                /* parameters of the largest layer */
    hx_tensor_t *params, *grads, *adam_m, *adam_v; /* the model's; the model frees them */
    hx_tensor_t *pfull, *gfull, *mbg, *gfinal;
    hx_tensor_t loss_sum, gnorm_sumsq;   /* (1,1) f64: the step's loss sum (the model's loss
                                          * adds to it), the gradients' square sum */
    /* written by the distribution pass (graphs/dist.c) */
    struct hx_grad_queue queue[2];       /* [0] replica group (last micro-batch), [1] G group */
    /* s_p > 1: gathered layer parameters rotate through nps slots (layer l in slot l % nps),
     * gathered pf_depth layers ahead; with hx-prefetch's order (par.prefetch) slot_layer[s]
     * is the layer slot s holds at this point of the emission (-1: none or stale) and
     * a unit's packed reduce-scatter (graphs/dist.c, units()) waits in rs_wait (layer, unit,
     * micro-batch) until the next gather is out; grads_done counts each unit's complete
     * gradients per micro-batch */
    int nps, pf_depth, *slot_layer, (*rs_wait)[3], nrs_wait, *grads_done;
    struct hx_rs_scratch *rs_scratch;    /* --tp-comm-overlap, one per reduce-scatter target */
    int nrs_scratch;
    /* written by the schedule pass (graphs/schedule.c) */
    int si_pairs, planned, si_uncoupled; /* (forward, backward) layer pairs in SI blocks;
                                          * those a strand plan was applied to; those in
                                          * blocks no plan may couple (may_couple) */
    int *item_first, nitems;             /* the stage's schedule items (a chunk task or an SI
                                          * block) in order: item k is nodes [item_first[k],
                                          * item_first[k + 1]); the model frees item_first */
    int fwd0[2][2], nfwd0;               /* micro-batch 0's forward up to the logits: node
                                          * ranges [begin, end), one per chunk (evaluation
                                          * submits them again) */
    /* written by hx_model_emit (graphs/model.c) */
    int zero_loss_node;                  /* the fill of loss_sum */
    int first_opt_node;                  /* the step's optimizer nodes: [first_opt_node,
                                          * eval_begin) */
    int eval_begin;                      /* a model's evaluation tail: [eval_begin, nnodes) */
};

/* graphs/model.c: what every model's step is made of, in order.  hx_model_init checks the
 * mesh and the pipeline against L and M and fills the layout (g, mesh, par, M, Ml, the
 * pipeline's chunks, strands, the lanes of the mesh's groups); the model then sets nparams
 * and spec and calls hx_model_make_params (pd[] and the parameter tensors this rank keeps),
 * declares its activations and calls hx_model_emit (the distribution's tensors, the zeroing,
 * the schedule, the reductions, the norm, AdamW).  A model that adds an evaluation tail
 * emits it next; hx_model_finish then sets the priorities.  hx_model_release frees what
 * these made. */
int hx_model_init(struct hx_model *m, const struct hx_parallel_config *par, int L, int M);
void hx_model_make_params(struct hx_model *m);
void hx_model_emit(struct hx_model *m, const struct hx_optim_config *o);
void hx_model_finish(struct hx_model *m);
void hx_model_release(struct hx_model *m);
/* graphs/model_state.c: submit nodes [0, last), wait and read the loss and norm; step (1-
 * based, 0: not a training step) names the step in a non-finite loss's message */
int hx_model_run(struct hx_model *m, int last, int step, struct hx_step_result *r);
void hx_model_set_lr(struct hx_model *m, const struct hx_optim_config *o, int step,
                     struct hx_step_result *r);

/* graphs/schedule.c: every micro-batch's chunk forwards and backwards, with their losses, in
 * the stage's pipeline order (SI blocks with two strands); then, once the graph's critical-
 * path priorities are set, the pipeline's priority bands over them */
void hx_schedule_emit(struct hx_model *m);
void hx_schedule_priorities(struct hx_model *m);

/* graphs/dist.c: the distribution pass.  Layout and tensors first, then hooks the model's
 * emitters call at fixed points; each is a no-op on the serial mesh. */
/* the dimension tp cuts of a parameter (0 rows, 1 columns, -1 none) */
int hx_dist_tp_dim(const struct hx_param_spec *s);
int hx_dist_y_dim(const struct hx_param_spec *s);
/* The nodes emitted since @p first are a collective that par.no_overlap bit @p bit makes
 * blocking (nothing when the bit is clear or nothing was emitted) */
void hx_model_blocking(struct hx_model *m, unsigned bit, int first);
void hx_dist_layout(struct hx_model *m);         /* pd[], units, ownership (before the model
                                                  * makes params, grads, adam_m, adam_v) */
void hx_dist_prefetch_depth(struct hx_model *m); /* pf_depth, nps (before hx_dist_tensors) */
void hx_dist_tensors(struct hx_model *m);        /* pfull, gfull, mbg, gfinal, queues */
void hx_dist_free(struct hx_model *m);
/* Before the builder whose output hx_model_tp_reduce reduces: with --tp-comm-overlap (GPT's
 * row tiles of whole sequences dealt out to the tp ranks) its tiles are emitted in the order
 * their partials leave (helix/tp_overlap.h); tp_reduce restores it */
void hx_model_tp_partial(struct hx_model *m);
void hx_dist_gather_params(struct hx_model *m, int layer); /* -1: those outside the layers */
void hx_dist_backward_begin(struct hx_model *m, int layer, int mb); /* -1: head, embedding */
void hx_dist_backward_end(struct hx_model *m, int mb);
void hx_dist_after_backward(struct hx_model *m);  /* last micro-batch: flush, tp, loss */
void hx_dist_after_adamw(struct hx_model *m);     /* broadcasts of updated pieces */
int hx_dist_counts_in_norm(const struct hx_model *m, int i);
void hx_dist_norm_reduce(struct hx_model *m);

/* graphs/optimizer.c: zero the gradients and accumulators (returns the node of loss_sum's
 * fill, which evaluation runs before micro-batch 0's forward); the global norm; AdamW for
 * every parameter this rank updates */
int hx_optim_emit_zero(struct hx_model *m);
void hx_optim_emit_grad_norm(struct hx_model *m);
void hx_optim_emit_adamw(struct hx_model *m, const struct hx_optim_config *o);

#endif /* HX_MODEL_INTERNAL_H */
