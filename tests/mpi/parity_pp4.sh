#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/parity_pp4.sh: four pipeline stages (a 4-layer model, one layer per stage), 1F1B
# and GPipe, against the serial run of the same model (the tolerance rule of
# tests/README.md), and the two schedules bitwise equal.  Learning rate 1e-3: at 2e-3 this
# 4-layer model's gradient norm spikes at step 11 (1.9 -> 5.3), and that step amplifies the
# rounding differences of the stage boundaries (a plain residual add, then the next stage's
# LayerNorm, where the serial run fuses them) to 1e-5 relative; the rule's envelope grows
# with it (measured there: at most 0.04 of the tolerance, on three OpenBLAS kernels), but the
# calmer trajectory keeps this test's differences near rounding (gradient norm ~5e-8).
PARITY_MODEL="--num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 32
 --micro-batch-size 2 --global-batch-size 16 --train-iters 20 --lr 1e-3 --lr-warmup-iters 5
 --eval-interval 10 --eval-iters 2 --sample-tokens 16 --log-interval 5 --seed 7"
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/parity_lib.sh"
plan 9
parity_reference
parity_check pp4 4 --pipeline-model-parallel-size 4 --ranks-per-node 2
parity_check pp4-gpipe 4 --pipeline-model-parallel-size 4 --ranks-per-node 2 \
    --pipeline-schedule gpipe
ok "pp4: 1F1B and GPipe agree bitwise" \
   'parity_same pp4 pp4-gpipe'
finish
