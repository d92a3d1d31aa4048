#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/examples.sh: the examples run and check themselves.  custom_graph trains its MLP
# until the loss halves, the same losses under another policy (the graph fixes every
# reduction order) and rejects an unknown flag; custom_scheduler computes its products exactly
# under its own policy, hx-prio and eager, and its policy describes the first task: the
# codelet's implementations and, per worker, the one it would run (with an OpenCL worker
# too when helix has OpenCL).
# shellcheck disable=SC2016,SC2034,SC2317  # ok evals its single-quoted checks
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"

EX=$HX_BUILDDIR/examples

# "loss A -> B: ..." is custom_graph's last line; B < A / 2.
loss_halved() {
    awk '/^loss / { a = $2; b = $4 } END { exit !(a != "" && b != "" && b < a / 2) }' "$OUT"
}

plan 12

run "$EX/custom_graph"
ok "custom_graph: exit 0" 'rc_is 0'
ok "custom_graph: the loss halves in 100 steps" 'loss_halved'
ok "custom_graph: a line every 10 steps and the last (11)" \
    '[ "$(grep -c "^step " "$OUT")" -eq 11 ]'
cp "$OUT" "$TMP/model_default.out"

run "$EX/custom_graph" --sched eager --workers 2
ok "custom_graph --sched eager --workers 2: exit 0, same losses as under hx-prio" \
    'rc_is 0 && out_has "policy eager" &&
     [ "$(grep "^step" "$OUT")" = "$(grep "^step" "$TMP/model_default.out")" ]'

run "$EX/custom_graph" --bogus
ok "custom_graph --bogus: exit 2 naming the flag" 'rc_is 2 && err_has "--bogus"'

run "$EX/custom_scheduler"
ok "custom_scheduler (flops-first): exit 0" 'rc_is 0 && out_has "^policy flops-first"'
ok "custom_scheduler (flops-first): exact products" 'out_has ": OK$"'
ok "custom_scheduler (flops-first): describes the task's implementations and workers" \
    'out_has "^task matmul: implementations cpu" &&
     out_has "^  worker 0 (CPU 0): implementation 0, "'

if grep -q '^#define HX_HAVE_OPENCL 1' "$HX_BUILDDIR/config.h"; then
    POCL_DEVICES=${POCL_DEVICES:-basic}
    export POCL_DEVICES
    saved_asan=${ASAN_OPTIONS:-} saved_lsan=${LSAN_OPTIONS:-}
    pocl_process # (under ASan, unwinding PoCL's allocations from DWARF took 250 s here)
    run "$EX/custom_scheduler" --opencl 1
    ASAN_OPTIONS=$saved_asan LSAN_OPTIONS=$saved_lsan
    ok "custom_scheduler --opencl 1: the OpenCL worker can run the task, products exact" \
        'rc_is 0 && out_has "^task matmul: implementations cpu opencl" &&
         out_has "^  worker [0-9] (OpenCL 0.*): implementation 0, " &&
         out_has "1 OpenCL workers: .*: OK$"'
else
    ok "custom_scheduler --opencl 1 # SKIP helix was built without OpenCL" true
fi

run "$EX/custom_scheduler" --sched hx-prio
ok "custom_scheduler --sched hx-prio: exit 0, exact" \
    'rc_is 0 && out_has "^policy hx-prio" && out_has ": OK$"'

run "$EX/custom_scheduler" --sched eager
ok "custom_scheduler --sched eager: exit 0, exact" \
    'rc_is 0 && out_has "^policy eager" && out_has ": OK$"'

run "$EX/custom_scheduler" --sched no-such-policy
ok "custom_scheduler --sched no-such-policy: fails, listing the choices" \
    '! rc_is 0 && err_has "no-such-policy" && err_has "flops-first"'

finish
