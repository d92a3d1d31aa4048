#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/parity_dp.sh: data parallelism over 2 and 4 ranks gives the serial run's losses
# and parameters (the tolerance rule of tests/README.md, "Parity tolerances"); bucketed
# overlap and the serialized baseline give bitwise the same losses (the same buckets, only
# emitted at other points of the graph).
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/parity_lib.sh"
plan 12
parity_reference
parity_check dp2 2 --ddp-bucket-size 20000
parity_check dp4 4 --ranks-per-node 2 --ddp-bucket-size 20000
parity_check dp2-serialized 2 --ddp-bucket-size 20000 --no-overlap-grad-reduce
ok "dp2: overlapped and serialized gradient reduction agree bitwise" \
   'parity_same dp2 dp2-serialized'
finish
