/* SPDX-License-Identifier: MIT */
/* graphs/gpt_spec.c: the GPT model's parameters as the parallel passes see them
 * (helix/model.h), in the documented order of helix/gpt.h.  GPT-2 has every one below; the
 * Llama settings drop some (marked) and reshape others:
 *
 *   wte (V,C)          embedding, vocabulary-parallel; tied (the output layer reads it too)
 *                      unless --untie-embeddings-and-output-weights
 *   wpe (maxT,C)       embedding, replicated (tp rank 0 adds the positions); none with RoPE
 *   ln1_w, ln1_b       norm (1,C); no shift (ln*_b) with RMSNorm    } unit 0: attention
 *   qkv_w (C+2Ghs, C)  column-parallel, blocks q | k | v (G key/value heads of hs)
 *   qkv_b              its bias; none under --disable-bias-linear (nor the other biases)
 *   proj_w (C,C)       row-parallel, residual init
 *   proj_b (1,C)       replicated bias
 *   ln2_w, ln2_b       norm (1,C)                                     } unit 1: the MLP
 *   fc_w (F,C)         column-parallel; (2F,C) = [gate | up] blocks with SwiGLU
 *   fc_b               its bias
 *   fcproj_w (C,F)     row-parallel, residual init
 *   fcproj_b (1,C)     replicated bias
 *   lnf_w, lnf_b       the final norm, with the output layer
 *   head_w (V,C)       the output layer when untied: vocabulary-parallel, on the last stage
 * Initialisation (GPT-2's, as Megatron's): N(0, 0.02) weights, N(0, 0.02/sqrt(2L)) for the
 * two residual projections so the stream's variance stays put, zero biases, unit norm
 * scales. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphs/gpt_internal.h"
#include "helix/error.h"

/* The table being built: specs (NULL: count only) and, for a model, where each role went */
struct table {
    const struct hx_gpt_config *c;
    struct hx_param_spec *s;
    int n;
    int *pix;                                /* [L * P_PER_LAYER] or NULL */
    int wte, wpe, lnf_w, lnf_b, head;
};

/* Appends one parameter (a layer's, or -1) and returns its index. */
static int put(struct table *t, const char *name, int layer, int rows, int cols, int role,
               int split, int init, double std)
{
    int i = t->n++;
    if (t->s == NULL) {
        return i;
    }
    struct hx_param_spec *s = &t->s[i];
    memset(s, 0, sizeof *s);
    if (layer >= 0) {
        snprintf(s->name, sizeof s->name, "h%d.%s", layer, name);
    } else {
        snprintf(s->name, sizeof s->name, "%s", name);
    }
    s->rows = rows;
    s->cols = cols;
    s->role = role;
    s->split = split;
    s->site = layer >= 0 ? HX_SITE_LAYER : HX_SITE_HEAD;
    s->layer = layer;
    s->init = init;
    s->init_std = std;
    return i;
}

/* A packed column-parallel tensor (i >= 0): @p n blocks of the given sizes along its split */
static void blocks(struct table *t, int i, int n, int b0, int b1, int b2)
{
    if (t->s != NULL && i >= 0) {
        t->s[i].nblocks = n;
        t->s[i].block[0] = b0, t->s[i].block[1] = b1, t->s[i].block[2] = b2;
    }
}

/* A norm's scale and, for LayerNorm, its shift (1,C): ones and zeros, never decayed or split;
 * *wi and *bi get their indices (-1: none). */
static void norm(struct table *t, const char *w, const char *b, int layer, int *wi, int *bi)
{
    int C = t->c->hidden_size;
    *wi = put(t, w, layer, 1, C, HX_PARAM_NORM, HX_TP_REPLICATED, HX_INIT_ONE, 0);
    *bi = t->c->normalization == HX_NORM_LAYERNORM
              ? put(t, b, layer, 1, C, HX_PARAM_NORM, HX_TP_REPLICATED, HX_INIT_ZERO, 0) : -1;
}

/* A linear layer's bias (1, out), unless --disable-bias-linear: split as its weight for a
 * column-parallel layer, replicated (added by tp rank 0) for a row-parallel one. */
static int bias(struct table *t, const char *name, int layer, int out, int split)
{
    if (t->c->disable_bias) {
        return -1;
    }
    return put(t, name, layer, 1, out, HX_PARAM_BIAS,
               split == HX_TP_COLUMN ? HX_TP_COLUMN : HX_TP_REPLICATED, HX_INIT_ZERO, 0);
}

static void build(struct table *t)
{
    const struct hx_gpt_config *c = t->c;
    int C = c->hidden_size, L = c->num_layers, V = c->vocab_size, hs = C / c->num_heads;
    int G = c->num_query_groups ? c->num_query_groups : c->num_heads;
    int F = c->ffn_hidden_size ? c->ffn_hidden_size : 4 * C;
    int kv = G * hs, fc = c->swiglu ? 2 * F : F; /* k and v widths; fc's outputs */
    int site[2] = { HX_SITE_EMBED, HX_SITE_TIED }, lay[P_PER_LAYER];
    double std = 0.02, resid = 0.02 / sqrt(2.0 * L);
    t->n = 0;
    t->wte = put(t, "wte", -1, V, C, HX_PARAM_EMBEDDING, HX_TP_VOCAB, HX_INIT_NORMAL, std);
    t->wpe = -1;
    if (c->position_embedding == HX_POS_LEARNED) {
        t->wpe = put(t, "wpe", -1, c->max_seq_len ? c->max_seq_len : c->seq_len, C,
                     HX_PARAM_EMBEDDING, HX_TP_REPLICATED, HX_INIT_NORMAL, std);
    }
    for (int l = 0; l < L; l++) {
        int *p = t->pix != NULL ? &t->pix[l * P_PER_LAYER] : lay;
        norm(t, "ln1_w", "ln1_b", l, &p[P_LN1_W], &p[P_LN1_B]);
        p[P_QKV_W] = put(t, "qkv_w", l, C + 2 * kv, C, HX_PARAM_WEIGHT, HX_TP_COLUMN,
                         HX_INIT_NORMAL, std);
        p[P_QKV_B] = bias(t, "qkv_b", l, C + 2 * kv, HX_TP_COLUMN);
        blocks(t, p[P_QKV_W], 3, C, kv, kv); /* q | k | v cut separately: whole heads */
        blocks(t, p[P_QKV_B], 3, C, kv, kv);
        p[P_PROJ_W] = put(t, "proj_w", l, C, C, HX_PARAM_WEIGHT, HX_TP_ROW, HX_INIT_NORMAL,
                          resid);
        p[P_PROJ_B] = bias(t, "proj_b", l, C, HX_TP_ROW);
        int mlp = t->n; /* unit 1 from here */
        norm(t, "ln2_w", "ln2_b", l, &p[P_LN2_W], &p[P_LN2_B]);
        p[P_FC_W] = put(t, "fc_w", l, fc, C, HX_PARAM_WEIGHT, HX_TP_COLUMN, HX_INIT_NORMAL, std);
        p[P_FC_B] = bias(t, "fc_b", l, fc, HX_TP_COLUMN);
        if (c->swiglu) { /* gate | up cut separately */
            blocks(t, p[P_FC_W], 2, F, F, 0);
            blocks(t, p[P_FC_B], 2, F, F, 0);
        }
        p[P_FCPROJ_W] = put(t, "fcproj_w", l, C, F, HX_PARAM_WEIGHT, HX_TP_ROW, HX_INIT_NORMAL,
                            resid);
        p[P_FCPROJ_B] = bias(t, "fcproj_b", l, C, HX_TP_ROW);
        for (int i = mlp; t->s != NULL && i < t->n; i++) {
            t->s[i].unit = 1;
        }
    }
    norm(t, "lnf_w", "lnf_b", -1, &t->lnf_w, &t->lnf_b);
    t->head = -1;
    if (c->untie_embeddings) {
        t->head = put(t, "head_w", -1, V, C, HX_PARAM_EMBEDDING, HX_TP_VOCAB, HX_INIT_NORMAL,
                      std);
    }
    if (t->s != NULL) {
        t->s[t->wte].site = site[!c->untie_embeddings];
        if (t->wpe >= 0) {
            t->s[t->wpe].site = HX_SITE_EMBED;
        }
    }
}

int hx_gpt_param_table(const struct hx_gpt_config *c, struct hx_param_spec *s)
{
    struct table t = { .c = c, .s = s };
    build(&t);
    return t.n;
}

void hx_gpt_param_specs(struct hx_gpt *m)
{
    struct table t = { .c = &m->cfg };
    int n = hx_gpt_param_table(&m->cfg, NULL);
    t.s = m->base.spec = calloc((size_t)n, sizeof *m->base.spec);
    t.pix = m->pix = malloc(sizeof(int) * (size_t)m->cfg.num_layers * P_PER_LAYER);
    HX_ASSERT(m->base.spec != NULL && m->pix != NULL, "out of memory (%d parameter specs)", n);
    build(&t);
    m->base.nparams = t.n;
    m->p_wte = t.wte, m->p_wpe = t.wpe, m->p_head = t.head;
    m->p_lnf_w = t.lnf_w, m->p_lnf_b = t.lnf_b;
}
