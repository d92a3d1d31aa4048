/* SPDX-License-Identifier: MIT */
/* tests/device/table.c: the codelet table (codelets/table.c) gives every compute op a CPU,
 * an OpenCL and a CUDA implementation, and every collective only a CPU one (collectives run
 * on the CPU communication lane; StarPU moves a device tile to RAM for them).  An OpenCL
 * slot is checked when helix has OpenCL (HX_HAVE_OPENCL with StarPU's OpenCL), a CUDA slot
 * when configure found CUDA (HX_HAVE_CUDA: the launchers are compiled and linked, whether or
 * not this StarPU has CUDA workers); each missing backend is one skipped line per op.
 * A collective's NCCL variant (codelets/collective_nccl.c, a CUDA build) is CPU only too, and
 * asks for its data tiles on the GPU (specific_nodes, dyn_nodes = hx_nccl_nodes), which are
 * RAM (node 0, valid under any StarPU) until the NCCL backend opens; no other op has one. */
#include <stdio.h>
#include <string.h>

#include "codelets/codelets.h"
#include "runtime/comm_internal.h"
#include "tap.h"

/* A collective's NCCL variant: CPU only, the tiles' nodes from hx_nccl_nodes. */
static void nccl_variant(int op, const char *name)
{
#if HX_HAVE_CUDA
    const struct starpu_codelet *n = hx_op_nccl_codelet((enum hx_op)op);
    tap_ok(n != NULL && n->cpu_funcs[0] != NULL && n->opencl_funcs[0] == NULL &&
           n->cuda_funcs[0] == NULL && n->specific_nodes == 1 && n->dyn_nodes == hx_nccl_nodes &&
           n->nbuffers == STARPU_VARIABLE_NBUFFERS && strcmp(n->name, name) == 0,
           "%s: an NCCL variant, CPU only, its tiles' memory nodes from hx_nccl_nodes", name);
#else
    char why[128];
    snprintf(why, sizeof why, "%s: an NCCL variant: helix built without CUDA and NCCL", name);
    tap_skip(why);
#endif
}

int main(void)
{
    char why[128] = "";
    (void)why; /* (only for a backend this build lacks) */
    tap_plan(3 * HX_OP_ALLREDUCE + 3 * (HX_OP_COUNT - HX_OP_ALLREDUCE) + 2);
    for (int op = 0; op < HX_OP_COUNT; op++) {
        const struct hx_op_info *info = hx_op_info((enum hx_op)op);
        const struct starpu_codelet *cl = info->cl;
        int comm = op >= HX_OP_ALLREDUCE;
        tap_ok(cl->cpu_funcs[0] != NULL, "%s: a CPU implementation", info->name);
        if (comm) {
            tap_ok(cl->opencl_funcs[0] == NULL && cl->cuda_funcs[0] == NULL &&
                   !cl->specific_nodes,
                   "%s: a collective, CPU only (no OpenCL or CUDA slot), its tiles in RAM",
                   info->name);
            nccl_variant(op, info->name);
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
    int none = 1;
    for (int op = 0; op < HX_OP_ALLREDUCE; op++) {
        none = none && hx_op_nccl_codelet((enum hx_op)op) == NULL;
    }
    tap_ok(none && hx_op_nccl_codelet(HX_OP_COUNT) == NULL,
           "no compute op (nor an invalid one) has an NCCL variant");
#if HX_HAVE_CUDA
    int ram = 1;
    for (int i = 0; i < HX_NODE_MAXREFS; i++) {
        ram = ram && hx_nccl_nodes[i] == STARPU_MAIN_RAM;
    }
    tap_ok(ram, "before the NCCL backend opens, every NCCL buffer node is RAM (%d entries)",
           HX_NODE_MAXREFS);
#else
    tap_skip("hx_nccl_nodes: helix built without CUDA and NCCL");
#endif
    return tap_exit();
}
