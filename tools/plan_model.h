/* SPDX-License-Identifier: MIT */
/* tools/plan_model.h: the cost model of `helix plan` (issue 25): one training configuration's
 * step time and memory per GPU on a machine, predicted from the step graph helix would run.
 *
 * A configuration is a mesh (Megatron tp with sequence parallelism or AxoNN's 3D grid, pp
 * plain or folded, dp),
 * an AMSP sharding (s_p, s_g, s_os), a micro-batch size and a recomputation mode.  For each
 * pipeline stage helix builds the graph of the stage's first rank (hx_gpt_build_parallel,
 * nothing runs) and prices every node:
 *   compute     the simulator's analytic model of the machine's device (runtime/
 *               sim_analytic.c, devices/README.md): the same numbers `helix simulate
 *               --device` times tasks with;
 *   collectives as measured on the machine (helix plan --measure: each group shape's fixed
 *               cost and bandwidth) where a shape was measured, else a ring model,
 *               placement-aware as AxoNN's: a group inside one node runs at
 *               NVLink's bandwidth (PCIe through the host without NVLink; shared memory at
 *               the device's CPU bandwidth on CPU-only nodes), a group across nodes at its
 *               share of the node's NICs (the node's ranks' concurrent rings of that kind
 *               divide them); all-reduce 2(p-1)/p S/B + 2(p-1) a, all-gather and
 *               reduce-scatter (p-1)/p S/B + (p-1) a, point-to-point S/B + a.
 * and composes them as helix's schedule runs them (AMSP's T_comm in the same terms):
 *   step = max over stages (compute + tp + p2p + exposed gathers + exposed gradient
 *          reductions + after-update broadcasts) + bubble
 *   (and with shared_cores at least every rank's compute over those cores plus the worst
 *   stage's communication: no core is left to overlap a transfer)
 *   (and at least the sum of its collectives that cross nodes: they share the node's NICs,
 *   so hiding each under compute does not hide them all)
 *   tp and p2p are on the critical path (Megatron without --tp-comm-overlap; the grid's X
 *   and Y all-reduces likewise); parameter
 *   gathers hide under the micro-batches' compute; gradient reductions under the last
 *   micro-batch's backward (s_g = 1: DDP's buckets) or every backward (s_g > 1: a
 *   reduce-scatter per micro-batch); the bubble is Megatron's (p-1)/v of a micro-batch's
 *   stage time, v = 2 chunks per stage when folded.
 * Memory per GPU is the built graph's own tensors (hx_gpt_memory): model states, activations
 * with the pipeline's micro-batches in flight, communication buffers and inputs.
 * Test: tests/cli/plan.sh. */
#ifndef HX_TOOLS_PLAN_MODEL_H
#define HX_TOOLS_PLAN_MODEL_H

#include "helix/helix.h"
#include "runtime/sim_device.h"
#include "tools/sim_machine.h"

/* A collective's measured cost on a group shape (tools/plan_measure.c): t = alpha + f S / B,
 * f the ring model's factor of op over p ranks (1 for a transfer, op HX_OP_RECV, p 2) */
struct plan_measured {
    int op;                    /* enum hx_op */
    int p, nodes;              /* the group: its ranks, the nodes they span */
    double alpha_us, gbytes_per_s;
};
#define PLAN_MEASURED_MAX 32

/* The machine a plan is for */
struct plan_bed {
    struct hx_sim_machine mc;
    struct hx_sim_device dev;
    int gpus;                  /* ranks: one per GPU (or per CPU rank on CPU-only nodes) */
    int per_node;              /* ranks per node */
    double memory_bytes;       /* per GPU (or rank) */
    struct plan_measured comm[PLAN_MEASURED_MAX]; /* --comm FILE: measured shapes, which
                                * replace the ring model's link figures where they match */
    int ncomm;
    int shared_cores;          /* > 0: all ranks share this many cores (an emulated cluster on
                                * one machine, scripts/netbed): a step takes at least every
                                * rank's compute over them; 0: each rank has its own */
};

/* One configuration */
struct plan_config {
    int tp, pp, fold, dp;
    int gy, gz;                /* AxoNN's grid (--tp-grid (tp/gy)x(gy)x(gz)); 0: Megatron's tp
                                * (with sequence parallelism) */
    int mbs, M;                /* micro-batch size; micro-batches of the global batch */
    int s_p, s_g, s_os;        /* AMSP's factors (1: not sharded) */
    int recompute;             /* enum hx_recompute */
    int exact;                 /* 1: build every micro-batch (tests); 0: two small steps,
                                * extended to M (see plan_estimate) */
};

/* Its prediction: seconds, bytes per GPU (the worst stage) */
struct plan_estimate {
    double step, compute, tp, p2p, gather, grad, after, bubble;
    double cores;              /* with shared cores: every rank's compute over them plus the
                                * worst stage's communication (a floor of the step), else 0 */
    double states, acts, comm, inputs, total;
    double tokens_per_s, mfu;
    double model_state_formula; /* AMSP's 4 Phi/s_p + 4 Phi/s_g + 8 Phi/s_os (fp32) */
};

/* The mesh request of @p pc for rank @p rank (for hx_mesh_init). */
void plan_mesh_request(const struct plan_config *pc, const struct plan_bed *bed,
                       const struct hx_gpt_config *m, int rank, struct hx_mesh_request *r);

/* Predict @p pc for model @p m (its micro-batch fields are the configuration's): HX_OK, or
 * the status of a configuration helix cannot build (quiet: no message). */
int plan_estimate(const struct hx_gpt_config *m, const struct plan_config *pc,
                  const struct plan_bed *bed, struct plan_estimate *e);

/* The ring model's data factor f of @p op over @p p ranks (t = alpha + f S / B): 2(p-1)/p
 * for an all-reduce, (p-1)/p for an all-gather, reduce-scatter or all-to-all, 1 for a
 * broadcast or a transfer */
double plan_ring_factor(enum hx_op op, int p);

/* The ring model's time (s) of one collective of @p bytes (the whole buffer: the all-reduced
 * tensor, the gathered output, the scattered input) of kind @p op over group @p g of rank
 * @p rank's mesh. */
double plan_collective_s(const struct plan_bed *bed, const struct hx_mesh *mesh,
                         enum hx_group_kind g, enum hx_op op, double bytes);

/* tools/plan_measure.c: `helix plan --measure FILE` under mpirun (0, 1 or 2, as a command
 * exits); and reading FILE back (HX_OK, HX_EIO or HX_EINVAL naming the line) */
int plan_measure(int argc, char **argv, const char *path, int per_node);
int plan_read_measured(const char *path, struct plan_measured *m, int *nm);

#endif /* HX_TOOLS_PLAN_MODEL_H */
