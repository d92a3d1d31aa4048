/* SPDX-License-Identifier: MIT */
/* runtime/mpi_driver.c: StarPU-MPI's progress thread as the driver of CPU worker 0 (StarPU's
 * "MPI driver", STARPU_MPI_DRIVER_CALL_FREQUENCY), so that one thread both runs that
 * worker's tasks and polls MPI between them.
 *
 * Why: StarPU-MPI 1.3's thread calls MPI_Test without pause while any request is pending.
 * Where a rank's workers already fill its cores, that thread waits for a core, and so does
 * every transfer: on the 2-core bed with 1+1 ranks of one worker each it was runnable 96% of
 * the run and on a core 30% of it, and a ready send waited 2.2 ms (p75) for it to be
 * scheduled (bench/README.md, "StarPU-MPI's progress thread waits for a core").  Driven by
 * that thread, worker 0 runs one task per pass of the polling loop: a transfer waits for at
 * most the task in progress, and the rank has one busy thread fewer than it has workers + 1.
 * Where cores are to spare, the dedicated thread is better (a long GEMM would hold the
 * transfers); where the workers alone oversubscribe the cores, the driving thread, which
 * never sleeps, takes a core from a busy rank whenever its own is idle: on 2 cores, 4 ranks
 * of ZeRO-3 sampling token by token (tests/mpi/parity_smpi.sh) took 6 to over 170 s, against
 * 6 s with their own threads.  Hence the rule of hx_mpi_driver_wanted.
 *
 * Two traps of StarPU 1.3 (mpi/src/mpi/starpu_mpi_mpi.c, _starpu_mpi_progress_thread_func):
 *  - the thread calls the driver only while an application receive is posted and unmatched
 *    (in the branch where its envelope receive found nothing), and it sleeps on a condition
 *    while no request is pending at all: worker 0 would run nothing before the first
 *    transfer, and a rank whose tasks wait for worker 0 hangs at its start.  A receive from
 *    this rank itself with a tag of its own, posted at start and matched at shutdown
 *    (hx_mpi_driver_stop), keeps a receive posted for the whole run;
 *  - STARPU_MPI_DRIVER_TASK_FREQUENCY, the tasks run per call, defaults to 0: no task ever.
 * StarPU's SimGrid mode ignores the driver (it says so), so the simulation flavour never
 * asks for it.  Tests: tests/mpi/mpi_driver.sh, tests/tools/mpi_driver.c. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>
#include <starpu.h>
#include <starpu_mpi.h>

#include "helix/comm.h"
#include "helix/error.h"
#include "helix/runtime.h"
#include "runtime/mpi_driver.h"

/* The self-receive's tag: collective tags put a channel number in bits 56-62 (comm_smpi.c,
 * tag_of) and helix's channels are enum hx_group_kind values, all far below 127; channel 127
 * with every other bit set is no collective's. */
#define KEEP_TAG ((starpu_mpi_tag_t)INT64_MAX)

static int on;            /* this run's choice, from hx_mpi_driver_choose */
static int driven = -1;   /* the worker id StarPU-MPI's thread drives, while started */
static int keep_in, keep_out;
static starpu_data_handle_t keep_recv;

int hx_mpi_driver_wanted(enum hx_mpi_driver mode, int ranks_here, int workers, int cores)
{
    switch (mode) {
    case HX_MPI_DRIVER_ON: return 1;
    case HX_MPI_DRIVER_AUTO:
        /* each rank's workers busy, plus StarPU-MPI's thread polling: more than the cores;
         * but the workers alone fit, since the driving thread never sleeps (the self-receive
         * keeps it polling), so a rank with nothing to do still takes a core */
        return ranks_here > 0 && workers > 0 && cores > 0 &&
               (long)ranks_here * (workers + 1) > cores && (long)ranks_here * workers <= cores;
    case HX_MPI_DRIVER_OFF:
    default: return 0;
    }
}

const char *hx_mpi_driver_name(enum hx_mpi_driver mode)
{
    switch (mode) {
    case HX_MPI_DRIVER_ON: return "on";
    case HX_MPI_DRIVER_AUTO: return "auto";
    case HX_MPI_DRIVER_OFF:
    default: return "off";
    }
}

/* A positive STARPU_MPI_DRIVER_* value from the environment: the user's, which StarPU reads */
static int env_positive(const char *name)
{
    const char *e = getenv(name);
    return e != NULL && atoi(e) > 0;
}

int hx_mpi_driver_choose(enum hx_mpi_driver mode, int workers)
{
    on = 0;
    if (hx_runtime_simulated() || hx_mpi_world_size() < 2) {
        /* SimGrid's StarPU ignores it; one process has no transfer to wait for */
        setenv("STARPU_MPI_DRIVER_CALL_FREQUENCY", "0", 1);
        return 0;
    }
    if (mode == HX_MPI_DRIVER_AUTO && getenv("STARPU_MPI_DRIVER_CALL_FREQUENCY") != NULL) {
        on = env_positive("STARPU_MPI_DRIVER_CALL_FREQUENCY"); /* StarPU's convention wins */
    } else {
        on = hx_mpi_driver_wanted(mode, hx_mpi_ranks_on_machine(), workers, hx_ncores());
    }
    /* StarPU reads these in starpu_mpi_init_conf: keep them and the self-receive in step */
    if (!on) {
        setenv("STARPU_MPI_DRIVER_CALL_FREQUENCY", "0", 1);
        return 0;
    }
    if (!env_positive("STARPU_MPI_DRIVER_CALL_FREQUENCY")) {
        setenv("STARPU_MPI_DRIVER_CALL_FREQUENCY", "1", 1); /* a task after every pass */
    }
    if (!env_positive("STARPU_MPI_DRIVER_TASK_FREQUENCY")) {
        setenv("STARPU_MPI_DRIVER_TASK_FREQUENCY", "1", 1);
    }
    return 1;
}

int hx_mpi_driver_start(void)
{
    if (!on) {
        return HX_OK;
    }
    int me = hx_mpi_world_rank();
    starpu_variable_data_register(&keep_recv, STARPU_MAIN_RAM, (uintptr_t)&keep_in,
                                  sizeof keep_in);
    int ret = starpu_mpi_irecv_detached(keep_recv, me, KEEP_TAG, MPI_COMM_WORLD, NULL, NULL);
    if (ret != 0) {
        starpu_data_unregister(keep_recv);
        on = 0;
        return HX_ERR(HX_ERUNTIME, "rank %d: StarPU-MPI's driver: its self-receive "
                      "(starpu_mpi_irecv_detached, tag %lld) failed (%d); run with "
                      "--mpi-driver off", me, (long long)KEEP_TAG, ret);
    }
    driven = starpu_worker_get_by_devid(STARPU_CPU_WORKER, 0);
    return HX_OK;
}

void hx_mpi_driver_stop(void)
{
    if (!on) {
        return;
    }
    /* match the self-receive, so StarPU-MPI's thread can end; no peer is involved, so a
     * rank that stops on an error does not wait for the others */
    starpu_data_handle_t h;
    starpu_variable_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)&keep_out, sizeof keep_out);
    int ret = starpu_mpi_isend_detached(h, hx_mpi_world_rank(), KEEP_TAG, MPI_COMM_WORLD,
                                        NULL, NULL);
    if (ret != 0) {
        hx_warn("StarPU-MPI's driver: the send that ends its self-receive failed (%d); the "
                "shutdown may wait", ret);
    }
    starpu_data_unregister(h);
    starpu_data_unregister(keep_recv); /* after the receive completes */
    driven = -1;
    on = 0;
}

int hx_runtime_driven_worker(void)
{
    return driven;
}
