#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/parity_hxstrand.sh: hx-strand executing a strand plan in a folded W pipeline
# (pp 2, a 12-layer model: chunks of 3 layers, so SI blocks hold (forward layer, backward
# layer) pairs the plan applies to) gives the serial run's numbers (the tolerance rule of
# tests/README.md), and bitwise those of the same mesh without strands; every pair of the
# W's waves is planned, also with tp 2 (4 ranks); the same on pp 2 1F1B, where the plan is
# not applied (a plain pipeline's blocks would wait on each other across stages,
# graphs/schedule.c).
# The plan comes from a synthetic overlap table (deterministic, nothing timed).
PARITY_MODEL="--num-layers 12 --hidden-size 64 --num-attention-heads 4 --seq-length 32
 --micro-batch-size 2 --global-batch-size 16 --train-iters 20 --lr 2e-3 --lr-warmup-iters 5
 --eval-interval 10 --eval-iters 2 --sample-tokens 16 --log-interval 5 --seed 7
 --comm-timeout 60"
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/parity_lib.sh"
plan 24
# The strands line's accounting, "in P ... layer pairs ...: K of them planned[; U in blocks
# ...]", into PAIRS PLANNED UNCOUPLED (x: no such line).  Every pair of these runs is either
# planned or in a block a plan may not couple (the ops of every layer match the plan's).
pair_counts() {
    set -- $(python3 -c 'import re,sys
m = re.search(r"in (\d+) \(backward, forward\) layer pairs.*?: (\d+) of them planned(?:; (\d+) in blocks)?", open(sys.argv[1]).read())
print(*(m.groups("0") if m else ("x", "x", "x")))' "$OUT")
    PAIRS=$1 PLANNED=$2 UNCOUPLED=$3
}
"$HX_BUILDDIR/tests/schedulers/synth_overlap" "$TMP/overlap.json" 12 64 4 32 2 256 1 0 1 16 4 \
    overlap >"$TMP/gen.txt" 2>&1 &&
    "$HELIX" plan-strands --profile "$TMP/overlap.json" --out "$TMP/plan.json" >"$TMP/plan.txt" 2>&1
ok "a strand plan of layer 4 from a synthetic overlap table" '[ $? -eq 0 ] && [ -s "$TMP/plan.json" ]'
parity_reference
parity_check fold2 2 --pipeline-model-parallel-size 2 --pipeline-fold
parity_check fold2-hxstrand 2 --pipeline-model-parallel-size 2 --pipeline-fold --strands \
    --strand-plan "$TMP/plan.json" --sched hx-strand
ok "fold2: the plan was applied to some layer pairs" \
    'out_has "strand plan .*: [1-9][0-9]* of them planned"'
ok "fold2: hx-strand with the plan and the plain W agree bitwise" 'parity_same fold2 fold2-hxstrand'
pair_counts
ok "fold2: the W's waves pair a chunk with its mirror: all $PAIRS pairs planned ($PLANNED), none uncoupled ($UNCOUPLED)" \
    '[ "$PAIRS" != x ] && [ "$PAIRS" -gt 0 ] && [ "$PLANNED" -eq "$PAIRS" ] && [ "$UNCOUPLED" -eq 0 ]'
# tp 2: the layer's lists hold the all-reduces, so its own plan (M: 8 micro-batches of 2)
"$HX_BUILDDIR/tests/schedulers/synth_overlap" "$TMP/overlap_tp2.json" 12 64 4 32 2 256 2 0 1 \
    8 4 overlap >"$TMP/gen2.txt" 2>&1 &&
    "$HELIX" plan-strands --profile "$TMP/overlap_tp2.json" --out "$TMP/plan_tp2.json" \
        >"$TMP/plan2.txt" 2>&1 || diag "plan for tp 2 failed: $(cat "$TMP/gen2.txt" "$TMP/plan2.txt")"
parity_check fold2xtp2-hxstrand 4 --pipeline-model-parallel-size 2 --pipeline-fold --strands \
    --tensor-model-parallel-size 2 --ranks-per-node 2 --strand-plan "$TMP/plan_tp2.json" \
    --sched hx-strand
pair_counts
ok "fold2 x tp2: all $PAIRS pairs planned ($PLANNED), the strands' tp channels under the barriers" \
    '[ "$PAIRS" != x ] && [ "$PAIRS" -gt 0 ] && [ "$PLANNED" -eq "$PAIRS" ]'
parity_check pp2 2 --pipeline-model-parallel-size 2
parity_check pp2-hxstrand 2 --pipeline-model-parallel-size 2 --strands \
    --strand-plan "$TMP/plan.json" --sched hx-strand
ok "pp2: hx-strand and plain 1F1B agree bitwise" 'parity_same pp2 pp2-hxstrand'
pair_counts
ok "pp2: 1F1B's $PAIRS pairs all wait across stages: none planned ($PLANNED), all reported ($UNCOUPLED)" \
    '[ "$PAIRS" != x ] && [ "$PAIRS" -gt 0 ] && [ "$PLANNED" -eq 0 ] && [ "$UNCOUPLED" -eq "$PAIRS" ]'
finish
