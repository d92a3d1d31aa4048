#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/parity_pp.sh: pipeline parallelism over 2 stages (one layer each), alone and with
# data or tensor parallelism, 1F1B and GPipe: the serial run's losses, gradient norms and final
# parameters (the tolerance rule of tests/README.md).  The schedules only reorder micro-batches
# whose backwards keep their order, so 1F1B and GPipe agree bitwise.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/parity_lib.sh"
plan 15
parity_reference
parity_check pp2 2 --pipeline-model-parallel-size 2
parity_check pp2-gpipe 2 --pipeline-model-parallel-size 2 --pipeline-schedule gpipe
ok "pp2: 1F1B and GPipe agree bitwise" \
   'parity_same pp2 pp2-gpipe'
parity_check pp2xdp2-zero1 4 --pipeline-model-parallel-size 2 --ranks-per-node 2 \
    --zero-stage 1 --ddp-bucket-size 20000
parity_check pp2xtp2-sp 4 --pipeline-model-parallel-size 2 --tensor-model-parallel-size 2 \
    --sequence-parallel --ranks-per-node 2
finish
