/* SPDX-License-Identifier: MIT */
/* graphs/layers_norm.c: the norms' builders of include/helix/layers.h: LayerNorm (GPT-2) and
 * RMSNorm (Llama), each alone or fused with the residual add before it, and their backward's
 * data and weight halves; one node per row tile, as every builder (graphs/layers.c).
 * Test: tests/codelets/layernorm.c, rmsnorm.c; tests/graphs/torch_parity.c. */
#include "graphs/layers_internal.h"

/* LayerNorm's forward outputs and parameters against its input inp (N,C) */
static void layernorm_check(hx_tensor_t out, hx_tensor_t mean, hx_tensor_t rstd,
                            hx_tensor_t inp, hx_tensor_t w, hx_tensor_t b)
{
    int C = inp->cols;
    shape(out, inp->rows, C);
    shape(mean, inp->rows, 1);
    shape(rstd, inp->rows, 1);
    shape(w, 1, C);
    shape(b, 1, C);
    same_tiling(out, inp);
    same_tiling(mean, inp);
    same_tiling(rstd, inp);
}

void hx_layernorm_fwd(hx_graph_t g, hx_tensor_t out, hx_tensor_t mean, hx_tensor_t rstd,
                      hx_tensor_t inp, hx_tensor_t w, hx_tensor_t b, float eps)
{
    int C = inp->cols;
    layernorm_check(out, mean, rstd, inp, w, b);
    for (int e = 0; e < inp->ntiles; e++) {
        int i = hx_cursor_tile(&g->cur, e, inp->ntiles), rows = hx_tile_nrows(inp, i);
        union hx_op_args a = { .rows = { .rows = rows, .cols = C, .eps = eps } };
        struct hx_ref refs[6] = { hx_ref_of(inp, i, HX_R), hx_ref_of(w, 0, HX_R),
                                  hx_ref_of(b, 0, HX_R), hx_ref_of(out, i, HX_W),
                                  hx_ref_of(mean, i, HX_W), hx_ref_of(rstd, i, HX_W) };
        hx_graph_add(g, HX_OP_LAYERNORM_FWD, &a, 6, refs, 8.0 * rows * C, F4 * 2.0 * rows * C);
    }
}

void hx_add_layernorm_fwd(hx_graph_t g, hx_tensor_t sum, hx_tensor_t out, hx_tensor_t mean,
                          hx_tensor_t rstd, hx_tensor_t a, hx_tensor_t b, hx_tensor_t w,
                          hx_tensor_t bias, float eps)
{
    int C = a->cols;
    shape(b, a->rows, C);
    shape(sum, a->rows, C);
    same_tiling(b, a);
    same_tiling(sum, a);
    layernorm_check(out, mean, rstd, sum, w, bias);
    for (int i = 0; i < a->ntiles; i++) {
        int rows = hx_tile_nrows(a, i);
        union hx_op_args args = { .rows = { .rows = rows, .cols = C, .eps = eps } };
        struct hx_ref refs[8] = { hx_ref_of(a, i, HX_R), hx_ref_of(b, i, HX_R),
                                  hx_ref_of(w, 0, HX_R), hx_ref_of(bias, 0, HX_R),
                                  hx_ref_of(sum, i, HX_W), hx_ref_of(out, i, HX_W),
                                  hx_ref_of(mean, i, HX_W), hx_ref_of(rstd, i, HX_W) };
        hx_graph_add(g, HX_OP_ADD_LAYERNORM_FWD, &args, 8, refs, 9.0 * rows * C,
                     F4 * 4.0 * rows * C);
    }
}

/* Both norms' data gradient: dinp, dout and the residual gradient (may be NULL) shaped and
 * tiled as the input */
static void bwd_data_check(hx_tensor_t dinp, hx_tensor_t dout, hx_tensor_t inp, hx_tensor_t resid)
{
    same_tiling(dinp, inp);
    same_tiling(dout, inp);
    shape(dinp, inp->rows, inp->cols);
    shape(dout, inp->rows, inp->cols);
    if (resid != NULL) {
        same_tiling(resid, inp);
        shape(resid, inp->rows, inp->cols);
    }
}

void hx_layernorm_bwd_data(hx_graph_t g, hx_tensor_t dinp, hx_tensor_t dout, hx_tensor_t inp,
                           hx_tensor_t w, hx_tensor_t mean, hx_tensor_t rstd, hx_tensor_t resid)
{
    int C = inp->cols;
    bwd_data_check(dinp, dout, inp, resid);
    for (int e = 0; e < inp->ntiles; e++) {
        int i = hx_cursor_tile(&g->cur, e, inp->ntiles), rows = hx_tile_nrows(inp, i);
        union hx_op_args a = { .rows = { .rows = rows, .cols = C, .has_resid = resid != NULL } };
        struct hx_ref refs[7] = { hx_ref_of(dout, i, HX_R), hx_ref_of(inp, i, HX_R),
                                  hx_ref_of(w, 0, HX_R), hx_ref_of(mean, i, HX_R),
                                  hx_ref_of(rstd, i, HX_R), hx_ref_of(dinp, i, HX_W) };
        if (resid != NULL) {
            refs[6] = hx_ref_of(resid, i, HX_R);
        }
        hx_graph_add(g, HX_OP_LAYERNORM_BWD_DATA, &a, resid != NULL ? 7 : 6, refs,
                     10.0 * rows * C, F4 * (resid != NULL ? 4.0 : 3.0) * rows * C);
    }
}

void hx_layernorm_bwd_weight(hx_graph_t g, hx_tensor_t dw, hx_tensor_t db, hx_tensor_t dout,
                             hx_tensor_t inp, hx_tensor_t mean, hx_tensor_t rstd)
{
    int C = inp->cols;
    same_tiling(dout, inp);
    shape(dw, 1, C);
    shape(db, 1, C);
    for (int e = 0; e < inp->ntiles; e++) {
        int i = hx_cursor_tile(&g->cur, e, inp->ntiles), rows = hx_tile_nrows(inp, i);
        union hx_op_args a = { .rows = { .rows = rows, .cols = C } };
        struct hx_ref refs[6] = { hx_ref_of(dout, i, HX_R), hx_ref_of(inp, i, HX_R),
                                  hx_ref_of(mean, i, HX_R), hx_ref_of(rstd, i, HX_R),
                                  hx_ref_of(dw, 0, HX_RW), hx_ref_of(db, 0, HX_RW) };
        hx_graph_add(g, HX_OP_LAYERNORM_BWD_WEIGHT, &a, 6, refs, 5.0 * rows * C,
                     F4 * 2.0 * rows * C);
    }
}

/* RMSNorm's forward outputs and parameter against its input inp (N,C) */
static void rmsnorm_check(hx_tensor_t out, hx_tensor_t rstd, hx_tensor_t inp, hx_tensor_t w)
{
    int C = inp->cols;
    shape(out, inp->rows, C);
    shape(rstd, inp->rows, 1);
    shape(w, 1, C);
    same_tiling(out, inp);
    same_tiling(rstd, inp);
}

/* flops per element: x^2 summed (2), x rstd w (2); bytes: inp read, out written (w, rstd are
 * a row and a column) */
void hx_rmsnorm_fwd(hx_graph_t g, hx_tensor_t out, hx_tensor_t rstd, hx_tensor_t inp,
                    hx_tensor_t w, float eps)
{
    int C = inp->cols;
    rmsnorm_check(out, rstd, inp, w);
    for (int e = 0; e < inp->ntiles; e++) {
        int i = hx_cursor_tile(&g->cur, e, inp->ntiles), rows = hx_tile_nrows(inp, i);
        union hx_op_args a = { .rows = { .rows = rows, .cols = C, .eps = eps } };
        struct hx_ref refs[4] = { hx_ref_of(inp, i, HX_R), hx_ref_of(w, 0, HX_R),
                                  hx_ref_of(out, i, HX_W), hx_ref_of(rstd, i, HX_W) };
        hx_graph_add(g, HX_OP_RMSNORM_FWD, &a, 4, refs, 4.0 * rows * C, F4 * 2.0 * rows * C);
    }
}

void hx_add_rmsnorm_fwd(hx_graph_t g, hx_tensor_t sum, hx_tensor_t out, hx_tensor_t rstd,
                        hx_tensor_t a, hx_tensor_t b, hx_tensor_t w, float eps)
{
    int C = a->cols;
    shape(b, a->rows, C);
    shape(sum, a->rows, C);
    same_tiling(b, a);
    same_tiling(sum, a);
    rmsnorm_check(out, rstd, sum, w);
    for (int e = 0; e < a->ntiles; e++) {
        int i = hx_cursor_tile(&g->cur, e, a->ntiles), rows = hx_tile_nrows(a, i);
        union hx_op_args args = { .rows = { .rows = rows, .cols = C, .eps = eps } };
        struct hx_ref refs[6] = { hx_ref_of(a, i, HX_R), hx_ref_of(b, i, HX_R),
                                  hx_ref_of(w, 0, HX_R), hx_ref_of(sum, i, HX_W),
                                  hx_ref_of(out, i, HX_W), hx_ref_of(rstd, i, HX_W) };
        /* a, b read; sum, out written */
        hx_graph_add(g, HX_OP_ADD_RMSNORM_FWD, &args, 6, refs, 5.0 * rows * C,
                     F4 * 4.0 * rows * C);
    }
}

/* flops per element: xhat, g (2), the g xhat sum (2), rstd (g - xhat m) (3) */
void hx_rmsnorm_bwd_data(hx_graph_t g, hx_tensor_t dinp, hx_tensor_t dout, hx_tensor_t inp,
                         hx_tensor_t w, hx_tensor_t rstd, hx_tensor_t resid)
{
    int C = inp->cols;
    bwd_data_check(dinp, dout, inp, resid);
    same_tiling(rstd, inp);
    shape(rstd, inp->rows, 1);
    shape(w, 1, C);
    for (int e = 0; e < inp->ntiles; e++) {
        int i = hx_cursor_tile(&g->cur, e, inp->ntiles), rows = hx_tile_nrows(inp, i);
        union hx_op_args a = { .rows = { .rows = rows, .cols = C, .has_resid = resid != NULL } };
        struct hx_ref refs[6] = { hx_ref_of(dout, i, HX_R), hx_ref_of(inp, i, HX_R),
                                  hx_ref_of(w, 0, HX_R), hx_ref_of(rstd, i, HX_R),
                                  hx_ref_of(dinp, i, HX_W) };
        if (resid != NULL) {
            refs[5] = hx_ref_of(resid, i, HX_R);
        }
        hx_graph_add(g, HX_OP_RMSNORM_BWD_DATA, &a, resid != NULL ? 6 : 5, refs,
                     7.0 * rows * C, F4 * (resid != NULL ? 4.0 : 3.0) * rows * C);
    }
}

/* flops per element: xhat, dout xhat, += (3); bytes: dout and inp read */
void hx_rmsnorm_bwd_weight(hx_graph_t g, hx_tensor_t dw, hx_tensor_t dout, hx_tensor_t inp,
                           hx_tensor_t rstd)
{
    int C = inp->cols;
    same_tiling(dout, inp);
    same_tiling(rstd, inp);
    shape(dout, inp->rows, C);
    shape(rstd, inp->rows, 1);
    shape(dw, 1, C);
    for (int e = 0; e < inp->ntiles; e++) {
        int i = hx_cursor_tile(&g->cur, e, inp->ntiles), rows = hx_tile_nrows(inp, i);
        union hx_op_args a = { .rows = { .rows = rows, .cols = C } };
        struct hx_ref refs[4] = { hx_ref_of(dout, i, HX_R), hx_ref_of(inp, i, HX_R),
                                  hx_ref_of(rstd, i, HX_R), hx_ref_of(dw, 0, HX_RW) };
        hx_graph_add(g, HX_OP_RMSNORM_BWD_WEIGHT, &a, 4, refs, 3.0 * rows * C,
                     F4 * 2.0 * rows * C);
    }
}
