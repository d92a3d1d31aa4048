#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/profile_overlap.sh: `helix profile-overlap` on a tiny model writes a table with
# every forward op, every backward op and every (F, B) pair exactly once, whose OEF agrees
# with its own times, OEF = (solo a + solo b - co-run) / min(solo a, solo b), on every entry
# (a consistency check: nothing here depends on how fast the machine is).  Bad input exits
# 2 with one message: an unknown flag, one worker, a --layer out of range.  With --classes,
# ops of one class share their solo times and pairs of one class pair their co-run times.
set -u
. "$(dirname "$0")/lib.sh"
plan 14
TINY="--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --micro-batch-size 4"
# shellcheck disable=SC2086  # TINY is a list of flags
run "$HELIX" profile-overlap $TINY --repeats 1 --out "$TMP/t.json"
ok "profile-overlap on a tiny model: exit 0" 'rc_is 0'
ok "... the summary has the solo times, best and worst pairs and the mean OEFs" \
    'out_has "^solo times" && out_has "^worst by OEF" && out_has "^mean OEF.*comp||comp"'
ok "... and says the comm lanes need mpirun with tp > 1" 'out_has "need mpirun -np N with --tensor-model-parallel-size > 1"'
python3 - "$TMP/t.json" >"$TMP/check.txt" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "helix-overlap-1", d["schema"]
for k in ("num_layers", "hidden_size", "num_heads", "seq_length", "micro_batch_size",
          "vocab_size", "tp", "sequence_parallel", "dp", "num_micro_batches"):
    assert isinstance(d["model"][k], int), k
assert d["layer"] == 1 and d["repeats"] == 1 and d["ranks"] == 1 and d["workers"] >= 2
ops = {o["key"]: o for o in d["ops"]}
assert len(ops) == len(d["ops"]), "repeated op keys"
F = [k for k in ops if k[0] == "F"]
B = [k for k in ops if k[0] == "B"]
assert F == ["F%d" % i for i in range(len(F))] and B == ["B%d" % i for i in range(len(B))]
assert F and B, "empty lists"
for o in d["ops"]:
    assert o["kind"] in ("comp", "comm") and o["lane"] in ("compute", "comm_intra", "comm_inter")
    assert o["solo_ms"] > 0 and 0 < o["solo_ms_min"] <= o["solo_ms"], o
pairs = {(p["a"], p["b"]): p for p in d["pairs"]}
assert len(pairs) == len(d["pairs"]), "repeated pairs"
assert set(pairs) == {(f, b) for f in F for b in B}, "pairs are not F x B"
worst = 0
for p in d["pairs"]:
    a, b = ops[p["a"]]["solo_ms"], ops[p["b"]]["solo_ms"]
    oef = (a + b - p["corun_ms"]) / min(a, b)
    err = abs(p["oef"] - oef) / max(1.0, abs(oef))
    worst = max(worst, err)
    assert err < 1e-9, (p, oef)
    assert p["serialized"] is False  # one rank: no collective
    assert p["corun_ms"] > 0 and p["a_ms"] > 0 and p["b_ms"] > 0
print("%d x %d ops, %d pairs, largest OEF mismatch %.1e" % (len(F), len(B), len(pairs), worst))
PY
rc=$?
diag <"$TMP/check.txt"
ok "the table has every F x B pair once and OEF = (a + b - corun) / min(a, b) on each" "[ $rc -eq 0 ]"
# shellcheck disable=SC2086
run "$HELIX" profile-overlap $TINY --repeats 1
ok "--out - (the default): the JSON on stdout, the summary on stderr" \
    'rc_is 0 && python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$OUT" && err_has "^mean OEF"'
# shellcheck disable=SC2086
run "$HELIX" profile-overlap $TINY --repeats 1 --classes --out "$TMP/c.json"
python3 - "$TMP/c.json" >"$TMP/check.txt" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ops = {o["key"]: o for o in d["ops"]}
idx = {o["key"]: i for i, o in enumerate(d["ops"])}
for o in d["ops"]:
    c = ops[o["class"]]
    assert c["key"][0] == o["key"][0] and idx[c["key"]] <= idx[o["key"]], o
    assert c["class"] == c["key"], "a class is named by its first op"
    for f in ("op", "flops", "bytes", "solo_ms", "solo_ms_min"):
        assert o[f] == c[f], (o, c)
pairs = {(p["a"], p["b"]): p for p in d["pairs"]}
F = [k for k in ops if k[0] == "F"]
B = [k for k in ops if k[0] == "B"]
assert set(pairs) == {(f, b) for f in F for b in B}
for (f, b), p in pairs.items():
    q = pairs[(ops[f]["class"], ops[b]["class"])]
    assert p["corun_ms"] == q["corun_ms"] and p["oef"] == q["oef"], (p, q)
    a, bb = ops[f]["solo_ms"], ops[b]["solo_ms"]
    assert abs(p["oef"] - (a + bb - p["corun_ms"]) / min(a, bb)) <= 1e-9 * max(1, abs(p["oef"]))
ncls = len({o["class"] for o in d["ops"]})
assert ncls < len(ops), "no two ops share a class"
print("%d ops in %d classes" % (len(ops), ncls))
PY
rc=$?
diag <"$TMP/check.txt"
ok "--classes: one class per distinct work, members share solo and pair numbers, OEF consistent" \
    "[ $rc -eq 0 ] && rc_is 0 && out_has 'with the numbers of their classes. pair'"
run "$HELIX" profile-overlap --help
ok "--help: exit 0, lists --layer and --repeats" 'rc_is 0 && out_has "--layer" && out_has "--repeats"'
run "$HELIX" profile-overlap --layr 1
ok "an unknown flag: exit 2, names the nearest one" 'rc_is 2 && err_has "unknown flag --layr; did you mean --layer"'
# shellcheck disable=SC2086
run "$HELIX" profile-overlap $TINY --layer 2
ok "--layer 2 of 2 layers: exit 2" 'rc_is 2 && err_has "^helix: error: --layer 2 is out of range: the model has 2 layers"'
# shellcheck disable=SC2086
run env STARPU_NCPU=1 "$HELIX" profile-overlap $TINY --repeats 1
ok "one StarPU worker: exit 2" 'rc_is 2 && err_has "needs at least 2 StarPU workers, this run has 1"'
# shellcheck disable=SC2086
run "$HELIX" profile-overlap $TINY --workers 1
ok "--workers 1: exit 2 before starting StarPU" 'rc_is 2 && err_has "^helix: error: --workers 1: co-running"'
# shellcheck disable=SC2086
run "$HELIX" profile-overlap $TINY --out "$TMP/missing/t.json"
ok "an --out in a missing directory: exit 2 before measuring" \
    'rc_is 2 && err_has "^helix: error: --out .*missing/t.json: directory .* is not writable" && ! [ -e "$TMP/missing" ]'
# shellcheck disable=SC2086
run "$HELIX" profile-overlap $TINY --out "$TMP"
ok "an --out that is a directory: exit 2" 'rc_is 2 && err_has "is a directory; give a file name"'
# shellcheck disable=SC2086
run "$HELIX" profile-overlap $TINY --num-attention-heads 3
ok "a model flag the model refuses (heads not dividing C): exit 2" 'rc_is 2 && err_has "not divisible"'
finish
