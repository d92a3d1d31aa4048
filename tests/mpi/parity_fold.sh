#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/parity_fold.sh: model folding (DHelix's W-shaped pipeline, --pipeline-fold): stage
# s holds layer chunks s and 2p-1-s, embedding and head both on stage 0.  Over 2 and 4 stages,
# and with tensor (and sequence) or data parallelism: the serial run's losses, gradient norms
# and final parameters (the tolerance rule of tests/README.md).  An 8-layer model: 2p chunks of
# 1-4 layers.
PARITY_MODEL="--num-layers 8 --hidden-size 64 --num-attention-heads 4 --seq-length 32
 --micro-batch-size 2 --global-batch-size 16 --train-iters 20 --lr 2e-3 --lr-warmup-iters 5
 --eval-interval 10 --eval-iters 2 --sample-tokens 16 --log-interval 5 --seed 7"
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/parity_lib.sh"
plan 14
parity_reference
parity_check fold2 2 --pipeline-model-parallel-size 2 --pipeline-fold
parity_check fold4 4 --pipeline-model-parallel-size 4 --pipeline-fold --ranks-per-node 2
parity_heavy parity_check fold2xtp2-sp 4 --pipeline-model-parallel-size 2 --pipeline-fold \
    --tensor-model-parallel-size 2 --sequence-parallel --ranks-per-node 2
parity_heavy parity_check fold2xdp2 4 --pipeline-model-parallel-size 2 --pipeline-fold --ranks-per-node 2 \
    --ddp-bucket-size 20000
finish
