#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/parity_sched.sh: a scheduler never changes a number (architecture.md §5): on one
# mesh, the no-overlap baseline serial-comm and hx-prefetch (with its graph order: gathers
# 1 or, from --prefetch-memory, 3 layers ahead, resident layers not gathered again,
# reduce-scatters deferred) give bitwise the losses, gradient norms and final parameters of
# the default policy (hx-prio): data parallel (np 2), tensor parallel (np 2) and ZeRO-3
# (np 2 and np 4), 20 steps of a 4-layer model each.  Bitwise, no tolerance (tests/README.md).
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/parity_lib.sh"
PARITY_MODEL=$(echo "$PARITY_MODEL" | sed 's/--num-layers 2/--num-layers 4/')

plan 17
parity_bitwise dp2 "" 2 --ranks-per-node 2
parity_bitwise dp2-serial dp2 2 --ranks-per-node 2 --sched serial-comm
parity_bitwise tp2 "" 2 --tensor-model-parallel-size 2 --ranks-per-node 2
parity_bitwise tp2-serial tp2 2 --tensor-model-parallel-size 2 --ranks-per-node 2 \
    --sched serial-comm
parity_bitwise zero3-np2 "" 2 --zero-stage 3 --ranks-per-node 2
parity_bitwise zero3-np2-serial zero3-np2 2 --zero-stage 3 --ranks-per-node 2 --sched serial-comm
parity_bitwise zero3-np2-prefetch zero3-np2 2 --zero-stage 3 --ranks-per-node 2 --sched hx-prefetch
parity_heavy parity_bitwise zero3-np4 "" 4 --zero-stage 3 --ranks-per-node 2
parity_heavy parity_bitwise zero3-np4-serial zero3-np4 4 --zero-stage 3 --ranks-per-node 2 --sched serial-comm
parity_heavy parity_bitwise zero3-np4-prefetch zero3-np4 4 --zero-stage 3 --ranks-per-node 2 \
    --sched hx-prefetch \
    --prefetch-memory 800K
LOOKAHEAD="zero3-np4-prefetch: 800K of gathered layers (4 of 200 KB) make 3 layers of look-ahead"
if [ "${HX_SANITIZED:-0}" = 1 ]; then
    ok "$LOOKAHEAD # SKIP sanitizer build: run in the -Werror build" true
else
    ok "$LOOKAHEAD" 'out_has "all-gathered 3 layers ahead (4 slots, from --prefetch-memory)"'
fi
finish
