/* SPDX-License-Identifier: MIT */
/* tests/mpi/memory.c: memory accounting of sharded models (hx_gpt_memory), built for every
 * rank of 4-rank meshes without running them.  Over the ranks of the job the model states
 * add up exactly to AMSP's memory model (papers.md §4.5, fp32: 4 bytes of parameters and of
 * gradients, 8 of Adam states per parameter of a tp rank):
 *   sum of params = 4 Phi dp / s_p, grads = 4 Phi dp / s_g, optimizer = 8 Phi dp / s_os
 * and each rank's model states are within 5% of the formula (pieces are split evenly; Adam
 * states go to owners whole, balanced greedily). */
#include <math.h>
#include <stdio.h>

#include "helix/error.h"
#include "helix/gpt.h"
#include "tap.h"

struct mesh_case {
    const char *name;
    int tp, sp, sg, sos, zero;
};

int main(void)
{
    static const struct mesh_case cases[] = {
        { "dp 4", 1, 0, 0, 0, 0 },           { "ZeRO-1", 1, 0, 0, 0, 1 },
        { "ZeRO-2", 1, 0, 0, 0, 2 },         { "ZeRO-3", 1, 0, 0, 0, 3 },
        { "s 1/2/2", 1, 1, 2, 2, 0 },        { "s 2/2/4", 1, 2, 2, 4, 0 },
        { "tp 2 x ZeRO-1", 2, 0, 0, 0, 1 },
    };
    int ncase = (int)(sizeof cases / sizeof cases[0]);
    tap_plan(2 * ncase);
    struct hx_gpt_config c = { .vocab_size = 256, .num_layers = 2, .num_heads = 4,
                               .hidden_size = 64, .seq_len = 32, .micro_batch_size = 2,
                               .num_micro_batches = 8 };
    struct hx_optim_config o;
    hx_optim_config_default(&o, 10);
    for (int k = 0; k < ncase; k++) {
        const struct mesh_case *mc = &cases[k];
        double sum[3] = { 0 }, want[3] = { 0 }, worst = 0;
        int ok = 1;
        for (int r = 0; r < 4; r++) {
            struct hx_mesh_request q = { .world_size = 4, .world_rank = r, .tp = mc->tp,
                                         .ranks_per_node = 2, .shard_p = mc->sp,
                                         .shard_g = mc->sg, .shard_os = mc->sos,
                                         .zero_stage = mc->zero };
            struct hx_mesh mesh;
            struct hx_parallel_config par = { .mesh = &mesh };
            hx_gpt_t m;
            if (hx_mesh_init(&mesh, &q, 0) != HX_OK ||
                hx_gpt_build_parallel(&m, &c, &o, &par) != HX_OK) {
                ok = 0;
                break;
            }
            struct hx_gpt_memory mem;
            hx_gpt_memory(m, &mem);
            sum[0] += mem.params, sum[1] += mem.grads, sum[2] += mem.optim;
            if (mesh.tp_rank == 0) { /* Phi of one tp rank, dp replicas of it */
                double phi = mem.formula_model_state /
                             (4.0 / mesh.sp.s + 4.0 / mesh.sg.s + 8.0 / mesh.sos.s);
                want[0] += 4 * phi / mesh.sp.s * mc->tp;
                want[1] += 4 * phi / mesh.sg.s * mc->tp;
                want[2] += 8 * phi / mesh.sos.s * mc->tp;
            }
            double states = mem.params + mem.grads + mem.optim;
            worst = fmax(worst, fabs(states - mem.formula_model_state) /
                                    mem.formula_model_state);
            hx_gpt_destroy(m);
        }
        tap_ok(ok && fabs(sum[0] - want[0]) < 0.5 && fabs(sum[1] - want[1]) < 0.5 &&
                   fabs(sum[2] - want[2]) < 0.5,
               "%s: over the job, params %.0f (formula %.0f), grads %.0f (%.0f), optimizer "
               "%.0f (%.0f) bytes", mc->name, sum[0], want[0], sum[1], want[1], sum[2],
               want[2]);
        tap_ok(ok && worst < 0.05, "%s: every rank's model states within %.2f%% of the "
               "formula", mc->name, 100 * worst);
    }
    return tap_exit();
}
