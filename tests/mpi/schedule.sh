#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/schedule.sh: what the stages actually ran, from the task records of --trace (one
# file, a process per rank), reduced to each stage's order of chunk tasks (a micro-batch's forward F or
# backward B of the layers of one chunk, ordered by their first task's start):
#  - 1F1B (pp 2, 8 micro-batches): the order each stage ran has, replayed with unit-cost
#    forwards and backwards twice as long, the bubble fraction (p-1)/(m+p-1) = 1/9, and
#    every backward runs in micro-batch order;
#  - the folded W (pp 2): stage 0 runs forwards only (warm-up), then forwards and backwards
#    mixed (steady), then backwards only (cool-down), and its two chunks' forwards go down
#    (chunk 0) before they come back (chunk 1) for every micro-batch.
# Orders, not times, are checked: nothing here depends on the machine's speed.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
plan 6
M="--num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
 --global-batch-size 16 --train-iters 2 --eval-interval 0 --eval-iters 1 --sample-tokens 0
 --log-interval 1 --seed 7 --comm-timeout 60"
# shellcheck disable=SC2086
run hx_mpirun 2 "$HELIX" train $M --pipeline-model-parallel-size 2 --trace "$TMP/1f1b.json"
ok "1F1B pp 2 with --trace" 'rc_is 0 && [ -s "$TMP/1f1b.json" ] && [ ! -e "$TMP/1f1b.json.rank1" ]'
# shellcheck disable=SC2086
run hx_mpirun 2 "$HELIX" train $M --pipeline-model-parallel-size 2 --pipeline-fold \
    --trace "$TMP/fold.json"
ok "folded W pp 2 with --trace" 'rc_is 0 && [ -s "$TMP/fold.json" ]'
cat >"$TMP/orders.py" <<'PY'
import json, sys
# chunk tasks of one rank's last training step: (kind, micro-batch, chunk) by first start
def orders(path, rank, chunk_of):
    ev = [e for e in json.load(open(path))["traceEvents"]
          if e["ph"] == "X" and e["pid"] == rank and e["args"]["layer"] >= 0]
    seen = {}
    for e in sorted(ev, key=lambda e: e["ts"]):
        a = e["args"]
        key = ("F" if a["phase"] == "forward" else "B", a["microbatch"], chunk_of(a["layer"]))
        seen.setdefault(key, []).append(e["ts"])
    # two training steps: each key ran twice; keep the second run (the first warms up)
    last = sorted(((v[len(v) // 2], k) for k, v in seen.items()))
    return [k for _, k in last]
PY
python3 - "$TMP" >"$TMP/1f1b.txt" 2>&1 <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from orders import orders
tmp = sys.argv[1]
p, m = 2, 8
st = [orders(tmp + "/1f1b.json", s, lambda l: 0)
      for s in range(p)]
for s, o in enumerate(st):
    bs = [mb for k, mb, c in o if k == "B"]
    assert bs == sorted(bs) and len(bs) == m, "stage %d backwards %s" % (s, bs)
# replay: F on stage s after F on s-1; B after B on s+1 (and after its F); unit forwards,
# backwards of 2
done, free, pos, t = {}, [0.0] * p, [0] * p, 0
while any(pos[s] < len(st[s]) for s in range(p)):
    moved = False
    for s in range(p):
        while pos[s] < len(st[s]):
            k, mb, c = st[s][pos[s]]
            deps = [("F", mb, s - 1)] if k == "F" and s > 0 else []
            if k == "B":
                deps = [("F", mb, s)] + ([("B", mb, s + 1)] if s + 1 < p else [])
            if any(d not in done for d in deps):
                break
            start = max([free[s]] + [done[d] for d in deps])
            free[s] = done[(k, mb, s)] = start + (1 if k == "F" else 2)
            pos[s] += 1
            moved = True
    assert moved, "the executed orders deadlock when replayed"
span = max(free)
bubble = 1 - m * 3 / span
want = (p - 1) / (m + p - 1)
print("stage 0:", " ".join("%s%d" % (k, mb) for k, mb, c in st[0]))
print("stage 1:", " ".join("%s%d" % (k, mb) for k, mb, c in st[1]))
print("bubble %.4f, (p-1)/(m+p-1) %.4f" % (bubble, want))
sys.exit(0 if abs(bubble - want) < 1e-9 else 1)
PY
rc=$?
diag <"$TMP/1f1b.txt"
ok "1F1B: backwards in order on both stages; the executed order's bubble is (p-1)/(m+p-1) ($(tail -1 "$TMP/1f1b.txt"))" "[ $rc -eq 0 ]"
python3 - "$TMP" >"$TMP/fold.txt" 2>&1 <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from orders import orders
tmp = sys.argv[1]
# stage 0 of a folded pp 2 over 4 layers holds chunk 0 (layer 0) and chunk 1 (layer 3)
o = orders(tmp + "/fold.json", 0, lambda l: 0 if l == 0 else 1)
print("stage 0:", " ".join("%s%d.%d" % (k, mb, c) for k, mb, c in o))
kinds = [k for k, mb, c in o]
warm = next(i for i, k in enumerate(kinds) if k == "B")
cool = len(kinds) - next(i for i, k in enumerate(reversed(kinds)) if k == "F")
steady = kinds[warm:cool]
assert warm >= 2, "warm-up of %d forwards" % warm
assert "F" in steady and "B" in steady, "no steady phase"
assert len(kinds) - cool >= 1, "no cool-down"
for mb in range(8):
    assert o.index(("F", mb, 0)) < o.index(("F", mb, 1)) < o.index(("B", mb, 1)) < \
        o.index(("B", mb, 0)), "micro-batch %d does not make the W" % mb
print("warm-up %d forwards, steady %d tasks (%d backwards), cool-down %d backwards"
      % (warm, len(steady), steady.count("B"), len(kinds) - cool))
PY
rc=$?
diag <"$TMP/fold.txt"
ok "folded W, stage 0: warm-up, steady and cool-down phases; every micro-batch down, back up, then its backward the same way ($(tail -1 "$TMP/fold.txt"))" "[ $rc -eq 0 ]"
ok "1F1B trace covers both stages' layers" 'grep -q "stage 1:" "$TMP/1f1b.txt"'
ok "fold trace covers stage 0's two chunks" 'grep -q "F0.1" "$TMP/fold.txt"'
finish
