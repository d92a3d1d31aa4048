/* SPDX-License-Identifier: MIT */
/* sim/sim_config.h: config.h as the simulation flavour sees it (Makefile.am: sim/helix-sim, built
 * with configure --with-starpu-simgrid; issue 23).  Its StarPU is SimGrid's: kernels are never
 * run (a task takes its performance model's time) and it has no OpenCL or CUDA driver code, so
 * no device codelet is compiled in, whatever the default build found.  HX_SIMULATION marks
 * the host code that differs: no numerics to read, StarPU-MPI as the only communication. */
#ifndef HX_SIM_CONFIG_H
#define HX_SIM_CONFIG_H
#include "config.h"
#undef HX_HAVE_OPENCL
#define HX_HAVE_OPENCL 0
#undef HX_HAVE_CUDA
#define HX_HAVE_CUDA 0
#define HX_SIMULATION 1
#endif
