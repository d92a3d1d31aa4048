/* SPDX-License-Identifier: MIT */
/* examples/mpi_train.c: a distributed training loop with the public API, under mpirun.
 * It shows
 *   1- the lifecycle: MPI first (MPI_THREAD_MULTIPLE), then StarPU through StarPU-MPI, then
 *      one communicator per group of the mesh; and the reverse at the end;
 *   2- a mesh (include/helix/mesh.h): the world as dp x tp, checked before any work;
 *   3- every rank building the same step graph for its own shards (hx_gpt_build_parallel),
 *      loading the same global batch (each data-parallel rank takes its micro-batches), and
 *      getting the same loss back, since the loss and the gradients are reduced in the graph.
 * Run: mpirun -np 4 ./mpi_train [--tp N] [--zero-stage S]   (as root add
 *      --allow-run-as-root; on few cores --oversubscribe -x STARPU_NCPU=1)
 * Rank 0 prints the loss every 5 steps; every rank checks that all ranks saw the same losses
 * and exits 1 otherwise, or if the loss did not go down. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/helix.h"

#define STEPS 20

static int parse(int argc, char **argv, int *tp, int *zero)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--tp") == 0 && i + 1 < argc) {
            *tp = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--zero-stage") == 0 && i + 1 < argc) {
            *zero = atoi(argv[++i]);
        } else {
            fprintf(stderr, "mpi_train: unknown argument '%s'; use --tp N, --zero-stage S\n",
                    argv[i]);
            return 2;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    int tp = 1, zero = 0, ret = 0;
    if (hx_mpi_init(&argc, &argv) != HX_OK) {
        return 1;
    }
    int rank = hx_mpi_world_rank(), size = hx_mpi_world_size();
    struct hx_gpt_config c = { .vocab_size = 256, .num_layers = 2, .num_heads = 4,
                               .hidden_size = 64, .seq_len = 32, .micro_batch_size = 2,
                               .num_micro_batches = 8 };
    /* ---- 2. the mesh: every rank computes the same one, rank 0 reports a bad one ---- */
    struct hx_mesh mesh;
    struct hx_mesh_request req = { .world_size = size, .world_rank = rank, .tp = tp,
                                   .ranks_per_node = hx_mpi_local_size(),
                                   .num_heads = c.num_heads, .hidden_size = c.hidden_size,
                                   .vocab_size = c.vocab_size, .num_layers = c.num_layers,
                                   .seq_len = c.seq_len,
                                   .micro_batches = c.num_micro_batches };
    if ((ret = parse(argc, argv, &tp, &zero)) == 0) {
        req.tp = tp;
        req.zero_stage = zero;
        if (req.ranks_per_node <= 0 || size % req.ranks_per_node != 0) {
            req.ranks_per_node = size;
        }
        ret = hx_mesh_init(&mesh, &req, rank != 0) == HX_OK ? 0 : 2;
    }
    if (ret != 0) {
        hx_mpi_finalize();
        return ret;
    }
    /* ---- 3. the same graph on every rank, for its shards ---- */
    struct hx_optim_config o;
    hx_optim_config_default(&o, STEPS);
    o.lr = 2e-3f;
    struct hx_parallel_config par = { .mesh = &mesh };
    hx_gpt_t m;
    if (hx_gpt_build_parallel(&m, &c, &o, &par) != HX_OK) {
        hx_mpi_finalize();
        return 2;
    }
    /* ---- 1. StarPU through StarPU-MPI, then the communicators of the mesh ---- */
    struct hx_runtime_opts ro;
    hx_runtime_opts_init(&ro);
    ro.mpi = 1;
    struct hx_comm_opts co = { .timeout = 60 };
    if (hx_runtime_init(&ro) != HX_OK || hx_comm_open(&mesh, &co) != HX_OK ||
        hx_gpt_realize(m) != HX_OK) {
        hx_mpi_abort(1);
    }
    hx_gpt_init_params(m, 42); /* every rank draws the whole model and keeps its shard */
    struct hx_dataset data;
    size_t ntok = (size_t)c.seq_len * c.micro_batch_size * c.num_micro_batches;
    int32_t *tok = malloc(ntok * sizeof *tok), *tgt = malloc(ntok * sizeof *tgt);
    double first = NAN, last = NAN, lo = INFINITY, hi = -INFINITY;
    ret = tok && tgt ? hx_data_load_default(&data) : HX_ENOMEM;
    for (int s = 0; s < STEPS && ret == HX_OK; s++) {
        struct hx_step_result r;
        /* the same global batch everywhere; the model takes this rank's micro-batches */
        hx_data_next_batch(&data, c.micro_batch_size * c.num_micro_batches, c.seq_len, tok,
                           tgt);
        ret = hx_gpt_set_batch(m, tok, tgt);
        ret = ret == HX_OK ? hx_gpt_step(m, s, &r) : ret;
        if (ret == HX_OK) {
            first = s == 0 ? r.loss : first;
            last = r.loss;
            if (rank == 0 && (s + 1) % 5 == 0) {
                printf("step %2d loss %.6f grad norm %.4f\n", s + 1, r.loss, r.grad_norm);
            }
        }
    }
    /* every rank must hold the same losses: compare the extremes over the world */
    lo = hi = last;
    hx_comm_host_allreduce(HX_GROUP_WORLD, &lo, 1, HX_F64, HX_MAX);
    hi = -hi;
    hx_comm_host_allreduce(HX_GROUP_WORLD, &hi, 1, HX_F64, HX_MAX);
    int agree = ret == HX_OK && lo == -hi;
    if (rank == 0) {
        char desc[256];
        hx_mesh_describe(&mesh, desc, sizeof desc);
        printf("%s\nloss %.4f -> %.4f; the %d ranks %s\n", desc, first, last, size,
               agree ? "agree bitwise" : "DISAGREE");
    }
    free(tok);
    free(tgt);
    if (ret == HX_OK) {
        hx_data_free(&data);
    }
    hx_comm_close();
    hx_gpt_destroy(m);
    hx_runtime_shutdown();
    hx_mpi_finalize();
    return agree && last < first ? 0 : 1;
}
