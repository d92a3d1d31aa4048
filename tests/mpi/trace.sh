#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/trace.sh: the merged trace of a 2-rank ZeRO-3 run and the tools that read it:
#  - one Chrome trace-event JSON for both ranks (no FILE.rank1): one process per rank, named,
#    a named thread per compute worker and per channel, every task event on its rank, comm
#    events on a comm lane with bytes > 0, GEMMs with flops > 0, the parameter all-gathers
#    and gradient reduce-scatters of ZeRO-3 present on both ranks, no two events of one
#    thread overlapping; one clock: no collective ends on one rank before the other rank
#    posted it, up to the clock bound the file states (otherData.clock_error_us);
#  - `helix trace summarize`: per rank, hidden + exposed = in flight for every op and for
#    all, shares in [0, 1]; --json with the documented keys; the trace as its own baseline
#    gives ECT = the baseline's exposed-or-idle time and overlap efficiency 0;
#  - the strands' co-run figures on a hand-made two-strand trace, exactly: alpha at work
#    0-10 and 30-35 ms, beta 5-20 ms and a receive 20-40 ms (waiting, not work): 15, 15,
#    both 5 ms, 20% of the 25 ms either works;
#  - `helix trace svg`: an SVG that rsvg-convert renders to a PNG that is not blank;
#  - each lane's exposed time (lane_exposed_ms, and the text's "exposed" line): on the ZeRO-3
#    trace and on one under serial-comm with a rank per node (its collectives on the
#    inter-node lane), each lane's at most its busy time, max(lanes) <= exposed <= sum; on a
#    hand-made trace, exactly: intra-node 0-10 ms, inter-node 5-15, compute 8-12: 8 and 6 ms
#    exposed, 11 in all (the 5-8 ms both lanes were exposed counts in each);
#  - `helix trace svg A B -o OUT --titles a,b`: the two runs stacked in one valid SVG under
#    both titles, on one scale (the longer step spans the width, the other its share of it),
#    rendered by rsvg-convert; --titles of another count and a step one trace lacks exit 2;
#  - bad input (a missing file, a file that is no trace, svg without -o) exits 2 naming it.
# Nothing here is timed: the checks hold for any speed.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
plan 18
M="--preset tiny --train-iters 3 --eval-interval 0 --sample-tokens 0 --zero-stage 3
 --comm-timeout 60"
# shellcheck disable=SC2086
run hx_mpirun 2 "$HELIX" train $M --trace "$TMP/z3.json"
ok "ZeRO-3 np 2 with --trace: one merged file" \
    'rc_is 0 && [ -s "$TMP/z3.json" ] && [ ! -e "$TMP/z3.json.rank1" ]'
python3 - "$TMP/z3.json" >"$TMP/check.txt" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
x = [e for e in ev if e["ph"] == "X"]
procs = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
           if e["ph"] == "M" and e["name"] == "thread_name"}
assert sorted(procs) == [0, 1], "processes %s" % procs
assert all(procs[r].startswith("rank %d" % r) for r in procs), procs
assert {e["pid"] for e in x} == {0, 1}, "task events not on both ranks"
for e in x:
    assert (e["pid"], e["tid"]) in threads, "unnamed thread %s" % ((e["pid"], e["tid"]),)
    assert e["args"]["rank"] == e["pid"], "rank arg %s on pid %s" % (e["args"]["rank"], e["pid"])
    assert e["dur"] >= 0
comm = [e for e in x if e["args"]["collective"]]
assert comm and all(e["cat"] == "comm" and e["args"]["lane"].startswith("comm ") and
                    e["args"]["bytes"] > 0 for e in comm), "comm events off a comm lane or 0 bytes"
assert all(threads[(e["pid"], e["tid"])].startswith(e["args"]["lane"]) for e in comm)
gemm = [e for e in x if e["name"] == "matmul"]
assert gemm and all(e["args"]["flops"] > 0 for e in gemm), "GEMMs without flops"
for r in (0, 1):
    names = {e["name"] for e in comm if e["pid"] == r}
    assert {"allgather", "reduce_scatter"} <= names, "rank %d collectives %s" % (r, names)
    assert {e["args"]["step"] for e in x if e["pid"] == r} >= {0, 1, 2}, "steps not marked"
# ts and dur are printed in microseconds to 3 decimals, each rounded on its own, so an end
# and the next start may cross by 1 ns, and ts + dur adds float error on top (the fresh-clone
# CI of 21de88b: an end at 217985.765 and a start at 217985.764 failed a 1e-3 bound)
for key in threads:
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in x if (e["pid"], e["tid"]) == key)
    for (a0, a1), (b0, b1) in zip(spans, spans[1:]):
        assert b0 >= a1 - 1.5e-3, "overlap on %s: %s %s" % (threads[key], (a0, a1), (b0, b1))
# one clock: a collective cannot end on one rank before the other has posted it (its end
# is when MPI completed, its start the codelet's, before the post), up to the shift's bound
err = d["otherData"]["clock_error_us"]
assert 0 <= err < 1e6, "clock_error_us %s" % err
both = {}
for e in comm:
    both.setdefault((e["name"], e["args"]["step"], e["args"]["node"]), {})[e["pid"]] = e
late = 0
for k, v in both.items():
    if len(v) == 2:
        late = max(late, v[1]["ts"] - (v[0]["ts"] + v[0]["dur"]),
                   v[0]["ts"] - (v[1]["ts"] + v[1]["dur"]))
assert late <= err + 1, "a collective ended %.1f us before the other rank posted it " \
    "(clock bound %.1f us)" % (late, err)
print("%d events, %d threads, %d collectives, clocks within %.1f us" % (len(x), len(threads),
                                                                       len(comm), err))
PY
rc=$?
ok "valid Chrome trace: a process per rank, named lanes, bytes and flops \
($(tail -1 "$TMP/check.txt"))" \
    "[ $rc -eq 0 ]"
run "$HELIX" trace summarize "$TMP/z3.json"
ok "summarize: exit 0, a block per rank" \
    'rc_is 0 && out_has "^rank 0 " && out_has "^rank 1 " && out_has "^  allgather "'
run "$HELIX" trace summarize "$TMP/z3.json" --json --baseline "$TMP/z3.json"
cp "$OUT" "$TMP/sum.json"
python3 - "$TMP/sum.json" >"$TMP/sum.txt" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert [r["rank"] for r in d["ranks"]] == [0, 1]
for r in d["ranks"]:
    for k in ("span_ms", "steps", "lanes", "comm", "comm_ms", "exposed_comm_ms", "hidden_comm_ms",
              "hidden_share", "ect_ms", "overlap_efficiency", "bubble_fraction"):
        assert k in r, "no key %s" % k
    assert r["steps"] == 2, "steps %s (3 run, the first left out)" % r["steps"]
    tol = 1e-3
    assert abs(r["hidden_comm_ms"] + r["exposed_comm_ms"] - r["comm_ms"]) < tol
    for op, c in r["comm"].items():
        assert abs(c["hidden_ms"] + c["exposed_ms"] - c["ms"]) < tol, op
        assert c["ms"] <= r["comm_ms"] + tol, op
    assert 0 <= r["hidden_share"] <= 1 and 0 <= r["bubble_fraction"] <= 1
    assert r["comm"]["allgather"]["ms"] > 0 and r["comm"]["reduce_scatter"]["ms"] > 0
    # its own baseline: nothing hidden beyond itself
    assert abs(r["overlap_efficiency"]) < 1e-9, r["overlap_efficiency"]
    assert abs(r["comm"]["allgather"]["efficiency"]) < 1e-9
    assert abs(r["ect_ms"] - (r["span_ms"] - r["lanes"]["compute"])) < tol
    assert r["strands"] is None, "strands %s in a run without --strands" % r["strands"]
print("ranks 0 and 1: all-gather %.2f ms, reduce-scatter %.2f ms per step, %.0f%% hidden" %
      (d["ranks"][0]["comm"]["allgather"]["ms"], d["ranks"][0]["comm"]["reduce_scatter"]["ms"],
       100 * d["ranks"][0]["hidden_share"]))
PY
rc=$?
ok "summarize --json: the keys; hidden + exposed = in flight; a trace against itself: E = 0 \
($(tail -1 "$TMP/sum.txt"))" \
    "[ $rc -eq 0 ]"
ev() { # NAME CAT STRAND TS_MS DUR_MS COLLECTIVE: one rank-0 task event of step 0
    printf '{"name": "%s", "cat": "%s", "ph": "X", "ts": %d, "dur": %d, "pid": 0, "tid": 0, ' \
        "$1" "$2" $(($4 * 1000)) $(($5 * 1000))
    printf '"args": {"lane": "%s", "step": 0, "strand": %d, "collective": %d}}' \
        "$([ "$2" = comm ] && echo 'comm inter-node' || echo compute)" "$3" "$6"
}
{
    printf '{"traceEvents": [\n'
    ev gemm compute 0 0 10 0; printf ',\n'; ev gemm compute 1 5 15 0; printf ',\n'
    ev recv comm 1 20 20 1; printf ',\n'; ev allreduce comm 0 30 5 1; printf '\n]}\n'
} >"$TMP/strands.json"
run "$HELIX" trace summarize "$TMP/strands.json" --json
cp "$OUT" "$TMP/strands_sum.json"
run "$HELIX" trace summarize "$TMP/strands.json"
ok "summarize a two-strand trace: alpha 15, beta 15, both 5 ms, co-run 20% (json and text)" \
    'rc_is 0 && out_has "strands    alpha at work 15.00 ms, beta 15.00 ms, both at once 5.00 ms (20.0%" &&
     grep -q "\"strands\": {\"alpha_ms\": 15, \"beta_ms\": 15, \"corun_ms\": 5, \"corun_share\": 0.2}" \
        "$TMP/strands_sum.json"'
# the tensor-parallel row: every collective of the tp channels whatever its op, with its
# tile transfers; against a baseline where the same 10 ms were all exposed, E_tp = 0.5
tpev() { # NAME CHANNEL TS_MS DUR_MS BYTES: a rank-0 collective of step 0 (bytes: sent)
    printf '{"name": "%s", "cat": "comm", "ph": "X", "ts": %d, "dur": %d, "pid": 0, "tid": 9, ' \
        "$1" $(($3 * 1000)) $(($4 * 1000))
    printf '"args": {"lane": "comm intra-node", "channel": "%s", "step": 0, "strand": -1, ' "$2"
    printf '"collective": 1, "bytes": %d}},\n' "$5"
}
cpu() { # TS_MS DUR_MS: a rank-0 compute task of step 0
    printf '{"name": "matmul", "cat": "compute", "ph": "X", "ts": %d, "dur": %d, "pid": 0, ' \
        $(($1 * 1000)) $(($2 * 1000))
    printf '"tid": 0, "args": {"lane": "compute", "step": 0, "strand": -1, "collective": 0}}'
}
{
    printf '{"traceEvents": [\n'
    tpev shift tp 0 4 1000000; tpev shift tp_beta 4 6 1000000; tpev allreduce dp 0 2 500
    cpu 5 10; printf '\n]}\n'
} >"$TMP/tpo.json"
{
    printf '{"traceEvents": [\n'
    tpev allgather tp 0 10 2000000; cpu 10 10; printf '\n]}\n'
} >"$TMP/tpo_base.json"
run "$HELIX" trace summarize "$TMP/tpo.json" --baseline "$TMP/tpo_base.json"
ok "summarize: the tensor-parallel row joins tp and tp_beta whatever the op: 10 ms in flight, \
5 exposed, 2 tile transfers, 2 MB, E_tp 0.5 against a baseline exposing all 10" \
    'rc_is 0 && out_has "^  shift  *10.00 ms  *5.00 ms  *5.00 ms  *50.0%  *2.0  *2.000" &&
     out_has "^  tensor-parallel  *10.00 ms  *5.00 ms  *5.00 ms  *50.0%  *2.0  *2.000  *0.500"'
run "$HELIX" trace svg "$TMP/z3.json" -o "$TMP/z3.svg"
ok "svg: exit 0, a file" 'rc_is 0 && [ -s "$TMP/z3.svg" ]'
rsvg-convert "$TMP/z3.svg" -o "$TMP/z3.png" 2>"$TMP/rsvg.err"
rc=$?
[ $rc -eq 0 ] || diag "rsvg-convert: $(head -c 500 "$TMP/rsvg.err")"
ok "rsvg-convert renders it to PNG" "[ $rc -eq 0 ] && [ -s \"$TMP/z3.png\" ]"
python3 - "$TMP/z3.png" >"$TMP/png.txt" 2>&1 <<'PY'
import struct, sys, zlib
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w = 8, b"", None
while pos < len(b):
    n, kind = struct.unpack(">I4s", b[pos:pos + 8])
    data = b[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", data[:10])
    elif kind == b"IDAT":
        idat += data
    pos += 12 + n
assert depth == 8 and ctype in (2, 6), "PNG depth %d colour type %d" % (depth, ctype)
bpp = 3 if ctype == 2 else 4
raw, stride, prev, rows = zlib.decompress(idat), w * bpp, bytearray(w * bpp), []
i = 0
for y in range(h):  # undo the PNG filters
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
    i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        c = prev[x - bpp] if x >= bpp else 0
        p = prev[x]
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + p) & 255
        elif f == 3: line[x] = (line[x] + (a + p) // 2) & 255
        elif f == 4:
            pa, pb, pc = abs(p - c), abs(a - c), abs(a + p - 2 * c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else p if pb <= pc else c)) & 255
    rows.append(bytes(line))
    prev = line
colors, ink = set(), 0
for line in rows[::2]:
    for x in range(0, stride, bpp * 2):
        px = line[x:x + 3]
        colors.add(bytes(px))
        ink += px != b"\xff\xff\xff"
share = ink / (len(rows[::2]) * len(range(0, stride, bpp * 2)))
assert len(colors) >= 8 and share > 0.01, "blank: %d colours, %.3f not white" % (len(colors), share)
print("%dx%d, %d colours, %.1f%% not white" % (w, h, len(colors), 100 * share))
PY
rc=$?
ok "the PNG is not blank ($(tail -1 "$TMP/png.txt"))" "[ $rc -eq 0 ]"
# shellcheck disable=SC2086
run hx_mpirun 2 "$HELIX" train $M --sched serial-comm --ranks-per-node 1 --trace "$TMP/sc.json"
ok "serial-comm, a rank per node, with --trace" 'rc_is 0 && [ -s "$TMP/sc.json" ]'
"$HELIX" trace summarize "$TMP/z3.json" --json >"$TMP/z3_sum.json" &&
    "$HELIX" trace summarize "$TMP/sc.json" --json >"$TMP/sc_sum.json" &&
    "$HELIX" trace summarize "$TMP/sc.json" >"$TMP/sc_sum.txt"
rc=$?
python3 - "$TMP/z3_sum.json" "$TMP/sc_sum.json" >"$TMP/lanes.txt" 2>&1 <<'PY'
import json, sys
tol, lanes, say = 1e-3, ("comm intra-node", "comm inter-node"), []
for path in sys.argv[1:]:
    for r in json.load(open(path))["ranks"]:
        ex = r["lane_exposed_ms"]
        assert sorted(ex) == sorted(lanes), "lane_exposed_ms %s" % ex
        for l in lanes:
            assert -tol <= ex[l] <= r["lanes"][l] + tol, "%s: %s exposed %s, busy %s" % (
                path, l, ex[l], r["lanes"][l])
        assert max(ex.values()) <= r["exposed_comm_ms"] + tol <= sum(ex.values()) + 2 * tol, \
            "%s rank %d: lanes %s, exposed %s" % (path, r["rank"], ex, r["exposed_comm_ms"])
    r0 = json.load(open(path))["ranks"][0]
    say.append("%.2f/%.2f" % (r0["lane_exposed_ms"]["comm intra-node"],
                              r0["lane_exposed_ms"]["comm inter-node"]))
sc = json.load(open(sys.argv[2]))["ranks"][0]
assert sc["lanes"]["comm inter-node"] > 0 and sc["lanes"]["comm intra-node"] == 0, sc["lanes"]
print("rank 0 exposed intra/inter-node: ZeRO-3 %s ms, serial-comm a rank per node %s ms" %
      tuple(say))
PY
rc_py=$?
ok "summarize: each lane's exposed time within its busy time, max <= exposed <= sum, in \
--json and text ($(tail -1 "$TMP/lanes.txt"))" \
    "[ $rc -eq 0 ] && [ $rc_py -eq 0 ] && grep -q \
        '^  exposed    comm intra-node [0-9.]* ms, comm inter-node [0-9.]* ms' '$TMP/sc_sum.txt'"
lane() { # LANE TS_MS DUR_MS: a rank-0 collective of step 0 on LANE
    printf '{"name": "allreduce", "cat": "comm", "ph": "X", "ts": %d, "dur": %d, "pid": 0, ' \
        $(($2 * 1000)) $(($3 * 1000))
    printf '"tid": %d, "args": {"lane": "comm %s", "step": 0, "strand": -1, "collective": 1, ' \
        "$([ "$1" = intra-node ] && echo 8 || echo 9)" "$1"
    printf '"bytes": 1000}},\n'
}
{
    printf '{"traceEvents": [\n'
    lane intra-node 0 10; lane inter-node 5 10; cpu 8 4; printf '\n]}\n'
} >"$TMP/lanes.json"
"$HELIX" trace summarize "$TMP/lanes.json" --json >"$TMP/lanes_sum.json"
run "$HELIX" trace summarize "$TMP/lanes.json"
ok "summarize two lanes by hand: 8 and 6 ms exposed, 11 in all (json and text)" \
    'rc_is 0 && out_has "^  exposed    comm intra-node 8.00 ms, comm inter-node 6.00 ms" &&
     out_has "^  all  *15.00 ms  *11.00 ms  *4.00 ms" &&
     grep -q "\"lane_exposed_ms\": {\"comm intra-node\": 8, \"comm inter-node\": 6}" \
        "$TMP/lanes_sum.json"'
run "$HELIX" trace svg "$TMP/z3.json" "$TMP/sc.json" -o "$TMP/stack.svg" \
    --titles "zero3,serial-comm"
cp "$OUT" "$TMP/stack.out"
rc_stack=$RC
xml=0
if command -v xmllint >/dev/null 2>&1; then
    xmllint --noout "$TMP/stack.svg" 2>"$TMP/xmllint.err" || xml=$?
fi
python3 - "$TMP/stack.svg" >"$TMP/stack.txt" 2>&1 <<'PY'
import re, sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
texts = ["".join(t.itertext()) for t in root.iter(ns + "text")]
spans = {}
for name in ("zero3", "serial-comm"):
    m = [re.match(r"%s: step ([0-9.]+) ms \(training step 2\)$" % name, t) for t in texts]
    m = [x for x in m if x]
    assert len(m) == 1, "title %s: %s" % (name, [t for t in texts if name in t])
    spans[name] = float(m[0].group(1))
assert sum(t.startswith("legend") for t in texts) == 1, "not one legend"
assert sum(t.startswith("rank 0") for t in texts) == 2, "not two bands"
# the bands in document order; each task's right edge; LEFT 170, plot width 1410
bands, cur = [], None
for el in root.iter():
    if el.tag == ns + "text" and re.match(r"(zero3|serial-comm): step", "".join(el.itertext())):
        cur = []
        bands.append(cur)
    elif el.tag == ns + "rect" and el.find(ns + "title") is not None and cur is not None:
        cur.append(float(el.get("x")) + float(el.get("width")))
full = max(spans.values())
# The titles print each span to 0.05 ms, so want = span / full of the titles is off by at most
# 1410 (0.05 / full + span 0.05 / full^2) px (both rounded); a rect is at least 0.6 px wide and
# its x and width are printed to 0.005 px.  (0.06 / full alone, once, failed in CI: 4.5 px.)
for name, edges in zip(("zero3", "serial-comm"), bands):
    want = 170 + spans[name] / full * 1410
    bound = 1410 * (0.05 / full + spans[name] * 0.05 / full ** 2) + 0.6 + 0.01
    assert edges and abs(max(edges) - want) <= bound, \
        "%s ends at x %.1f, not %.1f +- %.1f: not one scale" % (name, max(edges), want, bound)
print("steps %.1f and %.1f ms, one scale" % (spans["zero3"], spans["serial-comm"]))
PY
rc=$?
rsvg-convert "$TMP/stack.svg" -o "$TMP/stack.png" 2>"$TMP/rsvg.err" || rc=9
ok "svg of two traces: one valid SVG, both titles, one scale, rendered \
($(tail -1 "$TMP/stack.txt"))" \
    "[ $rc_stack -eq 0 ] && [ $xml -eq 0 ] && [ $rc -eq 0 ] && [ -s '$TMP/stack.png' ] &&
     grep -q '^wrote .*stack.svg' '$TMP/stack.out'"
run "$HELIX" trace svg "$TMP/z3.json" "$TMP/sc.json" -o "$TMP/bad.svg" --titles "zero3"
ok "svg: --titles naming 1 of 2 traces: exit 2" \
    'rc_is 2 && err_has "titles names 1 trace, 2 given"'
run "$HELIX" trace svg "$TMP/z3.json" "$TMP/sc.json" -o "$TMP/bad.svg" --step 7
ok "svg of two traces at a step they lack: exit 2 naming the first, no file" \
    'rc_is 2 && err_has "z3.json. has no task of step 7" && [ ! -e "$TMP/bad.svg" ]'
run "$HELIX" trace summarize "$TMP/missing.json"
ok "summarize a missing file: exit 2, named" 'rc_is 2 && err_has "cannot read trace .*missing.json"'
echo '{"a": 1}' >"$TMP/other.json"
run "$HELIX" trace summarize "$TMP/other.json"
ok "summarize a JSON that is no trace: exit 2, named" 'rc_is 2 && err_has "other.json.*traceEvents"'
run "$HELIX" trace svg "$TMP/z3.json"
ok "svg without -o: exit 2" 'rc_is 2 && err_has "-o OUT.svg"'
finish
