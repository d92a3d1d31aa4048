#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/parity_sched.sh: a scheduler never changes a number (architecture.md §5): on one
# mesh, the no-overlap baseline serial-comm and hx-prefetch (with its graph order: gathers
# 1 or, from --prefetch-memory, 3 layers ahead, resident layers not gathered again,
# reduce-scatters deferred) give bitwise the losses, gradient norms and final parameters of
# the default policy (hx-prio): data parallel (np 2), tensor parallel (np 2) and ZeRO-3
# (np 2 and np 4), 20 steps of a 4-layer model each.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/parity_lib.sh"
PARITY_MODEL=$(echo "$PARITY_MODEL" | sed 's/--num-layers 2/--num-layers 4/')

# same NAME BASE NP FLAGS...: mpirun -np NP with FLAGS; exits 0, and its losses, gradient
# norms and final parameters equal run BASE's bitwise (BASE "" makes this run a base)
same() {
    name=$1 base=$2 np=$3
    shift 3
    # shellcheck disable=SC2086
    run hx_mpirun "$np" "$HELIX" train $PARITY_MODEL --log-json "$TMP/$name.json" \
        --save "$TMP/$name" --comm-timeout 60 "$@"
    ok "$name: mpirun -np $np $* trains" 'rc_is 0'
    [ -n "$base" ] || return 0
    "$COMPARE" "$TMP/$base" "$TMP/$name" 0 >"$TMP/cmp.txt" 2>&1
    crc=$?
    diag <"$TMP/cmp.txt"
    ok "$name: bitwise $base's losses, gradient norms and final parameters" \
        'parity_same "$base" "$name" && [ $crc -eq 0 ]'
}

plan 17
same dp2 "" 2 --ranks-per-node 2
same dp2-serial dp2 2 --ranks-per-node 2 --sched serial-comm
same tp2 "" 2 --tensor-model-parallel-size 2 --ranks-per-node 2
same tp2-serial tp2 2 --tensor-model-parallel-size 2 --ranks-per-node 2 --sched serial-comm
same zero3-np2 "" 2 --zero-stage 3 --ranks-per-node 2
same zero3-np2-serial zero3-np2 2 --zero-stage 3 --ranks-per-node 2 --sched serial-comm
same zero3-np2-prefetch zero3-np2 2 --zero-stage 3 --ranks-per-node 2 --sched hx-prefetch
same zero3-np4 "" 4 --zero-stage 3 --ranks-per-node 2
same zero3-np4-serial zero3-np4 4 --zero-stage 3 --ranks-per-node 2 --sched serial-comm
same zero3-np4-prefetch zero3-np4 4 --zero-stage 3 --ranks-per-node 2 --sched hx-prefetch \
    --prefetch-memory 800K
ok "zero3-np4-prefetch: 800K of gathered layers (4 of 200 KB) make 3 layers of look-ahead" \
    'out_has "all-gathered 3 layers ahead (4 slots, from --prefetch-memory)"'
finish
