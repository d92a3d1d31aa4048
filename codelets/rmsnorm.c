/* SPDX-License-Identifier: MIT */
/* codelets/rmsnorm.c: RMSNorm (Llama) over the last dimension, forward and the two halves of
 * the backward (data, weight) as separate tasks, as codelets/layernorm.c, whose rules it
 * keeps: inp, out, dout, dinp, resid (N,C) with row stride ld; w, dw (1,C); rstd (N,1).
 * No mean, no bias: rstd = 1/sqrt(mean(x^2) + eps), out = x rstd w.  dinp is written (=) as
 * [resid +] dRMSNorm/dinp; dw accumulates (+=) rows in order.
 * Device forms: codelets/kernels/rmsnorm.cl (OpenCL and CUDA); every backend checks its
 * buffers with codelets/rmsnorm.h.
 * Reference: codelets/ref/rmsnorm_ref.c.  Test: tests/codelets/rmsnorm.c. */
#include <math.h>

#include "codelets/codelets.h"
#include "codelets/cpu.h"
#include "codelets/norm_rows.h"
#include "codelets/rmsnorm.h"
#include "codelets/vecmath.h"

HX_VECTOR_CLONES
void hx_cpu_rmsnorm_fwd(float *out, float *rstd, const float *inp, const float *w, int N, int C,
                        int ld, float eps)
{
    for (int r = 0; r < N; r++) {
        const float *x = inp + (size_t)r * ld;
        float *y = out + (size_t)r * ld;
        /* the sum of squares in double, as LayerNorm's moments: C terms of one sign, whose
         * float sum would drift by ~C ulps */
        double ss = 0.0;
        for (int i = 0; i < C; i++) {
            ss += (double)x[i] * x[i];
        }
        double rs = 1.0 / sqrt(ss / C + (double)eps);
        float rsf = (float)rs;
        for (int i = 0; i < C; i++) {
            y[i] = x[i] * rsf * w[i];
        }
        rstd[r] = rsf;
    }
}

/* Per row, with xhat = x rstd and g = dout * w (the gradient w.r.t. xhat):
 *   dx = rstd (g - xhat mean(g xhat)).
 * The row mean is summed in double because dx is its small difference from g. */
HX_VECTOR_CLONES
void hx_cpu_rmsnorm_bwd_data(float *dinp, const float *dout, const float *inp, const float *w,
                             const float *rstd, const float *resid, int N, int C, int ld)
{
    for (int r = 0; r < N; r++) {
        const float *x = inp + (size_t)r * ld;
        const float *dy = dout + (size_t)r * ld;
        float rs = rstd[r];
        double gx_sum = 0.0;
        for (int i = 0; i < C; i++) {
            float xhat = x[i] * rs;
            float g = dy[i] * w[i];
            gx_sum += (double)g * xhat;
        }
        float gx_mean = (float)(gx_sum / C);
        float *dx = dinp + (size_t)r * ld;
        /* resid may alias dinp: each element is read before it is written */
        const float *res = resid != NULL ? resid + (size_t)r * ld : NULL;
        hx_rmsnorm_bwd_row(dx, dy, x, w, res, rs, gx_mean, C);
    }
}

HX_VECTOR_CLONES
void hx_cpu_rmsnorm_bwd_weight(float *dw, const float *dout, const float *inp, const float *rstd,
                               int N, int C, int ld)
{
    /* rows in order, so the accumulation order is fixed by the graph, not by the worker */
    for (int r = 0; r < N; r++) {
        const float *x = inp + (size_t)r * ld;
        const float *dy = dout + (size_t)r * ld;
        float rs = rstd[r];
        for (int i = 0; i < C; i++) {
            dw[i] += dy[i] * (x[i] * rs);
        }
    }
}

/* ---- buffer checks, shared with the device launchers (codelets/rmsnorm.h) ---- */

int hx_rmsnorm_fwd_check(void *buffers[], const struct hx_node *node)
{
    const struct hx_rows_args *a = &node->args.rows;
    const char *op = "rmsnorm_fwd";
    int ld = HX_BUF_LD(buffers, 0);
    hx_buf_check_rows(buffers, 0, a, "inp", op);
    hx_buf_check_rows(buffers, 2, a, "out", op);
    hx_buf_check_ld(buffers, 2, ld, "out", op);
    hx_buf_check_vec(buffers, 1, a->cols, "w", op);
    hx_buf_check_vec(buffers, 3, a->rows, "rstd", op);
    return ld;
}

int hx_add_rmsnorm_fwd_check(void *buffers[], const struct hx_node *node)
{
    const struct hx_rows_args *a = &node->args.rows;
    const char *op = "add_rmsnorm_fwd";
    static const char *const names[] = { "a", "b", "w", "sum", "out" };
    int ld = HX_BUF_LD(buffers, 3);
    for (int i = 0; i < 5; i++) {
        if (i != 2) {
            hx_buf_check_rows(buffers, i, a, names[i], op);
            hx_buf_check_ld(buffers, i, ld, names[i], op);
        }
    }
    hx_buf_check_vec(buffers, 2, a->cols, "w", op);
    hx_buf_check_vec(buffers, 5, a->rows, "rstd", op);
    return ld;
}

int hx_rmsnorm_bwd_data_check(void *buffers[], const struct hx_node *node, int *has_resid)
{
    const struct hx_rows_args *a = &node->args.rows;
    const char *op = "rmsnorm_bwd_data";
    int ld = HX_BUF_LD(buffers, 0);
    hx_buf_check_rows(buffers, 0, a, "dout", op);
    hx_buf_check_rows(buffers, 1, a, "inp", op);
    hx_buf_check_rows(buffers, 4, a, "dinp", op);
    hx_buf_check_ld(buffers, 1, ld, "inp", op);
    hx_buf_check_ld(buffers, 4, ld, "dinp", op);
    hx_buf_check_vec(buffers, 2, a->cols, "w", op);
    hx_buf_check_vec(buffers, 3, a->rows, "rstd", op);
    *has_resid = node->nrefs > 5 && a->has_resid;
    if (*has_resid) {
        hx_buf_check_rows(buffers, 5, a, "resid", op);
        hx_buf_check_ld(buffers, 5, ld, "resid", op);
    }
    return ld;
}

int hx_rmsnorm_bwd_weight_check(void *buffers[], const struct hx_node *node)
{
    const struct hx_rows_args *a = &node->args.rows;
    const char *op = "rmsnorm_bwd_weight";
    int ld = HX_BUF_LD(buffers, 0);
    hx_buf_check_rows(buffers, 0, a, "dout", op);
    hx_buf_check_rows(buffers, 1, a, "inp", op);
    hx_buf_check_ld(buffers, 1, ld, "inp", op);
    hx_buf_check_vec(buffers, 2, a->rows, "rstd", op);
    hx_buf_check_vec(buffers, 3, a->cols, "dw", op);
    return ld;
}

/* ---- CPU codelets ---- */

/* buffers: inp, w, out, rstd */
static void rmsnorm_fwd_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    if (hx_run_failed()) {
        return;
    }
    int ld = hx_rmsnorm_fwd_check(buffers, node);
    hx_cpu_rmsnorm_fwd(HX_BUF_F32(buffers, 2), HX_BUF_F32(buffers, 3), HX_BUF_F32(buffers, 0),
                       HX_BUF_F32(buffers, 1), a->rows, a->cols, ld, a->eps);
}

/* buffers: a, b, w, sum, out, rstd: the residual add, then RMSNorm of the sum while its rows
 * are still in cache */
static void add_rmsnorm_fwd_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    if (hx_run_failed()) {
        return;
    }
    int ld = hx_add_rmsnorm_fwd_check(buffers, node);
    float *sum = HX_BUF_F32(buffers, 3);
    const float *x = HX_BUF_F32(buffers, 0), *y = HX_BUF_F32(buffers, 1);
    for (int r = 0; r < a->rows; r++) {
        hx_cpu_add(sum + (size_t)r * ld, x + (size_t)r * ld, y + (size_t)r * ld, a->cols);
    }
    hx_cpu_rmsnorm_fwd(HX_BUF_F32(buffers, 4), HX_BUF_F32(buffers, 5), sum,
                       HX_BUF_F32(buffers, 2), a->rows, a->cols, ld, a->eps);
}

/* buffers: dout, inp, w, rstd, dinp [, resid] */
static void rmsnorm_bwd_data_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    if (hx_run_failed()) {
        return;
    }
    int has_resid;
    int ld = hx_rmsnorm_bwd_data_check(buffers, node, &has_resid);
    hx_cpu_rmsnorm_bwd_data(HX_BUF_F32(buffers, 4), HX_BUF_F32(buffers, 0),
                            HX_BUF_F32(buffers, 1), HX_BUF_F32(buffers, 2),
                            HX_BUF_F32(buffers, 3), has_resid ? HX_BUF_F32(buffers, 5) : NULL,
                            a->rows, a->cols, ld);
}

/* buffers: dout, inp, rstd, dw */
static void rmsnorm_bwd_weight_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    if (hx_run_failed()) {
        return;
    }
    int ld = hx_rmsnorm_bwd_weight_check(buffers, node);
    hx_cpu_rmsnorm_bwd_weight(HX_BUF_F32(buffers, 3), HX_BUF_F32(buffers, 0),
                              HX_BUF_F32(buffers, 1), HX_BUF_F32(buffers, 2), a->rows, a->cols,
                              ld);
}

HX_CODELET_DEV(rmsnorm_fwd, "rmsnorm_fwd", rmsnorm_fwd_cpu);
HX_CODELET_DEV(add_rmsnorm_fwd, "add_rmsnorm_fwd", add_rmsnorm_fwd_cpu);
HX_CODELET_DEV(rmsnorm_bwd_data, "rmsnorm_bwd_data", rmsnorm_bwd_data_cpu);
HX_CODELET_DEV(rmsnorm_bwd_weight, "rmsnorm_bwd_weight", rmsnorm_bwd_weight_cpu);
