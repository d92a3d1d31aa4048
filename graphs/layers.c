/* SPDX-License-Identifier: MIT */
/* graphs/layers.c: the layer builders of include/helix/layers.h.  Each emits one node per
 * row tile (a tile holds whole sequences), so tiles run in parallel and the tile split, fixed
 * by the configuration, fixes every reduction order.  Misuse (mismatched shapes or tilings)
 * is a bug in the caller and asserts with the shapes.  Flops and bytes feed the planner.
 * Test: tests/graphs/gpt_grad_fd.c, tests/graphs/torch_parity.c (through the GPT builder);
 * the codelet tests of tests/codelets/ build their graphs with these.  The norms' builders are
 * graphs/layers_norm.c. */
#include "helix/error.h"
#include "helix/layers.h"

#include "graphs/layers_internal.h"

void hx_linear_fwd(hx_graph_t g, hx_tensor_t out, hx_tensor_t inp, hx_tensor_t w, hx_tensor_t b)
{
    int C = inp->cols, OC = w->rows;
    shape(w, OC, C);
    shape(out, inp->rows, OC);
    same_tiling(out, inp);
    single_tile(w);
    if (b != NULL) {
        shape(b, 1, OC);
    }
    for (int e = 0; e < inp->ntiles; e++) {
        int i = hx_cursor_tile(&g->cur, e, inp->ntiles), rows = hx_tile_nrows(inp, i);
        union hx_op_args a = { .mm = { .transa = 0, .transb = 1, .m = rows, .n = OC, .k = C,
                                       .alpha = 1.0f, .beta = 0.0f, .has_bias = b != NULL } };
        struct hx_ref refs[4] = { hx_ref_of(inp, i, HX_R), hx_ref_of(w, 0, HX_R),
                                  hx_ref_of(out, i, HX_W) };
        if (b != NULL) {
            refs[3] = hx_ref_of(b, 0, HX_R);
        }
        hx_graph_add(g, HX_OP_MATMUL, &a, b != NULL ? 4 : 3, refs, 2.0 * rows * OC * C,
                     F4 * ((double)rows * C + (double)OC * C + (double)rows * OC));
    }
}

void hx_linear_gelu_fwd(hx_graph_t g, hx_tensor_t pre, hx_tensor_t out, hx_tensor_t inp,
                        hx_tensor_t w, hx_tensor_t b)
{
    int C = inp->cols, OC = w->rows;
    shape(w, OC, C);
    shape(b, 1, OC);
    shape(pre, inp->rows, OC);
    shape(out, inp->rows, OC);
    same_tiling(pre, inp);
    same_tiling(out, inp);
    single_tile(w);
    for (int e = 0; e < inp->ntiles; e++) {
        int i = hx_cursor_tile(&g->cur, e, inp->ntiles), rows = hx_tile_nrows(inp, i);
        union hx_op_args a = { .mm = { .transa = 0, .transb = 1, .m = rows, .n = OC, .k = C,
                                       .alpha = 1.0f, .beta = 0.0f, .has_bias = 1 } };
        struct hx_ref refs[5] = { hx_ref_of(inp, i, HX_R), hx_ref_of(w, 0, HX_R),
                                  hx_ref_of(pre, i, HX_W), hx_ref_of(b, 0, HX_R),
                                  hx_ref_of(out, i, HX_W) };
        /* flops: the GEMM's, as model FLOP counts go; GELU is a memory-bound epilogue */
        hx_graph_add(g, HX_OP_MATMUL_GELU, &a, 5, refs, 2.0 * rows * OC * C,
                     F4 * ((double)rows * C + (double)OC * C + 2.0 * rows * OC));
    }
}

void hx_linear_bwd_data(hx_graph_t g, hx_tensor_t dinp, hx_tensor_t dout, hx_tensor_t w)
{
    int OC = w->rows, C = w->cols;
    shape(dout, dout->rows, OC);
    shape(dinp, dout->rows, C);
    same_tiling(dinp, dout);
    single_tile(w);
    for (int e = 0; e < dout->ntiles; e++) {
        int i = hx_cursor_tile(&g->cur, e, dout->ntiles), rows = hx_tile_nrows(dout, i);
        union hx_op_args a = { .mm = { .transa = 0, .transb = 0, .m = rows, .n = C, .k = OC,
                                       .alpha = 1.0f, .beta = 0.0f } };
        struct hx_ref refs[3] = { hx_ref_of(dout, i, HX_R), hx_ref_of(w, 0, HX_R),
                                  hx_ref_of(dinp, i, HX_W) };
        hx_graph_add(g, HX_OP_MATMUL, &a, 3, refs, 2.0 * rows * OC * C,
                     F4 * ((double)rows * C + (double)OC * C + (double)rows * OC));
    }
}

void hx_linear_bwd_weight(hx_graph_t g, hx_tensor_t dw, hx_tensor_t db, hx_tensor_t dout,
                          hx_tensor_t inp)
{
    int OC = dout->cols, C = inp->cols;
    shape(dw, OC, C);
    same_tiling(dout, inp);
    single_tile(dw);
    for (int e = 0; e < dout->ntiles; e++) {
        int i = hx_cursor_tile(&g->cur, e, dout->ntiles), rows = hx_tile_nrows(dout, i);
        union hx_op_args a = { .mm = { .transa = 1, .transb = 0, .m = OC, .n = C, .k = rows,
                                       .alpha = 1.0f, .beta = 1.0f } };
        struct hx_ref refs[3] = { hx_ref_of(dout, i, HX_R), hx_ref_of(inp, i, HX_R),
                                  hx_ref_of(dw, 0, HX_RW) };
        hx_graph_add(g, HX_OP_MATMUL, &a, 3, refs, 2.0 * rows * OC * C,
                     F4 * ((double)rows * C + 2.0 * OC * C + (double)rows * OC));
        if (db != NULL) {
            shape(db, 1, OC);
            union hx_op_args ab = { .rows = { .rows = rows, .cols = OC } };
            struct hx_ref rb[2] = { hx_ref_of(dout, i, HX_R), hx_ref_of(db, 0, HX_RW) };
            hx_graph_add(g, HX_OP_BIAS_BWD, &ab, 2, rb, (double)rows * OC,
                         F4 * ((double)rows * OC + 2.0 * OC));
        }
    }
}

void hx_gelu_fwd(hx_graph_t g, hx_tensor_t out, hx_tensor_t inp)
{
    same_tiling(out, inp);
    shape(out, inp->rows, inp->cols);
    for (int e = 0; e < inp->ntiles; e++) {
        int i = hx_cursor_tile(&g->cur, e, inp->ntiles), rows = hx_tile_nrows(inp, i);
        union hx_op_args a = { .rows = { .rows = rows, .cols = inp->cols } };
        struct hx_ref refs[2] = { hx_ref_of(inp, i, HX_R), hx_ref_of(out, i, HX_W) };
        hx_graph_add(g, HX_OP_GELU_FWD, &a, 2, refs, 10.0 * rows * inp->cols,
                     F4 * 2.0 * rows * inp->cols);
    }
}

void hx_gelu_bwd(hx_graph_t g, hx_tensor_t dinp, hx_tensor_t inp, hx_tensor_t dout)
{
    same_tiling(dinp, inp);
    same_tiling(dout, inp);
    shape(dinp, inp->rows, inp->cols);
    shape(dout, inp->rows, inp->cols);
    for (int e = 0; e < inp->ntiles; e++) {
        int i = hx_cursor_tile(&g->cur, e, inp->ntiles), rows = hx_tile_nrows(inp, i);
        union hx_op_args a = { .rows = { .rows = rows, .cols = inp->cols } };
        struct hx_ref refs[3] = { hx_ref_of(inp, i, HX_R), hx_ref_of(dout, i, HX_R),
                                  hx_ref_of(dinp, i, HX_W) };
        hx_graph_add(g, HX_OP_GELU_BWD, &a, 3, refs, 14.0 * rows * inp->cols,
                     F4 * 3.0 * rows * inp->cols);
    }
}

/* out (N,F) against inp (N,2F) = [gate | up] */
static void swiglu_check(hx_tensor_t out, hx_tensor_t inp)
{
    same_tiling(out, inp);
    shape(inp, out->rows, 2 * out->cols);
}

/* flops per element of out: exp, 1 + e, the division, g s, s u (5, exp counted as one);
 * bytes: inp (2F) read, out (F) written */
void hx_swiglu_fwd(hx_graph_t g, hx_tensor_t out, hx_tensor_t inp)
{
    int F = out->cols;
    swiglu_check(out, inp);
    for (int e = 0; e < inp->ntiles; e++) {
        int i = hx_cursor_tile(&g->cur, e, inp->ntiles), rows = hx_tile_nrows(inp, i);
        union hx_op_args a = { .rows = { .rows = rows, .cols = F } };
        struct hx_ref refs[2] = { hx_ref_of(inp, i, HX_R), hx_ref_of(out, i, HX_W) };
        hx_graph_add(g, HX_OP_SWIGLU_FWD, &a, 2, refs, 5.0 * rows * F, F4 * 3.0 * rows * F);
    }
}

/* flops per element of dout: s(g) (3), dgate (6), dup (2); bytes: inp (2F) and dout (F)
 * read, dinp (2F) written */
void hx_swiglu_bwd(hx_graph_t g, hx_tensor_t dinp, hx_tensor_t inp, hx_tensor_t dout)
{
    int F = dout->cols;
    swiglu_check(dout, inp);
    same_tiling(dinp, inp);
    shape(dinp, inp->rows, 2 * F);
    for (int e = 0; e < inp->ntiles; e++) {
        int i = hx_cursor_tile(&g->cur, e, inp->ntiles), rows = hx_tile_nrows(inp, i);
        union hx_op_args a = { .rows = { .rows = rows, .cols = F } };
        struct hx_ref refs[3] = { hx_ref_of(inp, i, HX_R), hx_ref_of(dout, i, HX_R),
                                  hx_ref_of(dinp, i, HX_W) };
        hx_graph_add(g, HX_OP_SWIGLU_BWD, &a, 3, refs, 11.0 * rows * F, F4 * 5.0 * rows * F);
    }
}

/* Causal attention flops: QK^T and PV each 2*T*T*hs per query head, halved by the mask
 * (C = NH hs): grouped-query attention does the same math with fewer k, v heads. */
static double attention_flops(int nseq, int T, int C)
{
    return 2.0 * nseq * (double)T * T * C;
}

/* hs of a qkv (N, (NH + 2 KV) hs) for attention over sequences of T rows */
static int attention_check(hx_tensor_t qkv, int T, int NH, int KV)
{
    HX_ASSERT(NH > 0 && KV > 0 && NH % KV == 0, "%s: %d query heads are not a multiple of %d "
              "key/value heads (grouped-query attention needs NH %% KV == 0)", qkv->name, NH,
              KV);
    int hs = qkv->cols / (NH + 2 * KV);
    HX_ASSERT(hs > 0 && qkv->cols == (NH + 2 * KV) * hs, "%s: %d columns is not (NH + 2 KV) hs "
              "= (%d + 2 x %d) hs for any head size hs", qkv->name, qkv->cols, NH, KV);
    HX_ASSERT(qkv->tile_rows % T == 0 && qkv->rows % T == 0, "%s: row tiles of %d (rows %d) "
              "must hold whole sequences of T=%d", qkv->name, qkv->tile_rows, qkv->rows, T);
    return hs;
}

void hx_gqa_attention_fwd(hx_graph_t g, hx_tensor_t out, hx_tensor_t lse, hx_tensor_t qkv, int T,
                          int NH, int KV, int block)
{
    int hs = attention_check(qkv, T, NH, KV), C = NH * hs;
    shape(out, qkv->rows, C);
    shape(lse, qkv->rows, NH);
    same_tiling(out, qkv);
    same_tiling(lse, qkv);
    for (int i = 0; i < qkv->ntiles; i++) {
        int nseq = hx_tile_nrows(qkv, i) / T;
        union hx_op_args a = { .attn = { .nseq = nseq, .T = T, .C = C, .NH = NH,
                                         .block = block > 0 ? block : 64, .KV = KV } };
        struct hx_ref refs[3] = { hx_ref_of(qkv, i, HX_R), hx_ref_of(out, i, HX_W),
                                  hx_ref_of(lse, i, HX_W) };
        /* reads q | k | v (C + 2 KV hs), writes out (C) */
        hx_graph_add(g, HX_OP_ATTENTION_FWD, &a, 3, refs, attention_flops(nseq, T, C),
                     F4 * nseq * T * (2.0 * C + 2.0 * KV * hs));
    }
}

void hx_gqa_attention_bwd(hx_graph_t g, hx_tensor_t dqkv, hx_tensor_t qkv, hx_tensor_t out,
                          hx_tensor_t dout, hx_tensor_t lse, int T, int NH, int KV, int block)
{
    int hs = attention_check(qkv, T, NH, KV), C = NH * hs;
    same_tiling(dqkv, qkv);
    same_tiling(dout, qkv);
    shape(dqkv, qkv->rows, qkv->cols);
    for (int i = 0; i < qkv->ntiles; i++) {
        int nseq = hx_tile_nrows(qkv, i) / T;
        union hx_op_args a = { .attn = { .nseq = nseq, .T = T, .C = C, .NH = NH,
                                         .block = block > 0 ? block : 64, .KV = KV } };
        struct hx_ref refs[5] = { hx_ref_of(qkv, i, HX_R), hx_ref_of(out, i, HX_R),
                                  hx_ref_of(dout, i, HX_R), hx_ref_of(lse, i, HX_R),
                                  hx_ref_of(dqkv, i, HX_W) };
        /* recomputes QK^T, then dV, dP, dQ, dK: 2.5x the forward; reads qkv, out, dout and
         * writes dqkv */
        hx_graph_add(g, HX_OP_ATTENTION_BWD, &a, 5, refs, 2.5 * attention_flops(nseq, T, C),
                     F4 * nseq * T * (4.0 * C + 4.0 * KV * hs));
    }
}

void hx_attention_fwd(hx_graph_t g, hx_tensor_t out, hx_tensor_t lse, hx_tensor_t qkv, int T,
                      int NH, int block)
{
    hx_gqa_attention_fwd(g, out, lse, qkv, T, NH, NH, block);
}

void hx_attention_bwd(hx_graph_t g, hx_tensor_t dqkv, hx_tensor_t qkv, hx_tensor_t out,
                      hx_tensor_t dout, hx_tensor_t lse, int T, int NH, int block)
{
    hx_gqa_attention_bwd(g, dqkv, qkv, out, dout, lse, T, NH, NH, block);
}

/* RoPE on the q and k heads of a qkv (N, (NH + 2 KV) hs), one task per row tile; the math is
 * ~6 flops per rotated pair and a cos and sin per (row, pair) */
static void rope(hx_graph_t g, enum hx_op op, hx_tensor_t qkv, int T, int NH, int KV, float base)
{
    HX_ASSERT(NH > 0 && KV > 0 && NH % KV == 0, "%s: %d query heads are not a multiple of %d "
              "key/value heads", qkv->name, NH, KV);
    int hs = qkv->cols / (NH + 2 * KV);
    HX_ASSERT(hs > 0 && hs % 2 == 0 && qkv->cols == (NH + 2 * KV) * hs, "%s: %d columns is not "
              "(NH + 2 KV) hs = (%d + 2 x %d) hs for an even head size hs", qkv->name,
              qkv->cols, NH, KV);
    HX_ASSERT(qkv->tile_rows % T == 0 && qkv->rows % T == 0, "%s: row tiles of %d (rows %d) "
              "must hold whole sequences of T=%d (positions are rows mod T)", qkv->name,
              qkv->tile_rows, qkv->rows, T);
    HX_ASSERT(base > 1.0f, "%s: RoPE base %g must exceed 1", qkv->name, (double)base);
    for (int e = 0; e < qkv->ntiles; e++) {
        int i = hx_cursor_tile(&g->cur, e, qkv->ntiles), rows = hx_tile_nrows(qkv, i);
        union hx_op_args a = { .rope = { .rows = rows, .T = T, .NH = NH, .KV = KV, .hs = hs,
                                         .base = base } };
        struct hx_ref refs[1] = { hx_ref_of(qkv, i, HX_RW) };
        double turned = (double)rows * (NH + KV) * hs; /* elements read and written */
        hx_graph_add(g, op, &a, 1, refs, 3.0 * turned, F4 * 2.0 * turned);
    }
}

void hx_rope_fwd(hx_graph_t g, hx_tensor_t qkv, int T, int NH, int KV, float base)
{
    rope(g, HX_OP_ROPE_FWD, qkv, T, NH, KV, base);
}

void hx_rope_bwd(hx_graph_t g, hx_tensor_t dqkv, int T, int NH, int KV, float base)
{
    rope(g, HX_OP_ROPE_BWD, dqkv, T, NH, KV, base);
}

void hx_add(hx_graph_t g, hx_tensor_t out, hx_tensor_t a, hx_tensor_t b)
{
    same_tiling(out, a);
    same_tiling(out, b);
    shape(a, out->rows, out->cols);
    shape(b, out->rows, out->cols);
    for (int i = 0; i < out->ntiles; i++) {
        int rows = hx_tile_nrows(out, i);
        union hx_op_args args = { .rows = { .rows = rows, .cols = out->cols } };
        struct hx_ref refs[3] = { hx_ref_of(a, i, HX_R), hx_ref_of(b, i, HX_R),
                                  hx_ref_of(out, i, HX_W) };
        hx_graph_add(g, HX_OP_ADD, &args, 3, refs, (double)rows * out->cols,
                     F4 * 3.0 * rows * out->cols);
    }
}

void hx_accumulate(hx_graph_t g, hx_tensor_t acc, hx_tensor_t x)
{
    same_tiling(acc, x);
    shape(x, acc->rows, acc->cols);
    for (int i = 0; i < acc->ntiles; i++) {
        int rows = hx_tile_nrows(acc, i);
        union hx_op_args args = { .rows = { .rows = rows, .cols = acc->cols } };
        struct hx_ref refs[2] = { hx_ref_of(x, i, HX_R), hx_ref_of(acc, i, HX_RW) };
        hx_graph_add(g, HX_OP_ADD, &args, 2, refs, (double)rows * acc->cols,
                     F4 * 3.0 * rows * acc->cols);
    }
}

/* Per-row companions of logits (N,V): targets, losses, lse (N,1), tiled alike (NULL: absent) */
static void xent_check(hx_tensor_t logits, hx_tensor_t targets, hx_tensor_t losses,
                       hx_tensor_t lse)
{
    hx_tensor_t rows[3] = { targets, losses, lse };
    for (int k = 0; k < 3; k++) {
        if (rows[k] != NULL) {
            same_tiling(rows[k], logits);
            shape(rows[k], logits->rows, 1);
        }
    }
    HX_ASSERT(targets->dtype == HX_I32, "%s must be int32 token ids", targets->name);
}

/* One cross-entropy node per tile: forward (logits R), backward or fused (logits RW). */
static void xent_emit(hx_graph_t g, enum hx_op op, hx_tensor_t logits, hx_tensor_t targets,
                      hx_tensor_t losses, hx_tensor_t lse, float scale, double flops_per_elem)
{
    int V = logits->cols;
    for (int i = 0; i < logits->ntiles; i++) {
        int rows = hx_tile_nrows(logits, i);
        union hx_op_args a = { .rows = { .rows = rows, .cols = V, .scale = scale } };
        struct hx_ref refs[4] = { hx_ref_of(logits, i, op == HX_OP_XENT_FWD ? HX_R : HX_RW),
                                  hx_ref_of(targets, i, HX_R) };
        int n = 2;
        if (op == HX_OP_XENT_BWD) {
            refs[n++] = hx_ref_of(lse, i, HX_R);
        } else {
            refs[n++] = hx_ref_of(losses, i, HX_W);
            refs[n++] = hx_ref_of(lse, i, HX_W);
        }
        hx_graph_add(g, op, &a, n, refs, flops_per_elem * rows * V,
                     F4 * (op == HX_OP_XENT_FWD ? 1.0 : 2.0) * rows * V);
    }
}

void hx_xent_fwd(hx_graph_t g, hx_tensor_t losses, hx_tensor_t lse, hx_tensor_t logits,
                 hx_tensor_t targets)
{
    xent_check(logits, targets, losses, lse);
    xent_emit(g, HX_OP_XENT_FWD, logits, targets, losses, lse, 0.0f, 3.0);
}

void hx_xent_bwd(hx_graph_t g, hx_tensor_t logits, hx_tensor_t lse, hx_tensor_t targets,
                 float scale)
{
    xent_check(logits, targets, NULL, lse);
    xent_emit(g, HX_OP_XENT_BWD, logits, targets, NULL, lse, scale, 3.0);
}

void hx_xent_fused(hx_graph_t g, hx_tensor_t losses, hx_tensor_t lse, hx_tensor_t logits,
                   hx_tensor_t targets, float scale)
{
    xent_check(logits, targets, losses, lse);
    xent_emit(g, HX_OP_XENT_FUSED, logits, targets, losses, lse, scale, 6.0);
}

/* positions are row % T inside a tile, so a tile must start on a sequence boundary; the
 * token table holds rows [v0, v0 + wte->rows) of a vocabulary of `vocab` ids (wpe may be NULL:
 * a backward without the position term) */
static void embed_check(hx_tensor_t rows, hx_tensor_t tokens, hx_tensor_t wte, hx_tensor_t wpe,
                        int T, int v0, int vocab)
{
    int C = wte->cols;
    same_tiling(rows, tokens);
    shape(rows, tokens->rows, C);
    shape(tokens, tokens->rows, 1);
    HX_ASSERT(tokens->dtype == HX_I32, "%s must be int32 token ids", tokens->name);
    single_tile(wte);
    HX_ASSERT(v0 >= 0 && wte->rows >= 1 && v0 + wte->rows <= vocab, "embedding: %s holds "
              "vocabulary rows [%d,%d), not inside the vocabulary [0,%d)", wte->name, v0,
              v0 + wte->rows, vocab);
    HX_ASSERT(rows->tile_rows % T == 0, "embedding: tiles of %d rows must hold whole sequences "
              "of T=%d", rows->tile_rows, T);
    if (wpe != NULL) {
        single_tile(wpe);
        HX_ASSERT(wpe->rows >= T && wpe->cols == C, "embedding: %s is (%d x %d), needs at least "
                  "T=%d positions of %d channels", wpe->name, wpe->rows, wpe->cols, T, C);
    }
}

/* One embedding node per row tile of act (out for the forward, dout for the backward), the
 * plain and the vocabulary-parallel builders alike.  pos: wpe (forward) or dwpe (backward),
 * a buffer only with the position term (add_pos).  Out-of-shard tokens skip the
 * table, so a shard does about Vl/vocab of the table traffic. */
static void embed_emit(hx_graph_t g, enum hx_op op, hx_tensor_t act, hx_tensor_t tokens,
                       hx_tensor_t wte, hx_tensor_t pos, int add_pos, int T, int v0, int vocab)
{
    int C = wte->cols;
    int fwd = op == HX_OP_EMBED_FWD;
    embed_check(act, tokens, wte, pos, T, v0, vocab);
    double frac = (double)wte->rows / vocab, p = add_pos ? 1.0 : 0.0;
    for (int i = 0; i < act->ntiles; i++) {
        int rows = hx_tile_nrows(act, i);
        union hx_op_args a = { .emb = { .rows = rows, .T = T, .C = C, .V = wte->rows, .v0 = v0,
                                        .no_pos = !add_pos, .vocab = vocab } };
        struct hx_ref refs[4];
        int n = 0;
        if (fwd) {
            refs[n++] = hx_ref_of(tokens, i, HX_R);
            refs[n++] = hx_ref_of(wte, 0, HX_R);
            if (add_pos) {
                refs[n++] = hx_ref_of(pos, 0, HX_R);
            }
            refs[n++] = hx_ref_of(act, i, HX_W);
        } else {
            refs[n++] = hx_ref_of(act, i, HX_R);
            refs[n++] = hx_ref_of(tokens, i, HX_R);
            refs[n++] = hx_ref_of(wte, 0, HX_RW);
            if (add_pos) {
                refs[n++] = hx_ref_of(pos, 0, HX_RW);
            }
        }
        /* forward: write out, read the shard's rows [and wpe], add; backward: read dout,
         * read-modify-write the shard's rows [and dwpe] */
        double rc = (double)rows * C;
        if (fwd) {
            hx_graph_add(g, op, &a, n, refs, p * frac * rc, F4 * (1.0 + frac + p) * rc);
        } else {
            hx_graph_add(g, op, &a, n, refs, (frac + p) * rc, F4 * (1.0 + 2.0 * (frac + p)) * rc);
        }
    }
}

void hx_embed_fwd(hx_graph_t g, hx_tensor_t out, hx_tensor_t tokens, hx_tensor_t wte,
                  hx_tensor_t wpe, int T)
{
    embed_emit(g, HX_OP_EMBED_FWD, out, tokens, wte, wpe, 1, T, 0, wte->rows);
}

void hx_embed_bwd(hx_graph_t g, hx_tensor_t dwte, hx_tensor_t dwpe, hx_tensor_t dout,
                  hx_tensor_t tokens, int T)
{
    HX_ASSERT(dwpe != NULL, "hx_embed_bwd: dwpe is required (hx_embed_bwd_vp takes NULL)");
    embed_emit(g, HX_OP_EMBED_BWD, dout, tokens, dwte, dwpe, 1, T, 0, dwte->rows);
}

void hx_reduce(hx_graph_t g, hx_tensor_t acc, hx_tensor_t x, int sumsq)
{
    HX_ASSERT(acc->dtype == HX_F64 && acc->rows == 1 && acc->cols == 1, "%s must be a (1,1) "
              "f64 accumulator", acc->name);
    for (int i = 0; i < x->ntiles; i++) {
        int rows = hx_tile_nrows(x, i);
        union hx_op_args a = { .rows = { .rows = rows, .cols = x->cols, .sumsq = sumsq } };
        struct hx_ref refs[2] = { hx_ref_of(x, i, HX_R), hx_ref_of(acc, 0, HX_RW) };
        hx_graph_add(g, HX_OP_REDUCE, &a, 2, refs, 2.0 * rows * x->cols,
                     F4 * (double)rows * x->cols);
    }
}

void hx_fill(hx_graph_t g, hx_tensor_t t, float value)
{
    HX_ASSERT(t->dtype == HX_F32 || (t->dtype == HX_F64 && value == 0.0f),
              "fill of %s: f32 tensors, or f64 with zero", t->name);
    for (int i = 0; i < t->ntiles; i++) {
        int rows = hx_tile_nrows(t, i);
        union hx_op_args a = { .rows = { .rows = rows, .cols = t->cols, .value = value } };
        struct hx_ref refs[1] = { hx_ref_of(t, i, HX_W) };
        hx_graph_add(g, HX_OP_FILL, &a, 1, refs, 0.0,
                     (double)hx_dtype_size(t->dtype) * rows * t->cols);
    }
}

void hx_adamw(hx_graph_t g, hx_tensor_t param, hx_tensor_t grad, hx_tensor_t m, hx_tensor_t v,
              hx_tensor_t gnorm_sumsq, const struct hx_adamw_args *args)
{
    single_tile(param);
    shape(grad, param->rows, param->cols);
    shape(m, param->rows, param->cols);
    shape(v, param->rows, param->cols);
    union hx_op_args a = { .adamw = *args };
    a.adamw.n = param->rows * param->cols;
    struct hx_ref refs[5] = { hx_ref_of(param, 0, HX_RW), hx_ref_of(grad, 0, HX_R),
                              hx_ref_of(m, 0, HX_RW), hx_ref_of(v, 0, HX_RW),
                              hx_ref_of(gnorm_sumsq, 0, HX_R) };
    hx_graph_add(g, HX_OP_ADAMW, &a, 5, refs, 12.0 * a.adamw.n, F4 * 7.0 * a.adamw.n);
}

/* ---- vocabulary parallel (Megatron): this rank holds vocabulary rows [v0, v0 + Vl) ---- */

void hx_embed_fwd_vp(hx_graph_t g, hx_tensor_t out, hx_tensor_t tokens, hx_tensor_t wte_shard,
                     hx_tensor_t wpe, int T, int v0, int vocab_total, int add_pos)
{
    HX_ASSERT(wpe != NULL || !add_pos, "hx_embed_fwd_vp: add_pos without a wpe table");
    embed_emit(g, HX_OP_EMBED_FWD, out, tokens, wte_shard, wpe, add_pos != 0, T, v0,
               vocab_total);
}

void hx_embed_bwd_vp(hx_graph_t g, hx_tensor_t dwte_shard, hx_tensor_t dwpe_or_null,
                     hx_tensor_t dout, hx_tensor_t tokens, int T, int v0, int vocab_total)
{
    embed_emit(g, HX_OP_EMBED_BWD, dout, tokens, dwte_shard, dwpe_or_null, dwpe_or_null != NULL,
               T, v0, vocab_total);
}

void hx_xent_vp_stats(hx_graph_t g, hx_tensor_t stats, hx_tensor_t logits, hx_tensor_t targets,
                      int v0)
{
    int V = logits->cols;
    xent_check(logits, targets, NULL, NULL);
    same_tiling(stats, logits);
    shape(stats, logits->rows, 2);
    HX_ASSERT(v0 >= 0 && V >= 1, "%s: vocabulary shard [%d,%d) needs v0 >= 0 and a column",
              logits->name, v0, v0 + V);
    for (int i = 0; i < logits->ntiles; i++) {
        int rows = hx_tile_nrows(logits, i);
        union hx_op_args a = { .xvp = { .rows = rows, .V = V, .v0 = v0, .parts = 1 } };
        struct hx_ref refs[3] = { hx_ref_of(logits, i, HX_R), hx_ref_of(targets, i, HX_R),
                                  hx_ref_of(stats, i, HX_W) };
        /* max, exp and sum per logit, as xent_fwd */
        hx_graph_add(g, HX_OP_XENT_VP_STATS, &a, 3, refs, 3.0 * rows * V,
                     F4 * ((double)rows * V + 3.0 * rows));
    }
}

void hx_xent_vp(hx_graph_t g, hx_tensor_t losses, hx_tensor_t lse, hx_tensor_t logits,
                hx_tensor_t targets, hx_tensor_t all_stats, int v0, int parts, int grad,
                float scale)
{
    int V = logits->cols;
    xent_check(logits, targets, losses, lse);
    HX_ASSERT(v0 >= 0 && V >= 1 && parts >= 1, "%s: vocabulary shard [%d,%d) of %d parts needs "
              "v0 >= 0, a column and a part", logits->name, v0, v0 + V, parts);
    /* tile i of all_stats holds the parts x rows stats of logits tile i, rank-major */
    shape(all_stats, parts * logits->rows, 2);
    HX_ASSERT(all_stats->tile_rows == parts * logits->tile_rows &&
                  all_stats->ntiles == logits->ntiles,
              "%s: tiles of %d rows (%d tiles); the gathered stats of %d parts of %s (tiles of "
              "%d, %d tiles) need tiles of %d", all_stats->name, all_stats->tile_rows,
              all_stats->ntiles, parts, logits->name, logits->tile_rows, logits->ntiles,
              parts * logits->tile_rows);
    for (int i = 0; i < logits->ntiles; i++) {
        int rows = hx_tile_nrows(logits, i);
        union hx_op_args a = { .xvp = { .rows = rows, .V = V, .v0 = v0, .parts = parts,
                                        .grad = grad != 0, .scale = scale } };
        struct hx_ref refs[5] = { hx_ref_of(logits, i, grad ? HX_RW : HX_R),
                                  hx_ref_of(targets, i, HX_R), hx_ref_of(all_stats, i, HX_R),
                                  hx_ref_of(losses, i, HX_W), hx_ref_of(lse, i, HX_W) };
        /* the combine is a few flops per part; with grad, exp and scale per logit in place */
        double comb = 3.0 * parts * rows;
        hx_graph_add(g, HX_OP_XENT_VP, &a, 5, refs, comb + (grad ? 3.0 * rows * V : 0.0),
                     F4 * ((grad ? 2.0 * rows * V : 0.0) + 2.0 * parts * rows + 3.0 * rows));
    }
}
