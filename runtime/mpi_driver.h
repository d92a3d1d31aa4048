/* SPDX-License-Identifier: MIT */
/* runtime/mpi_driver.h: StarPU-MPI's thread as worker 0's driver (runtime/mpi_driver.c), the
 * part of hx_runtime_init and hx_runtime_shutdown; internal. */
#ifndef HX_RUNTIME_MPI_DRIVER_H
#define HX_RUNTIME_MPI_DRIVER_H

#include "helix/runtime.h"

/* Before starpu_mpi_init_conf: decide (@p mode, the user's STARPU_MPI_DRIVER_CALL_FREQUENCY
 * under auto, the rule of hx_mpi_driver_wanted with @p workers CPU workers a rank) and set
 * StarPU's two variables to match.  @return 1 when the driver will run. */
int hx_mpi_driver_choose(enum hx_mpi_driver mode, int workers);
/* After it: post the self-receive that keeps the driver running (HX_OK or HX_ERUNTIME). */
int hx_mpi_driver_start(void);
/* Before starpu_mpi_shutdown: match that receive and wait for it. */
void hx_mpi_driver_stop(void);

#endif
