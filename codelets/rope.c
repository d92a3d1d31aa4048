/* SPDX-License-Identifier: MIT */
/* codelets/rope.c: rotary position embeddings (RoFormer; Llama's non-interleaved "rotate_half"
 * form, Megatron's default), in place on a qkv tile (rows, (NH + 2 KV) hs) ld = q (NH heads)
 * | k (KV heads) | v (KV heads).  Row r is position pos = r mod T (tiles hold whole
 * sequences); for i < hs/2 and every q and k head x:
 *   forward:  (x_i, x_{i+hs/2}) <- (x_i cos - x_{i+hs/2} sin, x_{i+hs/2} cos + x_i sin)
 *   backward: the transpose, sin -> -sin, on the gradient (a rotation's inverse)
 * with the angle pos inv_freq_i of codelets/rope.h.  v passes through (its gradient too).
 * Device form: codelets/kernels/rope.cl.  Reference: codelets/ref/rope_ref.c.
 * Test: tests/codelets/rope.c, tests/device/codelets.sh. */
#include <math.h>

#include "codelets/codelets.h"
#include "codelets/cpu.h"
#include "codelets/rope.h"

void hx_cpu_rope(float *qkv, int ld, int rows, int T, int NH, int KV, int hs, float base,
                 int inverse)
{
    const int half = hs / 2;
    const int nrot = NH + KV; /* the q heads, then the k heads right after them */
    for (int r = 0; r < rows; r++) {
        const int pos = r % T;
        float *row = qkv + (size_t)r * ld;
        for (int i = 0; i < half; i++) {
            /* one cos/sin per (row, pair), shared by the row's NH + KV heads */
            const double angle = hx_rope_angle(pos, i, hs, base);
            const float c = (float)cos(angle);
            const float s = inverse ? -(float)sin(angle) : (float)sin(angle);
            for (int h = 0; h < nrot; h++) {
                float *x = row + (size_t)h * hs;
                const float x0 = x[i], x1 = x[i + half];
                x[i] = x0 * c - x1 * s;
                x[i + half] = x1 * c + x0 * s;
            }
        }
    }
}

/* ---- StarPU codelets ---- */

void hx_rope_check(void *buffers[], const struct hx_rope_args *a, const char *op)
{
    HX_ASSERT(a->hs > 0 && a->hs % 2 == 0 && a->NH > 0 && a->KV > 0 && a->T > 0 &&
                  a->rows % a->T == 0,
              "%s: hs %d (must be even), NH %d, KV %d, rows %d, T %d; the graph builder "
              "(graphs/layers.c) should have refused them", op, a->hs, a->NH, a->KV, a->rows,
              a->T);
    HX_ASSERT(HX_BUF_ROWS(buffers, 0) == a->rows &&
                  HX_BUF_COLS(buffers, 0) == (a->NH + 2 * a->KV) * a->hs,
              "%s: qkv tile (%d,%d), expected (%d,%d); a graph-builder bug (graphs/layers.c)",
              op, HX_BUF_ROWS(buffers, 0), HX_BUF_COLS(buffers, 0), a->rows,
              (a->NH + 2 * a->KV) * a->hs);
}

/* buffers: qkv (RW) */
static void rope_fwd_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_rope_args *a = &node->args.rope;
    if (hx_run_failed()) {
        return;
    }
    hx_rope_check(buffers, a, "rope_fwd");
    hx_cpu_rope(HX_BUF_F32(buffers, 0), HX_BUF_LD(buffers, 0), a->rows, a->T, a->NH, a->KV,
                a->hs, a->base, 0);
}

/* buffers: dqkv (RW) */
static void rope_bwd_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_rope_args *a = &node->args.rope;
    if (hx_run_failed()) {
        return;
    }
    hx_rope_check(buffers, a, "rope_bwd");
    hx_cpu_rope(HX_BUF_F32(buffers, 0), HX_BUF_LD(buffers, 0), a->rows, a->T, a->NH, a->KV,
                a->hs, a->base, 1);
}

HX_CODELET_DEV(rope_fwd, "rope_fwd", rope_fwd_cpu);
HX_CODELET_DEV(rope_bwd, "rope_bwd", rope_bwd_cpu);
