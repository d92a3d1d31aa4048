#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/parity_smpi.sh: the StarPU-MPI backend (--comm-backend starpu-mpi: collectives as
# StarPU-MPI transfers and reduction tasks, runtime/comm_smpi.c) gives the serial run's
# losses and parameters under the tolerance rule of tests/README.md ("Parity tolerances") on
# every kind of mesh, and bitwise the same losses whatever StarPU policy runs it (the
# algorithm, not arrival order, fixes every sum).
# 4 layers: --pipeline-fold with pp 2 cuts them into 2 x 2 chunks.
# shellcheck disable=SC2016,SC2034  # ok evals its single-quoted checks; parity_lib.sh reads PARITY_MODEL
PARITY_MODEL="--num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 32
 --micro-batch-size 2 --global-batch-size 16 --train-iters 20 --lr 2e-3 --lr-warmup-iters 5
 --eval-interval 10 --eval-iters 2 --sample-tokens 16 --log-interval 5 --seed 7"
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/parity_lib.sh"
plan 24
SMPI="--comm-backend starpu-mpi"
parity_reference
# shellcheck disable=SC2086
{
    parity_check smpi-dp2 2 $SMPI
    parity_bitwise smpi-dp2-eager smpi-dp2 2 $SMPI --sched eager
    parity_bitwise smpi-dp2-lws smpi-dp2 2 $SMPI --sched lws
    parity_check smpi-tp2-sp 2 $SMPI --tensor-model-parallel-size 2 --sequence-parallel
    parity_heavy parity_check smpi-dp2xtp2 4 $SMPI --tensor-model-parallel-size 2 --ranks-per-node 2
    parity_heavy parity_check smpi-zero3 4 $SMPI --zero-stage 3 --ranks-per-node 2
    parity_check smpi-pp2 2 $SMPI --pipeline-model-parallel-size 2
    parity_heavy parity_check smpi-fold2xtp2-strands 4 $SMPI --pipeline-model-parallel-size 2 \
        --pipeline-fold --strands --tensor-model-parallel-size 2 --ranks-per-node 2 \
        --sched hx-wavelet
}
finish
