/* SPDX-License-Identifier: MIT */
/* codelets/cuda/residual.cu: CUDA launcher of hx_cl_add; the kernel is
 * codelets/kernels/residual.cl, the source PoCL runs in make check. */
#include "codelets/cuda/cuda.h"
#include "codelets/kernels/residual.cl"

/* buffers: a, b, out (out = a + b); or x, acc (acc += x) */
extern "C" void hx_add_cuda(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    if (hx_run_failed()) {
        return;
    }
    int nbuf = STARPU_TASK_GET_NBUFFERS(starpu_task_get_current());
    HX_ASSERT(nbuf == 2 || nbuf == 3, "add: %d buffers, expected 3 (a, b, out) or 2 (x, acc)",
              nbuf);
    long n = HX_CU_NUMEL(buffers, 0);
    for (int i = 0; i < nbuf; i++) {
        HX_ASSERT(HX_CU_LD(buffers, i) == HX_CU_COLS(buffers, i) && HX_CU_NUMEL(buffers, i) == n,
                  "add: buffer %d is (%d,%d) ld %d, expected %ld contiguous elements", i,
                  HX_CU_ROWS(buffers, i), HX_CU_COLS(buffers, i), HX_CU_LD(buffers, i), n);
    }
    /* acc += x is out = acc, a = acc, b = x */
    int out = nbuf - 1, a = nbuf == 2 ? 1 : 0, b = nbuf == 2 ? 0 : 1;
    hx_add<<<hx_cuda_blocks(n), HX_BLOCK, 0, hx_cuda_stream()>>>(
        HX_CU_F32(buffers, out), 0, HX_CU_F32(buffers, a), 0, HX_CU_F32(buffers, b), 0, n);
    HX_CUDA_CHECK("add", "hx_add");
}
