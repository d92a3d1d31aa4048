/* SPDX-License-Identifier: MIT */
/* codelets/crossentropy.c: softmax cross-entropy over the vocabulary, fused as in llm.c.
 * logits (N,V) row stride ld; targets (N,1) int32 in [0,V); losses, lse (N,1).
 * Forward: losses[r] = lse[r] - logits[r][target[r]], lse = log sum exp(logits[r]).
 * Backward, in place: logits := scale * (softmax(logits) - onehot(target)), the softmax
 * rebuilt from the forward's lse.  A target outside [0,V) is reported (HX_EINVAL).
 * Device forms: codelets/kernels/crossentropy.cl (launchers codelets/opencl/crossentropy.c,
 * codelets/cuda/crossentropy.cu).  Reference: codelets/ref/crossentropy_ref.c.
 * Test: tests/codelets/crossentropy.c. */
#include <math.h>

#include "codelets/codelets.h"
#include "codelets/cpu.h"
#include "codelets/ids.h"
#include "codelets/vecmath.h"

/* Targets come from the data loader, not from us: a bad one is the world's fault. */
static int check_target(const int32_t *targets, int r, int V)
{
    if (targets[r] < 0 || targets[r] >= V) {
        HX_TASK_ERR(HX_EINVAL, "cross-entropy: row %d target %d outside [0,%d) (bad token "
                    "file?)", r, (int)targets[r], V);
        return 0;
    }
    return 1;
}

int hx_xent_targets_ok(const int32_t *targets, int N, int V)
{
    for (int r = 0; r < N; r++) {
        if (!check_target(targets, r, V)) {
            return 0;
        }
    }
    return 1;
}

HX_VECTOR_CLONES
void hx_cpu_xent_fwd(float *losses, float *lse, const float *logits, int ld,
                     const int32_t *targets, int N, int V)
{
    for (int r = 0; r < N; r++) {
        if (!check_target(targets, r, V)) {
            return;
        }
        const float *x = logits + (size_t)r * ld;
        double l = hx_row_lse(x, V);
        lse[r] = (float)l;
        losses[r] = (float)(l - x[targets[r]]);
    }
}

HX_VECTOR_CLONES
void hx_cpu_xent_bwd(float *logits, int ld, const float *lse, const int32_t *targets, int N,
                     int V, float scale)
{
    for (int r = 0; r < N; r++) {
        if (!check_target(targets, r, V)) {
            return;
        }
        float *x = logits + (size_t)r * ld;
        float l = lse[r];
        for (int i = 0; i < V; i++) {
            x[i] = scale * hx_expf(x[i] - l);
        }
        x[targets[r]] -= scale;
    }
}

/* the node's (rows, V) must be the logits tile's: a mismatch is a graph-building bug */
void hx_xent_check_shapes(void *buffers[], const struct hx_rows_args *a, const char *op)
{
    HX_ASSERT(a->rows == HX_BUF_ROWS(buffers, 0) && a->cols == HX_BUF_COLS(buffers, 0),
              "%s: args (%d,%d) but logits tile (%d,%d)", op, a->rows, a->cols,
              HX_BUF_ROWS(buffers, 0), HX_BUF_COLS(buffers, 0));
}

/* buffers: logits, targets, losses, lse */
static void xent_fwd_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    if (hx_run_failed()) {
        return;
    }
    hx_xent_check_shapes(buffers, a, "xent_fwd");
    hx_cpu_xent_fwd(HX_BUF_F32(buffers, 2), HX_BUF_F32(buffers, 3), HX_BUF_F32(buffers, 0),
                    HX_BUF_LD(buffers, 0), HX_BUF_I32(buffers, 1), a->rows, a->cols);
}

/* buffers: logits, targets, lse */
static void xent_bwd_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    if (hx_run_failed()) {
        return;
    }
    hx_xent_check_shapes(buffers, a, "xent_bwd");
    hx_cpu_xent_bwd(HX_BUF_F32(buffers, 0), HX_BUF_LD(buffers, 0), HX_BUF_F32(buffers, 2),
                    HX_BUF_I32(buffers, 1), a->rows, a->cols, a->scale);
}

/* buffers: logits (RW), targets, losses, lse: row by row, the forward then the backward, so a
 * row of V logits is read from memory once */
static void xent_fused_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_rows_args *a = &node->args.rows;
    if (hx_run_failed()) {
        return;
    }
    hx_xent_check_shapes(buffers, a, "xent_fused");
    float *logits = HX_BUF_F32(buffers, 0), *losses = HX_BUF_F32(buffers, 2);
    float *lse = HX_BUF_F32(buffers, 3);
    const int32_t *targets = HX_BUF_I32(buffers, 1);
    int ld = HX_BUF_LD(buffers, 0);
    /* all targets first: the per-row calls below see one row each, so their own check
     * would name every bad row "row 0" */
    if (!hx_xent_targets_ok(targets, a->rows, a->cols)) {
        return;
    }
    for (int r = 0; r < a->rows && !hx_run_failed(); r++) {
        float *row = logits + (size_t)r * ld;
        hx_cpu_xent_fwd(losses + r, lse + r, row, ld, targets + r, 1, a->cols);
        hx_cpu_xent_bwd(row, ld, lse + r, targets + r, 1, a->cols, a->scale);
    }
}

HX_CODELET_DEV(xent_fwd, "xent_fwd", xent_fwd_cpu);
HX_CODELET_DEV(xent_fused, "xent_fused", xent_fused_cpu);
HX_CODELET_DEV(xent_bwd, "xent_bwd", xent_bwd_cpu);
