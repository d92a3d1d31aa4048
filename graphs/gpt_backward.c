/* SPDX-License-Identifier: MIT */
/* graphs/gpt_backward.c: the backward of one micro-batch, layers in reverse.  Each linear
 * splits into a backward-data part (on the critical path to the embedding) and a
 * backward-weight part (dW += dY^T X, free to overlap the next layer's data path), the split
 * DHelix's pairing needs.  Residual gradients flow through LayerNorm backward's resid input:
 *   d x1 = dy + LN2'(d ln2),  d x = d x1 + LN1'(d ln1)
 * The loss gradient (scale 1/(M*B*T)) was written into the logits by the forward's fused
 * cross-entropy, so accumulated gradients equal the whole batch's mean.
 * Under tensor parallelism the column-parallel GEMMs' input gradients are partial sums over
 * tp (reduced by hx_model_tp_reduce) and the row-parallel ones read the whole output gradient
 * (gathered from sequence shards by hx_model_tp_gather under SP); under --tp-grid the
 * row-parallel ones' input gradients are partial over Y (hx_model_tp_reduce_y); graphs/dist.c's hooks
 * frame every layer (gathers of sharded parameters, zeroed per-micro-batch gradient
 * buffers) and follow every weight gradient (done(): its reduce-scatter, and its place in
 * the next all-reduce bucket, so buckets fill in the order gradients complete). */
#include "graphs/gpt_internal.h"
#include "helix/collectives.h"
#include "helix/layers.h"

/* Weight w's and bias b's gradients of micro-batch mb are complete. */
/* Parameters w and b (b: -1 for none) have this micro-batch's gradients */
static void done(struct hx_gpt *m, int w, int b, int mb)
{
    hx_model_grad_done(&m->base, w, mb);
    if (b >= 0) {
        hx_model_grad_done(&m->base, b, mb);
    }
}

/* A norm's backward: dinp = [resid +] dnorm/dinp^T dout, then its weight (and shift) */
static void norm_bwd(struct hx_gpt *m, hx_tensor_t dinp, hx_tensor_t dout, hx_tensor_t inp,
                     hx_tensor_t mean, hx_tensor_t rstd, hx_tensor_t resid, int wi, int bi,
                     int mb)
{
    m->base.g->cur.phase = HX_PHASE_BACKWARD_DATA;
    hx_gpt_norm_bwd_data(m, dinp, dout, inp, mean, rstd, resid, wi);
    m->base.g->cur.phase = HX_PHASE_BACKWARD_WEIGHT;
    hx_gpt_norm_bwd_weight(m, dout, inp, mean, rstd, wi, bi);
    done(m, wi, bi, mb);
}

/* A linear layer's weight gradient dw += dout^T inp [and its bias's] */
static void linear_bwd_weight(struct hx_gpt *m, int l, int kw, int kb, hx_tensor_t dout,
                              hx_tensor_t inp, int mb)
{
    int w = hx_gpt_pi(m, l, kw), b = hx_gpt_pi(m, l, kb);
    m->base.g->cur.phase = HX_PHASE_BACKWARD_WEIGHT;
    hx_linear_bwd_weight(m->base.g, m->base.gfull[w], hx_gpt_pt(m->base.gfull, b), dout, inp);
    done(m, w, b, mb);
    m->base.g->cur.phase = HX_PHASE_BACKWARD_DATA;
}

static void layer_backward(struct hx_gpt *m, int l, int mb, hx_tensor_t dy, hx_tensor_t x)
{
    hx_graph_t g = m->base.g;
    struct gpt_layer_acts *a = &m->layers[l];
    struct gpt_bwd_temps *t = &m->bwd[l % 2];
    hx_tensor_t *P = m->base.pfull;

    /* MLP branch: y = x1 + fcproj(act(fc(norm2(x1)))); the row-parallel fcproj reads the
     * whole dy (gathered from sequence shards under SP) */
    g->cur.phase = HX_PHASE_BACKWARD_DATA;
    hx_tensor_t dyg = hx_model_tp_gather(&m->base, m->dy_full, dy);
    hx_linear_bwd_data(g, t->dfch_gelu, dyg, P[hx_gpt_pi(m, l, P_FCPROJ_W)]);
    hx_model_tp_reduce_y(&m->base, t->dfch_gelu); /* the grid's transposed layer */
    linear_bwd_weight(m, l, P_FCPROJ_W, P_FCPROJ_B, dyg, a->fch_gelu, mb);
    hx_gpt_mlp_act_bwd(m, t->dfch, a->fch, t->dfch_gelu);
    /* column-parallel fc: its input gradient is a partial sum over tp */
    hx_model_tp_partial(&m->base);
    hx_linear_bwd_data(g, t->dln2_part, t->dfch, P[hx_gpt_pi(m, l, P_FC_W)]);
    hx_model_tp_reduce(&m->base, t->dln2, t->dln2_part);
    linear_bwd_weight(m, l, P_FC_W, P_FC_B, t->dfch, a->ln2g, mb);
    norm_bwd(m, a->dres_mid, t->dln2, a->res_mid, a->ln2_mean, a->ln2_rstd, dy,
             hx_gpt_pi(m, l, P_LN2_W), hx_gpt_pi(m, l, P_LN2_B), mb);

    /* attention branch: x1 = x + proj(attn(qkv(norm1(x)))) */
    g->cur.phase = HX_PHASE_BACKWARD_DATA;
    hx_tensor_t dmid = hx_model_tp_gather(&m->base, m->dmid_full, a->dres_mid);
    hx_linear_bwd_data(g, t->datty, dmid, P[hx_gpt_pi(m, l, P_PROJ_W)]);
    hx_model_tp_reduce_y(&m->base, t->datty);
    linear_bwd_weight(m, l, P_PROJ_W, P_PROJ_B, dmid, a->atty, mb);
    hx_gpt_attention_bwd(m, t->dqkv, a->qkv, a->atty, t->datty, a->att_lse);
    hx_model_tp_partial(&m->base);
    hx_linear_bwd_data(g, t->dln1_part, t->dqkv, P[hx_gpt_pi(m, l, P_QKV_W)]);
    hx_model_tp_reduce(&m->base, t->dln1, t->dln1_part);
    linear_bwd_weight(m, l, P_QKV_W, P_QKV_B, t->dqkv, a->ln1g, mb);
    norm_bwd(m, a->dres, t->dln1, x, a->ln1_mean, a->ln1_rstd, a->dres_mid,
             hx_gpt_pi(m, l, P_LN1_W), hx_gpt_pi(m, l, P_LN1_B), mb);
}

/* The backward of chunk c of micro-batch mb in three pieces: the gradient of its output
 * (the head's after the last virtual stage, else received); each layer, top down, giving its
 * activations back; the gradient of its input (sent back, or the embedding's). */
void hx_gpt_backward_begin(struct hx_gpt *m, int mb, int c)
{
    hx_graph_t g = m->base.g;
    hx_tensor_t *P = m->base.pfull, *G = m->base.gfull;
    int L = m->cfg.num_layers, b = m->base.cv[c] + m->base.cvn[c] - 1;
    int head = m->p_head >= 0 ? m->p_head : m->p_wte; /* the output layer: tied wte, or own */
    hx_gpt_use_mb(m, mb);
    if (b + 1 < m->base.nvs) { /* the gradient of this chunk's output, from the next stage */
        hx_recv_tiles(g, hx_gpt_edge_channel(m, b, 1), m->dtop, hx_model_vstage_rank(&m->base, b + 1));
        return;
    }
    /* head: logits = normf(xL) head^T; the forward's fused loss left dlogits in the logits */
    hx_model_tp_partial(&m->base);
    hx_linear_bwd_data(g, m->dlnf_part, m->logits, P[head]);
    hx_model_tp_reduce(&m->base, m->dlnf, m->dlnf_part);
    g->cur.phase = HX_PHASE_BACKWARD_WEIGHT;
    hx_linear_bwd_weight(g, G[head], NULL, m->logits, m->lnfg);
    if (head != m->p_wte || !m->base.first_stage) { /* this copy gets no lookup gradient */
        hx_model_grad_done(&m->base, head, mb);
    }
    norm_bwd(m, m->dtop, m->dlnf, m->res_out[L - 1], m->lnf_mean, m->lnf_rstd, NULL,
             m->p_lnf_w, m->p_lnf_b, mb);
}

void hx_gpt_backward_layer(struct hx_gpt *m, int mb, int c, int l)
{
    int lo = m->base.clo[c], hi = m->base.chi[c];
    hx_gpt_use_mb(m, mb);
    /* the schedule pass gathered its parameters and ran the recomputation */
    hx_tensor_t dy = l == hi - 1 ? m->dtop : m->dres[l + 1];
    hx_tensor_t x = l == lo ? (c == 0 ? m->emb : m->in2) : m->res_out[l - 1];
    layer_backward(m, l, mb, dy, x);
    hx_gpt_give_layer(m, mb, l); /* read for the last time (layer l+1 read its output) */
    hx_gpt_recompute_backward_done(m, mb, l);
}

void hx_gpt_backward_end(struct hx_gpt *m, int mb, int c)
{
    const struct hx_gpt_config *cf = &m->cfg;
    hx_graph_t g = m->base.g;
    hx_tensor_t *G = m->base.gfull;
    int a = m->base.cv[c], lo = m->base.clo[c];
    hx_gpt_use_mb(m, mb);
    if (a > 0) { /* the gradient of the chunk's input, to the previous virtual stage */
        hx_send_tiles(g, hx_gpt_edge_channel(m, a - 1, 1), m->dres[lo],
                      hx_model_vstage_rank(&m->base, a - 1));
        return;
    }
    /* embedding: wte receives both the head's and the lookup's gradient, in this order; every
     * tp rank adds the (whole, gathered) gradient to its copy of wpe */
    g->cur.phase = HX_PHASE_BACKWARD_WEIGHT;
    hx_tensor_t demb = hx_model_tp_gather(&m->base, m->dy_full, m->dres[0]);
    hx_tensor_t dwpe = hx_gpt_pt(G, m->p_wpe); /* none with rotary positions */
    if (m->base.mesh.tpx == 1 && dwpe != NULL) {
        hx_embed_bwd(g, G[m->p_wte], dwpe, demb, m->tokens[mb], cf->seq_len);
    } else {
        hx_embed_bwd_vp(g, G[m->p_wte], dwpe, demb, m->tokens[mb], cf->seq_len,
                        m->base.mesh.tpx_rank * m->V, cf->vocab_size);
    }
    done(m, m->p_wte, m->p_wpe, mb);
}
