/* SPDX-License-Identifier: MIT */
/* tests/mpi/lost_rank.c: a job in which rank 1 disappears, for tests/mpi/watchdog.sh.
 * Eight all-reduces of (64,64) f32 on the world channel, each after a producer
 * (tests/mpi/coll_harness.h), then a host barrier.  Rank 1 runs its producers in descending
 * order, so when it vanishes in producer 5 it has posted nothing while the others wait in
 * the world's seq 0; the others must then be ended by the watchdog (--timeout seconds).
 *
 *   lost_rank --victim kill|stop|stop-host|none [--timeout S] [--backend mpi|starpu-mpi]
 *     kill       rank 1 raises SIGKILL in producer 5 (mid-graph)
 *     stop       rank 1 raises SIGSTOP in producer 5
 *     stop-host  the graph completes, then rank 1 stops before the host barrier
 *     none       nobody is lost: every rank prints "finished with status 0" and exits 0
 * Exit status: 0 when the job completes, 3 when the watchdog ended this rank. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/helix.h"
#include "mpi/coll_harness.h"

int main(int argc, char **argv)
{
    const char *mode = NULL, *backend = "mpi";
    double timeout = 3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--victim") == 0 && i + 1 < argc) {
            mode = argv[++i];
        } else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
            timeout = atof(argv[++i]);
        } else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
            backend = argv[++i];
        } else {
            mode = NULL;
            break;
        }
    }
    int sig = mode == NULL                      ? -1
              : strcmp(mode, "kill") == 0       ? SIGKILL
              : strcmp(mode, "stop") == 0       ? SIGSTOP
              : strcmp(mode, "stop-host") == 0  ? SIGSTOP
              : strcmp(mode, "none") == 0       ? 0
                                                : -1;
    struct hx_comm_opts co = { .timeout = timeout };
    if (sig < 0 || hx_comm_backend_from_name(backend, &co.backend) != HX_OK) {
        fprintf(stderr, "usage: lost_rank --victim kill|stop|stop-host|none "
                "[--timeout SECONDS] [--backend mpi|starpu-mpi]\n");
        return 2;
    }
    int host = strcmp(mode, "stop-host") == 0;
    start_runtime(&argc, &argv);
    job_begin();
    J.victim_signal = host ? 0 : sig;
    J.victim_at = 5;
    struct hx_mesh_request req = { .world_size = W, .world_rank = R };
    if (hx_mesh_init(&J.mesh, &req, 0) != HX_OK || hx_comm_open(&J.mesh, &co) != HX_OK) {
        hx_mpi_abort(1);
    }
    for (int c = 0; c < 8; c++) {
        struct hx_tensor *x = tensor(HX_GROUP_WORLD, c, "x", HX_F32, 64, 64, 0);
        produce_all(x);
        struct hx_ref r = hx_ref_of(x, 0, HX_RW);
        coll(HX_OP_ALLREDUCE, HX_GROUP_WORLD, HX_F32, HX_SUM, 0, 0, 1, &r);
    }
    int ret = job_run();
    if (host && R == 1) {
        fprintf(stderr, "rank %d stops before a host barrier\n", R);
        raise(SIGSTOP);
    }
    ret = ret == HX_OK ? hx_comm_host_barrier(HX_GROUP_WORLD) : ret;
    printf("victim %s: rank %d finished with status %d\n", mode, R, ret);
    job_end();
    hx_comm_close();
    stop_runtime();
    return ret == HX_OK ? 0 : 1;
}
