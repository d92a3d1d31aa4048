/* SPDX-License-Identifier: MIT */
/* codelets/norm_split.c: LayerNorm and RMSNorm over rows whose C_total columns are split over
 * the ranks of a group (AxoNN's Y axis): the partial row sums of this rank's (N,C) column
 * slice (norm_part), then the forward and the data gradient from the sums once all-reduced
 * (norm_fwd_apply, norm_bwd_apply).  The formulas of codelets/layernorm.c and rmsnorm.c with
 * each row sum cut in slices: partials in double, stored as float (the all-reduce adds
 * floats); the statistics in double from the float sums, rounded to float as the whole-row
 * kernels round them, so a group of one rank gives their results up to the rounding of the
 * sums.  The weight gradients need no split form: hx_cpu_layernorm_bwd_weight and
 * hx_cpu_rmsnorm_bwd_weight work column by column.  Shapes, buffers: include/helix/ops.h.
 * Device forms: codelets/kernels/norm_split.cl; checks shared with them: norm_split.h.
 * Reference: codelets/ref/norm_split_ref.c.  Test: tests/codelets/norm_split.c. */
#include <math.h>

#include "codelets/codelets.h"
#include "codelets/cpu.h"
#include "codelets/norm_rows.h"
#include "codelets/norm_split.h"
#include "codelets/vecmath.h"

/* Per row, over the slice's C columns (double sums, as the whole-row kernels):
 *   LN_SUM  sum x                   LN_VAR  { sum d^2, sum d }, d = x - S/C_total
 *   RMS_SQ  sum x^2                 LN_BWD  { sum g, sum g xhat }, RMS_BWD  sum g xhat
 * with g = dout w and xhat = (x - mean) rstd (LN) or x rstd (RMS) in float, as in
 * hx_cpu_layernorm_bwd_data.  LN_VAR's second sum is about zero: it is what the rounding of
 * S/C_total moved the centre by, and norm_fwd_apply takes it back (the corrected two-pass
 * variance of Chan, Golub and LeVeque). */
HX_VECTOR_CLONES
void hx_cpu_norm_part(float *s, const float *inp, const float *dout, const float *w,
                      const float *stat, const float *rstd, int mode, int N, int C, int ld,
                      int cols_total)
{
    int two = mode == HX_NORM_LN_VAR || mode == HX_NORM_LN_BWD;
    for (int r = 0; r < N; r++) {
        const float *x = inp + (size_t)r * ld;
        const float *dy = dout != NULL ? dout + (size_t)r * ld : NULL;
        double a = 0.0, c = 0.0;
        if (mode == HX_NORM_LN_SUM) {
            for (int i = 0; i < C; i++) {
                a += x[i];
            }
        } else if (mode == HX_NORM_LN_VAR) {
            double m = (double)stat[r] / cols_total;
            for (int i = 0; i < C; i++) {
                double d = x[i] - m;
                a += d * d;
                c += d;
            }
        } else if (mode == HX_NORM_RMS_SQ) {
            for (int i = 0; i < C; i++) {
                a += (double)x[i] * x[i];
            }
        } else if (mode == HX_NORM_LN_BWD) {
            float mu = stat[r], rs = rstd[r];
            for (int i = 0; i < C; i++) {
                float xhat = (x[i] - mu) * rs;
                float g = dy[i] * w[i];
                a += g;
                c += (double)g * xhat;
            }
        } else { /* HX_NORM_RMS_BWD */
            float rs = rstd[r];
            for (int i = 0; i < C; i++) {
                float xhat = x[i] * rs;
                float g = dy[i] * w[i];
                a += (double)g * xhat;
            }
        }
        if (two) {
            s[2 * (size_t)r] = (float)a;
            s[2 * (size_t)r + 1] = (float)c;
        } else {
            s[r] = (float)a;
        }
    }
}

/* mean = m + c, var = S2[0]/C_total - c^2 (>= 0 up to rounding), with m = S1/C_total the
 * centre LN_VAR used and c = S2[1]/C_total its correction */
HX_VECTOR_CLONES
void hx_cpu_layernorm_fwd_apply(float *out, float *mean, float *rstd, const float *inp,
                                const float *w, const float *b, const float *s1,
                                const float *s2, int N, int C, int ld, int cols_total,
                                float eps)
{
    for (int r = 0; r < N; r++) {
        const float *x = inp + (size_t)r * ld;
        float *y = out + (size_t)r * ld;
        double m = (double)s1[r] / cols_total;
        double c = (double)s2[2 * (size_t)r + 1] / cols_total;
        double var = (double)s2[2 * (size_t)r] / cols_total - c * c;
        double rs = 1.0 / sqrt((var > 0.0 ? var : 0.0) + (double)eps);
        float muf = (float)(m + c);
        float rsf = (float)rs;
        for (int i = 0; i < C; i++) {
            y[i] = (x[i] - muf) * rsf * w[i] + b[i];
        }
        mean[r] = muf;
        rstd[r] = rsf;
    }
}

HX_VECTOR_CLONES
void hx_cpu_rmsnorm_fwd_apply(float *out, float *rstd, const float *inp, const float *w,
                              const float *s, int N, int C, int ld, int cols_total, float eps)
{
    for (int r = 0; r < N; r++) {
        const float *x = inp + (size_t)r * ld;
        float *y = out + (size_t)r * ld;
        float rsf = (float)(1.0 / sqrt((double)s[r] / cols_total + (double)eps));
        for (int i = 0; i < C; i++) {
            y[i] = x[i] * rsf * w[i];
        }
        rstd[r] = rsf;
    }
}

/* dx = rstd (g - mean(g) - xhat mean(g xhat)), the two row means from the sums */
HX_VECTOR_CLONES
void hx_cpu_layernorm_bwd_apply(float *dinp, const float *dout, const float *inp,
                                const float *w, const float *mean, const float *rstd,
                                const float *s2, const float *resid, int N, int C, int ld,
                                int cols_total)
{
    for (int r = 0; r < N; r++) {
        const float *x = inp + (size_t)r * ld;
        const float *dy = dout + (size_t)r * ld;
        float mu = mean[r];
        float rs = rstd[r];
        float g_mean = (float)((double)s2[2 * (size_t)r] / cols_total);
        float gx_mean = (float)((double)s2[2 * (size_t)r + 1] / cols_total);
        float *dx = dinp + (size_t)r * ld;
        /* resid may alias dinp: each element is read before it is written */
        const float *res = resid != NULL ? resid + (size_t)r * ld : NULL;
        hx_layernorm_bwd_row(dx, dy, x, w, res, mu, rs, g_mean, gx_mean, C);
    }
}

HX_VECTOR_CLONES
void hx_cpu_rmsnorm_bwd_apply(float *dinp, const float *dout, const float *inp, const float *w,
                              const float *rstd, const float *s, const float *resid, int N,
                              int C, int ld, int cols_total)
{
    for (int r = 0; r < N; r++) {
        const float *x = inp + (size_t)r * ld;
        const float *dy = dout + (size_t)r * ld;
        float rs = rstd[r];
        float gx_mean = (float)((double)s[r] / cols_total);
        float *dx = dinp + (size_t)r * ld;
        const float *res = resid != NULL ? resid + (size_t)r * ld : NULL;
        hx_rmsnorm_bwd_row(dx, dy, x, w, res, rs, gx_mean, C);
    }
}

/* ---- buffer checks, shared with the device launchers (codelets/norm_split.h) ---- */

static struct hx_norm_bufs bufs_none(void)
{
    struct hx_norm_bufs b = { .inp = -1, .dout = -1, .w = -1, .b = -1, .mean = -1,
                              .rstd = -1, .s1 = -1, .s2 = -1, .out = -1, .resid = -1,
                              .part = -1, .k = 1 };
    return b;
}

/* buffer i holds rows x k floats, contiguous: a row statistic (k = 1) or a pair of sums */
static void check_sums(void *buffers[], int i, int rows, int k, const char *what,
                       const char *op)
{
    int r = HX_BUF_ROWS(buffers, i), c = HX_BUF_COLS(buffers, i);
    HX_ASSERT(r == rows && c == k && (r <= 1 || HX_BUF_LD(buffers, i) == k),
              "%s: %s is a (%d,%d) tile with ld %d, expected (%d,%d) contiguous; the graph "
              "builder (graphs/layers_norm_split.c) passed the wrong tensor", op, what, r, c,
              HX_BUF_LD(buffers, i), rows, k);
}

/* every role @p b names, against the args; the row stride of the (N,C) tiles */
static int check_roles(void *buffers[], const struct hx_node *node,
                       const struct hx_norm_bufs *b, const char *op)
{
    const struct hx_norm_split_args *a = &node->args.nsplit;
    const struct hx_rows_args ra = { .rows = a->rows, .cols = a->cols };
    HX_ASSERT(a->cols <= a->cols_total && a->cols_total > 0, "%s: a slice of %d columns of "
              "rows %d wide", op, a->cols, a->cols_total);
    int ld = HX_BUF_LD(buffers, b->inp);
    const int tiles[] = { b->inp, b->dout, b->out, b->resid };
    const char *const names[] = { "inp", "dout", node->op == HX_OP_NORM_BWD_APPLY ? "dinp" : "out",
                                  "resid" };
    for (int k = 0; k < 4; k++) {
        if (tiles[k] >= 0) {
            hx_buf_check_rows(buffers, tiles[k], &ra, names[k], op);
            hx_buf_check_ld(buffers, tiles[k], ld, names[k], op);
        }
    }
    if (b->w >= 0) {
        hx_buf_check_vec(buffers, b->w, a->cols, "w", op);
    }
    if (b->b >= 0) {
        hx_buf_check_vec(buffers, b->b, a->cols, "b", op);
    }
    if (b->mean >= 0) {
        hx_buf_check_vec(buffers, b->mean, a->rows, "mean", op);
    }
    if (b->rstd >= 0) {
        hx_buf_check_vec(buffers, b->rstd, a->rows, "rstd", op);
    }
    if (b->s1 >= 0) {
        check_sums(buffers, b->s1, a->rows, 1, "the (N,1) sums", op);
    }
    if (b->s2 >= 0) {
        check_sums(buffers, b->s2, a->rows, 2, "the (N,2) sums", op);
    }
    if (b->part >= 0) {
        check_sums(buffers, b->part, a->rows, b->k, "the partial sums", op);
    }
    return ld;
}

int hx_norm_part_check(void *buffers[], const struct hx_node *node, struct hx_norm_bufs *b)
{
    static const int nbuf[] = { 2, 3, 2, 6, 5 }; /* by mode */
    const struct hx_norm_split_args *a = &node->args.nsplit;
    const char *op = "norm_part";
    HX_ASSERT(a->mode >= HX_NORM_LN_SUM && a->mode <= HX_NORM_RMS_BWD,
              "%s: mode %d is no enum hx_norm_part_mode", op, a->mode);
    HX_ASSERT(node->nrefs == nbuf[a->mode], "%s: mode %d takes %d buffers, the node has %d",
              op, a->mode, nbuf[a->mode], node->nrefs);
    *b = bufs_none();
    switch (a->mode) {
    case HX_NORM_LN_SUM:
    case HX_NORM_RMS_SQ: /* inp, s */
        b->inp = 0, b->part = 1;
        break;
    case HX_NORM_LN_VAR: /* inp, S, s */
        b->inp = 0, b->s1 = 1, b->part = 2, b->k = 2;
        break;
    case HX_NORM_LN_BWD: /* dout, inp, w, mean, rstd, s */
        b->dout = 0, b->inp = 1, b->w = 2, b->mean = 3, b->rstd = 4, b->part = 5, b->k = 2;
        break;
    default: /* RMS_BWD: dout, inp, w, rstd, s */
        b->dout = 0, b->inp = 1, b->w = 2, b->rstd = 3, b->part = 4;
        break;
    }
    return check_roles(buffers, node, b, op);
}

int hx_norm_fwd_apply_check(void *buffers[], const struct hx_node *node, struct hx_norm_bufs *b)
{
    const struct hx_norm_split_args *a = &node->args.nsplit;
    const char *op = "norm_fwd_apply";
    int n = a->rms ? 5 : 8;
    HX_ASSERT(node->nrefs == n, "%s (%s) takes %d buffers, the node has %d", op,
              a->rms ? "rms" : "ln", n, node->nrefs);
    *b = bufs_none();
    if (a->rms) { /* inp, w, S, out, rstd */
        b->inp = 0, b->w = 1, b->s1 = 2, b->out = 3, b->rstd = 4;
    } else { /* inp, w, b, S1, S2, out, mean, rstd */
        b->inp = 0, b->w = 1, b->b = 2, b->s1 = 3, b->s2 = 4, b->out = 5, b->mean = 6;
        b->rstd = 7;
    }
    return check_roles(buffers, node, b, op);
}

int hx_norm_bwd_apply_check(void *buffers[], const struct hx_node *node, struct hx_norm_bufs *b)
{
    const struct hx_norm_split_args *a = &node->args.nsplit;
    const char *op = "norm_bwd_apply";
    int n = (a->rms ? 6 : 7) + (a->has_resid != 0);
    HX_ASSERT(node->nrefs == n, "%s (%s%s) takes %d buffers, the node has %d", op,
              a->rms ? "rms" : "ln", a->has_resid ? ", resid" : "", n, node->nrefs);
    *b = bufs_none();
    if (a->rms) { /* dout, inp, w, rstd, S, dinp [, resid] */
        b->dout = 0, b->inp = 1, b->w = 2, b->rstd = 3, b->s1 = 4, b->out = 5;
    } else { /* dout, inp, w, mean, rstd, S, dinp [, resid] */
        b->dout = 0, b->inp = 1, b->w = 2, b->mean = 3, b->rstd = 4, b->s2 = 5, b->out = 6;
    }
    if (a->has_resid) {
        b->resid = b->out + 1;
    }
    return check_roles(buffers, node, b, op);
}

/* ---- CPU codelets ---- */

#define BUF_OR_NULL(buffers, i) ((i) >= 0 ? HX_BUF_F32(buffers, i) : NULL)

static void norm_part_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_norm_split_args *a = &node->args.nsplit;
    if (hx_run_failed()) {
        return;
    }
    struct hx_norm_bufs b;
    int ld = hx_norm_part_check(buffers, node, &b);
    /* LN_VAR's stat is its input sums S, LN_BWD's the mean */
    const float *stat = a->mode == HX_NORM_LN_VAR ? HX_BUF_F32(buffers, b.s1)
                                                   : BUF_OR_NULL(buffers, b.mean);
    hx_cpu_norm_part(HX_BUF_F32(buffers, b.part), HX_BUF_F32(buffers, b.inp),
                     BUF_OR_NULL(buffers, b.dout), BUF_OR_NULL(buffers, b.w), stat,
                     BUF_OR_NULL(buffers, b.rstd), a->mode, a->rows, a->cols, ld,
                     a->cols_total);
}

static void norm_fwd_apply_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_norm_split_args *a = &node->args.nsplit;
    if (hx_run_failed()) {
        return;
    }
    struct hx_norm_bufs b;
    int ld = hx_norm_fwd_apply_check(buffers, node, &b);
    if (a->rms) {
        hx_cpu_rmsnorm_fwd_apply(HX_BUF_F32(buffers, b.out), HX_BUF_F32(buffers, b.rstd),
                                 HX_BUF_F32(buffers, b.inp), HX_BUF_F32(buffers, b.w),
                                 HX_BUF_F32(buffers, b.s1), a->rows, a->cols, ld,
                                 a->cols_total, a->eps);
    } else {
        hx_cpu_layernorm_fwd_apply(HX_BUF_F32(buffers, b.out), HX_BUF_F32(buffers, b.mean),
                                   HX_BUF_F32(buffers, b.rstd), HX_BUF_F32(buffers, b.inp),
                                   HX_BUF_F32(buffers, b.w), HX_BUF_F32(buffers, b.b),
                                   HX_BUF_F32(buffers, b.s1), HX_BUF_F32(buffers, b.s2),
                                   a->rows, a->cols, ld, a->cols_total, a->eps);
    }
}

static void norm_bwd_apply_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_norm_split_args *a = &node->args.nsplit;
    if (hx_run_failed()) {
        return;
    }
    struct hx_norm_bufs b;
    int ld = hx_norm_bwd_apply_check(buffers, node, &b);
    if (a->rms) {
        hx_cpu_rmsnorm_bwd_apply(HX_BUF_F32(buffers, b.out), HX_BUF_F32(buffers, b.dout),
                                 HX_BUF_F32(buffers, b.inp), HX_BUF_F32(buffers, b.w),
                                 HX_BUF_F32(buffers, b.rstd), HX_BUF_F32(buffers, b.s1),
                                 BUF_OR_NULL(buffers, b.resid), a->rows, a->cols, ld,
                                 a->cols_total);
    } else {
        hx_cpu_layernorm_bwd_apply(HX_BUF_F32(buffers, b.out), HX_BUF_F32(buffers, b.dout),
                                   HX_BUF_F32(buffers, b.inp), HX_BUF_F32(buffers, b.w),
                                   HX_BUF_F32(buffers, b.mean), HX_BUF_F32(buffers, b.rstd),
                                   HX_BUF_F32(buffers, b.s2), BUF_OR_NULL(buffers, b.resid),
                                   a->rows, a->cols, ld, a->cols_total);
    }
}

HX_CODELET_DEV(norm_part, "norm_part", norm_part_cpu);
HX_CODELET_DEV(norm_fwd_apply, "norm_fwd_apply", norm_fwd_apply_cpu);
HX_CODELET_DEV(norm_bwd_apply, "norm_bwd_apply", norm_bwd_apply_cpu);
