#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/parity_tp.sh: Megatron tensor parallelism (heads, MLP and vocabulary split over
# tp), with and without sequence parallelism, and combined with data parallelism, gives the
# serial run's losses and parameters (the tolerance rule of tests/README.md, "Parity
# tolerances").
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/parity_lib.sh"
plan 11
parity_reference
parity_check tp2 2 --tensor-model-parallel-size 2
parity_check tp2-sp 2 --tensor-model-parallel-size 2 --sequence-parallel
parity_check dp2xtp2 4 --tensor-model-parallel-size 2 --ranks-per-node 2
finish
