#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/strands.sh: DHelix on the emulated two-node cluster (issue 6, last acceptance line).
# 2+2 ranks over scripts/netbed (1 Gbit/s between the nodes), tensor parallelism across the
# link (tp 2: one rank per node, --map-by node) and 2 pipeline stages, the same model, data,
# seed and global batch in every run:
#   (a) the serial reference (1 rank): the losses every run must reproduce, within the
#       tolerance rule of every parity test (tests/README.md, bench/parity_rule.py), whose
#       envelope is (a2), the same serial run in a second summation order;
#   (b) 1F1B, no strands (--sched hx-prio);
#   (c) Wavelet+: the folded W with two strands interleaved round-robin (papers.md §2.7:
#       DHelix's Wavelet+ reuses the folding; --pipeline-fold --strands --sched hx-wavelet);
#   (d) hx-strand: the folded W, two strands, the pairing plan of `helix plan-strands` from a
#       `helix profile-overlap` table measured on this bed (4 ranks, tp 2 across the link),
#       executed by --sched hx-strand;
#   (e) the folded W alone (no strands, hx-prio): what of (d)'s time is the W's order and
#       what is the strands' and the plan's.
# Reported: each run's median step time (all rounds' steps pooled); with --rounds > 1 also
# each round's median and the per-round ratios (b)/(d) and (c)/(d), their geometric mean
# with its 95% confidence interval (Student's t on the log ratios; "level" when it holds 1)
# and the rounds hx-strand won (rounds move by up to 10% with the machine's noise, so a
# verdict takes ~10 rounds); the ratios of the pooled medians; the share of communication
# time that overlapped compute on rank 0 (`helix trace summarize` of the --trace: time some
# collective was in flight while a compute task ran, over the time some collective was in
# flight; a pipeline's receive is in flight from its post); how much the two strands
# co-ran (per rank, the time both strands' tasks ran over the time either's did); the
# plan's predicted saving against the measured one, and each plan step's predicted time
# against its measured one on rank 0 (with the wait at the barrier before it); what bounds a
# step on this bed: the serial run's step (compute alone, all cores), the tp collectives'
# bytes across the link over the rate, and how busy the cores were through each run (and in
# the kernel, where the bed's TCP runs); and the parity check.
#
#   bench/strands.sh [--rounds N] [--steps N] [--rate R] [--out DIR] BUILD_DIR
# Model: HX_ST_LAYERS (12) HX_ST_HIDDEN (256) HX_ST_HEADS (8) HX_ST_SEQ (64) HX_ST_MBS (2)
#        HX_ST_GBS (16).  Needs root (network namespaces).  Exit: 0 parity passed, 1 parity
#        failed or a run failed, 2 bad usage.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
netbed=$top/scripts/netbed
rounds=1 steps=6 rate=1gbit out='' build=${HX_BUILDDIR:-}
L=${HX_ST_LAYERS:-12} C=${HX_ST_HIDDEN:-256} H=${HX_ST_HEADS:-8} T=${HX_ST_SEQ:-64}
MBS=${HX_ST_MBS:-2} GBS=${HX_ST_GBS:-16}
usage() {
    echo "strands: $*" >&2
    echo "usage: bench/strands.sh [--rounds N] [--steps N] [--rate R] [--out DIR] BUILD_DIR" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds | --steps | --rate | --out)
            [ $# -ge 2 ] || usage "$1 needs a value"
            case "$1" in
                --rounds) rounds=$2 ;; --steps) steps=$2 ;; --rate) rate=$2 ;; --out) out=$2 ;;
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
[ -x "$helix" ] || { echo "strands: error: no $build/tools/helix; build helix first" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "strands: error: needs root for scripts/netbed" >&2; exit 1; }
out=${out:-$(mktemp -d /tmp/hx-strands.XXXXXX)}
mkdir -p "$out" && out=$(cd "$out" && pwd) && cd "$out" || exit 1
model=(--num-layers "$L" --hidden-size "$C" --num-attention-heads "$H" --seq-length "$T"
       --micro-batch-size "$MBS")
common=(train "${model[@]}" --global-batch-size "$GBS" --train-iters "$steps" --seed 1234
        --eval-interval 0 --eval-iters 1 --sample-tokens 0 --log-interval 1 --progress-bar 0)
# tp 2 across the link: --map-by node puts ranks 0, 2 on nodeA and 1, 3 on nodeB, so each
# tp pair (r, r+1) spans the nodes; helix is told one rank per node (its placement model is
# contiguous blocks), which marks the tp channel inter-node, as it is.
dist=(--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --ranks-per-node 1
      --comm-timeout 120)
export STARPU_NCPU=2 STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1 OPENBLAS_NUM_THREADS=1
export STARPU_HOME=$out/starpu_home
fail() { echo "strands: error: $*" >&2; exit 1; }
cpu_ticks() { head -1 /proc/stat; } # "cpu user nice system idle iowait irq softirq steal ..."
bed() { # NAME NP ARGS...: one run on its own bed, always torn down; NAME.cpu gets the
        # machine's /proc/stat line before and after it (how busy the cores were)
    local name=$1 np=$2
    shift 2
    cpu_ticks >"$out/$name.cpu"
    timeout -s TERM 900 "$netbed" run --rate "$rate" -- -np "$np" --map-by node "$helix" "$@" \
        >"$out/$name.log" 2>&1 || { tail -20 "$out/$name.log" >&2; fail "run $name failed (log: $out/$name.log)"; }
    cpu_ticks >>"$out/$name.cpu"
}
echo "strands: L=$L C=$C heads=$H T=$T, global batch $GBS (micro $MBS), $steps steps; pp 2 x tp 2" \
    "on 2+2 ranks, tp across a $rate link; logs in $out"
echo "strands: (a) serial reference"
STARPU_NCPU=$(nproc) "$helix" "${common[@]}" --log-json "$out/a.json" >"$out/a.log" 2>&1 ||
    fail "the serial run failed (log: $out/a.log)"
echo "strands: (a2) serial reference, one row tile per micro-batch (the parity envelope)"
STARPU_NCPU=$(nproc) "$helix" "${common[@]}" --tile-seqs "$MBS" --log-json "$out/a2.json" \
    >"$out/a2.log" 2>&1 || fail "the serial run in the second order failed (log: $out/a2.log)"
# The table is measured on the runs' 4 ranks, as tp 2 x dp 2: both tp pairs cross the link
# and share the cores at once, as the two stages do in the runs.  Profiled on one tp pair
# alone (2 ranks) a layer pair measured 7.2 ms sequential against 10.6-11.8 ms here, and
# the runs' chunk passes take the latter's time.
echo "strands: profile-overlap on the bed (4 ranks: tp 2 across the link, x2)"
bed profile 4 profile-overlap "${model[@]}" --num-micro-batches 8 --layer $((L / 2)) \
    --tensor-model-parallel-size 2 --ranks-per-node 1 --repeats 5 --out "$out/overlap.json"
"$helix" plan-strands --profile "$out/overlap.json" --out "$out/plan.json" >"$out/plan.log" 2>&1 ||
    { cat "$out/plan.log" >&2; fail "plan-strands failed"; }
grep "^predicted makespan" "$out/plan.log" | sed 's/^/strands: plan: /'
for r in $(seq "$rounds"); do
    echo "strands: round $r"
    bed "b$r" 4 "${common[@]}" "${dist[@]}" --sched hx-prio --log-json "$out/b$r.json" \
        --trace "$out/b$r.trace"
    bed "c$r" 4 "${common[@]}" "${dist[@]}" --pipeline-fold --strands --sched hx-wavelet \
        --log-json "$out/c$r.json" --trace "$out/c$r.trace"
    bed "d$r" 4 "${common[@]}" "${dist[@]}" --pipeline-fold --strands \
        --strand-plan "$out/plan.json" --sched hx-strand --log-json "$out/d$r.json" \
        --trace "$out/d$r.trace"
    bed "e$r" 4 "${common[@]}" "${dist[@]}" --pipeline-fold --sched hx-prio \
        --log-json "$out/e$r.json" --trace "$out/e$r.trace"
done
for k in b c d e; do
    "$helix" trace summarize --json "$out/${k}1.trace" >"$out/${k}1.summary.json" ||
        fail "helix trace summarize $out/${k}1.trace failed"
done
python3 - "$out" "$rounds" "$rate" "$(nproc)" "$top" <<'EOF'
import json, math, os, re, statistics, sys
out, rounds, rate, ncores = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
sys.path.insert(0, os.path.join(sys.argv[5], "bench"))
import parity_rule
from bench_stats import ratio_ci, steady  # the paired rounds' statistics
def steps(name):
    return parity_rule.steps(out, name)
def hidden(name):  # rank 0, per step: (hidden share, collective time in flight) from
    # helix trace summarize: unions of task intervals, a collective from post to completion
    r = json.load(open(os.path.join(out, name + ".summary.json")))["ranks"][0]
    return r["hidden_share"] if r["hidden_share"] is not None else math.nan, r["comm_ms"]
def corun(name):  # per rank: of the time some strand works, the share both do
    rs = json.load(open(os.path.join(out, name + ".summary.json")))["ranks"]
    return [r["strands"]["corun_share"] if r.get("strands") else math.nan for r in rs]
a = steps("a")
rule = parity_rule.Rule(sys.argv[5], a, steps("a2"))
names = {"b": "1F1B", "c": "Wavelet+ (W, round-robin strands)", "e": "folded W alone",
         "d": "hx-strand (W + strands + plan)"}
short = {"b": "1F1B", "c": "Wavelet+", "e": "W alone", "d": "hx-strand"}
ms, hid, ok, worst = {}, {}, True, 0.0
per_round = {}  # k -> each round's median: the spread between rounds is the machine's noise
for k in "bced":
    t = []
    per_round[k] = []
    for r in range(1, rounds + 1):
        recs = steps("%s%d" % (k, r))
        if sorted(recs) != sorted(a):
            print("parity: %s%d logged steps %s, serial %s" % (k, r, sorted(recs), sorted(a)))
            ok = False
            continue
        d, passed = rule.judge(recs)
        worst, ok = max(worst, d), ok and passed
        rt = steady(recs)
        t += rt
        per_round[k].append(statistics.median(rt))
    ms[k] = statistics.median(t)
    hid[k] = hidden("%s1" % k)
plan = json.load(open(os.path.join(out, "plan.json")))
pairs = [int(x) for x in re.findall(r"in (\d+) \(backward, forward\) layer pairs.*: (\d+) of them",
                                    open(os.path.join(out, "d1.log")).read())[0]]
saved = pairs[1] * (plan["sequential_ms"] - plan["predicted_ms"])
print()
for k in "bced":
    print("%-33s: %8.1f ms/step; rank 0: collectives in flight %.1f ms a step, %4.1f%% of it "
          "under compute" % (names[k], ms[k], hid[k][1], 100 * hid[k][0]))
print("strands co-run, per rank (both at work / either at work, round 1): Wavelet+ %s; "
      "hx-strand %s" % tuple(" ".join("%.0f%%" % (100 * x) for x in corun(k + "1")) for k in "cd"))
if rounds > 1:
    print("per round (median ms/step)        : " + "; ".join(
        "%s %s" % (short[k], " ".join("%.1f" % v for v in per_round[k])) for k in "bced"))
    for k in "bc":  # paired by round: the rounds share the machine's moods, so the ratio
        # of one round's medians is steadier than the ratio of the pooled medians
        q = [x / d for x, d in zip(per_round[k], per_round["d"]) if d > 0]
        gm, ci = ratio_ci(q)
        verdict = ("" if ci is None else "; hx-strand faster" if ci[0] > 1 else
                   "; hx-strand slower" if ci[1] < 1 else "; level (the interval holds 1)")
        print("per round %-8s / hx-strand    : %s; geometric mean %.3f%s, hx-strand shorter in "
              "%d of %d rounds%s" % (short[k], " ".join("%.3f" % x for x in q), gm,
                                     "" if ci is None else " (95%% CI %.3f-%.3f)" % ci,
                                     sum(x > 1 for x in q), len(q), verdict))
print("ratio 1F1B / hx-strand            : %8.3f" % (ms["b"] / ms["d"]))
print("ratio Wavelet+ / hx-strand        : %8.3f" % (ms["c"] / ms["d"]))
print("ratio W alone / hx-strand         : %8.3f (what strands and plan add to the W)"
      % (ms["e"] / ms["d"]))
# What bounds a step here.  Communication can only be hidden while neither resource it needs
# is full: the cores (four ranks' workers, progress threads and the kernel's TCP share them)
# and the link.  Floors per step: the serial run (all cores, no communication), and the
# tp collectives' payload crossing the link (with --map-by node every tp pair spans the two
# nodes; a 2-rank all-reduce of n bytes sends n each way), summed over one node's ranks of
# the round-1 1F1B trace, at the shaped rate (headers not counted).
def rate_Bps(r):  # tc's units: bit, kbit, mbit, gbit (10^3 steps); bps, kbps, ... are bytes
    m = re.fullmatch(r"([0-9.]+)([kmg]?)(bit|bps)", r.lower())
    if not m:
        return None
    v = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)]
    return v / 8 if m.group(3) == "bit" else v
def busy(name):  # shares of the machine's core time over one run (start-up included): not
    # idle, and in the kernel (system, irq, softirq: mostly TCP over the bed's veth and qdiscs)
    t = [[int(x) for x in l.split()[1:9]] for l in open(os.path.join(out, name + ".cpu"))]
    d = [y - x for x, y in zip(t[0], t[1])]
    n = sum(d) or math.nan
    return 1 - (d[3] + d[4]) / n, (d[2] + d[5] + d[6]) / n
node_of, link = {}, {}
for e in json.load(open(os.path.join(out, "b1.trace")))["traceEvents"]:
    x = e.get("args", {})
    if e.get("name") == "process_name":
        node_of[e["pid"]] = re.search(r"\((.*)\)", x.get("name", "()")).group(1)
    elif e.get("ph") == "X" and x.get("collective") and x.get("channel", "").startswith("tp") \
            and x.get("step", -1) >= 0:
        link.setdefault(x["rank"], {}).setdefault(x["step"], 0)
        link[x["rank"]][x["step"]] += x["bytes"]
first = min(node_of.values()) if node_of else None
per_step = [sum(v.get(st, 0) for r, v in link.items() if node_of.get(r) == first)
            for st in sorted({st for v in link.values() for st in v})]
mb = statistics.median(per_step) / 1e6 if per_step else math.nan
bps = rate_Bps(rate)
serial = statistics.median(steady(a))
print("bounds per step: compute alone (the serial run on all %d cores) %.1f ms; the link: %.1f "
      "MB of tp collectives each way at %s, %s; the cores busy (over each whole run, medians "
      "of the rounds): %s" % (
          ncores, serial, mb, rate,
          "%.1f ms" % (1e3 * mb * 1e6 / bps) if bps else "rate not parsed",
          ", ".join("%s %.0f%% (kernel %.0f%%)" % ((short[k],) + tuple(
              100 * statistics.median(busy("%s%d" % (k, r))[i] for r in range(1, rounds + 1))
              for i in (0, 1))) for k in "bced")))
print("plan: one layer pair %.3f ms predicted against %.3f ms sequential; applied to %d of %d "
      "pairs on rank 0: predicted saving %.1f ms/step; measured: %.1f ms/step against the W "
      "alone" % (plan["predicted_ms"], plan["sequential_ms"], pairs[1], pairs[0], saved,
                 ms["e"] - ms["d"]))
# The plan step by step on rank 0 (round 1's trace): a step runs from its first task's
# start to its last task's end; the wait before it is from the previous step's last end to
# its first start (the barrier's own latency).  Medians over the planned layer pairs.
spans = {}  # (step, block) -> {segment: [start, end]}
for e in json.load(open(os.path.join(out, "d1.trace")))["traceEvents"]:
    x = e.get("args", {})
    if e.get("ph") == "X" and x.get("rank") == 0 and x.get("block", -1) >= 0 and x["step"] >= 1:
        s = spans.setdefault((x["step"], x["block"]), {}).setdefault(x["segment"], [math.inf, -math.inf])
        s[0], s[1] = min(s[0], e["ts"]), max(s[1], e["ts"] + e["dur"])
took, wait, whole = {}, {}, []
for segs in spans.values():
    if sorted(segs) != list(range(len(plan["steps"]))):
        continue
    for k in segs:
        took.setdefault(k, []).append((segs[k][1] - segs[k][0]) / 1000)
        if k > 0:
            wait.setdefault(k, []).append((segs[k][0] - segs[k - 1][1]) / 1000)
    whole.append((segs[len(segs) - 1][1] - segs[0][0]) / 1000)
if whole:
    print("plan steps on rank 0 (round 1, medians over %d layer pairs): predicted / measured ms, "
          "wait at the barrier before it" % len(whole))
    for k, st in enumerate(plan["steps"]):
        print("  step %2d (%-7s): %7.3f / %7.3f%s" % (
            k + 1, "co-run" if st["forward"] and st["backward"] else "alone",
            st["predicted_ms"], statistics.median(took[k]),
            "; %.3f" % statistics.median(wait[k]) if k in wait else ""))
    print("  layer pair       : %7.3f / %7.3f (first start to last end)"
          % (plan["predicted_ms"], statistics.median(whole)))
print("parity (loss per step vs serial, tests/README.md's rule): %s: %s"
      % (rule.describe(worst), "PASS" if ok else "FAIL"))
sys.exit(0 if ok else 1)
EOF
