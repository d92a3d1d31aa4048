#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/parity_grid.sh: AxoNN's 3D tensor parallelism (--tp-grid GxxGyxGz, papers.md
# §1.2-1.6) gives the serial run's losses, gradient norms and final parameters (the
# tolerance rule of tests/README.md, "Parity tolerances"): X alone (heads, MLP, vocabulary),
# Y alone (the hidden size: split norms, all-reduces over Y), Z alone (the batch, every
# parameter sharded over Z), X x Y, Y x Z, each of the first three with 2 data-parallel
# replicas, and AMSP's sharding of the replicas beside Z's (GPT-2 only); the grid's special cases are the meshes they are (2x1x1 is tp 2, 1x1x2 is
# ZeRO-3 over 2 ranks: bitwise); policies, recomputation and each of the four overlap
# optimisations turned off change no number (bitwise); bad grids are refused before any work.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/parity_lib.sh"
if [ -n "${GRID_MODEL_SED:-}" ]; then # parity_grid_llama.sh: the Llama settings
    PARITY_MODEL=$(echo "$PARITY_MODEL" | sed -e "$GRID_MODEL_SED")
fi

if [ -n "${GRID_MODEL_SED:-}" ]; then plan 28; else plan 67; fi
parity_reference
parity_check g2x1x1 2 --tp-grid 2x1x1
parity_check g1x2x1 2 --tp-grid 1x2x1
parity_check g1x1x2 2 --tp-grid 1x1x2
parity_heavy parity_check g2x2x1 4 --tp-grid 2x2x1 --ranks-per-node 2
parity_heavy parity_check g1x2x2 4 --tp-grid 1x2x2 --ranks-per-node 2
parity_heavy parity_check g2x1x1-dp2 4 --tp-grid 2x1x1 --ranks-per-node 2
parity_heavy parity_check g1x2x1-dp2 4 --tp-grid 1x2x1 --ranks-per-node 2
parity_heavy parity_check g1x1x2-dp2 4 --tp-grid 1x1x2 --ranks-per-node 2
# a policy never changes a number
parity_heavy parity_bitwise g2x2x1-serial g2x2x1 4 --tp-grid 2x2x1 --ranks-per-node 2 \
    --sched serial-comm
if [ -n "${GRID_MODEL_SED:-}" ]; then # the rest is the model's business only through these
    finish
fi

# AMSP's sharding over the data replicas beside the grid's own over Z: ZeRO-2 across the 2
# replicas of a 1x2x1 grid; a 1x1x2 grid's optimizer states over all 4 ranks (s_p = s_g 2)
parity_heavy parity_check g1x2x1-dp2-zero2 4 --tp-grid 1x2x1 --ranks-per-node 2 --zero-stage 2
parity_heavy parity_check g1x1x2-dp2-os4 4 --tp-grid 1x1x2 --ranks-per-node 2 --shard-optim 4

# the grid's special cases are the meshes they name: the same graphs, bitwise
parity_bitwise tp2 "" 2 --tensor-model-parallel-size 2
parity_bitwise g2x1x1-is-tp2 tp2 2 --tp-grid 2x1x1
parity_bitwise zero3 "" 2 --zero-stage 3
parity_bitwise g1x1x2-is-zero3 zero3 2 --tp-grid 1x1x2

# nor does another policy, or turning an optimisation off (only edges)
parity_heavy parity_bitwise g1x2x2-prefetch g1x2x2 4 --tp-grid 1x2x2 --ranks-per-node 2 \
    --sched hx-prefetch
# the parameter all-gathers a --no-overlap run's start-up line counts
# shellcheck disable=SC2317  # called from ok's checks
gathers() { sed -n 's/.*; \([0-9]*\) parameter all-gathers$/\1/p' "$TMP/$1.out"; }
# recomputation (AxoNN trains with activation checkpointing) reruns the same tasks: bitwise
parity_heavy parity_bitwise g1x2x2-full g1x2x2 4 --tp-grid 1x2x2 --ranks-per-node 2 \
    --recompute-activations full
parity_heavy parity_bitwise g1x2x2-selective g1x2x2 4 --tp-grid 1x2x2 --ranks-per-node 2 \
    --recompute-activations selective
# shellcheck disable=SC2016  # ok evals the checks
for o in dgrad-ar defer-rs prefetch cache all; do
    parity_heavy parity_bitwise "g1x2x2-no-$o" g1x2x2 4 --tp-grid 1x2x2 --ranks-per-node 2 \
        --no-overlap "$o"
    cp "$OUT" "$TMP/g1x2x2-no-$o.out" 2>/dev/null
    if [ "${HX_SANITIZED:-0}" = 1 ]; then
        ok "--no-overlap $o blocks # SKIP sanitizer build: run in the -Werror build" true
    elif [ "$o" = cache ]; then # O4 off adds gathers, not edges: the backward gathers
        # its top two layers again instead of finding them in their slots
        ok "--no-overlap cache gathers more than dgrad-ar (which keeps O4)" \
            '[ "$(gathers g1x2x2-no-cache)" -gt "$(gathers g1x2x2-no-dgrad-ar)" ]'
    else
        ok "--no-overlap $o blocks: control edges in the step" \
            'out_has "no-overlap $o: [1-9][0-9]* control edges"'
    fi
done
parity_heavy parity_bitwise g1x2x2-prefetch-no-all g1x2x2 4 --tp-grid 1x2x2 --ranks-per-node 2 \
    --sched hx-prefetch --no-overlap all

# refused before any work: one error line naming the problem, exit 2
# shellcheck disable=SC2086  # the model's flags are words
run hx_mpirun 2 "$HELIX" train $PARITY_MODEL --tp-grid 2x2x1
ok "grid of 4 ranks on 2: exit 2 naming the ranks" 'rc_is 2 && err_has "launch a multiple of 4"'
# shellcheck disable=SC2086
run hx_mpirun 2 "$HELIX" train $PARITY_MODEL --tp-grid 2x1x1 --tensor-model-parallel-size 2 \
    --sequence-parallel
ok "grid with --sequence-parallel: exit 2 naming it" \
    'rc_is 2 && err_has "drop --sequence-parallel"'
# shellcheck disable=SC2086
run "$HELIX" train $PARITY_MODEL --tp-grid 2x2
ok "grid of two numbers: exit 2 showing the form" 'rc_is 2 && err_has "write GxxGyxGz"'
# shellcheck disable=SC2086
run "$HELIX" train $PARITY_MODEL --no-overlap dgrad-ar,nonsense
ok "--no-overlap with an unknown item: exit 2 naming it" \
    'rc_is 2 && err_has "nonsense" && err_has "is not an optimisation"'
finish
