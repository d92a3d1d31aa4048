/* SPDX-License-Identifier: MIT */
/* codelets/residual.c: the residual connection out = a + b on contiguous tiles (ld == cols),
 * n = rows*cols elements; out may alias a or b.  Its backward is the identity on both inputs,
 * so the graph passes the gradient through (layernorm_bwd_data adds it as resid).
 * Device forms: codelets/kernels/residual.cl.
 * Reference: codelets/ref/residual_ref.c.  Test: tests/codelets/residual.c. */
#include "codelets/codelets.h"
#include "codelets/cpu.h"

void hx_cpu_add(float *out, const float *a, const float *b, long n)
{
    for (long i = 0; i < n; i++) {
        out[i] = a[i] + b[i];
    }
}

/* buffers: a, b, out; or x, acc (acc += x: a gradient accumulator, where one task may not
 * name the same handle twice) */
static void add_cpu(void *buffers[], void *cl_arg)
{
    int nbuf = STARPU_TASK_GET_NBUFFERS(starpu_task_get_current());
    (void)cl_arg;
    if (hx_run_failed()) {
        return;
    }
    long n = (long)HX_BUF_ROWS(buffers, 0) * HX_BUF_COLS(buffers, 0);
    for (int i = 0; i < nbuf; i++) {
        /* one flat loop over the tile: every buffer must be contiguous and of the same size */
        HX_ASSERT(HX_BUF_LD(buffers, i) == HX_BUF_COLS(buffers, i) &&
                      (long)HX_BUF_ROWS(buffers, i) * HX_BUF_COLS(buffers, i) == n,
                  "add: buffer %d is (%d,%d) ld %d, expected %ld contiguous elements", i,
                  HX_BUF_ROWS(buffers, i), HX_BUF_COLS(buffers, i), HX_BUF_LD(buffers, i), n);
    }
    if (nbuf == 2) {
        hx_cpu_add(HX_BUF_F32(buffers, 1), HX_BUF_F32(buffers, 1), HX_BUF_F32(buffers, 0), n);
    } else {
        hx_cpu_add(HX_BUF_F32(buffers, 2), HX_BUF_F32(buffers, 0), HX_BUF_F32(buffers, 1), n);
    }
}

HX_CODELET_DEV(add, "add", add_cpu);
