#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/ddp_overlap.sh: does bucketed gradient all-reduce overlapping the backward pay off on a
# slow network?  On the emulated two-node cluster of scripts/netbed (2+2 ranks, shared memory
# inside a node, a 1 Gbit/s link between the nodes), a dp=4 `helix train` with
# --overlap-grad-reduce is timed against the same run with --no-overlap-grad-reduce (every
# gradient collective after the whole backward), alternating the two for several rounds, and
# both are checked against a single-rank run of the same global batch: the loss of every step
# within the tolerance rule of every parity test (tests/README.md; bench/parity_rule.py: a
# second serial run in another summation order gives the envelope).  Issue 5, last acceptance
# line.
#
#   bench/ddp_overlap.sh [options] [BUILD_DIR]      (BUILD_DIR or $HX_BUILDDIR: tools/helix)
#     --rounds N        b/c pairs, alternating order (default 3)
#     --steps N         training steps per run; the first is not timed (default 6)
#     --rate R          inter-node link, tc units (default 1gbit)
#     --delay-us N      one-way delay added to the link (default 0)
#     --bucket-size N   --ddp-bucket-size of both runs, elements (default 1000000)
#     --out DIR         keep logs and JSON here (default: a new /tmp/hx-ddp-overlap.XXXXXX)
#   Model: HX_DDP_LAYERS (4) HX_DDP_HIDDEN (512) HX_DDP_HEADS (8) HX_DDP_SEQ (128)
#          HX_DDP_MBS (4) HX_DDP_GBS (16): ~12.8M parameters, 51 MB of fp32 gradients a step,
#          one micro-batch of 4 x 128 tokens per rank: ~0.8 s of compute per step against
#          >= 0.5 s of all-reduce over the link (what MPI_Iallreduce of 48 MiB takes there).
# Needs root (network namespaces) and a helix built with distributed training.  Builds nothing.
# Exit: 0 parity passed, 1 parity failed or a run failed, 2 bad usage, 77 helix lacks the flags.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
netbed=$top/scripts/netbed
rounds=3 steps=6 rate=1gbit delay=0 bucket=1000000 out='' build=${HX_BUILDDIR:-}
L=${HX_DDP_LAYERS:-4} C=${HX_DDP_HIDDEN:-512} H=${HX_DDP_HEADS:-8} T=${HX_DDP_SEQ:-128}
MBS=${HX_DDP_MBS:-4} GBS=${HX_DDP_GBS:-16}

usage() {
    echo "ddp_overlap: $*" >&2
    echo "usage: bench/ddp_overlap.sh [--rounds N] [--steps N] [--rate R] [--delay-us N]" \
        "[--bucket-size N] [--out DIR] [BUILD_DIR]  (or HX_BUILDDIR)" >&2
    exit 2
}
posint() { [[ $2 =~ ^[1-9][0-9]*$ ]] || usage "$1 needs a positive integer, not '$2'"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds | --steps | --rate | --delay-us | --bucket-size | --out)
            [ $# -ge 2 ] || usage "$1 needs a value"
            case "$1" in
                --rounds) posint "$1" "$2"; rounds=$2 ;;
                --steps) posint "$1" "$2"; steps=$2 ;;
                --rate) rate=$2 ;;
                --delay-us) delay=$2 ;;
                --bucket-size) posint "$1" "$2"; bucket=$2 ;;
                --out) out=$2 ;;
            esac
            shift 2 ;;
        -h | --help) sed -n '3,/^set -u$/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
        -*) usage "unknown option '$1'" ;;
        *) [ -z "${build_arg:-}" ] || usage "more than one BUILD_DIR"; build_arg=$1; build=$1; shift ;;
    esac
done
[ "$steps" -ge 3 ] || usage "--steps must be at least 3 (the first step is not timed)"
[ -n "$build" ] || usage "give the build directory (BUILD_DIR argument or HX_BUILDDIR)"
helix=$(cd "$build" 2>/dev/null && pwd)/tools/helix
[ -x "$helix" ] || { echo "ddp_overlap: error: no $build/tools/helix; build helix there first" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "ddp_overlap: error: needs root for scripts/netbed (network namespaces); rerun as root" >&2; exit 1; }
help=$("$helix" train --help 2>&1)
for f in overlap-grad-reduce ddp-bucket-size ranks-per-node tensor-model-parallel-size \
    comm-timeout; do
    if ! grep -q -- "$f" <<<"$help"; then
        echo "ddp_overlap: skipped: '$helix train' has no $f (distributed training not built in)" >&2
        exit 77
    fi
done
# Debian's python3 has numpy (scripts/setup); another python3 works too, only slower
py=$(command -v /usr/bin/python3 || command -v python3) ||
    { echo "ddp_overlap: error: needs python3 (apt-get install python3)" >&2; exit 1; }
if [ -z "$out" ]; then
    out=$(mktemp -d /tmp/hx-ddp-overlap.XXXXXX) || exit 1
else
    mkdir -p "$out" || exit 1
    out=$(cd "$out" && pwd)
fi
cd "$out" || exit 1

# Every run: the same model, data, seed and global batch.  No sample, one validation batch.
common=(train --num-layers "$L" --hidden-size "$C" --num-attention-heads "$H" --seq-length "$T"
        --micro-batch-size "$MBS" --global-batch-size "$GBS" --train-iters "$steps"
        --seed 1234 --eval-interval 0 --eval-iters 1 --sample-tokens 0 --log-interval 1
        --progress-bar 0)
dist=(--tensor-model-parallel-size 1 --ranks-per-node 2 --comm-timeout 120)
# one rank per CPU worker: 4 ranks share the 2 cores; OpenBLAS single-threaded
export STARPU_NCPU=1 STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1 OPENBLAS_NUM_THREADS=1
export STARPU_HOME=$out/starpu_home

fail() { echo "ddp_overlap: error: $*" >&2; exit 1; }

echo "ddp_overlap: model L=$L C=$C heads=$H T=$T, global batch $GBS (micro $MBS), $steps steps;" \
    "dp=4 on 2+2 ranks, link $rate$([ "$delay" = 0 ] || echo " +${delay}us"); logs in $out"

load0=$(cut -d' ' -f1 /proc/loadavg)
# (a) the serial reference: one rank, the whole global batch, all cores
echo "ddp_overlap: (a) serial reference, 1 rank"
STARPU_NCPU=$(nproc) OPENBLAS_NUM_THREADS=1 timeout 600 "$helix" "${common[@]}" \
    --log-json "$out/a.json" --save "$out/ckpt_a" >"$out/a.log" 2>&1 ||
    { tail -20 "$out/a.log" >&2; fail "the serial run failed (log: $out/a.log)"; }
# (a2) the same in a second summation order: the parity rule's envelope
echo "ddp_overlap: (a2) serial reference, one row tile per micro-batch (the parity envelope)"
STARPU_NCPU=$(nproc) OPENBLAS_NUM_THREADS=1 timeout 600 "$helix" "${common[@]}" \
    --tile-seqs "$MBS" --log-json "$out/a2.json" >"$out/a2.log" 2>&1 ||
    { tail -20 "$out/a2.log" >&2; fail "the serial run in the second order failed (log: $out/a2.log)"; }

# (b) overlapped, (c) serialized: one bed per run, always torn down by netbed run
run_dist() { # NAME FLAGS...: round 1 also saves a checkpoint, for the parameter check
    local name=$1 save=()
    shift
    case "$name" in b1 | c1) save=(--save "$out/ckpt_$name") ;; esac
    timeout -s TERM 600 "$netbed" run --rate "$rate" --delay-us "$delay" -- -np 4 \
        "$helix" "${common[@]}" "${dist[@]}" "$@" --log-json "$out/$name.json" \
        "${save[@]}" >"$out/$name.log" 2>&1 ||
        { tail -30 "$out/$name.log" >&2; fail "run $name failed (log: $out/$name.log)"; }
}
for r in $(seq "$rounds"); do
    b=("b$r" --ddp-bucket-size "$bucket" --overlap-grad-reduce)
    c=("c$r" --ddp-bucket-size "$bucket" --no-overlap-grad-reduce)
    if [ $((r % 2)) -eq 1 ]; then order=(b c); else order=(c b); fi
    for x in "${order[@]}"; do
        if [ "$x" = b ]; then run_dist "${b[@]}"; else run_dist "${c[@]}"; fi
        echo "ddp_overlap: round $r: ($x) $([ "$x" = b ] && echo overlap || echo no-overlap) done"
    done
done

load1=$(cut -d' ' -f1 /proc/loadavg)
echo "ddp_overlap: load average $load0 before, $load1 after"
if awk -v a="$load0" -v b="$load1" 'BEGIN { exit !(a > 1.5 || b > 6) }'; then
    echo "ddp_overlap: warning: other programs were using the CPUs; the timings are noisy"
fi
"$py" - "$out" "$rounds" "$bucket" "$top" <<'EOF'
import json, math, os, statistics, struct, sys
try:
    import numpy as np
except ImportError:
    np = None

out, rounds, bucket = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sys.path.insert(0, os.path.join(sys.argv[4], "bench"))
import parity_rule

def steps(name):
    recs = {}
    with open(os.path.join(out, name + ".json")) as f:
        for line in f:
            line = line.strip()
            if line:
                o = json.loads(line)
                if "loss" in o:  # validation-only objects have no loss
                    recs[o["step"]] = o
    if not recs:
        sys.exit("ddp_overlap: error: no step lines in %s.json" % name)
    return recs

def step_ms(recs):  # median step time without the first step (warm-up, calibration)
    return statistics.median(r["ms"] for s, r in recs.items() if s > min(recs))

def params(name):  # {tensor name: floats} from the newest checkpoint (format: runtime/ckpt_format.h)
    d = os.path.join(out, "ckpt_" + name)
    try:
        files = sorted(x for x in os.listdir(d) if x.startswith("ckpt-") and x.endswith(".bin"))
    except OSError:
        return None
    if not files:
        return None
    b = open(os.path.join(d, files[-1]), "rb").read()
    if b[:8] != b"HXCKPT\0\0":
        return None
    _, hdr, payload, n = struct.unpack_from("<IIQI", b, 8)
    pos, res = hdr, {}
    for _ in range(n):
        nm = b[pos:pos + 48].split(b"\0")[0].decode()
        rows, cols = struct.unpack_from("<ii", b, pos + 48)
        pos += 56
        e = rows * cols
        res[nm] = (np.frombuffer(b, "<f4", e, pos) if np else struct.unpack_from("<%df" % e, b, pos))
        pos += 12 * e  # param, adam_m, adam_v
    return res

a = steps("a")
runs = {k: [steps("%s%d" % (k, r)) for r in range(1, rounds + 1)] for k in "bc"}
ms = {k: [step_ms(x) for x in v] for k, v in runs.items()}
# all timed steps of all rounds together: one slow step of a busy machine moves it less
med = {k: statistics.median(r["ms"] for x in v for s, r in x.items() if s > min(x))
       for k, v in runs.items()}
rule = parity_rule.Rule(sys.argv[4], a, steps("a2"))
ok = True
worst = {}
for k, v in runs.items():
    for r, recs in enumerate(v, 1):
        d, passed = rule.judge(recs)
        worst[k] = max(worst.get(k, 0.0), d)
        if not passed:
            print("parity: %s%d: worst relative loss difference %.2e > tolerance %.2e (steps %s,"
                  " the serial run's %s)" % (k, r, d, rule.tolerance, sorted(recs), sorted(a)))
            ok = False

print()
print("serial reference (a), 1 rank        : %8.1f ms/step" % step_ms(a))
for r in range(rounds):
    print("round %d                             : overlap %8.1f ms/step | no-overlap %8.1f ms/step"
          % (r + 1, ms["b"][r], ms["c"][r]))
nt = sum(len(x) - 1 for x in runs["b"])
print("(b) dp=4 overlap, bucket %-10d : %8.1f ms/step (median of %d steps, %d runs)"
      % (bucket, med["b"], nt, rounds))
print("(c) dp=4 no-overlap                 : %8.1f ms/step (median of %d steps, %d runs)"
      % (med["c"], sum(len(x) - 1 for x in runs["c"]), rounds))
ratio = med["c"] / med["b"]
print("ratio no-overlap / overlap          : %8.3f (%s)" % (
    ratio, "overlap is faster" if ratio > 1 else "overlap is NOT faster"))
pa = params("a")
if pa:
    for k in "bc":
        pk = params(k + "1")
        if pk is None or set(pk) != set(pa):
            print("final parameters (%s1 vs a)          : no comparable checkpoint" % k)
            continue
        def maxdiff(x, y):
            if np is not None:
                return float(np.max(np.abs(np.asarray(x) - np.asarray(y))))
            return max(abs(p - q) for p, q in zip(x, y))
        def maxabs(x):
            return float(np.max(np.abs(x))) if np is not None else max(map(abs, x))
        d, n = max((maxdiff(pk[n], pa[n]), n) for n in pa)
        top = max(maxabs(pa[n]) for n in pa)
        print("final parameters (%s1 vs a)          : max abs. difference %.2e (%s), %.2e of max |p|"
              % (k, d, n, d / top))
w = max(worst.values())
print("parity (loss per step vs serial, tests/README.md's rule): b %.2e, c %.2e; %s: %s"
      % (worst.get("b", math.nan), worst.get("c", math.nan), rule.describe(w),
         "PASS" if ok else "FAIL"))
sys.exit(0 if ok else 1)
EOF
