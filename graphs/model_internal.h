/* SPDX-License-Identifier: MIT */
/* graphs/model_internal.h: what the model-agnostic passes of graphs/ see of a model (issue 24:
 * models are clients of the parallel passes, never the other way round).  A model embeds
 * struct hx_model as its first member, fills its layout in and hands it to a pass; the pass
 * reaches the model's own work only through ops, its per-layer emitters.  So far the
 * schedule pass (graphs/schedule.c) takes it; GPT-2 and Llama (struct hx_gpt,
 * graphs/gpt_internal.h, whose emitters are graphs/gpt_model.c) are its model. */
#ifndef HX_MODEL_INTERNAL_H
#define HX_MODEL_INTERNAL_H

#include "helix/graph.h"
#include "helix/mesh.h"
#include "helix/pipeline.h"

struct hx_model;

/* A model's emitters, called on the main thread while the step's graph is built, in the
 * order the schedule pass chooses (graphs/schedule.c).  Each appends nodes to m->g and stamps
 * them (phase, micro-batch, layer, strand); none submits anything.  mb is the micro-batch
 * (0 .. Ml-1 of this rank), c a chunk of this stage (0 .. nchunks-1), l a layer of the
 * chunk (clo[c] .. chi[c]-1).  Every micro-batch's rows are N = B*T tokens; the model keeps
 * its activations itself, by micro-batch.  Begin and end come once per (mb, c); the layers in
 * between one by one, forward upward and backward downward, and the schedule may interleave
 * the layers of one micro-batch's forward with another's backward (two strands), so an
 * emitter must name its micro-batch's tensors from mb, never from the last call. */
struct hx_model_ops {
    /* The chunk's input (N,C): the embedding of mb's tokens on the first virtual stage, else
     * received from the stage before; and what the first layer reads of it. */
    void (*forward_begin)(struct hx_model *m, int mb, int c);
    /* Layer l's forward of mb: its input (N,C), the previous layer's output, to its output
     * (N,C), keeping what its backward reads. */
    void (*forward_layer)(struct hx_model *m, int mb, int c, int l);
    /* The chunk's output: sent to the next stage, or the head's logits (N,V) on the last
     * virtual stage. */
    void (*forward_end)(struct hx_model *m, int mb, int c);
    /* The gradient of the chunk's output (N,C): from the loss's logits gradient through the
     * head on the last virtual stage, else received from the stage after. */
    void (*backward_begin)(struct hx_model *m, int mb, int c);
    /* Layer l's backward of mb: the gradient of its output to that of its input (N,C), and
     * its parameters' gradients accumulated (+=). */
    void (*backward_layer)(struct hx_model *m, int mb, int c, int l);
    /* The gradient of the chunk's input: sent to the stage before, or into the embedding's
     * gradients on the first virtual stage; mb's activations go back to the model. */
    void (*backward_end)(struct hx_model *m, int mb, int c);
    /* mb's loss from its logits (N,V), right after the forward_end of the chunk that holds
     * the last virtual stage: added to the step's loss, and the logits become their gradient,
     * which that chunk's backward_begin reads. */
    void (*loss)(struct hx_model *m, int mb);
};

/* The model-agnostic part of a model: its graph, where it runs, its pipeline layout and
 * what the schedule pass records.  The model fills everything above the schedule's fields
 * before calling hx_schedule_emit. */
struct hx_model {
    const struct hx_model_ops *ops;
    hx_graph_t g;                        /* the step's graph, which the emitters append to */
    struct hx_mesh mesh;
    struct hx_parallel_config par;       /* par.mesh points at mesh */
    int Ml;                              /* micro-batches of this rank: M/dp */
    /* pipeline: the layers are cut into nvs virtual stages of Lc layers (include/helix/
     * pipeline.h); this stage runs nchunks chunks, chunk c = virtual stages cv[c] ..
     * cv[c]+cvn[c]-1 = layers [clo[c], chi[c]) */
    int nvs, Lc, nchunks;
    int cv[2], cvn[2], clo[2], chi[2];
    int first_stage, last_stage;         /* holds the embedding / the head and the loss */
    int strands;                         /* 2: forward and backward interleaved by layer */
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
};

/* The stage running virtual stage v */
static inline int hx_model_vstage_rank(const struct hx_model *m, int v)
{
    return hx_pipeline_stage_of(m->par.pipeline_schedule, m->mesh.pp, v);
}

/* graphs/schedule.c: every micro-batch's chunk forwards and backwards, with their losses, in
 * the stage's pipeline order (SI blocks with two strands); then, once the graph's critical-
 * path priorities are set, the pipeline's priority bands over them */
void hx_schedule_emit(struct hx_model *m);
void hx_schedule_priorities(struct hx_model *m);

#endif /* HX_MODEL_INTERNAL_H */
