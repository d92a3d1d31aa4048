#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/strands.sh: DHelix's two strands end to end on one rank with 2 workers.  A
# (synthetic, deterministic) overlap table -> `helix plan-strands` -> `helix train --strands
# --strand-plan P --sched hx-strand --trace T`:
#  - every (forward layer, backward layer) pair of the SI blocks gets the plan;
#  - the executed order (task records of the trace) keeps the plan's barriers: in every
#    block, no task of step s starts before every task of step s-1 ended;
#  - the losses and gradient norms are bitwise those of plain training (hx-prio, no strands)
#    and of the Wavelet+ baseline (--strands --sched hx-wavelet, no plan);
#  - a plan without --strands, and a missing plan, are refused before any work.
set -u
. "$(dirname "$0")/lib.sh"
plan 11
GEN=$HX_BUILDDIR/tests/schedulers/synth_overlap
MODEL="--num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 32
 --micro-batch-size 2"
TRAIN="$MODEL --global-batch-size 16 --train-iters 4 --eval-interval 0 --eval-iters 1
 --sample-tokens 0 --log-interval 1 --seed 7 --workers 2"
"$GEN" "$TMP/overlap.json" 4 64 4 32 2 256 1 0 1 8 2 overlap >"$TMP/gen.txt" 2>&1
ok "synthetic overlap table of layer 2" '[ $? -eq 0 ] && [ -s "$TMP/overlap.json" ]'
run "$HELIX" plan-strands --profile "$TMP/overlap.json" --out "$TMP/plan.json"
ok "plan-strands writes a plan" 'rc_is 0 && [ -s "$TMP/plan.json" ]'
# shellcheck disable=SC2086  # the flag lists are words
run "$HELIX" train $TRAIN --log-json "$TMP/plain.json"
ok "plain training (hx-prio, no strands)" 'rc_is 0'
# shellcheck disable=SC2086
run "$HELIX" train $TRAIN --strands --sched hx-wavelet --log-json "$TMP/wavelet.json"
ok "Wavelet+ baseline (--strands --sched hx-wavelet)" 'rc_is 0'
# shellcheck disable=SC2086
run "$HELIX" train $TRAIN --strands --strand-plan "$TMP/plan.json" --sched hx-strand \
    --log-json "$TMP/strand.json" --trace "$TMP/trace.json"
ok "hx-strand with the plan" 'rc_is 0'
ok "... every layer pair of the SI blocks planned" \
    'out_has "layer pairs; strand plan .*: \([0-9]*\) of them planned" &&
     python3 -c "import re,sys; m=re.search(r\"in (\\d+) \\(backward, forward\\) layer pairs.*: (\\d+) of them planned\", open(sys.argv[1]).read()); sys.exit(not m or m.group(1)!=m.group(2) or m.group(1)==\"0\")" "$OUT"'
same() {
    python3 -c "import json,sys; l=lambda p:[(r['loss'],r['grad_norm']) for r in map(json.loads,open(p)) if 'loss' in r]; sys.exit(not l(sys.argv[1]) or l(sys.argv[1])!=l(sys.argv[2]))" "$TMP/$1.json" "$TMP/$2.json"
}
ok "hx-strand's losses and gradient norms are bitwise plain training's" 'same plain strand'
ok "Wavelet+'s too" 'same plain wavelet'
python3 - "$TMP/trace.json" >"$TMP/check.txt" 2>&1 <<'PY'
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "X"]
runs = {}  # node -> its events in time order: the k-th is training step k's
for e in ev:
    if e["args"]["block"] >= 0:
        runs.setdefault(e["args"]["node"], []).append(e)
steps = {}  # (training step, block) -> segment -> spans
for node, es in runs.items():
    for k, e in enumerate(sorted(es, key=lambda e: e["ts"])):
        a = e["args"]
        steps.setdefault((k, a["block"]), {}).setdefault(a["segment"], []).append(
            (e["ts"], e["ts"] + e["dur"]))
assert steps, "no planned task in the trace"
checked = 0
for b, segs in steps.items():
    for s in sorted(segs):
        if s - 1 in segs:
            end_prev = max(t1 for t0, t1 in segs[s - 1])
            start = min(t0 for t0, t1 in segs[s])
            assert start >= end_prev - 1e-3, "training step %d block %d: plan step %d starts " \
                "at %.3f before step %d ends at %.3f" % (b[0], b[1], s, start, s - 1, end_prev)
            checked += 1
print("%d planned blocks over the steps, %d barriers held" % (len(steps), checked))
PY
rc=$?
ok "the executed order keeps every barrier ($(tail -1 "$TMP/check.txt"))" "[ $rc -eq 0 ]"
# shellcheck disable=SC2086
run "$HELIX" train $TRAIN --strand-plan "$TMP/plan.json"
ok "--strand-plan without --strands: exit 2, named" \
    'rc_is 2 && err_has "add --strands" && ! out_has "^step"'
# shellcheck disable=SC2086
run "$HELIX" train $TRAIN --strands --strand-plan "$TMP/none.json"
ok "a missing plan: exit 2, named" 'rc_is 2 && err_has "none.json" && ! out_has "^step"'
finish
