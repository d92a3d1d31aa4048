/* SPDX-License-Identifier: MIT */
/* graphs/gpt_spec.c: GPT-2's parameters as the parallel passes see them (helix/model.h), in
 * the documented order of helix/gpt.h: wte, wpe, each layer's twelve, lnf_w, lnf_b.
 *
 *   wte (V,C)        embedding, vocabulary-parallel, tied: the LM head reads it too
 *   wpe (maxT,C)     embedding, replicated (tp rank 0 adds the positions)
 *   ln1_w, ln1_b     norm (1,C)                       } unit 0: the attention block
 *   qkv_w (3C,C)     column-parallel, blocks q|k|v    }
 *   qkv_b (1,3C)     column-parallel bias, q|k|v      }
 *   proj_w (C,C)     row-parallel, residual init      }
 *   proj_b (1,C)     replicated bias                  }
 *   ln2_w, ln2_b     norm (1,C)                       } unit 1: the MLP block
 *   fc_w (4C,C)      column-parallel                  }
 *   fc_b (1,4C)      column-parallel bias             }
 *   fcproj_w (C,4C)  row-parallel, residual init      }
 *   fcproj_b (1,C)   replicated bias                  }
 *   lnf_w, lnf_b     norm (1,C), with the head
 * Initialisation (GPT-2): N(0, 0.02) weights, N(0, 0.02/sqrt(2L)) for the two residual
 * projections so the stream's variance stays put, zero biases, unit norm scales. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "graphs/gpt_internal.h"
#include "helix/error.h"

static void put(struct hx_param_spec *s, const char *name, int layer, int rows, int cols,
                int role, int split, int init, double std)
{
    if (layer >= 0) {
        snprintf(s->name, sizeof s->name, "h%d.%s", layer, name);
    } else {
        snprintf(s->name, sizeof s->name, "%s", name);
    }
    s->rows = rows;
    s->cols = cols;
    s->role = role;
    s->split = split;
    s->nblocks = 0;
    s->site = HX_SITE_LAYER;
    s->layer = layer;
    s->unit = 0;
    s->init = init;
    s->init_std = std;
}

/* A norm's scale and shift (1,C): ones and zeros, never decayed, never split. */
static void norm(struct hx_param_spec *s, const char *w, const char *b, int layer, int C)
{
    put(&s[0], w, layer, 1, C, HX_PARAM_NORM, HX_TP_REPLICATED, HX_INIT_ONE, 0);
    put(&s[1], b, layer, 1, C, HX_PARAM_NORM, HX_TP_REPLICATED, HX_INIT_ZERO, 0);
}

void hx_gpt_param_specs(struct hx_gpt *m)
{
    const struct hx_gpt_config *c = &m->cfg;
    int C = c->hidden_size, L = c->num_layers;
    double std = 0.02, resid = 0.02 / sqrt(2.0 * L);
    m->nparams = 2 + L * P_PER_LAYER + 2;
    struct hx_param_spec *s = m->spec = calloc((size_t)m->nparams, sizeof *s);
    HX_ASSERT(s != NULL, "out of memory (%d parameter specs)", m->nparams);
    put(&s[P_WTE], "wte", -1, c->vocab_size, C, HX_PARAM_EMBEDDING, HX_TP_VOCAB, HX_INIT_NORMAL,
        std);
    s[P_WTE].site = HX_SITE_TIED;
    put(&s[P_WPE], "wpe", -1, c->max_seq_len, C, HX_PARAM_EMBEDDING, HX_TP_REPLICATED,
        HX_INIT_NORMAL, std);
    s[P_WPE].site = HX_SITE_EMBED;
    for (int l = 0; l < L; l++) {
        struct hx_param_spec *p = &s[P_LAYER(l, 0)];
        norm(&p[P_LN1_W], "ln1_w", "ln1_b", l, C);
        put(&p[P_QKV_W], "qkv_w", l, 3 * C, C, HX_PARAM_WEIGHT, HX_TP_COLUMN, HX_INIT_NORMAL,
            std);
        put(&p[P_QKV_B], "qkv_b", l, 1, 3 * C, HX_PARAM_BIAS, HX_TP_COLUMN, HX_INIT_ZERO, 0);
        for (int k = P_QKV_W; k <= P_QKV_B; k++) { /* q | k | v cut separately: whole heads */
            p[k].nblocks = 3;
            p[k].block[0] = p[k].block[1] = p[k].block[2] = C;
        }
        put(&p[P_PROJ_W], "proj_w", l, C, C, HX_PARAM_WEIGHT, HX_TP_ROW, HX_INIT_NORMAL, resid);
        put(&p[P_PROJ_B], "proj_b", l, 1, C, HX_PARAM_BIAS, HX_TP_REPLICATED, HX_INIT_ZERO, 0);
        norm(&p[P_LN2_W], "ln2_w", "ln2_b", l, C);
        put(&p[P_FC_W], "fc_w", l, 4 * C, C, HX_PARAM_WEIGHT, HX_TP_COLUMN, HX_INIT_NORMAL, std);
        put(&p[P_FC_B], "fc_b", l, 1, 4 * C, HX_PARAM_BIAS, HX_TP_COLUMN, HX_INIT_ZERO, 0);
        put(&p[P_FCPROJ_W], "fcproj_w", l, C, 4 * C, HX_PARAM_WEIGHT, HX_TP_ROW, HX_INIT_NORMAL,
            resid);
        put(&p[P_FCPROJ_B], "fcproj_b", l, 1, C, HX_PARAM_BIAS, HX_TP_REPLICATED, HX_INIT_ZERO,
            0);
        for (int k = P_LN2_W; k < P_PER_LAYER; k++) {
            p[k].unit = 1;
        }
    }
    norm(&s[m->nparams - 2], "lnf_w", "lnf_b", -1, C);
    s[m->nparams - 2].site = s[m->nparams - 1].site = HX_SITE_HEAD;
}
