/* SPDX-License-Identifier: MIT */
/* tools/plan_enumerate.h: the configurations `helix plan` (tools/plan.c) prices, from the
 * train flags' fixed choices: Megatron's tp inside a node with pp and dp, AxoNN's grids,
 * AMSP's sharding space, the micro-batch size and recomputation (tools/plan_enumerate.c).
 * Test: tests/cli/plan.sh. */
#ifndef HX_TOOLS_PLAN_ENUMERATE_H
#define HX_TOOLS_PLAN_ENUMERATE_H

#include "tools/plan_model.h"
#include "tools/train.h"

/* What the train flags fix: a value, or 0 (free) */
struct fixed {
    int tp, pp, fold, mbs, zero, recompute; /* recompute: enum + 1 */
    int grid[3];               /* --tp-grid: Gx, Gy, Gz (0: free) */
};

struct row {
    struct plan_config c;
    struct plan_estimate e;
    double sim;                /* --simulate-top: the simulated step (s) */
    int id;                    /* enumeration order: ties keep it, so every libc agrees */
};

/* Every configuration the fixed choices allow, priced by plan_estimate, in enumeration
 * order (*out: malloc'd, *nrows of them) */
int plan_enumerate(const struct hx_gpt_config *m, const struct train_args *a,
                   const struct fixed *x, const struct plan_bed *bed, struct row **out,
                   int *nrows);
/* The AMSP factors @p f are ZeRO stage @p zero's on dp ranks (0: none) */
int plan_zero_matches(const int *f, int dp, int zero);
/* The data-parallel ranks of one node in the mesh (tp, pp): MiCS's and AMSP's k */
int plan_dp_in_node(int tp, int pp, const struct plan_bed *bed);

#endif /* HX_TOOLS_PLAN_ENUMERATE_H */
