/* SPDX-License-Identifier: MIT */
/* codelets/layernorm.c: LayerNorm over the last dimension, forward and the two halves of the
 * backward (data, weight) as separate tasks so the weight gradient can run off the critical
 * path.  inp, out, dout, dinp, resid (N,C) with row stride ld; w, b, dw, db (1,C); mean,
 * rstd (N,1).  Biased variance, rstd = 1/sqrt(var + eps).  dinp is written (=) as
 * [resid +] dLN/dinp; dw, db accumulate (+=) rows in order.
 * Reference: codelets/ref/layernorm_ref.c.  Test: tests/codelets/layernorm.c. */
#include <math.h>

#include "codelets/codelets.h"
#include "codelets/cpu.h"
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
        for (int i = 0; i < C; i++) {
            float xhat = (x[i] - mu) * rs;
            float g = dy[i] * w[i];
            float v = rs * (g - g_mean - xhat * gx_mean);
            dx[i] = res != NULL ? res[i] + v : v;
        }
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

/* The node's shape must be the tile's: a graph bug here would read past the tile. */
static void check_shape(void *buffers[], const struct hx_rows_args *a, const char *op)
{
    HX_ASSERT(a->rows == HX_BUF_ROWS(buffers, 0) && a->cols == HX_BUF_COLS(buffers, 0),
              "%s: args (%d,%d) but tile (%d,%d)", op, a->rows, a->cols, HX_BUF_ROWS(buffers, 0),
              HX_BUF_COLS(buffers, 0));
}

/* buffers: inp, w, b, out, mean, rstd */
static void layernorm_fwd_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    if (hx_run_failed()) {
        return;
    }
    check_shape(buffers, a, "layernorm_fwd");
    HX_ASSERT(HX_BUF_LD(buffers, 0) == HX_BUF_LD(buffers, 3),
              "layernorm_fwd: ld of inp %d != ld of out %d", HX_BUF_LD(buffers, 0),
              HX_BUF_LD(buffers, 3));
    hx_cpu_layernorm_fwd(HX_BUF_F32(buffers, 3), HX_BUF_F32(buffers, 4), HX_BUF_F32(buffers, 5),
                         HX_BUF_F32(buffers, 0), HX_BUF_F32(buffers, 1), HX_BUF_F32(buffers, 2),
                         a->rows, a->cols, HX_BUF_LD(buffers, 0), a->eps);
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
    int ld = HX_BUF_LD(buffers, 4);
    for (int i = 0; i < 6; i++) {
        HX_ASSERT(i == 2 || i == 3 || HX_BUF_LD(buffers, i) == ld,
                  "add_layernorm_fwd: buffer %d has ld %d, the sum %d", i,
                  HX_BUF_LD(buffers, i), ld);
    }
    HX_ASSERT(HX_BUF_ROWS(buffers, 4) == a->rows && HX_BUF_COLS(buffers, 4) == a->cols,
              "add_layernorm_fwd: sum tile (%d,%d), args (%d,%d)", HX_BUF_ROWS(buffers, 4),
              HX_BUF_COLS(buffers, 4), a->rows, a->cols);
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
    check_shape(buffers, a, "layernorm_bwd_data");
    int ld = HX_BUF_LD(buffers, 0);
    const float *resid = NULL;
    if (node->nrefs > 6 && a->has_resid) {
        resid = HX_BUF_F32(buffers, 6);
        HX_ASSERT(HX_BUF_LD(buffers, 6) == ld, "layernorm_bwd_data: resid ld %d != %d",
                  HX_BUF_LD(buffers, 6), ld);
    }
    HX_ASSERT(HX_BUF_LD(buffers, 1) == ld && HX_BUF_LD(buffers, 5) == ld,
              "layernorm_bwd_data: ld of dout %d, inp %d, dinp %d differ", ld,
              HX_BUF_LD(buffers, 1), HX_BUF_LD(buffers, 5));
    hx_cpu_layernorm_bwd_data(HX_BUF_F32(buffers, 5), HX_BUF_F32(buffers, 0),
                              HX_BUF_F32(buffers, 1), HX_BUF_F32(buffers, 2),
                              HX_BUF_F32(buffers, 3), HX_BUF_F32(buffers, 4), resid, a->rows,
                              a->cols, ld);
}

/* buffers: dout, inp, mean, rstd, dw, db */
static void layernorm_bwd_weight_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    if (hx_run_failed()) {
        return;
    }
    check_shape(buffers, a, "layernorm_bwd_weight");
    HX_ASSERT(HX_BUF_LD(buffers, 0) == HX_BUF_LD(buffers, 1),
              "layernorm_bwd_weight: ld of dout %d != ld of inp %d", HX_BUF_LD(buffers, 0),
              HX_BUF_LD(buffers, 1));
    hx_cpu_layernorm_bwd_weight(HX_BUF_F32(buffers, 4), HX_BUF_F32(buffers, 5),
                                HX_BUF_F32(buffers, 0), HX_BUF_F32(buffers, 1),
                                HX_BUF_F32(buffers, 2), HX_BUF_F32(buffers, 3), a->rows, a->cols,
                                HX_BUF_LD(buffers, 0));
}

HX_CODELET(layernorm_fwd, "layernorm_fwd", layernorm_fwd_cpu);
HX_CODELET(add_layernorm_fwd, "add_layernorm_fwd", add_layernorm_fwd_cpu);
HX_CODELET(layernorm_bwd_data, "layernorm_bwd_data", layernorm_bwd_data_cpu);
HX_CODELET(layernorm_bwd_weight, "layernorm_bwd_weight", layernorm_bwd_weight_cpu);
