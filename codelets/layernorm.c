/* SPDX-License-Identifier: MIT */
/* codelets/layernorm.c: LayerNorm over the last dimension, forward and the two halves of the
 * backward (data, weight) as separate tasks so the weight gradient can run off the critical
 * path.  inp, out, dout, dinp, resid (N,C) with row stride ld; w, b, dw, db (1,C); mean,
 * rstd (N,1).  Biased variance, rstd = 1/sqrt(var + eps).  dinp is written (=) as
 * [resid +] dLN/dinp; dw, db accumulate (+=) rows in order.
 * Device forms: codelets/kernels/layernorm.cl (OpenCL and CUDA); every backend checks its
 * buffers with codelets/layernorm.h.
 * Reference: codelets/ref/layernorm_ref.c.  Test: tests/codelets/layernorm.c. */
#include <math.h>

#include "codelets/codelets.h"
#include "codelets/cpu.h"
#include "codelets/norm_rows.h"
#include "codelets/layernorm.h"
#include "codelets/vecmath.h"

HX_VECTOR_CLONES
void hx_cpu_layernorm_fwd(float *out, float *mean, float *rstd, const float *inp, const float *w,
                          const float *b, int N, int C, int ld, float eps)
{
    for (int r = 0; r < N; r++) {
        const float *x = inp + (size_t)r * ld;
        float *y = out + (size_t)r * ld;
        /* two passes in double: a one-pass E[x^2] - E[x]^2 in float loses the variance
         * when |mean| >> std, and the double sums keep 1e-5 against the reference */
        double mu = 0.0;
        for (int i = 0; i < C; i++) {
            mu += x[i];
        }
        mu /= C;
        double var = 0.0;
        for (int i = 0; i < C; i++) {
            double d = x[i] - mu;
            var += d * d;
        }
        var /= C;
        double rs = 1.0 / sqrt(var + (double)eps);
        float muf = (float)mu;
        float rsf = (float)rs;
        for (int i = 0; i < C; i++) {
            y[i] = (x[i] - muf) * rsf * w[i] + b[i];
        }
        mean[r] = muf;
        rstd[r] = rsf;
    }
}

/* Per row, with xhat = (x - mean) rstd and g = dout * w (the gradient w.r.t. xhat):
 *   dx = rstd (g - mean(g) - xhat mean(g xhat)).
 * The two row means are summed in double because dx is their small difference from g. */
HX_VECTOR_CLONES
void hx_cpu_layernorm_bwd_data(float *dinp, const float *dout, const float *inp, const float *w,
                               const float *mean, const float *rstd, const float *resid, int N,
                               int C, int ld)
{
    for (int r = 0; r < N; r++) {
        const float *x = inp + (size_t)r * ld;
        const float *dy = dout + (size_t)r * ld;
        float mu = mean[r];
        float rs = rstd[r];
        double g_sum = 0.0;
        double gx_sum = 0.0;
        for (int i = 0; i < C; i++) {
            float xhat = (x[i] - mu) * rs;
            float g = dy[i] * w[i];
            g_sum += g;
            gx_sum += (double)g * xhat;
        }
        float g_mean = (float)(g_sum / C);
        float gx_mean = (float)(gx_sum / C);
        float *dx = dinp + (size_t)r * ld;
        /* resid may alias dinp: each element is read before it is written */
        const float *res = resid != NULL ? resid + (size_t)r * ld : NULL;
        hx_layernorm_bwd_row(dx, dy, x, w, res, mu, rs, g_mean, gx_mean, C);
    }
}

HX_VECTOR_CLONES
void hx_cpu_layernorm_bwd_weight(float *dw, float *db, const float *dout, const float *inp,
                                 const float *mean, const float *rstd, int N, int C, int ld)
{
    /* rows in order, so the accumulation order is fixed by the graph, not by the worker */
    for (int r = 0; r < N; r++) {
        const float *x = inp + (size_t)r * ld;
        const float *dy = dout + (size_t)r * ld;
        float mu = mean[r];
        float rs = rstd[r];
        for (int i = 0; i < C; i++) {
            float xhat = (x[i] - mu) * rs;
            dw[i] += dy[i] * xhat;
            db[i] += dy[i];
        }
    }
}

/* ---- buffer checks, shared with the device launchers (codelets/layernorm.h) ---- */

int hx_layernorm_fwd_check(void *buffers[], const struct hx_node *node)
{
    const struct hx_rows_args *a = &node->args.rows;
    const char *op = "layernorm_fwd";
    int ld = HX_BUF_LD(buffers, 0);
    hx_buf_check_rows(buffers, 0, a, "inp", op);
    hx_buf_check_rows(buffers, 3, a, "out", op);
    hx_buf_check_ld(buffers, 3, ld, "out", op);
    hx_buf_check_vec(buffers, 1, a->cols, "w", op);
    hx_buf_check_vec(buffers, 2, a->cols, "b", op);
    hx_buf_check_vec(buffers, 4, a->rows, "mean", op);
    hx_buf_check_vec(buffers, 5, a->rows, "rstd", op);
    return ld;
}

int hx_add_layernorm_fwd_check(void *buffers[], const struct hx_node *node)
{
    const struct hx_rows_args *a = &node->args.rows;
    const char *op = "add_layernorm_fwd";
    static const char *const names[] = { "a", "b", "w", "bias", "sum", "out" };
    int ld = HX_BUF_LD(buffers, 4);
    for (int i = 0; i < 6; i++) {
        if (i != 2 && i != 3) {
            hx_buf_check_rows(buffers, i, a, names[i], op);
            hx_buf_check_ld(buffers, i, ld, names[i], op);
        }
    }
    hx_buf_check_vec(buffers, 2, a->cols, "w", op);
    hx_buf_check_vec(buffers, 3, a->cols, "bias", op);
    hx_buf_check_vec(buffers, 6, a->rows, "mean", op);
    hx_buf_check_vec(buffers, 7, a->rows, "rstd", op);
    return ld;
}

int hx_layernorm_bwd_data_check(void *buffers[], const struct hx_node *node, int *has_resid)
{
    const struct hx_rows_args *a = &node->args.rows;
    const char *op = "layernorm_bwd_data";
    int ld = HX_BUF_LD(buffers, 0);
    hx_buf_check_rows(buffers, 0, a, "dout", op);
    hx_buf_check_rows(buffers, 1, a, "inp", op);
    hx_buf_check_rows(buffers, 5, a, "dinp", op);
    hx_buf_check_ld(buffers, 1, ld, "inp", op);
    hx_buf_check_ld(buffers, 5, ld, "dinp", op);
    hx_buf_check_vec(buffers, 2, a->cols, "w", op);
    hx_buf_check_vec(buffers, 3, a->rows, "mean", op);
    hx_buf_check_vec(buffers, 4, a->rows, "rstd", op);
    *has_resid = node->nrefs > 6 && a->has_resid;
    if (*has_resid) {
        hx_buf_check_rows(buffers, 6, a, "resid", op);
        hx_buf_check_ld(buffers, 6, ld, "resid", op);
    }
    return ld;
}

int hx_layernorm_bwd_weight_check(void *buffers[], const struct hx_node *node)
{
    const struct hx_rows_args *a = &node->args.rows;
    const char *op = "layernorm_bwd_weight";
    int ld = HX_BUF_LD(buffers, 0);
    hx_buf_check_rows(buffers, 0, a, "dout", op);
    hx_buf_check_rows(buffers, 1, a, "inp", op);
    hx_buf_check_ld(buffers, 1, ld, "inp", op);
    hx_buf_check_vec(buffers, 2, a->rows, "mean", op);
    hx_buf_check_vec(buffers, 3, a->rows, "rstd", op);
    hx_buf_check_vec(buffers, 4, a->cols, "dw", op);
    hx_buf_check_vec(buffers, 5, a->cols, "db", op);
    return ld;
}

/* ---- CPU codelets ---- */

/* buffers: inp, w, b, out, mean, rstd */
static void layernorm_fwd_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    if (hx_run_failed()) {
        return;
    }
    int ld = hx_layernorm_fwd_check(buffers, node);
    hx_cpu_layernorm_fwd(HX_BUF_F32(buffers, 3), HX_BUF_F32(buffers, 4), HX_BUF_F32(buffers, 5),
                         HX_BUF_F32(buffers, 0), HX_BUF_F32(buffers, 1), HX_BUF_F32(buffers, 2),
                         a->rows, a->cols, ld, a->eps);
}

/* buffers: a, b, w, bias, sum, out, mean, rstd: the residual add, then LayerNorm of the sum
 * while its rows are still in cache */
static void add_layernorm_fwd_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    if (hx_run_failed()) {
        return;
    }
    int ld = hx_add_layernorm_fwd_check(buffers, node);
    float *sum = HX_BUF_F32(buffers, 4);
    const float *x = HX_BUF_F32(buffers, 0), *y = HX_BUF_F32(buffers, 1);
    for (int r = 0; r < a->rows; r++) {
        hx_cpu_add(sum + (size_t)r * ld, x + (size_t)r * ld, y + (size_t)r * ld, a->cols);
    }
    hx_cpu_layernorm_fwd(HX_BUF_F32(buffers, 5), HX_BUF_F32(buffers, 6), HX_BUF_F32(buffers, 7),
                         sum, HX_BUF_F32(buffers, 2), HX_BUF_F32(buffers, 3), a->rows, a->cols,
                         ld, a->eps);
}

/* buffers: dout, inp, w, mean, rstd, dinp [, resid] */
static void layernorm_bwd_data_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    if (hx_run_failed()) {
        return;
    }
    int has_resid;
    int ld = hx_layernorm_bwd_data_check(buffers, node, &has_resid);
    hx_cpu_layernorm_bwd_data(HX_BUF_F32(buffers, 5), HX_BUF_F32(buffers, 0),
                              HX_BUF_F32(buffers, 1), HX_BUF_F32(buffers, 2),
                              HX_BUF_F32(buffers, 3), HX_BUF_F32(buffers, 4),
                              has_resid ? HX_BUF_F32(buffers, 6) : NULL, a->rows, a->cols, ld);
}

/* buffers: dout, inp, mean, rstd, dw, db */
static void layernorm_bwd_weight_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    if (hx_run_failed()) {
        return;
    }
    int ld = hx_layernorm_bwd_weight_check(buffers, node);
    hx_cpu_layernorm_bwd_weight(HX_BUF_F32(buffers, 4), HX_BUF_F32(buffers, 5),
                                HX_BUF_F32(buffers, 0), HX_BUF_F32(buffers, 1),
                                HX_BUF_F32(buffers, 2), HX_BUF_F32(buffers, 3), a->rows, a->cols,
                                ld);
}

HX_CODELET_DEV(layernorm_fwd, "layernorm_fwd", layernorm_fwd_cpu);
HX_CODELET_DEV(add_layernorm_fwd, "add_layernorm_fwd", add_layernorm_fwd_cpu);
HX_CODELET_DEV(layernorm_bwd_data, "layernorm_bwd_data", layernorm_bwd_data_cpu);
HX_CODELET_DEV(layernorm_bwd_weight, "layernorm_bwd_weight", layernorm_bwd_weight_cpu);
