#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/parity_zero3.sh: ZeRO-3 (parameters, gradients and optimizer states sharded over
# dp; parameters all-gathered a layer ahead of use) gives the serial run's losses and
# parameters (the tolerance rule of tests/README.md, "Parity tolerances").
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/parity_lib.sh"
plan 5
parity_reference
parity_check zero3 4 --zero-stage 3 --ranks-per-node 2
finish
