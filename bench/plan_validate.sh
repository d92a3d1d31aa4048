#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/plan_validate.sh: `helix plan` against measurement on this bed (issue 25, "Planner
# against measurement").  The plan of a model for 4 ranks, 2 a node, on machines/this-bed.machine
# (the link of scripts/netbed, measured) and devices/this-bed.device (this machine's cores,
# measured) lists every configuration it prices; each one without recomputation is then run
# as its command line says on scripts/netbed at --rate (one bed per run, the two nodes as
# network namespaces, the link shaped by tc) and its median step time measured (steps 2..N).
# Printed: every configuration's predicted and measured step times side by side, Spearman's
# rank correlation between them, and how far the plan's first choice is from the best
# measured (acceptance: within 10%).
#
# The bed's four ranks share the machine's cores (the two "nodes" are namespaces of one
# machine): the plan is told so (--shared-cores, the machine's core count), and a step then
# takes at least every rank's compute over those cores.  The collectives are first measured
# on the bed (`helix plan --measure`, into --out's comm.txt; `--comm` gives them to the plan).
# Nothing is fitted to the training runs.
#
#   bench/plan_validate.sh [--steps N] [--rate R] [--out DIR] [--limit K] [--rounds R]
#                          [--replan] [--reuse DIR] [BUILD_DIR]
#     --steps N   training steps a run, the first not timed (default 6)
#     --rate R    the link between the nodes, tc units (default 1gbit)
#     --out DIR   the plan, logs and JSON (default a new /tmp/hx-plan-validate.XXXXXX)
#     --limit K   run only the plan's first K configurations (default all)
#     --rounds R  run every configuration R times, each round in another order (default 3);
#                 a configuration's time is the median of its rounds' medians
#     --replan    run nothing: plan again and compare with the runs already in --out (their
#                 configurations are those of --out's runs.txt)
#     --reuse DIR take the runs of an earlier --out DIR (same model and rate) for the
#                 configurations it measured, and run only the plan's new ones
#   Model (environment): HX_PV_LAYERS (4) HX_PV_HIDDEN (256) HX_PV_HEADS (8) HX_PV_SEQ (128)
#     HX_PV_GBS (16): 3.2M parameters, 13 MB of fp32 gradients, ~40 GFLOP a step.
# Needs root (network namespaces) and python3.  Builds nothing.  Exit 0 when every run
# finished, 1 otherwise, 2 bad usage.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
netbed=$top/scripts/netbed
steps=6 rate=1gbit out='' limit=0 replan=0 rounds=3 reuse='' build=${HX_BUILDDIR:-}
L=${HX_PV_LAYERS:-4} C=${HX_PV_HIDDEN:-256} H=${HX_PV_HEADS:-8} T=${HX_PV_SEQ:-128}
GBS=${HX_PV_GBS:-16}
usage() {
    echo "plan_validate: $*" >&2
    echo "usage: bench/plan_validate.sh [--steps N] [--rate R] [--out DIR] [--limit K]" \
        "[--rounds R] [--replan] [--reuse DIR] [BUILD_DIR]" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
        --steps) [ $# -ge 2 ] || usage "--steps needs a value"; steps=$2; shift 2 ;;
        --rate) [ $# -ge 2 ] || usage "--rate needs a value"; rate=$2; shift 2 ;;
        --out) [ $# -ge 2 ] || usage "--out needs a value"; out=$2; shift 2 ;;
        --limit) [ $# -ge 2 ] || usage "--limit needs a value"; limit=$2; shift 2 ;;
        --replan) replan=1; shift ;;
        --reuse) [ $# -ge 2 ] || usage "--reuse needs a value"; reuse=$2; shift 2 ;;
        --rounds) [ $# -ge 2 ] || usage "--rounds needs a value"; rounds=$2; shift 2 ;;
        -*) usage "unknown option $1" ;;
        *) build=$1; shift ;;
    esac
done
helix=${build:-$top/build}/tools/helix
[ -x "$helix" ] || usage "no $helix: give the build directory"
case $steps in '' | *[!0-9]*) usage "--steps '$steps' is not a number" ;; esac
[ "$steps" -ge 3 ] || usage "--steps must be at least 3 (the first is not timed)"
out=${out:-$(mktemp -d /tmp/hx-plan-validate.XXXXXX)}
mkdir -p "$out" || exit 1
if [ -n "$reuse" ] && [ ! -s "$out/comm.txt" ]; then # the earlier runs' bed, as measured
    cp "$reuse/comm.txt" "$out/comm.txt" || exit 1
fi

MODEL="--num-layers $L --hidden-size $C --num-attention-heads $H --seq-length $T
 --vocab-size 256 --global-batch-size $GBS"
# the bed's collectives, measured on it (helix plan --measure), unless --out has them
if [ ! -s "$out/comm.txt" ]; then
    NB_RANKS_PER_NODE=2 timeout -s TERM 600 "$netbed" run --rate "$rate" -- -np 4 \
        "$helix" plan --measure "$out/comm.txt" --gpus-per-node 2 >"$out/measure.log" 2>&1 ||
        { echo "plan_validate: helix plan --measure failed: $out/measure.log" >&2; exit 1; }
fi
# shellcheck disable=SC2086  # the flags are words
"$helix" plan --machine "$top/machines/this-bed.machine" --device "$top/devices/this-bed.device" \
    --gpus 4 --gpus-per-node 2 --shared-cores "$(nproc)" --comm "$out/comm.txt" \
    --recompute-activations none $MODEL --top 10000 >"$out/plan.txt" ||
    { echo "plan_validate: helix plan failed" >&2; exit 1; }
status=0
if [ "$replan" = 0 ]; then
    cp "$out/plan.txt" "$out/runs.txt" # run k is configuration k of this plan
    n=$(sed -n 's/^ *\([0-9][0-9]*\)  mpirun -np 4 helix train .*/\1/p' "$out/runs.txt" | tail -1)
    [ "$limit" -gt 0 ] && [ "$limit" -lt "$n" ] && n=$limit
    todo=$(seq 1 "$n")
    if [ -n "$reuse" ]; then # an earlier run's measurements, renumbered to this plan's rows
        todo=$(python3 - "$reuse" "$out" "$n" <<'PY'
import os, re, shutil, sys
old, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def rows(path):
    r = {}
    for l in open(path):
        f = l.split()
        if len(f) > 20 and f[0].isdigit() and re.match(r"^\d+(x\d+x\d+)?$", f[1]):
            r[tuple(f[1:11])] = int(f[0])
    return r
was, now = rows(os.path.join(old, "runs.txt")), rows(os.path.join(out, "runs.txt"))
for key, k in sorted(now.items(), key=lambda kv: kv[1]):
    j = was.get(key)
    files = [x for x in os.listdir(old) if j and x.startswith("run%d.r" % j)]
    for x in files:
        shutil.copy(os.path.join(old, x), os.path.join(out, "run%d.%s" % (k, x.split(".", 1)[1])))
    if not files and k <= n:
        print(k)
PY
)
        n=$(echo "$todo" | grep -c .)
    fi
    echo "plan_validate: $n configurations on netbed at $rate, $rounds rounds of $steps steps;" \
        "out $out"
    mapfile -t ks <<<"$todo"
    for r in $(seq 1 "$rounds"); do
        # round r starts at configuration r x n / rounds: none is always first or last
        for i in $(seq 0 $((n - 1))); do
            k=${ks[$(((i + (r - 1) * n / rounds) % n))]}
            line=$(sed -n "s/^ *$k  mpirun -np 4 helix train //p" "$out/runs.txt")
            # shellcheck disable=SC2086
            NB_RANKS_PER_NODE=2 timeout -s TERM 900 "$netbed" run --rate "$rate" -- -np 4 \
                "$helix" train $line --train-iters "$steps" --eval-interval 0 --eval-iters 1 \
                --sample-tokens 0 --progress-bar 0 --log-json "$out/run$k.r$r.json" \
                >"$out/run$k.r$r.log" 2>&1 ||
                { echo "run $k round $r failed: $out/run$k.r$r.log" >&2; status=1; }
        done
        echo "round $r done"
    done
fi

python3 - "$out" <<'PY'
import json, os, re, statistics, sys
out = sys.argv[1]
def table(path):  # configuration key -> (its number, its row's fields)
    rows = {}
    for l in open(path):
        f = l.split()
        if len(f) > 20 and f[0].isdigit() and re.match(r"^\d+(x\d+x\d+)?$", f[1]):
            rows[tuple(f[1:7] + f[7:11])] = (int(f[0]), f)
    return rows
runs, plan = table(os.path.join(out, "runs.txt")), table(os.path.join(out, "plan.txt"))
pred, meas, names = [], [], []
for key, (k, f) in sorted(plan.items(), key=lambda kv: kv[1][0]):
    if key not in runs:
        continue
    rounds = []  # each round's median step, its first step not timed
    for name in sorted(os.listdir(out)):
        if name.startswith("run%d." % runs[key][0]) and name.endswith(".json"):
            ms = [r["ms"] for r in map(json.loads, open(os.path.join(out, name))) if "ms" in r]
            if len(ms) >= 2:
                rounds.append(statistics.median(ms[1:]))
    if not rounds:
        continue
    names.append("tp %s pp %s %s dp %s mbs %s %s (%s,%s,%s)" % (f[1], f[2], f[3], f[4], f[5],
                 f[10], f[7], f[8], f[9]))
    pred.append(float(f[12]))
    meas.append(statistics.median(rounds))
def ranks(x):
    order = sorted(range(len(x)), key=lambda i: x[i])
    r = [0.0] * len(x)
    i = 0
    while i < len(order):  # ties share their mean rank
        j = i
        while j + 1 < len(order) and x[order[j + 1]] == x[order[i]]:
            j += 1
        for q in range(i, j + 1):
            r[order[q]] = (i + j) / 2.0
        i = j + 1
    return r
print("  # configuration                                   predicted_ms measured_ms  ratio")
for i in range(len(pred)):
    print("%3d %-48s %12.1f %11.1f %6.2f" % (i + 1, names[i], pred[i], meas[i],
                                               meas[i] / pred[i]))
if len(pred) >= 3:
    rp, rm = ranks(pred), ranks(meas)
    mp, mm = statistics.mean(rp), statistics.mean(rm)
    cov = sum((a - mp) * (b - mm) for a, b in zip(rp, rm))
    sd = (sum((a - mp) ** 2 for a in rp) * sum((b - mm) ** 2 for b in rm)) ** 0.5
    best = min(meas)
    print("Spearman rank correlation (predicted, measured): %.3f over %d configurations"
          % (cov / sd if sd else float("nan"), len(pred)))
    print("the plan's first choice measured %.1f ms, the best measured %.1f ms (%s): %.1f%% "
          "slower (acceptance: within 10%%)" % (meas[0], best, names[meas.index(best)],
                                                100 * (meas[0] / best - 1)))
PY
exit $status
