/* SPDX-License-Identifier: MIT */
/* tests/device/table.c: the codelet table (codelets/table.c) gives every compute op a CPU,
 * an OpenCL and a CUDA implementation, and every collective only a CPU one (collectives run
 * on the CPU communication lane; StarPU moves a device tile to RAM for them).  An OpenCL
 * slot is checked when helix has OpenCL (HX_HAVE_OPENCL with StarPU's OpenCL), a CUDA slot
 * when configure found CUDA (HX_HAVE_CUDA: the launchers are compiled and linked, whether or
 * not this StarPU has CUDA workers); each missing backend is one skipped line per op. */
#include <stdio.h>
#include <string.h>

#include "codelets/codelets.h"
#include "tap.h"

int main(void)
{
    char why[128] = "";
    (void)why; /* (only for a backend this build lacks) */
    tap_plan(3 * HX_OP_ALLREDUCE + 2 * (HX_OP_COUNT - HX_OP_ALLREDUCE));
    for (int op = 0; op < HX_OP_COUNT; op++) {
        const struct hx_op_info *info = hx_op_info((enum hx_op)op);
        const struct starpu_codelet *cl = info->cl;
        int comm = op >= HX_OP_ALLREDUCE;
        tap_ok(cl->cpu_funcs[0] != NULL, "%s: a CPU implementation", info->name);
        if (comm) {
            tap_ok(cl->opencl_funcs[0] == NULL && cl->cuda_funcs[0] == NULL,
                   "%s: a collective, CPU only (no OpenCL or CUDA slot)", info->name);
            continue;
        }
#if HX_OPENCL
        tap_ok(cl->opencl_funcs[0] != NULL, "%s: an OpenCL implementation", info->name);
#else
        snprintf(why, sizeof why, "%s: an OpenCL implementation: helix built without OpenCL",
                 info->name);
        tap_skip(why);
#endif
#if HX_HAVE_CUDA
        tap_ok(cl->cuda_funcs[0] != NULL && cl->cuda_flags[0] == STARPU_CUDA_ASYNC,
               "%s: a CUDA implementation (asynchronous on the worker's stream)", info->name);
#else
        snprintf(why, sizeof why, "%s: a CUDA implementation: helix built without CUDA",
                 info->name);
        tap_skip(why);
#endif
    }
    return tap_exit();
}
