#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/profile_overlap.sh: `helix profile-overlap` at np 2 with tensor parallelism 2:
# the layer's lists now hold the tp collectives (all-reduce; all-gather and reduce-scatter
# with --sequence-parallel) on the intra-node comm lane, every rank runs the same sequence
# and rank 0 alone writes the table; a pair of two collectives of the tp channel is not
# co-run but marked serialized (co-run = a + b, OEF 0); every other pair is measured and
# its OEF agrees with its times; with --classes (the sequence-parallel run) the collectives
# of one shape share a class whatever their place on the channel.  Consistency checks only,
# never timing thresholds.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
plan 4
HX_MPI_NCPU=2 # co-running needs two workers per rank
export HX_MPI_NCPU
TINY="--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --micro-batch-size 4"
cat >"$TMP/check.py" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
sp = int(sys.argv[2])
assert d["ranks"] == 2 and d["model"]["tp"] == 2 and d["model"]["sequence_parallel"] == sp
ops = {o["key"]: o for o in d["ops"]}
F = [k for k in ops if k[0] == "F"]
B = [k for k in ops if k[0] == "B"]
pairs = {(p["a"], p["b"]): p for p in d["pairs"]}
assert len(pairs) == len(d["pairs"]) and set(pairs) == {(f, b) for f in F for b in B}
comm = {k for k, o in ops.items() if o["kind"] == "comm"}
want = {"reduce_scatter", "allgather"} if sp else {"allreduce"}
assert {ops[k]["op"] for k in comm} == want, {ops[k]["op"] for k in comm}
assert all(ops[k]["lane"] == "comm_intra" for k in comm)
assert any(k[0] == "F" for k in comm) and any(k[0] == "B" for k in comm)
nser = 0
for (f, b), p in pairs.items():
    a, bb = ops[f]["solo_ms"], ops[b]["solo_ms"]
    ser = f in comm and b in comm  # one channel (tp) holds every collective of the layer
    assert p["serialized"] is ser, p
    if ser:
        nser += 1
        assert p["corun_ms"] == a + bb and p["oef"] == 0, p
    oef = (a + bb - p["corun_ms"]) / min(a, bb)
    assert abs(p["oef"] - oef) <= 1e-9 * max(1.0, abs(oef)), (p, oef)
if sp:  # run with --classes: the row tiles' collectives differ only in their sequence number
    ccls = {ops[k]["class"] for k in comm}
    assert len(ccls) < len(comm), "every collective in its own class"
    assert all(ops[ops[k]["class"]]["kind"] == "comm" for k in comm)
print("%d x %d ops, %d collectives, %d serialized pairs" % (len(F), len(B), len(comm), nser))
PY
for sp in 0 1; do
    flag=
    [ $sp -eq 1 ] && flag="--sequence-parallel --classes"
    # shellcheck disable=SC2086  # TINY and flag are lists of flags
    run hx_mpirun 2 "$HELIX" profile-overlap $TINY --repeats 1 --tensor-model-parallel-size 2 \
        $flag --out "$TMP/tp2_$sp.json"
    ok "np 2 tp 2${flag:+ $flag}: exit 0, one summary (rank 0)" \
        'rc_is 0 && [ "$(grep -c "^mean OEF" "$OUT")" -eq 1 ] && out_has "comp||comm"'
    python3 "$TMP/check.py" "$TMP/tp2_$sp.json" $sp >"$TMP/check.txt" 2>&1
    rc=$?
    diag <"$TMP/check.txt"
    ok "np 2 tp 2${flag:+ $flag}: collectives on comm_intra, same-channel pairs serialized, OEF consistent" "[ $rc -eq 0 ]"
done
finish
