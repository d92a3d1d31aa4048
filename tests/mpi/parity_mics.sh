#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/parity_mics.sh: MiCS (parameters, gradients and optimizer states sharded inside
# each of two emulated nodes of 2 ranks, replicated across them) gives the serial run's
# losses and parameters (the tolerance rule of tests/README.md, "Parity tolerances").
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/parity_lib.sh"
plan 5
parity_reference
parity_check mics 4 --ranks-per-node 2 --mics
finish
