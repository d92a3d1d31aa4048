/* SPDX-License-Identifier: MIT */
/* graphs/layers_norm_split.c: the builders of include/helix/layers.h for LayerNorm and RMSNorm
 * over rows whose columns are split over a group of ranks (AxoNN's Y axis): per row tile,
 * this rank's partial row sums (HX_OP_NORM_PART), their all-reduce over the channel, and the
 * norm applied from the whole-row sums (HX_OP_NORM_FWD_APPLY, HX_OP_NORM_BWD_APPLY).  Each
 * step visits the tiles in the cursor's order (graphs/layers.c); the all-reduces of a step go
 * tile by tile, so a tile's collective starts when its partial sums are done.  A group of one
 * rank emits no collective (a channel of one rank still needs the communication layer open).
 * Test: tests/codelets/norm_split.c. */
#include "graphs/layers_internal.h"
#include "helix/collectives.h"

/* the split and the tensors of one norm against its input slice inp (N, C) */
static void split_check(const struct hx_norm_split *sp, hx_tensor_t inp)
{
    HX_ASSERT(sp != NULL && sp->s1 != NULL && sp->s2 != NULL,
              "%s: a split norm needs struct hx_norm_split with its scratch s1, s2", inp->name);
    /* the slices follow ops.h's split rule: total/p columns, one more on the first ranks */
    int p = sp->group_size > 0 ? sp->group_size : 1, lo = sp->cols_total / p;
    HX_ASSERT(sp->group_size >= 1 && lo >= 1 &&
                  (inp->cols == lo || (inp->cols == lo + 1 && sp->cols_total % p != 0)),
              "%s: a slice of %d columns is none of the %d slices of rows %d wide", inp->name,
              inp->cols, sp->group_size, sp->cols_total);
    shape(sp->s1, inp->rows, 1);
    shape(sp->s2, inp->rows, 2);
    same_tiling(sp->s1, inp);
    same_tiling(sp->s2, inp);
    HX_ASSERT(sp->s1->dtype == HX_F32 && sp->s2->dtype == HX_F32, "%s, %s: the sums are f32",
              sp->s1->name, sp->s2->name);
}

/* the whole-row sums from every rank's partial ones */
static void allreduce(hx_graph_t g, const struct hx_norm_split *sp, hx_tensor_t s)
{
    if (sp->group_size > 1) {
        hx_allreduce_tiles(g, sp->channel, s);
    }
}

static union hx_op_args args(const struct hx_norm_split *sp, int rows, int cols, int mode,
                             int rms)
{
    union hx_op_args a = { .nsplit = { .rows = rows, .cols = cols, .cols_total = sp->cols_total,
                                       .mode = mode, .rms = rms } };
    return a;
}

/* NORM_PART of @p mode over every tile into s: the mode's inputs in ops.h's order (the
 * tensors that are not NULL, and LN_VAR's S = s1), then s */
static void part(hx_graph_t g, const struct hx_norm_split *sp, int mode, hx_tensor_t s,
                 hx_tensor_t dout, hx_tensor_t inp, hx_tensor_t w, hx_tensor_t mean,
                 hx_tensor_t rstd)
{
    static const double flops[] = { 1.0, 4.0, 2.0, 6.0, 4.0 }; /* by mode */
    int C = inp->cols;
    for (int e = 0; e < inp->ntiles; e++) {
        int i = hx_cursor_tile(&g->cur, e, inp->ntiles), rows = hx_tile_nrows(inp, i);
        union hx_op_args a = args(sp, rows, C, mode, 0);
        struct hx_ref refs[6];
        int n = 0;
        if (dout != NULL) {
            refs[n++] = hx_ref_of(dout, i, HX_R);
        }
        refs[n++] = hx_ref_of(inp, i, HX_R);
        if (mode == HX_NORM_LN_VAR) {
            refs[n++] = hx_ref_of(sp->s1, i, HX_R);
        }
        if (w != NULL) {
            refs[n++] = hx_ref_of(w, 0, HX_R);
        }
        if (mean != NULL) {
            refs[n++] = hx_ref_of(mean, i, HX_R);
        }
        if (rstd != NULL) {
            refs[n++] = hx_ref_of(rstd, i, HX_R);
        }
        refs[n++] = hx_ref_of(s, i, HX_W);
        hx_graph_add(g, HX_OP_NORM_PART, &a, n, refs, flops[mode] * rows * C,
                     F4 * (dout != NULL ? 2.0 : 1.0) * rows * C);
    }
}

/* the forward's outputs and parameters against its input slice inp (N, C) */
static void fwd_check(hx_tensor_t out, hx_tensor_t mean, hx_tensor_t rstd, hx_tensor_t inp,
                      hx_tensor_t w, hx_tensor_t b)
{
    shape(out, inp->rows, inp->cols);
    shape(rstd, inp->rows, 1);
    shape(w, 1, inp->cols);
    same_tiling(out, inp);
    same_tiling(rstd, inp);
    if (mean != NULL) {
        shape(mean, inp->rows, 1);
        same_tiling(mean, inp);
    }
    if (b != NULL) {
        shape(b, 1, inp->cols);
    }
}

/* flops per element: the two passes (1 + 4), (x - mean) rstd w + b (4); bytes: each pass
 * reads inp, the apply also writes out */
void hx_layernorm_fwd_split(hx_graph_t g, hx_tensor_t out, hx_tensor_t mean, hx_tensor_t rstd,
                            hx_tensor_t inp, hx_tensor_t w, hx_tensor_t b, float eps,
                            const struct hx_norm_split *sp)
{
    int C = inp->cols;
    split_check(sp, inp);
    fwd_check(out, mean, rstd, inp, w, b);
    part(g, sp, HX_NORM_LN_SUM, sp->s1, NULL, inp, NULL, NULL, NULL);
    allreduce(g, sp, sp->s1);
    part(g, sp, HX_NORM_LN_VAR, sp->s2, NULL, inp, NULL, NULL, NULL);
    allreduce(g, sp, sp->s2);
    for (int e = 0; e < inp->ntiles; e++) {
        int i = hx_cursor_tile(&g->cur, e, inp->ntiles), rows = hx_tile_nrows(inp, i);
        union hx_op_args a = args(sp, rows, C, 0, 0);
        a.nsplit.eps = eps;
        struct hx_ref refs[8] = { hx_ref_of(inp, i, HX_R),    hx_ref_of(w, 0, HX_R),
                                  hx_ref_of(b, 0, HX_R),      hx_ref_of(sp->s1, i, HX_R),
                                  hx_ref_of(sp->s2, i, HX_R), hx_ref_of(out, i, HX_W),
                                  hx_ref_of(mean, i, HX_W),   hx_ref_of(rstd, i, HX_W) };
        hx_graph_add(g, HX_OP_NORM_FWD_APPLY, &a, 8, refs, 4.0 * rows * C,
                     F4 * 2.0 * rows * C);
    }
}

/* dinp, dout and the residual gradient (may be NULL) shaped and tiled as the input slice */
static void bwd_check(hx_tensor_t dinp, hx_tensor_t dout, hx_tensor_t inp, hx_tensor_t w,
                      hx_tensor_t mean, hx_tensor_t rstd, hx_tensor_t resid)
{
    hx_tensor_t same[] = { dinp, dout, resid };
    for (int k = 0; k < 3; k++) {
        if (same[k] != NULL) {
            shape(same[k], inp->rows, inp->cols);
            same_tiling(same[k], inp);
        }
    }
    fwd_check(dinp, mean, rstd, inp, w, NULL);
}

/* the apply of the data gradient: ln reads mean and the (N,2) sums, rms the (N,1) ones;
 * flops per element: xhat, g (3 or 2), rstd (g - ...) (4 or 3), + resid */
static void bwd_apply(hx_graph_t g, const struct hx_norm_split *sp, hx_tensor_t dinp,
                      hx_tensor_t dout, hx_tensor_t inp, hx_tensor_t w, hx_tensor_t mean,
                      hx_tensor_t rstd, hx_tensor_t resid)
{
    int C = inp->cols, rms = mean == NULL;
    for (int e = 0; e < inp->ntiles; e++) {
        int i = hx_cursor_tile(&g->cur, e, inp->ntiles), rows = hx_tile_nrows(inp, i);
        union hx_op_args a = args(sp, rows, C, 0, rms);
        a.nsplit.has_resid = resid != NULL;
        struct hx_ref refs[8];
        int n = 0;
        refs[n++] = hx_ref_of(dout, i, HX_R);
        refs[n++] = hx_ref_of(inp, i, HX_R);
        refs[n++] = hx_ref_of(w, 0, HX_R);
        if (!rms) {
            refs[n++] = hx_ref_of(mean, i, HX_R);
        }
        refs[n++] = hx_ref_of(rstd, i, HX_R);
        refs[n++] = hx_ref_of(rms ? sp->s1 : sp->s2, i, HX_R);
        refs[n++] = hx_ref_of(dinp, i, HX_W);
        if (resid != NULL) {
            refs[n++] = hx_ref_of(resid, i, HX_R);
        }
        hx_graph_add(g, HX_OP_NORM_BWD_APPLY, &a, n, refs,
                     ((rms ? 5.0 : 7.0) + (resid != NULL)) * rows * C,
                     F4 * (resid != NULL ? 4.0 : 3.0) * rows * C);
    }
}

void hx_layernorm_bwd_data_split(hx_graph_t g, hx_tensor_t dinp, hx_tensor_t dout,
                                 hx_tensor_t inp, hx_tensor_t w, hx_tensor_t mean,
                                 hx_tensor_t rstd, hx_tensor_t resid,
                                 const struct hx_norm_split *sp)
{
    HX_ASSERT(mean != NULL, "%s: LayerNorm's backward needs the forward's mean", inp->name);
    split_check(sp, inp);
    bwd_check(dinp, dout, inp, w, mean, rstd, resid);
    part(g, sp, HX_NORM_LN_BWD, sp->s2, dout, inp, w, mean, rstd);
    allreduce(g, sp, sp->s2);
    bwd_apply(g, sp, dinp, dout, inp, w, mean, rstd, resid);
}

/* flops per element: x^2 summed (2), x rstd w (2) */
void hx_rmsnorm_fwd_split(hx_graph_t g, hx_tensor_t out, hx_tensor_t rstd, hx_tensor_t inp,
                          hx_tensor_t w, float eps, const struct hx_norm_split *sp)
{
    int C = inp->cols;
    split_check(sp, inp);
    fwd_check(out, NULL, rstd, inp, w, NULL);
    part(g, sp, HX_NORM_RMS_SQ, sp->s1, NULL, inp, NULL, NULL, NULL);
    allreduce(g, sp, sp->s1);
    for (int e = 0; e < inp->ntiles; e++) {
        int i = hx_cursor_tile(&g->cur, e, inp->ntiles), rows = hx_tile_nrows(inp, i);
        union hx_op_args a = args(sp, rows, C, 0, 1);
        a.nsplit.eps = eps;
        struct hx_ref refs[5] = { hx_ref_of(inp, i, HX_R), hx_ref_of(w, 0, HX_R),
                                  hx_ref_of(sp->s1, i, HX_R), hx_ref_of(out, i, HX_W),
                                  hx_ref_of(rstd, i, HX_W) };
        hx_graph_add(g, HX_OP_NORM_FWD_APPLY, &a, 5, refs, 2.0 * rows * C,
                     F4 * 2.0 * rows * C);
    }
}

void hx_rmsnorm_bwd_data_split(hx_graph_t g, hx_tensor_t dinp, hx_tensor_t dout,
                               hx_tensor_t inp, hx_tensor_t w, hx_tensor_t rstd,
                               hx_tensor_t resid, const struct hx_norm_split *sp)
{
    split_check(sp, inp);
    bwd_check(dinp, dout, inp, w, NULL, rstd, resid);
    part(g, sp, HX_NORM_RMS_BWD, sp->s1, dout, inp, w, NULL, rstd);
    allreduce(g, sp, sp->s1);
    bwd_apply(g, sp, dinp, dout, inp, w, NULL, rstd, resid);
}
