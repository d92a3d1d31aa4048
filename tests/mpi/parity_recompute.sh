#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/parity_recompute.sh: activation recomputation changes no number: with
# --recompute-activations selective and full, the losses, gradient norms and final parameters
# are bitwise those of the same mesh without it (serial, dp 2, tp 2 with sequence
# parallelism, ZeRO-3 np 2 under hx-prefetch), 20 steps of a 4-layer model (bitwise, no
# tolerance: tests/README.md); a bad mode and an unsupported combination are refused before
# any work.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/parity_lib.sh"
PARITY_MODEL=$(echo "$PARITY_MODEL" | sed 's/--num-layers 2/--num-layers 4/')

plan 18
parity_bitwise serial "" 1
parity_bitwise serial-sel serial 1 --recompute-activations selective
parity_bitwise serial-full serial 1 --recompute-activations full
parity_heavy parity_bitwise dp2 "" 2 --ranks-per-node 2
parity_heavy parity_bitwise dp2-full dp2 2 --ranks-per-node 2 --recompute-activations full
parity_bitwise tp2sp "" 2 --tensor-model-parallel-size 2 --sequence-parallel --ranks-per-node 2
parity_bitwise tp2sp-sel tp2sp 2 --tensor-model-parallel-size 2 --sequence-parallel \
    --ranks-per-node 2 \
    --recompute-activations selective
parity_bitwise tp2sp-full tp2sp 2 --tensor-model-parallel-size 2 --sequence-parallel \
    --ranks-per-node 2 \
    --recompute-activations full
parity_bitwise zero3 "" 2 --zero-stage 3 --ranks-per-node 2
parity_bitwise zero3-full zero3 2 --zero-stage 3 --ranks-per-node 2 --recompute-activations full \
    --sched hx-prefetch
run "$HELIX" train --preset tiny --train-iters 1 --recompute-activations some
ok "--recompute-activations some: exit 2, named, before any step" \
    'rc_is 2 && err_has "recompute-activations .some. is not a mode" && ! out_has "^step"'
run "$HELIX" train --preset tiny --train-iters 1 --recompute-activations full --strands
ok "--recompute-activations with --strands: exit 2, named" \
    'rc_is 2 && err_has "not supported" && ! out_has "^step"'
finish
