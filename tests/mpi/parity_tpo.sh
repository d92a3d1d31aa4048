#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/parity_tpo.sh: Flux's tile-level overlap (--tp-comm-overlap: AG+GEMM and GEMM+RS
# as ring shifts of whole row tiles, helix/tp_overlap.h) gives the serial run's losses and
# parameters under the tolerance rule of tests/README.md ("Parity tolerances") on every mesh
# with tensor parallelism, and bitwise the same run under every policy and on both host
# backends: the owner sums the partials in group-rank order, so neither arrival order nor the
# backend that moved the bytes shows in a number.
# The model of parity_smpi.sh: 4 layers (--pipeline-fold with pp 2 cuts them into 2 x 2
# chunks), micro-batches of 2 sequences, so each tp 2 rank owns one tile of one sequence per
# micro-batch.  Its envelope holds under every OpenBLAS kernel tried; one with micro-batches
# of 4 left tp 2 at 0.81 of the tolerance under OPENBLAS_CORETYPE=Sandybridge (the envelope's
# two orders happened to agree closely there).  More ranks and several tiles per rank:
# tests/mpi/collectives.c (shifts at 1-4 ranks) and tests/graphs/tp_overlap.c (3 ranks, 2
# groups of tiles).
# shellcheck disable=SC2016,SC2034  # ok evals its single-quoted checks; parity_lib.sh reads PARITY_MODEL
PARITY_MODEL="--num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 32
 --micro-batch-size 2 --global-batch-size 16 --train-iters 20 --lr 2e-3 --lr-warmup-iters 5
 --eval-interval 10 --eval-iters 2 --sample-tokens 16 --log-interval 5 --seed 7"
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/parity_lib.sh"
plan 20
TPO="--tensor-model-parallel-size 2 --sequence-parallel --tp-comm-overlap"
parity_reference
# shellcheck disable=SC2086
{
    parity_check tpo-tp2 2 $TPO
    parity_heavy parity_bitwise tpo-tp2-eager tpo-tp2 2 $TPO --sched eager
    parity_heavy parity_bitwise tpo-tp2-lws tpo-tp2 2 $TPO --sched lws
    parity_bitwise tpo-tp2-smpi tpo-tp2 2 $TPO --comm-backend starpu-mpi
    parity_heavy parity_check tpo-dp2xtp2 4 $TPO --ranks-per-node 2
    parity_heavy parity_check tpo-fold2xtp2-strands 4 $TPO --pipeline-model-parallel-size 2 \
        --pipeline-fold --strands --ranks-per-node 2 --sched hx-wavelet
    parity_check tpo-tp2-recompute 2 $TPO --recompute-activations full
}
finish
