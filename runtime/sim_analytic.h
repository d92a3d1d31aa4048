/* SPDX-License-Identifier: MIT */
/* runtime/sim_analytic.h: analytic performance models of a simulation, from a device
 * description (runtime/sim_analytic.c has the model; devices/README.md the files). */
#ifndef HX_RUNTIME_SIM_ANALYTIC_H
#define HX_RUNTIME_SIM_ANALYTIC_H

#include <starpu.h>

#include "helix/graph.h"

/* 1 when $HX_SIM_DEVICE names a device description and it loaded (read once per process;
 * a bad file is reported and counts as 0, and the first model check then fails). */
int hx_sim_analytic_on(void);
/* Give @p cl's model the analytic cost (before its first task). */
void hx_sim_analytic_attach(struct starpu_codelet *cl);
/* The modelled microseconds of a task doing @p flops and moving @p bytes, on the GPU or on
 * @p ncores CPU cores; @p n (may be NULL) says which op it is. */
double hx_sim_analytic_cost_us(const struct hx_node *n, double flops, double bytes, int gpu,
                               int ncores);

#endif /* HX_RUNTIME_SIM_ANALYTIC_H */
