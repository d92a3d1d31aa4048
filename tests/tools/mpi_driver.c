/* SPDX-License-Identifier: MIT */
/* tests/tools/mpi_driver.c: the rule that decides whether StarPU-MPI's thread drives worker 0
 * (hx_mpi_driver_wanted, runtime/mpi_driver.c), nothing started:
 *   - on and off are unconditional;
 *   - auto drives where the ranks sharing the cores, each with its workers and StarPU-MPI's
 *     thread, have more busy threads than cores, but not where a core is left for that
 *     thread, nor where the workers alone oversubscribe the cores: scripts/netbed's 1+1
 *     ranks of one worker on this 2-core machine drive, 2+2 do not; one rank of 3 workers on
 *     4 cores does not, one of 4 does;
 *   - nonsense counts (none, negative) never drive. */
#include <string.h>

#include "helix/runtime.h"
#include "tap.h"

int main(void)
{
    tap_plan(10);
    tap_ok(hx_mpi_driver_wanted(HX_MPI_DRIVER_ON, 1, 1, 64), "on: even with cores to spare");
    tap_ok(!hx_mpi_driver_wanted(HX_MPI_DRIVER_OFF, 4, 4, 2), "off: even oversubscribed");
    tap_ok(hx_mpi_driver_wanted(HX_MPI_DRIVER_AUTO, 2, 1, 2),
           "auto: 2 ranks of 1 worker on 2 cores (the bed's 1+1 ranks) drive");
    tap_ok(!hx_mpi_driver_wanted(HX_MPI_DRIVER_AUTO, 4, 1, 2),
           "auto: 4 ranks of 1 worker on 2 cores (the DDP bed) do not: the workers alone "
           "oversubscribe, and a driving thread never sleeps");
    tap_ok(!hx_mpi_driver_wanted(HX_MPI_DRIVER_AUTO, 1, 1, 2),
           "auto: 1 rank of 1 worker on 2 cores leaves StarPU-MPI a core");
    tap_ok(!hx_mpi_driver_wanted(HX_MPI_DRIVER_AUTO, 1, 3, 4),
           "auto: 3 workers + the thread on 4 cores fit");
    tap_ok(hx_mpi_driver_wanted(HX_MPI_DRIVER_AUTO, 1, 4, 4),
           "auto: 4 workers + the thread on 4 cores do not");
    tap_ok(!hx_mpi_driver_wanted(HX_MPI_DRIVER_AUTO, 8, 7, 64),
           "auto: 8 ranks of 7 workers on 64 cores fit");
    tap_ok(!hx_mpi_driver_wanted(HX_MPI_DRIVER_AUTO, 0, 1, 2) &&
               !hx_mpi_driver_wanted(HX_MPI_DRIVER_AUTO, 2, 0, 2) &&
               !hx_mpi_driver_wanted(HX_MPI_DRIVER_AUTO, 2, 1, 0) &&
               !hx_mpi_driver_wanted(HX_MPI_DRIVER_AUTO, -1, 1, 2),
           "auto: no ranks, workers or cores never drive");
    int named = 1;
    const enum hx_mpi_driver modes[] = { HX_MPI_DRIVER_OFF, HX_MPI_DRIVER_ON,
                                         HX_MPI_DRIVER_AUTO };
    const char *names[] = { "off", "on", "auto" };
    for (int i = 0; i < 3; i++) {
        named = named && strcmp(hx_mpi_driver_name(modes[i]), names[i]) == 0;
    }
    tap_ok(named, "names: off, on, auto (--mpi-driver's words)");
    return tap_exit();
}
