/* SPDX-License-Identifier: MIT */
/* tests/sim/pingpong.c: StarPU-MPI ping-pong between pairs of ranks, in simulated time: what a
 * machine file's links give a message (tools/sim_machine.h).  Built against the simulating
 * StarPU only (StarPU-MPI under SimGrid's SMPI); run under starpu_smpirun on the files that
 * `helix sim-machine` writes:
 *   pingpong BYTES ITERS [--together] A:B [A:B ...]
 * For each pair in turn (all pairs at once with --together: a rank in one pair only), rank
 * A sends a registered vector of BYTES bytes to rank B and B
 * sends it back, ITERS times; A prints one line
 *   pair A B bytes N one_way_us T
 * (after a first line "ranks R workers cpu C cuda G" of rank 0's StarPU workers)
 * with T = (round-trip time of the ITERS exchanges) / (2 ITERS), in StarPU's clock (simulated
 * microseconds).  Other ranks only join and leave.  The payload is never read: it is
 * allocated with STARPU_MALLOC_SIMULATION_FOLDED, so 64 MiB messages cost no real memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>
#include <starpu_mpi.h>

static int exchange(starpu_data_handle_t h, int me, int a, int b, int iters, double *one_way_us)
{
    int peer = me == a ? b : a;
    double t0 = starpu_timing_now();
    for (int i = 0; i < iters; i++) {
        MPI_Status st;
        int ret;
        if (me == a) {
            ret = starpu_mpi_send(h, peer, i, MPI_COMM_WORLD);
            ret = ret ? ret : starpu_mpi_recv(h, peer, i, MPI_COMM_WORLD, &st);
        } else {
            ret = starpu_mpi_recv(h, peer, i, MPI_COMM_WORLD, &st);
            ret = ret ? ret : starpu_mpi_send(h, peer, i, MPI_COMM_WORLD);
        }
        if (ret != 0) {
            fprintf(stderr, "pingpong: rank %d: send/recv with %d failed (%d)\n", me, peer, ret);
            return ret;
        }
    }
    *one_way_us = (starpu_timing_now() - t0) / (2.0 * iters);
    return 0;
}

int main(int argc, char **argv)
{
    int together = argc > 3 && strcmp(argv[3], "--together") == 0, first = 3 + together;
    if (argc <= first) {
        fprintf(stderr, "usage: pingpong BYTES ITERS [--together] A:B [A:B ...]\n");
        return 2;
    }
    size_t bytes = strtoull(argv[1], NULL, 10);
    int iters = atoi(argv[2]);
    int ret = starpu_mpi_init_conf(&argc, &argv, 1, MPI_COMM_WORLD, NULL);
    if (ret != 0) {
        fprintf(stderr, "pingpong: starpu_mpi_init_conf failed (%d)\n", ret);
        return 1;
    }
    int me, size;
    starpu_mpi_comm_rank(MPI_COMM_WORLD, &me);
    starpu_mpi_comm_size(MPI_COMM_WORLD, &size);
    if (me == 0) {
        printf("ranks %d workers cpu %u cuda %u\n", size, starpu_cpu_worker_get_count(),
               starpu_cuda_worker_get_count());
    }

    char *buf;
    starpu_malloc_flags((void **)&buf, bytes, STARPU_MALLOC_SIMULATION_FOLDED);
    starpu_data_handle_t h;
    starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)buf, (uint32_t)bytes, 1);

    for (int p = first; p < argc && ret == 0; p++) {
        int a, b;
        if (sscanf(argv[p], "%d:%d", &a, &b) != 2 || a == b || a < 0 || b < 0 || a >= size ||
            b >= size) {
            if (me == 0) {
                fprintf(stderr, "pingpong: bad pair '%s' for %d ranks\n", argv[p], size);
            }
            ret = 2;
            break;
        }
        if (me != a && me != b) {
            continue;
        }
        double us;
        ret = exchange(h, me, a, b, iters, &us);
        if (ret == 0 && me == a) {
            printf("pair %d %d bytes %zu one_way_us %.3f%s\n", a, b, bytes, us,
                   together ? " together" : "");
            fflush(stdout);
        }
        if (together) {
            break; /* this rank's one pair */
        }
    }
    starpu_data_unregister(h);
    starpu_free_flags(buf, bytes, STARPU_MALLOC_SIMULATION_FOLDED);
    starpu_mpi_shutdown();
    return ret;
}
