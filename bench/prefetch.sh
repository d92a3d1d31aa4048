#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/prefetch.sh: does hx-prefetch hide ZeRO-3's parameter all-gathers on a slow network?
# (issue 7, last acceptance line).  On scripts/netbed (2+2 ranks, shared memory inside a
# node, a 1 Gbit/s link between the nodes), ZeRO-3 with dp=4, the same model, data, seed and
# global batch in every run, each traced (--trace):
#   (a) the serial reference (1 rank): the losses every run must reproduce, within the
#       tolerance rule of every parity test (tests/README.md, bench/parity_rule.py), whose
#       envelope is (a2), the same serial run in a second summation order;
#   (b) --sched hx-prefetch (gathers --prefetch-memory ahead, resident layers reused,
#       reduce-scatters behind the next gather);
#   (c) --sched serial-comm with the same --prefetch-memory: hx-prefetch's graph order (the
#       same gathers, the same reduce-scatters) with no collective overlapping compute: the
#       baseline of Flux's overlap efficiency, so that it measures overlap alone and not the
#       gathers the look-ahead's slots save;
#   (d) --sched hx-prio, the default.
# Reported: median step times and the ratios; from `helix trace summarize --json b --baseline
# c` per rank the all-gather's overlap efficiency (1 - exposed all-gather time under
# hx-prefetch / under serial-comm: the share of the all-gather time hidden) and Flux's
# overlap efficiency of the whole step; the parity of every run against (a) and the bitwise
# equality of (b), (c), (d); SVG timelines of (b) and (c) (`helix trace svg`).
#
#   bench/prefetch.sh [--rounds N] [--steps N] [--rate R] [--prefetch-memory M] [--out DIR]
#                     BUILD_DIR
# Model: HX_PF_LAYERS (6) HX_PF_HIDDEN (256) HX_PF_HEADS (8) HX_PF_SEQ (512) HX_PF_MBS (8)
#        HX_PF_GBS (32): one micro-batch of 4096 tokens per rank, so compute (~3 s a step on
#        four ranks sharing two cores) outweighs the link: a layer's parameters are 3.1 MB,
#        each gather moves ~2.3 MB across the 1 Gbit/s link per direction, and ZeRO-3
#        reduce-scatters every micro-batch's gradients on the same link (more micro-batches
#        per rank make the link the bottleneck).  About 2 minutes.  Needs root.  Exit: 0
#        parity passed, 1 parity failed or a run failed, 2 bad usage.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
netbed=$top/scripts/netbed
rounds=1 steps=6 rate=1gbit pfmem=16M out='' build=${HX_BUILDDIR:-}
L=${HX_PF_LAYERS:-6} C=${HX_PF_HIDDEN:-256} H=${HX_PF_HEADS:-8} T=${HX_PF_SEQ:-512}
MBS=${HX_PF_MBS:-8} GBS=${HX_PF_GBS:-32}
usage() {
    echo "prefetch: $*" >&2
    echo "usage: bench/prefetch.sh [--rounds N] [--steps N] [--rate R] [--prefetch-memory M]" \
        "[--out DIR] BUILD_DIR" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds | --steps | --rate | --prefetch-memory | --out)
            [ $# -ge 2 ] || usage "$1 needs a value"
            case "$1" in
                --rounds) rounds=$2 ;; --steps) steps=$2 ;; --rate) rate=$2 ;;
                --prefetch-memory) pfmem=$2 ;; --out) out=$2 ;;
            esac
            shift 2 ;;
        -h | --help) sed -n '3,/^set -u$/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
        -*) usage "unknown option '$1'" ;;
        *) build=$1; shift ;;
    esac
done
[[ $rounds =~ ^[1-9][0-9]*$ && $steps =~ ^[1-9][0-9]*$ && $steps -ge 3 ]] ||
    usage "--rounds and --steps take positive integers (--steps at least 3)"
[ -n "$build" ] || usage "give the build directory (BUILD_DIR or HX_BUILDDIR)"
helix=$(cd "$build" 2>/dev/null && pwd)/tools/helix
[ -x "$helix" ] || { echo "prefetch: error: no $build/tools/helix; build helix first" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "prefetch: error: needs root for scripts/netbed" >&2; exit 1; }
out=${out:-$(mktemp -d /tmp/hx-prefetch.XXXXXX)}
mkdir -p "$out" && out=$(cd "$out" && pwd) && cd "$out" || exit 1
common=(train --num-layers "$L" --hidden-size "$C" --num-attention-heads "$H" --seq-length "$T"
        --micro-batch-size "$MBS" --global-batch-size "$GBS" --train-iters "$steps" --seed 1234
        --eval-interval 0 --eval-iters 1 --sample-tokens 0 --log-interval 1 --progress-bar 0)
dist=(--zero-stage 3 --ranks-per-node 2 --comm-timeout 120)
export STARPU_NCPU=1 STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1 OPENBLAS_NUM_THREADS=1
export STARPU_HOME=$out/starpu_home
fail() { echo "prefetch: error: $*" >&2; exit 1; }
bed() { # NAME ARGS...: one 2+2-rank run on its own bed, always torn down
    local name=$1
    shift
    timeout -s TERM 900 "$netbed" run --rate "$rate" -- -np 4 "$helix" "$@" \
        >"$out/$name.log" 2>&1 ||
        { tail -20 "$out/$name.log" >&2; fail "run $name failed (log: $out/$name.log)"; }
}
echo "prefetch: L=$L C=$C heads=$H T=$T, global batch $GBS (micro $MBS), $steps steps; ZeRO-3," \
    "dp 4 on 2+2 ranks over a $rate link, --prefetch-memory $pfmem; logs in $out"
echo "prefetch: (a) serial reference"
STARPU_NCPU=$(nproc) "$helix" "${common[@]}" --log-json "$out/a.json" >"$out/a.log" 2>&1 ||
    fail "the serial run failed (log: $out/a.log)"
echo "prefetch: (a2) serial reference, one row tile per micro-batch (the parity envelope)"
STARPU_NCPU=$(nproc) "$helix" "${common[@]}" --tile-seqs "$MBS" --log-json "$out/a2.json" \
    >"$out/a2.log" 2>&1 || fail "the serial run in the second order failed (log: $out/a2.log)"
for r in $(seq "$rounds"); do
    echo "prefetch: round $r"
    bed "b$r" "${common[@]}" "${dist[@]}" --sched hx-prefetch --prefetch-memory "$pfmem" \
        --log-json "$out/b$r.json" --trace "$out/b$r.trace"
    bed "c$r" "${common[@]}" "${dist[@]}" --sched serial-comm --prefetch-memory "$pfmem" \
        --log-json "$out/c$r.json" --trace "$out/c$r.trace"
    bed "d$r" "${common[@]}" "${dist[@]}" --sched hx-prio --log-json "$out/d$r.json" \
        --trace "$out/d$r.trace"
done
grep -h "^prefetch:" "$out/b1.log" | sed 's/^/prefetch: (b) /'
"$helix" trace summarize "$out/b1.trace" --baseline "$out/c1.trace" --json >"$out/eff.json" ||
    fail "helix trace summarize failed"
"$helix" trace summarize "$out/b1.trace" --baseline "$out/c1.trace" >"$out/summary_b.txt"
"$helix" trace svg "$out/b1.trace" -o "$out/hx-prefetch.svg" >/dev/null &&
    "$helix" trace svg "$out/c1.trace" -o "$out/serial-comm.svg" >/dev/null ||
    fail "helix trace svg failed"
python3 - "$out" "$rounds" "$top" <<'EOF'
import json, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, os.path.join(sys.argv[3], "bench"))
import parity_rule
def steps(name):
    return parity_rule.steps(out, name)
a = steps("a")
rule = parity_rule.Rule(sys.argv[3], a, steps("a2"))
names = {"b": "hx-prefetch", "c": "serial-comm (no overlap)", "d": "hx-prio (default)"}
ms, ok, worst, same = {}, True, 0.0, True
for k in "bcd":
    t = []
    for r in range(1, rounds + 1):
        recs = steps("%s%d" % (k, r))
        if sorted(recs) != sorted(a):
            print("parity: %s%d logged steps %s, serial %s" % (k, r, sorted(recs), sorted(a)))
            ok = False
            continue
        d, passed = rule.judge(recs)
        worst, ok = max(worst, d), ok and passed
        same = same and [recs[s]["loss"] for s in sorted(recs)] == \
            [steps("b1")[s]["loss"] for s in sorted(recs)]
        t += [x["ms"] for s, x in recs.items() if s > min(recs)]
    ms[k] = statistics.median(t)
print()
for k in "bcd":
    print("%-28s: %8.1f ms/step (median of %d steps)" % (names[k], ms[k],
                                                         rounds * (len(a) - 1)))
print("ratio serial-comm / hx-prefetch: %6.3f" % (ms["c"] / ms["b"]))
print("ratio hx-prio / hx-prefetch    : %6.3f" % (ms["d"] / ms["b"]))
eff = json.load(open(os.path.join(out, "eff.json")))["ranks"]
ag = [r["comm"].get("allgather", {}).get("efficiency") for r in eff]
ag = [x for x in ag if x is not None]
agc = [r["comm"]["allgather"] for r in eff if "allgather" in r["comm"]]
print("all-gather per step, hx-prefetch: %s ms in flight, %s ms exposed (rank 0..3)" % (
    "/".join("%.0f" % c["ms"] for c in agc), "/".join("%.0f" % c["exposed_ms"] for c in agc)))
print("all-gather overlap efficiency (1 - exposed / exposed under serial-comm) per rank: %s;"
      " mean %.1f%%" % (" ".join("%.1f%%" % (100 * x) for x in ag),
                        100 * statistics.mean(ag) if ag else float("nan")))
print("Flux overlap efficiency of the whole step per rank: %s" % " ".join(
    "%.3f" % r["overlap_efficiency"] if r["overlap_efficiency"] is not None else "n/a"
    for r in eff))
print("parity (loss per step vs serial, tests/README.md's rule): %s: %s"
      % (rule.describe(worst), "PASS" if ok else "FAIL"))
print("hx-prefetch, serial-comm and hx-prio losses bitwise equal: %s" % ("yes" if same else "NO"))
print("timelines: %s/hx-prefetch.svg, %s/serial-comm.svg" % (out, out))
sys.exit(0 if ok and same else 1)
EOF
