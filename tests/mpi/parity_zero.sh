#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/parity_zero.sh: ZeRO-1 (optimizer states sharded over dp) and ZeRO-2 (and
# gradients) give the serial run's losses and parameters (the tolerance rule of
# tests/README.md; ZeRO-3: parity_zero3.sh).
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/parity_lib.sh"
plan 8
parity_reference
parity_check zero1 2 --zero-stage 1
parity_check zero2 4 --zero-stage 2 --ranks-per-node 2 --ddp-bucket-size 20000
finish
