/* SPDX-License-Identifier: MIT */
/* graphs/gpt_acts.c: the GPT model's activations, and how micro-batches in flight share them.
 *
 * What a micro-batch keeps from its forward to its backward comes in two kinds:
 *  - per layer, a *set* (struct gpt_set: LayerNorm outputs and statistics, qkv, attention
 *    output, MLP activations, the layer's output; the same shapes for every layer).  Sets
 *    live in one pool: a layer's forward takes one (the most recently returned first), its
 *    backward gives it back.  Taking and giving follow the order the step is emitted in, so
 *    a recycled set's next writer waits for its last reader (StarPU's write-after-read
 *    order) and the numbers never change; only memory and concurrency do.  Serially, and in
 *    a pipeline that emits micro-batches whole, set k serves layer k of every micro-batch.
 *    With two strands (forward of one micro-batch interleaved layer by layer with the
 *    backward of another) the forward reuses the sets the backward frees, so two strands
 *    need about the memory of one (papers.md §2.6, "Memory").
 *  - per micro-batch, a *slot* (struct gpt_slot: the stage's inputs, the final LayerNorm and
 *    the logits), one per micro-batch in flight (mb % nslots).
 * Gradients of activations (dres, dres_mid per layer, the bwd temporaries by layer parity,
 * dtop) are written and read inside one backward: one copy serves every micro-batch.
 * Test: tests/graphs/pipeline.c (sets and slots per stage), tests/graphs/strands.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphs/gpt_internal.h"
#include "helix/error.h"

hx_tensor_t hx_gpt_act(struct hx_gpt *m, const char *name, int cols)
{
    int tile = m->cfg.seq_len * m->cfg.tile_seqs;
    return hx_graph_tensor(m->base.g, name, HX_F32, HX_ROLE_ACTIVATION, m->N, cols, tile);
}

hx_tensor_t hx_gpt_actf(struct hx_gpt *m, int cols, const char *fmt, int l)
{
    char name[HX_NAME_MAX];
    snprintf(name, sizeof name, fmt, l);
    return hx_gpt_act(m, name, cols);
}

/* A tensor of the sequence-parallel region: Ns rows, every tile 1/tp of the full tile, so
 * tile i of the shard gathers into tile i of the full tensor; with --tp-comm-overlap, tiles
 * as large as the full tensor's, shard tile i being full tile i*tp + tp_rank (the rotated
 * layout of helix/tp_overlap.h). */
hx_tensor_t hx_gpt_actf_s(struct hx_gpt *m, int cols, const char *fmt, int l)
{
    if (!m->base.mesh.sequence_parallel) {
        return hx_gpt_actf(m, cols, fmt, l);
    }
    char name[HX_NAME_MAX];
    snprintf(name, sizeof name, fmt, l);
    int tile = m->cfg.seq_len * m->cfg.tile_seqs /
               (m->base.par.tp_comm_overlap ? 1 : m->base.mesh.tp);
    return hx_graph_tensor(m->base.g, name, HX_F32, HX_ROLE_ACTIVATION, m->Ns, cols, tile);
}

/* The full (N rows) companion of shard @p s: its own tensor under SP, else @p s itself. */
hx_tensor_t hx_gpt_full_of(struct hx_gpt *m, hx_tensor_t s, const char *suffix)
{
    if (!m->base.mesh.sequence_parallel) {
        return s;
    }
    char name[HX_NAME_MAX];
    snprintf(name, sizeof name, "%.32s%s", s->name, suffix);
    return hx_gpt_act(m, name, s->cols);
}

/* @p name with ".s<k>" appended for k > 0, cut to fit (the k = 0 names are the plain ones, so
 * a graph with one of everything keeps its names). */
static const char *nth_name(char *buf, size_t len, const char *name, int k)
{
    char suffix[16] = "";
    if (k > 0) {
        snprintf(suffix, sizeof suffix, ".s%d", k % 10000);
    }
    snprintf(buf, len, "%.*s%s", (int)(len - 1 - strlen(suffix)), name, suffix);
    return buf;
}

/* ---- the pool of layer sets ---- */

/* A new set, named after layer @p l, its first user ("h3.qkv", then "h3.qkv.s1", ...) */
static int set_new(struct hx_gpt *m, int l)
{
    const struct hx_gpt_config *c = &m->cfg;
    int C = m->Cy, Cl = c->hidden_size / m->base.mesh.tpx, k = m->named[l]++;
    if (m->nsets == m->cap_sets) {
        m->cap_sets = m->cap_sets ? 2 * m->cap_sets : 16;
        m->sets = realloc(m->sets, sizeof *m->sets * (size_t)m->cap_sets);
        m->free_sets = realloc(m->free_sets, sizeof(int) * (size_t)m->cap_sets);
        HX_ASSERT(m->sets && m->free_sets, "out of memory");
    }
    struct gpt_set *S = &m->sets[m->nsets];
    struct gpt_layer_acts *a = &S->a;
    char b[HX_NAME_MAX], n[HX_NAME_MAX];
#define NAME(what) (snprintf(n, sizeof n, "h%d." what, l), nth_name(b, sizeof b, n, k))
    memset(S, 0, sizeof *S);
    a->ln1 = hx_gpt_actf_s(m, C, NAME("ln1"), 0);
    int ln = c->normalization == HX_NORM_LAYERNORM; /* RMSNorm keeps no mean */
    a->ln1_mean = ln ? hx_gpt_actf_s(m, 1, NAME("ln1_mean"), 0) : NULL;
    a->ln1_rstd = hx_gpt_actf_s(m, 1, NAME("ln1_rstd"), 0);
    a->ln1g = hx_gpt_full_of(m, a->ln1, ".full");
    a->qkv = hx_gpt_actf(m, m->qkv_cols, NAME("qkv"), 0);
    if (m->recompute != HX_RECOMPUTE_SELECTIVE) { /* else recomputed, in rc[l % 2] */
        a->atty = hx_gpt_actf(m, Cl, NAME("atty"), 0);
        a->att_lse = hx_gpt_actf(m, m->heads, NAME("att_lse"), 0);
    }
    a->res_mid = hx_gpt_actf_s(m, C, NAME("res_mid"), 0);
    a->ln2 = hx_gpt_actf_s(m, C, NAME("ln2"), 0);
    a->ln2_mean = ln ? hx_gpt_actf_s(m, 1, NAME("ln2_mean"), 0) : NULL;
    a->ln2_rstd = hx_gpt_actf_s(m, 1, NAME("ln2_rstd"), 0);
    a->ln2g = hx_gpt_full_of(m, a->ln2, ".full");
    a->fch = hx_gpt_actf(m, m->fc_cols, NAME("fch"), 0);
    if (m->recompute != HX_RECOMPUTE_SELECTIVE) {
        a->fch_gelu = hx_gpt_actf(m, m->ffn_cols, NAME("fch_gelu"), 0);
    }
    if (m->recompute != HX_RECOMPUTE_FULL) { /* full: kept apart (hx_gpt_take_keep) */
        S->out = hx_gpt_actf_s(m, C, NAME("out"), 0);
    }
#undef NAME
    return m->nsets++;
}

void hx_gpt_take_layer(struct hx_gpt *m, int mb, int l)
{
    int *slot = &m->set_of[mb * m->cfg.num_layers + l];
    if (*slot >= 0) {
        return;
    }
    *slot = m->nfree > 0 ? m->free_sets[--m->nfree] : set_new(m, l);
    m->live_sets++;
    m->peak_sets = m->live_sets > m->peak_sets ? m->live_sets : m->peak_sets;
}

void hx_gpt_give_layer(struct hx_gpt *m, int mb, int l)
{
    int *slot = &m->set_of[mb * m->cfg.num_layers + l];
    HX_ASSERT(*slot >= 0, "micro-batch %d gives back layer %d's activations it never took", mb,
              l);
    m->free_sets[m->nfree++] = *slot;
    *slot = -1;
    m->live_sets--;
}

/* ---- slots ---- */

static void make_slot(struct hx_gpt *m, int k)
{
    const struct hx_gpt_config *c = &m->cfg;
    struct gpt_slot *S = &m->slots[k];
    int C = m->Cy;
    char b[HX_NAME_MAX];
#define NAME(what) nth_name(b, sizeof b, what, k)
    S->emb = hx_gpt_actf_s(m, C, NAME(m->base.first_stage ? "emb" : "stage_in"), 0);
    S->emb_part = m->base.first_stage ? hx_gpt_full_of(m, S->emb, ".part") : NULL;
    S->in2 = m->base.nchunks > 1 ? hx_gpt_actf_s(m, C, NAME("stage_in2"), 0) : NULL;
    if (m->base.last_stage) {
        S->lnf = hx_gpt_actf_s(m, C, NAME("lnf"), 0);
        S->lnf_mean = c->normalization == HX_NORM_LAYERNORM /* RMSNorm keeps no mean */
                          ? hx_gpt_actf_s(m, 1, NAME("lnf_mean"), 0) : NULL;
        S->lnf_rstd = hx_gpt_actf_s(m, 1, NAME("lnf_rstd"), 0);
        S->lnfg = hx_gpt_full_of(m, S->lnf, ".full");
        S->logits = hx_gpt_act(m, NAME("logits"), m->V);
        S->losses = hx_gpt_act(m, NAME("losses"), 1);
        S->xent_lse = hx_gpt_act(m, NAME("xent_lse"), 1);
    }
#undef NAME
}

void hx_gpt_use_mb(struct hx_gpt *m, int mb)
{
    const struct gpt_slot *S = &m->slots[mb % m->nslots];
    int L = m->cfg.num_layers;
    m->emb = S->emb;
    m->emb_part = S->emb_part;
    m->in2 = S->in2;
    m->lnf = S->lnf, m->lnf_mean = S->lnf_mean, m->lnf_rstd = S->lnf_rstd, m->lnfg = S->lnfg;
    m->logits = S->logits, m->losses = S->losses, m->xent_lse = S->xent_lse;
    for (int l = 0; l < L; l++) {
        int k = m->set_of[mb * L + l];
        if (k >= 0) {
            m->layers[l] = m->sets[k].a;
            m->res_out[l] = m->sets[k].out;
        } else {
            memset(&m->layers[l], 0, sizeof m->layers[l]);
            m->res_out[l] = NULL;
        }
        if (m->recompute == HX_RECOMPUTE_SELECTIVE) { /* what selective drops */
            m->layers[l].atty = m->rc[l % 2].atty;
            m->layers[l].att_lse = m->rc[l % 2].att_lse;
            m->layers[l].fch_gelu = m->rc[l % 2].fch_gelu;
        } else if (m->recompute == HX_RECOMPUTE_FULL) {
            int q = m->keep_of[mb * L + l];
            m->res_out[l] = q >= 0 ? m->keeps[q] : NULL;
        }
        m->layers[l].dres = m->dres[l];
        m->layers[l].dres_mid = m->dres_mid[l];
    }
}

/* ---- everything ---- */

void hx_gpt_make_activations(struct hx_gpt *m)
{
    const struct hx_gpt_config *c = &m->cfg;
    int C = m->Cy, L = c->num_layers, tp = m->base.mesh.tpx, Cl = c->hidden_size / tp;
    m->tokens = calloc((size_t)m->base.Ml, sizeof(hx_tensor_t));
    m->targets = calloc((size_t)m->base.Ml, sizeof(hx_tensor_t));
    m->slots = calloc((size_t)m->nslots, sizeof(struct gpt_slot));
    m->set_of = malloc(sizeof(int) * (size_t)m->base.Ml * L);
    m->named = calloc((size_t)L, sizeof(int));
    m->layers = calloc((size_t)L, sizeof(struct gpt_layer_acts));
    m->res_out = calloc((size_t)L, sizeof(hx_tensor_t));
    m->dres = calloc((size_t)L, sizeof(hx_tensor_t));
    m->dres_mid = calloc((size_t)L, sizeof(hx_tensor_t));
    HX_ASSERT(m->tokens && m->targets && m->slots && m->set_of && m->named && m->layers &&
                  m->res_out && m->dres && m->dres_mid, "out of memory");
    for (int i = 0; i < m->base.Ml * L; i++) {
        m->set_of[i] = -1;
    }
    int tile = c->seq_len * c->tile_seqs;
    for (int mb = 0; mb < m->base.Ml; mb++) {
        char name[HX_NAME_MAX];
        snprintf(name, sizeof name, "tokens.mb%d", mb);
        m->tokens[mb] = hx_graph_tensor(m->base.g, name, HX_I32, HX_ROLE_INPUT, m->N, 1, tile);
        snprintf(name, sizeof name, "targets.mb%d", mb);
        m->targets[mb] = hx_graph_tensor(m->base.g, name, HX_I32, HX_ROLE_INPUT, m->N, 1, tile);
    }
    for (int k = 0; k < m->nslots; k++) {
        make_slot(m, k);
    }
    for (int l = 0; l < L; l++) { /* this stage's layers only */
        int mine = 0;
        for (int ch = 0; ch < m->base.nchunks; ch++) {
            mine |= l >= m->base.clo[ch] && l < m->base.chi[ch];
        }
        if (mine) {
            m->dres[l] = hx_gpt_actf_s(m, C, "h%d.dres", l);
            m->dres_mid[l] = hx_gpt_actf_s(m, C, "h%d.dres_mid", l);
        }
    }
    for (int p = 0; p < 2; p++) {
        m->bwd[p].dfch_gelu = hx_gpt_actf(m, m->ffn_cols, "bwd%d.dfch_gelu", p);
        m->bwd[p].dfch = hx_gpt_actf(m, m->fc_cols, "bwd%d.dfch", p);
        m->bwd[p].dln2 = hx_gpt_actf_s(m, C, "bwd%d.dln2", p);
        m->bwd[p].dln1 = hx_gpt_actf_s(m, C, "bwd%d.dln1", p);
        m->bwd[p].dln2_part = hx_gpt_full_of(m, m->bwd[p].dln2, ".part");
        m->bwd[p].dln1_part = hx_gpt_full_of(m, m->bwd[p].dln1, ".part");
        m->bwd[p].datty = hx_gpt_actf(m, Cl, "bwd%d.datty", p);
        m->bwd[p].dqkv = hx_gpt_actf(m, m->qkv_cols, "bwd%d.dqkv", p);
    }
    m->branch_out = hx_gpt_act(m, "branch_out", C);
    m->branch_s = m->base.mesh.sequence_parallel ? hx_gpt_actf_s(m, C, "branch_s", 0)
                                                 : m->branch_out;
    if (m->base.last_stage) {
        m->dlnf = hx_gpt_actf_s(m, C, "dlnf", 0);
        m->dlnf_part = hx_gpt_full_of(m, m->dlnf, ".part");
    }
    /* the gradient of a chunk's output: from the head, or received from the next stage */
    m->dtop = hx_gpt_actf_s(m, C, "dtop", 0);
    if (m->base.mesh.sequence_parallel) {
        m->dy_full = hx_gpt_act(m, "dy.full", C);
        m->dmid_full = hx_gpt_act(m, "dres_mid.full", C);
    }
    if (tp > 1 && m->base.last_stage) { /* every vocabulary shard's (lse, target logit) per row */
        m->xent_stats = hx_gpt_act(m, "xent_stats", 2);
        m->xent_all = hx_graph_tensor(m->base.g, "xent_stats.all", HX_F32, HX_ROLE_ACTIVATION,
                                      tp * m->N, 2, tp * tile);
    }
    m->base.loss_sum = hx_graph_tensor(m->base.g, "loss_sum", HX_F64, HX_ROLE_SCALAR, 1, 1, 0);
    m->base.gnorm_sumsq =
        hx_graph_tensor(m->base.g, "gnorm_sumsq", HX_F64, HX_ROLE_SCALAR, 1, 1, 0);
    hx_gpt_recompute_tensors(m);
    hx_gpt_use_mb(m, 0);
}

void hx_gpt_free_acts(struct hx_gpt *m)
{
    free(m->tokens);
    free(m->targets);
    free(m->slots);
    free(m->set_of);
    free(m->named);
    free(m->layers);
    free(m->res_out);
    free(m->dres);
    free(m->dres_mid);
    free(m->sets);
    free(m->free_sets);
    free(m->keeps);
    free(m->free_keeps);
    free(m->keep_of);
}
