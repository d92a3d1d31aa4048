/* SPDX-License-Identifier: MIT */
/* runtime/sim_models.h: in a simulation (helix simulate) every task takes its performance
 * model's time, and StarPU's SimGrid mode aborts, deep in a worker, on a codelet that has no
 * model for the simulated host.  hx_sim_model_check says which model is missing and how to
 * make it, before the task exists. */
#ifndef HX_SIM_MODELS_H
#define HX_SIM_MODELS_H

#include <starpu.h>

#include "helix/runtime.h"

int hx_sim_model_file_check(const struct starpu_codelet *cl, const char *what);

/* HX_OK, or HX_EINVAL (reported, naming the model's file and the calibration to run) when
 * this simulation has no model of @p cl for its host; @p what names the task.  Always HX_OK
 * outside a simulation, and for a codelet whose body runs in simulated zero time
 * (STARPU_CODELET_SIMGRID_EXECUTE).  Any thread. */
static inline int hx_sim_model_check(const struct starpu_codelet *cl, const char *what)
{
    return hx_runtime_simulated() ? hx_sim_model_file_check(cl, what) : 0;
}

#endif
