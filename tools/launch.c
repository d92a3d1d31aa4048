/* SPDX-License-Identifier: MIT */
/* tools/launch.c: what the subcommands that run under mpirun share: knowing they were
 * launched by it, letting only rank 0 report bad input, and checking a --sched name.
 * Test: tests/mpi/bad_mesh.sh (one message from rank 0), tests/cli/bad_input.sh. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "helix/sched.h"
#include "tools/tools.h"

int tools_launched_by_mpirun(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") != NULL || getenv("PMIX_RANK") != NULL;
}

int tools_mute_stderr(int rank)
{
    if (rank == 0) {
        return -1;
    }
    fflush(stderr);
    int saved = dup(2), null = open("/dev/null", O_WRONLY);
    if (saved >= 0 && null >= 0) {
        dup2(null, 2);
    }
    if (null >= 0) {
        close(null);
    }
    return saved;
}

void tools_unmute_stderr(int saved)
{
    if (saved >= 0) {
        fflush(stderr);
        dup2(saved, 2);
        close(saved);
    }
}

int tools_check_sched(const char *name)
{
    if (name == NULL || hx_sched_is_known(name)) {
        return 0;
    }
    fprintf(stderr, "helix: error: unknown --sched '%s'; choose one of:", name);
    for (const char *const *n = hx_sched_names(); *n != NULL; n++) {
        fprintf(stderr, " %s", *n);
    }
    fprintf(stderr, "\n");
    return 2;
}
