#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/parity_amsp.sh: AMSP factor combinations that are no ZeRO preset, on a
# 4-rank job of two emulated nodes (2 ranks each), give the serial run's losses and
# parameters (within the tolerance rule of tests/README.md, "Parity tolerances"):
#   s_p 1, s_g 2, s_os 2:  gradients and optimizer states split inside a node (every
#                          micro-batch's gradients all-reduced there, owners keep theirs)
#   s_p 2, s_g 2, s_os 4:  parameters split inside a node, optimizer states over both
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/parity_lib.sh"
plan 8
parity_reference
parity_check amsp-1-2-2 4 --ranks-per-node 2 --shard-params 1 --shard-grads 2 --shard-optim 2
parity_check amsp-2-2-4 4 --ranks-per-node 2 --shard-params 2x1 --shard-grads 2 \
    --shard-optim 2x2
finish
