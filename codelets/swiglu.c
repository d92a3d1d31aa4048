/* SPDX-License-Identifier: MIT */
/* codelets/swiglu.c: SwiGLU, Llama's MLP activation, on contiguous row tiles.  inp, dinp
 * (N,2F) hold [gate | up] per row (Megatron's --swiglu: the two halves of one fc1 of 2F
 * outputs); out, dout (N,F):
 *   out = silu(gate) up,  silu(g) = g s(g),  s(g) = 1/(1 + e^-g);
 *   dinp = [dout up s(g) (1 + g (1 - s(g))) | dout silu(g)]  (=).
 * Device forms: codelets/kernels/swiglu.cl; every backend checks its buffers with
 * codelets/swiglu.h.  Reference: codelets/ref/swiglu_ref.c.
 * Test: tests/codelets/swiglu.c, tests/device/codelets.sh. */
#include "codelets/codelets.h"
#include "codelets/cpu.h"
#include "codelets/swiglu.h"
#include "codelets/vecmath.h"

/* hx_expf saturates at e^88 for gate < -88: s = 1/(1 + e^88) ~ 6e-39 instead of ~0, an error
 * far below any of the results' ulps, and no inf/NaN for any finite gate */
HX_VECTOR_CLONES
void hx_cpu_swiglu_fwd(float *out, const float *inp, int N, int F)
{
    for (int r = 0; r < N; r++) {
        const float *gate = inp + (size_t)r * 2 * F, *up = gate + F;
        float *y = out + (size_t)r * F;
        for (int i = 0; i < F; i++) {
            float g = gate[i];
            float s = 1.0f / (1.0f + hx_expf(-g));
            y[i] = g * s * up[i];
        }
    }
}

HX_VECTOR_CLONES
void hx_cpu_swiglu_bwd(float *dinp, const float *inp, const float *dout, int N, int F)
{
    for (int r = 0; r < N; r++) {
        const float *gate = inp + (size_t)r * 2 * F, *up = gate + F;
        const float *dy = dout + (size_t)r * F;
        float *dgate = dinp + (size_t)r * 2 * F, *dup = dgate + F;
        for (int i = 0; i < F; i++) {
            float g = gate[i];
            float s = 1.0f / (1.0f + hx_expf(-g));
            dgate[i] = dy[i] * up[i] * s * (1.0f + g * (1.0f - s));
            dup[i] = dy[i] * g * s;
        }
    }
}

/* ---- buffer checks, shared with the device launchers (codelets/swiglu.h) ---- */

/* Buffer i is a contiguous (rows, cols) tile. */
static void check_tile(void *buffers[], int i, int rows, int cols, const char *what,
                       const char *op)
{
    HX_ASSERT(HX_BUF_ROWS(buffers, i) == rows && HX_BUF_COLS(buffers, i) == cols &&
                  HX_BUF_LD(buffers, i) == cols,
              "%s: %s is a (%d,%d) tile with ld %d, expected a contiguous (%d,%d) one; the "
              "graph builder (graphs/layers.c) passed the wrong shape", op, what,
              HX_BUF_ROWS(buffers, i), HX_BUF_COLS(buffers, i), HX_BUF_LD(buffers, i), rows,
              cols);
}

void hx_swiglu_fwd_check(void *buffers[], const struct hx_node *node)
{
    const struct hx_rows_args *a = &node->args.rows;
    check_tile(buffers, 0, a->rows, 2 * a->cols, "inp", "swiglu_fwd");
    check_tile(buffers, 1, a->rows, a->cols, "out", "swiglu_fwd");
}

void hx_swiglu_bwd_check(void *buffers[], const struct hx_node *node)
{
    const struct hx_rows_args *a = &node->args.rows;
    check_tile(buffers, 0, a->rows, 2 * a->cols, "inp", "swiglu_bwd");
    check_tile(buffers, 1, a->rows, a->cols, "dout", "swiglu_bwd");
    check_tile(buffers, 2, a->rows, 2 * a->cols, "dinp", "swiglu_bwd");
}

/* ---- CPU codelets ---- */

/* buffers: inp, out */
static void swiglu_fwd_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    if (hx_run_failed()) {
        return;
    }
    hx_swiglu_fwd_check(buffers, node);
    hx_cpu_swiglu_fwd(HX_BUF_F32(buffers, 1), HX_BUF_F32(buffers, 0), node->args.rows.rows,
                      node->args.rows.cols);
}

/* buffers: inp, dout, dinp */
static void swiglu_bwd_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    if (hx_run_failed()) {
        return;
    }
    hx_swiglu_bwd_check(buffers, node);
    hx_cpu_swiglu_bwd(HX_BUF_F32(buffers, 2), HX_BUF_F32(buffers, 0), HX_BUF_F32(buffers, 1),
                      node->args.rows.rows, node->args.rows.cols);
}

HX_CODELET_DEV(swiglu_fwd, "swiglu_fwd", swiglu_fwd_cpu);
HX_CODELET_DEV(swiglu_bwd, "swiglu_bwd", swiglu_bwd_cpu);
