/* SPDX-License-Identifier: MIT */
/* graphs/gpt_recompute.c: activation recomputation (--recompute-activations), a graph
 * transformation of the GPT step (Megatron's; papers.md §1 on AxoNN IV-D).
 *
 *   selective: the sets (graphs/gpt_acts.c) keep no attention output, log-sum-exp or GELU
 *     output; the forward writes them into two scratch sets by layer parity (rc), and right
 *     before layer l's backward the attention core runs again from the kept qkv and the
 *     GELU from the kept GEMM output.  No GEMM with a weight runs twice.
 *   full: each layer's output (the next layer's input) goes into a pool of its own (keeps)
 *     and the layer's set returns to the pool as soon as its forward is emitted, so the
 *     forward holds about two sets.  Right before layer l's backward a fresh set is taken
 *     and layer l's forward runs again from layer l-1's kept output: its LayerNorm (in the
 *     forward fused with the previous layer's residual add), attention with its
 *     tensor-parallel reduction, the residual add with the second LayerNorm, and the
 *     MLP's first GEMM with its GELU; the MLP's second GEMM and the layer's output are not
 *     needed by the backward and do not run again.  Under parameter sharding the backward's
 *     gather of layer l's parameters (hx_dist_backward_begin) comes first, and the
 *     recomputation reads the same gathered slots: no extra all-gather.
 *
 * The recomputed ops are the forward's codelets on the same inputs (LayerNorm alone and
 * fused with the add call the same row kernel, the GELU alone and fused with its GEMM the
 * same vector function), so every number stays bitwise the same; only memory and time move.
 * Recomputed nodes have phase HX_PHASE_RECOMPUTE.
 * Test: tests/graphs/recompute.c (memory, where recompute nodes are),
 * tests/mpi/parity_recompute.sh (bitwise, serial and on meshes). */
#include <stdio.h>
#include <stdlib.h>

#include "graphs/gpt_internal.h"
#include "helix/error.h"
#include "helix/layers.h"

void hx_gpt_recompute_tensors(struct hx_gpt *m)
{
    const struct hx_gpt_config *c = &m->cfg;
    int L = c->num_layers, tp = m->base.mesh.tpx, Cl = c->hidden_size / tp;
    if (m->recompute == HX_RECOMPUTE_SELECTIVE) {
        for (int p = 0; p < 2; p++) {
            m->rc[p].atty = hx_gpt_actf(m, Cl, "rc%d.atty", p);
            m->rc[p].att_lse = hx_gpt_actf(m, m->heads, "rc%d.att_lse", p);
            m->rc[p].fch_gelu = hx_gpt_actf(m, m->ffn_cols, "rc%d.fch_gelu", p);
        }
    }
    m->keep_of = malloc(sizeof(int) * (size_t)m->base.Ml * L);
    HX_ASSERT(m->keep_of != NULL, "out of memory");
    for (int i = 0; i < m->base.Ml * L; i++) {
        m->keep_of[i] = -1;
    }
}

/* full: a kept layer output for (mb, l), from the pool (the last given back first) */
void hx_gpt_take_keep(struct hx_gpt *m, int mb, int l)
{
    int *q = &m->keep_of[mb * m->cfg.num_layers + l];
    if (m->recompute != HX_RECOMPUTE_FULL || *q >= 0) {
        return;
    }
    if (m->nfree_keeps > 0) {
        *q = m->free_keeps[--m->nfree_keeps];
        return;
    }
    if (m->nkeeps == m->cap_keeps) {
        m->cap_keeps = m->cap_keeps ? 2 * m->cap_keeps : 16;
        m->keeps = realloc(m->keeps, sizeof *m->keeps * (size_t)m->cap_keeps);
        m->free_keeps = realloc(m->free_keeps, sizeof(int) * (size_t)m->cap_keeps);
        HX_ASSERT(m->keeps && m->free_keeps, "out of memory");
    }
    m->keeps[m->nkeeps] = hx_gpt_actf_s(m, m->Cy, "keep%d.out", m->named_keeps++);
    *q = m->nkeeps++;
}

static void give_keep(struct hx_gpt *m, int mb, int l)
{
    int *q = &m->keep_of[mb * m->cfg.num_layers + l];
    if (*q >= 0) {
        m->free_keeps[m->nfree_keeps++] = *q;
        *q = -1;
    }
}

void hx_gpt_recompute_forward_done(struct hx_gpt *m, int mb, int l)
{
    if (m->recompute == HX_RECOMPUTE_FULL) { /* its output is kept apart; the rest can go */
        hx_gpt_give_layer(m, mb, l);
    }
}

/* selective: the attention core and the GELU of layer l, into rc[l % 2] */
static void recompute_selective(struct hx_gpt *m, int l)
{
    struct gpt_layer_acts *a = &m->layers[l];
    hx_gpt_attention_fwd(m, a->atty, a->att_lse, a->qkv);
    hx_gpt_mlp_act_fwd(m, a->fch_gelu, a->fch);
}

/* full: layer l's forward again from its kept input @p x, up to the MLP's GELU */
static void recompute_full(struct hx_gpt *m, int l, hx_tensor_t x)
{
    struct gpt_layer_acts *a = &m->layers[l];
    hx_gpt_norm_fwd(m, a->ln1, a->ln1_mean, a->ln1_rstd, x, hx_gpt_pi(m, l, P_LN1_W),
                    hx_gpt_pi(m, l, P_LN1_B));
    hx_gpt_layer_to_gelu(m, l, x);
}

void hx_gpt_recompute_layer(struct hx_gpt *m, int mb, int c, int l)
{
    if (m->recompute == HX_RECOMPUTE_NONE) {
        return;
    }
    int lo = m->base.clo[c];
    if (m->recompute == HX_RECOMPUTE_FULL) {
        hx_gpt_take_layer(m, mb, l);
    }
    hx_gpt_use_mb(m, mb);
    enum hx_phase phase = m->base.g->cur.phase;
    m->base.g->cur.phase = HX_PHASE_RECOMPUTE;
    if (m->recompute == HX_RECOMPUTE_SELECTIVE) {
        recompute_selective(m, l);
    } else {
        recompute_full(m, l, l == lo ? (c == 0 ? m->emb : m->in2) : m->res_out[l - 1]);
    }
    m->base.g->cur.phase = phase;
}

void hx_gpt_recompute_backward_done(struct hx_gpt *m, int mb, int l)
{
    /* layer l's output was last read by layer l+1's backward (its input), emitted before */
    if (m->recompute == HX_RECOMPUTE_FULL) {
        give_keep(m, mb, l);
    }
}
