#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/parity_strands.sh: two strands (--strands, DHelix): a backward and the other
# strand's next forward emitted interleaved layer by layer.  Alone, in a 1F1B pipeline, in a
# folded W pipeline, and with tensor parallelism: the serial run's losses, gradient norms and
# final parameters (the tolerance rule of tests/README.md); and strands change no number: a
# pipeline with and without them gives bitwise the same losses and gradient norms.  An 8-layer
# model (folding cuts it into 2p chunks; 1F1B stages of 4 layers interleave whole layer pairs,
# which with tp needs one tp channel per strand, else a backward's collective waits behind the
# other strand's forward and the stages wait on each other).
PARITY_MODEL="--num-layers 8 --hidden-size 64 --num-attention-heads 4 --seq-length 32
 --micro-batch-size 2 --global-batch-size 16 --train-iters 20 --lr 2e-3 --lr-warmup-iters 5
 --eval-interval 10 --eval-iters 2 --sample-tokens 16 --log-interval 5 --seed 7"
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/parity_lib.sh"
plan 24
parity_reference
parity_check strands 1 --strands
parity_check pp2 2 --pipeline-model-parallel-size 2
parity_check pp2-strands 2 --pipeline-model-parallel-size 2 --strands
ok "pp2: strands and plain 1F1B agree bitwise" 'parity_same pp2 pp2-strands'
parity_heavy parity_check pp2xtp2-strands 4 --pipeline-model-parallel-size 2 --strands \
    --tensor-model-parallel-size 2 --ranks-per-node 2 --comm-timeout 60
parity_check fold2-strands 2 --pipeline-model-parallel-size 2 --pipeline-fold --strands
parity_heavy parity_check fold2xtp2-strands 4 --pipeline-model-parallel-size 2 --pipeline-fold --strands \
    --tensor-model-parallel-size 2 --ranks-per-node 2
parity_heavy parity_check fold4-strands 4 --pipeline-model-parallel-size 4 --pipeline-fold --strands \
    --ranks-per-node 2
finish
