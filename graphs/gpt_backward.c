/* SPDX-License-Identifier: MIT */
/* graphs/gpt_backward.c: the backward of one micro-batch, layers in reverse.  Each linear
 * splits into a backward-data part (on the critical path to the embedding) and a
 * backward-weight part (dW += dY^T X, free to overlap the next layer's data path), the split
 * DHelix's pairing needs.  Residual gradients flow through LayerNorm backward's resid input:
 *   d x1 = dy + LN2'(d ln2),  d x = d x1 + LN1'(d ln1)
 * The loss gradient (scale 1/(M*B*T)) was written into the logits by the forward's fused
 * cross-entropy, so accumulated gradients equal the whole batch's mean. */
#include "graphs/gpt_internal.h"
#include "helix/layers.h"

static void layer_backward(struct hx_gpt *m, int l, hx_tensor_t dy, hx_tensor_t x)
{
    hx_graph_t g = m->g;
    struct gpt_layer_acts *a = &m->layers[l];
    struct gpt_bwd_temps *t = &m->bwd[l % 2];
    hx_tensor_t *P = m->params, *G = m->grads;
    g->cur.layer = l;

    /* MLP branch: y = x1 + fcproj(gelu(fc(LN2(x1)))) */
    g->cur.phase = HX_PHASE_BACKWARD_DATA;
    hx_linear_bwd_data(g, t->dfch_gelu, dy, P[P_LAYER(l, P_FCPROJ_W)]);
    g->cur.phase = HX_PHASE_BACKWARD_WEIGHT;
    hx_linear_bwd_weight(g, G[P_LAYER(l, P_FCPROJ_W)], G[P_LAYER(l, P_FCPROJ_B)], dy, a->fch_gelu);
    g->cur.phase = HX_PHASE_BACKWARD_DATA;
    hx_gelu_bwd(g, t->dfch, a->fch, t->dfch_gelu);
    hx_linear_bwd_data(g, t->dln2, t->dfch, P[P_LAYER(l, P_FC_W)]);
    g->cur.phase = HX_PHASE_BACKWARD_WEIGHT;
    hx_linear_bwd_weight(g, G[P_LAYER(l, P_FC_W)], G[P_LAYER(l, P_FC_B)], t->dfch, a->ln2);
    g->cur.phase = HX_PHASE_BACKWARD_DATA;
    hx_layernorm_bwd_data(g, a->dres_mid, t->dln2, a->res_mid, P[P_LAYER(l, P_LN2_W)],
                          a->ln2_mean, a->ln2_rstd, dy);
    g->cur.phase = HX_PHASE_BACKWARD_WEIGHT;
    hx_layernorm_bwd_weight(g, G[P_LAYER(l, P_LN2_W)], G[P_LAYER(l, P_LN2_B)], t->dln2,
                            a->res_mid, a->ln2_mean, a->ln2_rstd);

    /* attention branch: x1 = x + proj(attn(qkv(LN1(x)))) */
    g->cur.phase = HX_PHASE_BACKWARD_DATA;
    hx_linear_bwd_data(g, t->datty, a->dres_mid, P[P_LAYER(l, P_PROJ_W)]);
    g->cur.phase = HX_PHASE_BACKWARD_WEIGHT;
    hx_linear_bwd_weight(g, G[P_LAYER(l, P_PROJ_W)], G[P_LAYER(l, P_PROJ_B)], a->dres_mid,
                         a->atty);
    g->cur.phase = HX_PHASE_BACKWARD_DATA;
    hx_attention_bwd(g, t->dqkv, a->qkv, a->atty, t->datty, a->att_lse, m->cfg.seq_len,
                     m->cfg.num_heads, m->cfg.attn_block);
    hx_linear_bwd_data(g, t->dln1, t->dqkv, P[P_LAYER(l, P_QKV_W)]);
    g->cur.phase = HX_PHASE_BACKWARD_WEIGHT;
    hx_linear_bwd_weight(g, G[P_LAYER(l, P_QKV_W)], G[P_LAYER(l, P_QKV_B)], t->dqkv, a->ln1);
    g->cur.phase = HX_PHASE_BACKWARD_DATA;
    hx_layernorm_bwd_data(g, a->dres, t->dln1, x, P[P_LAYER(l, P_LN1_W)], a->ln1_mean,
                          a->ln1_rstd, a->dres_mid);
    g->cur.phase = HX_PHASE_BACKWARD_WEIGHT;
    hx_layernorm_bwd_weight(g, G[P_LAYER(l, P_LN1_W)], G[P_LAYER(l, P_LN1_B)], t->dln1, x,
                            a->ln1_mean, a->ln1_rstd);
}

void hx_gpt_emit_backward(struct hx_gpt *m, int mb)
{
    const struct hx_gpt_config *c = &m->cfg;
    hx_graph_t g = m->g;
    hx_tensor_t *P = m->params, *G = m->grads;
    int L = c->num_layers;
    g->cur.microbatch = mb;
    g->cur.layer = -1;

    /* head: logits = LNf(xL) wte^T; the forward's fused loss left dlogits in the logits */
    g->cur.phase = HX_PHASE_BACKWARD_DATA;
    hx_linear_bwd_data(g, m->dlnf, m->logits, P[P_WTE]);
    g->cur.phase = HX_PHASE_BACKWARD_WEIGHT;
    hx_linear_bwd_weight(g, G[P_WTE], NULL, m->logits, m->lnf);
    g->cur.phase = HX_PHASE_BACKWARD_DATA;
    hx_tensor_t xL = m->res_out[L - 1];
    hx_layernorm_bwd_data(g, m->dtop, m->dlnf, xL, P[m->nparams - 2], m->lnf_mean, m->lnf_rstd,
                          NULL);
    g->cur.phase = HX_PHASE_BACKWARD_WEIGHT;
    hx_layernorm_bwd_weight(g, G[m->nparams - 2], G[m->nparams - 1], m->dlnf, xL, m->lnf_mean,
                            m->lnf_rstd);

    for (int l = L - 1; l >= 0; l--) {
        hx_tensor_t dy = l == L - 1 ? m->dtop : m->layers[l + 1].dres;
        hx_tensor_t x = l == 0 ? m->emb : m->res_out[l - 1];
        layer_backward(m, l, dy, x);
    }

    /* embedding: wte receives both the head's and the lookup's gradient, in this order */
    g->cur.layer = -1;
    g->cur.phase = HX_PHASE_BACKWARD_WEIGHT;
    hx_embed_bwd(g, G[P_WTE], G[P_WPE], m->layers[0].dres, m->tokens[mb], c->seq_len);
}
