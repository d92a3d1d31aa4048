/* SPDX-License-Identifier: MIT */
/* graphs/gpt_model.c: GPT-2 and Llama (struct hx_gpt) as a client of the model-agnostic
 * passes: its chunk emitters (graphs/gpt.c, graphs/gpt_backward.c) and its loss behind
 * struct hx_model_ops (graphs/model_internal.h).  Each hook only finds the model around the
 * struct hx_model the pass hands it; the graph is what the GPT functions emit, after the
 * pass's stamp of the cursor (phase, micro-batch, layer, strand).
 * Test: tests/graphs/strands.c, tests/graphs/pipeline.c, tests/mpi/parity_pp.sh. */
#include "graphs/gpt_internal.h"

static void forward_begin(struct hx_model *b, int mb, int c)
{
    hx_gpt_forward_begin(hx_gpt_of(b), mb, c);
}

static void forward_layer(struct hx_model *b, int mb, int c, int l)
{
    hx_gpt_forward_layer(hx_gpt_of(b), mb, c, l);
}

static void forward_end(struct hx_model *b, int mb, int c)
{
    hx_gpt_forward_end(hx_gpt_of(b), mb, c);
}

static void backward_begin(struct hx_model *b, int mb, int c)
{
    hx_gpt_backward_begin(hx_gpt_of(b), mb, c);
}

static void backward_layer(struct hx_model *b, int mb, int c, int l)
{
    hx_gpt_backward_layer(hx_gpt_of(b), mb, c, l);
}

static void backward_end(struct hx_model *b, int mb, int c)
{
    hx_gpt_backward_end(hx_gpt_of(b), mb, c);
}

/* hx_gpt_emit_loss reads the micro-batch the model's fields show: set to mb's again (the
 * schedule pass has stamped the cursor), so the hook does not depend on which emitter ran
 * last */
static void loss(struct hx_model *b, int mb)
{
    struct hx_gpt *m = hx_gpt_of(b);
    hx_gpt_use_mb(m, mb);
    hx_gpt_emit_loss(m, m->targets[mb], 1);
}

static void recompute_layer(struct hx_model *b, int mb, int c, int l)
{
    hx_gpt_recompute_layer(hx_gpt_of(b), mb, c, l);
}

const struct hx_model_ops hx_gpt_model_ops = {
    .forward_begin = forward_begin,
    .forward_layer = forward_layer,
    .forward_end = forward_end,
    .backward_begin = backward_begin,
    .backward_layer = backward_layer,
    .backward_end = backward_end,
    .loss = loss,
    .recompute_layer = recompute_layer,
};
