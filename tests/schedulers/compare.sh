#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/schedulers/compare.sh: `helix compare` (tools/compare.c) on helix's and plug-in
# policies (tests/schedulers/plugins/test_policy.c, built by plugin_lib.sh):
#   verdicts  hx-prio, test-fifo, a policy that loses work (wrong-skip: the parity verdict
#             says WRONG, and no ratio is given for it) and one that loses a task
#             (wrong-drop: the watchdog ends it, exit 3, reported as FAILED, no hang), two
#             rounds in alternating order: exit 1, the table, one stacked SVG
#   usage     an unknown policy, a flag compare sets itself, a policy named twice: exit 2
#             before any run
#   meshes    dp2 and pp2 under mpirun (--np 2): exit 0, bitwise equal
#   simulate  the same policies simulated (one round, deterministic): parity n/a
# shellcheck disable=SC2016  # ok evals its checks
set -u
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/plugin_lib.sh"
row() { grep "^$1 " "$OUT"; }

plan 12
build_plugins GOOD DROP SKIP
PLUGINS="--sched-plugin $TMP/GOOD.so --sched-plugin $TMP/SKIP.so --sched-plugin $TMP/DROP.so"
# shellcheck disable=SC2086
run timeout 200 "$HELIX" compare --sched hx-prio,test-fifo,wrong-skip,wrong-drop --rounds 2 \
    --out "$TMP/cmp" $TRAIN $PLUGINS --comm-timeout 2
ok "compare: exit 1 (a policy failed or changed the numbers), 8 runs in alternating order" \
    'rc_is 1 && [ "$(grep -c "^round" "$OUT")" = 8 ] &&
     [ "$(grep "^round 2/2" "$OUT" | head -n 1 | awk "{ print \$3 }")" = wrong-drop ]'
ok "compare: hx-prio is the reference, test-fifo bitwise equal with a ratio" \
    'row hx-prio | grep -q "1.000.*bitwise equal (every round)" &&
     row test-fifo | grep -q "[0-9]\.[0-9][0-9][0-9] .*bitwise equal (every round)"'
ok "compare: wrong-skip is WRONG (the policy changed the numbers), with no ratio" \
    'row wrong-skip | grep -q "WRONG: step [0-9]*.s .* the policy changed the numbers" &&
     [ "$(row wrong-skip | awk "{ print \$3 }")" = - ]'
ok "compare: wrong-drop FAILED with the watchdog's exit 3 and its line (no hang)" \
    'row wrong-drop | grep -q "FAILED (exit 3, round 1): .*no task terminated.*wrong-drop"'
ok "compare: one SVG with the three timelines that ran" \
    '[ "$(grep -c "test-fifo\|hx-prio\|wrong-skip" "$TMP/cmp/timelines.svg")" -ge 3 ] &&
     out_has "timelines (the last round): $TMP/cmp/timelines.svg"'

# shellcheck disable=SC2086
run "$HELIX" compare --sched hx-prio,no-such $TRAIN
ok "compare: an unknown policy exits 2 before any run, listing the policies" \
    'rc_is 2 && err_has "no-such. is no policy" && err_has "hx-prio" && [ ! -s "$OUT" ]'
# shellcheck disable=SC2086
run "$HELIX" compare --sched hx-prio,eager $TRAIN --log-json "$TMP/x.json"
ok "compare: --log-json among the train flags exits 2 (compare sets it per run)" \
    'rc_is 2 && err_has "log-json is set for each run" && [ ! -s "$OUT" ]'
run "$HELIX" compare --sched hx-prio,hx-prio
ok "compare: a policy named twice exits 2" 'rc_is 2 && err_has "names hx-prio twice"'

# shellcheck disable=SC2086
run timeout 200 "$HELIX" compare --sched hx-prio,test-fifo --rounds 1 --np 2 $TRAIN \
    --sched-plugin "$TMP/GOOD.so" --data-parallel-size 2
ok "compare --np 2 (dp2 under mpirun): exit 0, test-fifo bitwise equal" \
    'rc_is 0 && row test-fifo | grep -q "bitwise equal"'
# shellcheck disable=SC2086
run timeout 200 "$HELIX" compare --sched hx-prio,test-fifo --rounds 1 --np 2 $TRAIN \
    --sched-plugin "$TMP/GOOD.so" --pipeline-model-parallel-size 2
ok "compare --np 2 (pp2 under mpirun): exit 0, test-fifo bitwise equal" \
    'rc_is 0 && row test-fifo | grep -q "bitwise equal"'
if [ "$SIM" = 1 ]; then
    # shellcheck disable=SC2086
    run timeout 200 "$HELIX" compare --sched hx-prio,test-fifo simulate $SIMF --ranks 2 \
        $TRAIN --sched-plugin "$TMP/GOOD-sim.so"
    ok "compare simulate: one round each, exit 0, parity n/a (no numerics)" \
        'rc_is 0 && [ "$(grep -c "^round 1/1" "$OUT")" = 2 ] &&
         row test-fifo | grep -q "n/a (simulated"'
else
    skip "compare simulate" "the simulation flavour is not built"
fi
finish
