#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/trace.sh: `helix train --trace FILE` writes Chrome trace-event JSON: one complete
# ("X") event per task with its op and phase, on the worker that ran it, tasks of one worker
# never overlapping; a trace path that cannot be created is refused before any work.
set -u
. "$(dirname "$0")/lib.sh"
plan 5
run "$HELIX" train --preset tiny --train-iters 2 --eval-interval 0 --sample-tokens 0 \
    --workers 2 --trace "$TMP/t.json"
ok "train --trace: exit 0" 'rc_is 0'
ok "... reports the tasks written" 'out_has "^trace: [0-9]* tasks written to"'
python3 - "$TMP/t.json" >"$TMP/check.txt" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = [e for e in d["traceEvents"] if e["ph"] == "X"]
ops = {"matmul", "attention_fwd", "attention_bwd", "layernorm_fwd", "adamw", "xent_fwd"}
assert len(ev) > 100, "only %d events" % len(ev)
assert ops <= {e["name"] for e in ev}, "missing ops"
assert {e["args"]["phase"] for e in ev} >= {"forward", "backward-data", "backward-weight",
                                           "optimizer"}
for tid in {e["tid"] for e in ev}:
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev if e["tid"] == tid)
    for (a0, a1), (b0, b1) in zip(spans, spans[1:]):
        assert b0 >= a1 - 1e-3, "overlap on worker %d: %s %s" % (tid, (a0, a1), (b0, b1))
print("events", len(ev), "workers", len({e["tid"] for e in ev}))
PY
rc=$?
ok "the trace parses, has every op and phase, no overlap per worker ($(cat "$TMP/check.txt" | tail -1))" "[ $rc -eq 0 ]"
run "$HELIX" train --preset tiny --train-iters 2 --trace "$TMP/missing/t.json"
ok "an uncreatable --trace path: exit 2" 'rc_is 2'
ok "... with one error line naming it, before any step" \
    'err_has "^helix: error: cannot create --trace" && ! out_has "^step"'
finish
