#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/comm_backend.sh: the StarPU-MPI backend and Flux's tile-level overlap on a slow link
# (issue 22, "Speed on scripts/netbed at 1 Gbit/s").  Both parts run `helix train` on the
# emulated two-node cluster of scripts/netbed (nodeA and nodeB, a shaped link between them),
# one bed per run, the runs of a round in an order that rotates each round, and every run is
# checked against a serial run of the same model, data, seed and global batch by the
# tolerance rule of every parity test (tests/README.md; bench/parity_rule.py):
#   ddp: dp 4 on 2+2 ranks, --comm-backend mpi against --comm-backend starpu-mpi: the median
#        step time of each (the median of the rounds' medians) and their ratio (acceptance:
#        starpu-mpi / mpi <= 1.05 over >= 3 rounds);
#   tp:  tp 2 with --sequence-parallel on 1+1 ranks, the pair across the link: the tp
#        collectives as whole ops ("off") against the tile-level AG+GEMM and GEMM+RS
#        (--tp-comm-overlap, "on"), and the off job under --sched serial-comm (Flux's
#        no-overlap baseline), all traced: median step time, the exposed collective time per
#        step and Flux's ECT and overlap efficiency E against the baseline, from `helix trace
#        summarize` (acceptance: on cuts the exposed time by >= 30%, its step no slower).
# Each run comes with the cores its ranks used (CPU time over the run's wall time, start-up
# included), how busy the machine's cores were (and the kernel's share: TCP over the bed),
# and the bytes the link carried each way per step, so that it is visible whether the cores
# or the link bound it.
#
#   bench/comm_backend.sh [options] [BUILD_DIR]      (BUILD_DIR or $HX_BUILDDIR: tools/helix)
#     --part P            ddp, tp or all (default all)
#     --rounds N          rounds of each part (default 3)
#     --steps N           training steps per run; the first is not timed (default 6, >= 3)
#     --rate R            the link between the nodes, tc units (default 1gbit)
#     --tp-backend B      --comm-backend of the tp runs (default starpu-mpi)
#     --overlap-flags F   more flags for the overlap-on runs, e.g. a tile size: "--tile-seqs 1"
#     --out DIR           logs, JSON, traces and summaries (default a new
#                         /tmp/hx-comm-backend.XXXXXX); nothing is written elsewhere
#   Models (environment):
#     ddp: HX_CB_DDP_LAYERS (4) HX_CB_DDP_HIDDEN (512) HX_CB_DDP_HEADS (8) HX_CB_DDP_SEQ (128)
#          HX_CB_DDP_MBS (4) HX_CB_DDP_GBS (16): bench/ddp_overlap.sh's model, ~12.8M
#          parameters, 51 MB of fp32 gradients a step against ~0.8 s of compute per rank
#          (one micro-batch of 4 x 128 tokens each)
#     tp:  HX_CB_TP_LAYERS (4) HX_CB_TP_HIDDEN (512, the acceptance wants >= 512)
#          HX_CB_TP_HEADS (8) HX_CB_TP_SEQ (128) HX_CB_TP_MBS (4) HX_CB_TP_GBS (8): each rank
#          holds half of every layer and runs both micro-batches: the link carries at most
#          ~41 MB each way a step (0.33 s at 1 Gbit/s; the veth's count over 6 steps, start-up
#          included), against ~0.5 s of compute per rank
#     HX_CB_NCPU: StarPU CPU workers per rank (default 1: the ranks share the machine's cores)
# When `helix train --help` has no --tp-comm-overlap, the tp part runs the off and serial-comm
# runs only and says so.  Needs root (network namespaces) and python3.  Builds nothing.
# Exit: 0 every run matched the serial run, 1 a run failed or a parity check failed, 2 bad
# usage, 77 helix lacks the distributed flags or --comm-backend starpu-mpi.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
netbed=$top/scripts/netbed
part=all rounds=3 steps=6 rate=1gbit tpb=starpu-mpi oflags='' out='' build=${HX_BUILDDIR:-}
DL=${HX_CB_DDP_LAYERS:-4} DC=${HX_CB_DDP_HIDDEN:-512} DH=${HX_CB_DDP_HEADS:-8}
DT=${HX_CB_DDP_SEQ:-128} DMBS=${HX_CB_DDP_MBS:-4} DGBS=${HX_CB_DDP_GBS:-16}
TL=${HX_CB_TP_LAYERS:-4} TC=${HX_CB_TP_HIDDEN:-512} TH=${HX_CB_TP_HEADS:-8}
TT=${HX_CB_TP_SEQ:-128} TMBS=${HX_CB_TP_MBS:-4} TGBS=${HX_CB_TP_GBS:-8}
ncpu=${HX_CB_NCPU:-1}

usage() {
    echo "comm_backend: $*" >&2
    echo "usage: bench/comm_backend.sh [--part ddp|tp|all] [--rounds N] [--steps N] [--rate R]" \
        "[--tp-backend B] [--overlap-flags F] [--out DIR] [BUILD_DIR]  (or HX_BUILDDIR)" >&2
    exit 2
}
posint() { [[ $2 =~ ^[1-9][0-9]*$ ]] || usage "$1 needs a positive integer, not '$2'"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --part | --rounds | --steps | --rate | --tp-backend | --overlap-flags | --out)
            [ $# -ge 2 ] || usage "$1 needs a value"
            case "$1" in
                --part) part=$2 ;;
                --rounds) posint "$1" "$2"; rounds=$2 ;;
                --steps) posint "$1" "$2"; steps=$2 ;;
                --rate) rate=$2 ;;
                --tp-backend) tpb=$2 ;;
                --overlap-flags) oflags=$2 ;;
                --out) out=$2 ;;
            esac
            shift 2 ;;
        -h | --help) sed -n '3,/^set -u$/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
        -*) usage "unknown option '$1'" ;;
        *) [ -z "${build_arg:-}" ] || usage "more than one BUILD_DIR ('$build_arg', '$1')"
           build_arg=$1 build=$1; shift ;;
    esac
done
case "$part" in ddp | tp | all) ;; *) usage "--part takes ddp, tp or all, not '$part'" ;; esac
[[ $rate =~ ^[0-9]+(\.[0-9]+)?([kmgt]?bit|[kmgt]?bps)$ || $rate = none ]] ||
    usage "--rate takes tc units (1gbit, 500mbit, ...) or none, not '$rate'"
case "$tpb" in mpi | starpu-mpi | nccl) ;; *) usage "--tp-backend takes mpi, starpu-mpi or nccl, not '$tpb'" ;; esac
[ "$steps" -ge 3 ] || usage "--steps must be at least 3 (the first step is not timed)"
for v in DL DC DH DT DMBS DGBS TL TC TH TT TMBS TGBS ncpu; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] ||
        usage "the model's sizes (HX_CB_DDP_*, HX_CB_TP_*, HX_CB_NCPU) are positive integers;" \
            "one is '${!v}'"
done
[[ $DMBS -ge 2 && $TMBS -ge 2 ]] ||
    usage "micro-batches of one sequence have one row-tile split only: the parity rule needs a" \
        "second (HX_CB_DDP_MBS and HX_CB_TP_MBS at least 2)"
[ -n "$build" ] || usage "give the build directory (BUILD_DIR argument or HX_BUILDDIR)"
helix=$(cd "$build" 2>/dev/null && pwd)/tools/helix
[ -x "$helix" ] ||
    { echo "comm_backend: error: no $build/tools/helix; build helix there first" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] ||
    { echo "comm_backend: error: needs root for scripts/netbed (network namespaces); rerun as" \
        "root" >&2; exit 1; }
py=$(command -v /usr/bin/python3 || command -v python3) ||
    { echo "comm_backend: error: needs python3 (apt-get install python3)" >&2; exit 1; }
help=$("$helix" train --help 2>&1)
has_flag() { grep -qE -- "^ +--$1( |$)" <<<"$help"; }
for f in comm-backend sequence-parallel ranks-per-node tensor-model-parallel-size comm-timeout \
    trace log-json sched; do
    has_flag "$f" || { echo "comm_backend: skipped: '$helix train' has no --$f" >&2; exit 77; }
done
grep -q starpu-mpi <<<"$help" ||
    { echo "comm_backend: skipped: '$helix train' has no --comm-backend starpu-mpi" >&2; exit 77; }
overlap=0
has_flag tp-comm-overlap && overlap=1
[ $overlap -eq 1 ] || [ -z "$oflags" ] ||
    usage "--overlap-flags is for the overlap-on runs, and this helix has no --tp-comm-overlap"
if [ -z "$out" ]; then
    out=$(mktemp -d /tmp/hx-comm-backend.XXXXXX) || exit 1
else
    mkdir -p "$out" || exit 1
    out=$(cd "$out" && pwd)
fi
cd "$out" || exit 1

# Every run: the same data and seed; no sample, one validation batch, a JSON line per step.
common=(--train-iters "$steps" --seed 1234 --eval-interval 0 --eval-iters 1 --sample-tokens 0
        --log-interval 1 --progress-bar 0 --comm-timeout 120)
ddp_model=(--num-layers "$DL" --hidden-size "$DC" --num-attention-heads "$DH" --seq-length "$DT"
           --micro-batch-size "$DMBS" --global-batch-size "$DGBS")
tp_model=(--num-layers "$TL" --hidden-size "$TC" --num-attention-heads "$TH" --seq-length "$TT"
          --micro-batch-size "$TMBS" --global-batch-size "$TGBS")
export STARPU_NCPU=$ncpu STARPU_WORKERS_NOBIND=1 STARPU_SILENT=1 OPENBLAS_NUM_THREADS=1
export STARPU_HOME=$out/starpu_home

fail() { echo "comm_backend: error: $*" >&2; exit 1; }

# Each rank runs under this wrapper, which appends to NAME.ranks one line when helix exits:
# "rank host wall_s cpu_s link_tx_bytes link_rx_bytes".  cpu_s is helix's user + system time
# (the wrapper's children's, from its own /proc stat after the wait); the link counters are
# the veth's of the rank's node (its network namespace), since the bed went up: the last rank
# of a node to exit reads the run's total.
cat >"$out/rank.sh" <<'EOF'
#!/bin/bash
# rank.sh NAME HELIX ARGS...: one rank of bench/comm_backend.sh's run NAME
name=$1
shift
t0=$EPOCHREALTIME
"$@" &
child=$!
trap 'kill -TERM $child 2>/dev/null' TERM INT # mpirun's TERM, for helix
wait $child
rc=$?
while kill -0 $child 2>/dev/null; do # a signal ended the wait, not helix
    wait $child
    rc=$?
done
t1=$EPOCHREALTIME
read -r -a st </proc/$$/stat # fields 16, 17: cutime, cstime in clock ticks (comm: "(bash)")
tx=0 rx=0
while read -r dev a _ _ _ _ _ _ _ b _; do
    [ "$dev" = nbeth0: ] && rx=$a tx=$b
done </proc/net/dev
read -r host </proc/sys/kernel/hostname
echo "${OMPI_COMM_WORLD_RANK:-0} $host $t0 $t1 ${st[15]} ${st[16]} $(getconf CLK_TCK) $tx $rx" \
    >>"$name.ranks"
exit $rc
EOF
chmod +x "$out/rank.sh"

bed() { # NAME NP RANKS_PER_NODE ARGS...: one run of helix train on its own bed, always torn
        # down; NAME.cpu gets the machine's /proc/stat line before and after it
    local name=$1 np=$2 rpn=$3
    shift 3
    rm -f "$out/$name.ranks"
    head -1 /proc/stat >"$out/$name.cpu"
    NB_RANKS_PER_NODE=$rpn timeout -s TERM 900 "$netbed" run --rate "$rate" -- -np "$np" \
        "$out/rank.sh" "$out/$name" "$helix" train "$@" --log-json "$out/$name.json" \
        >"$out/$name.log" 2>&1 ||
        { tail -30 "$out/$name.log" >&2; fail "run $name failed (log: $out/$name.log)"; }
    head -1 /proc/stat >>"$out/$name.cpu"
}
serial() { # NAME T MBS ARGS...: the serial reference (one rank, every core) as NAME, and in
           # a second summation order as NAME2, the parity rule's envelope
    local name=$1 seq=$2 mbs=$3 want half tile
    shift 3
    # The second order: helix's default row tile is min(ceil(1024 / T), ceil(MBS / 2))
    # sequences (graphs/gpt.c); the rule's usual second order, one tile per micro-batch, is
    # taken unless the default is more than one sequence: then one sequence per tile.  With
    # T=128 and MBS=4 the default tile is 256 rows, and 512-row tiles gave bitwise the same
    # losses and gradient norms as it on this machine's OpenBLAS (Zen 4, 2026-11-26; its sgemm
    # blocks the sums at the same rows), so the rule had no envelope; 128-row tiles regroup.
    # Where those are bitwise the default's too, the other tile is taken, then half the
    # micro-batch (the same global batch, so the micro-batches' gradients are summed in other
    # groups): on an Intel Xeon (model 207, OpenBLAS's Prescott kernel, 2026-11-28) both tiles
    # gave the default's losses for 12 steps of the ddp model, and half the micro-batch did not.
    want=$(((1024 + seq - 1) / seq)) half=$(((mbs + 1) / 2))
    tile=$((want < half ? want : half))
    tile=$((tile > 1 ? 1 : mbs))
    STARPU_NCPU=$(nproc) timeout 900 "$helix" train "$@" --log-json "$out/$name.json" \
        >"$out/$name.log" 2>&1 ||
        { tail -20 "$out/$name.log" >&2; fail "the serial run $name failed (log: $out/$name.log)"; }
    local orders=("--tile-seqs $tile" "--tile-seqs $((tile == 1 ? mbs : 1))") order
    [ "$mbs" -ge 2 ] && orders+=("--micro-batch-size $((mbs / 2))")
    for order in "${orders[@]}"; do
        # shellcheck disable=SC2086 # the order's flag and value
        STARPU_NCPU=$(nproc) timeout 900 "$helix" train "$@" $order \
            --log-json "$out/${name}2.json" >"$out/${name}2.log" 2>&1 ||
            { tail -20 "$out/${name}2.log" >&2
              fail "the serial run in the second order ${name}2 failed (log: $out/${name}2.log)"; }
        "$py" - "$top" "$out" "$name" <<'PY' || break # (they differ: this order is the envelope's)
import sys
sys.path.insert(0, sys.argv[1] + "/bench")
import parity_rule
ref, other = (parity_rule.steps(sys.argv[2], n) for n in (sys.argv[3], sys.argv[3] + "2"))
sys.exit(1 if parity_rule.loss_diff(ref, other) != 0.0 else 0)
PY
        echo "comm_backend: $name: $order gave bitwise the default's losses; the envelope" \
            "needs another summation order"
    done
}
rotate() { # K WORDS...: the words rotated left by K
    local k=$1
    shift
    local w=("$@")
    k=$((k % ${#w[@]}))
    echo "${w[@]:k}" "${w[@]:0:k}"
}

load0=$(cut -d' ' -f1 /proc/loadavg)
echo "comm_backend: part $part, $rounds round(s) of $steps steps, link $rate, $ncpu CPU" \
    "worker(s) per rank; logs in $out"
if [ "$part" != tp ]; then
    echo "comm_backend: ddp: L=$DL C=$DC heads=$DH T=$DT, global batch $DGBS (micro $DMBS);" \
        "dp 4 on 2+2 ranks"
    echo "comm_backend: ddp: serial reference (and its envelope run)"
    serial ddp-a "$DT" "$DMBS" "${ddp_model[@]}" "${common[@]}"
    ddp=(--tensor-model-parallel-size 1 --ranks-per-node 2 "${ddp_model[@]}" "${common[@]}")
    for r in $(seq "$rounds"); do
        for k in $(rotate $((r - 1)) mpi smpi); do
            b=$([ "$k" = mpi ] && echo mpi || echo starpu-mpi)
            bed "ddp-$k$r" 4 2 "${ddp[@]}" --comm-backend "$b"
            echo "comm_backend: ddp: round $r: --comm-backend $b done"
        done
    done
fi
if [ "$part" != ddp ]; then
    [ "$TC" -ge 512 ] ||
        echo "comm_backend: warning: tp: C=$TC; the acceptance's figure needs C >= 512"
    echo "comm_backend: tp: L=$TL C=$TC heads=$TH T=$TT, global batch $TGBS (micro $TMBS);" \
        "tp 2 + sequence parallelism on 1+1 ranks, --comm-backend $tpb"
    if [ $overlap -eq 1 ]; then
        kinds=(base off on)
    else
        kinds=(base off)
        echo "comm_backend: tp: '$helix train' has no --tp-comm-overlap: running the" \
            "whole-op runs (off) and their serial-comm baseline only"
    fi
    echo "comm_backend: tp: serial reference (and its envelope run)"
    serial tp-a "$TT" "$TMBS" "${tp_model[@]}" "${common[@]}"
    tp=(--tensor-model-parallel-size 2 --sequence-parallel --ranks-per-node 1
        --comm-backend "$tpb" "${tp_model[@]}" "${common[@]}")
    read -r -a on_flags <<<"$oflags"
    for r in $(seq "$rounds"); do
        for k in $(rotate $((r - 1)) "${kinds[@]}"); do
            case "$k" in
                base) bed "tp-base$r" 2 1 "${tp[@]}" --sched serial-comm --trace "$out/tp-base$r.trace" ;;
                off) bed "tp-off$r" 2 1 "${tp[@]}" --trace "$out/tp-off$r.trace" ;;
                on) bed "tp-on$r" 2 1 "${tp[@]}" --tp-comm-overlap "${on_flags[@]}" \
                        --trace "$out/tp-on$r.trace" ;;
            esac
            echo "comm_backend: tp: round $r: $k done"
        done
        for k in "${kinds[@]}"; do # the text for reading, the JSON for the table
            base=$out/tp-base$r.trace
            "$helix" trace summarize "$out/tp-$k$r.trace" --baseline "$base" \
                >"$out/tp-$k$r.summary.txt" ||
                fail "helix trace summarize $out/tp-$k$r.trace --baseline $base failed"
            "$helix" trace summarize --json "$out/tp-$k$r.trace" --baseline "$base" \
                >"$out/tp-$k$r.summary.json" ||
                fail "helix trace summarize --json $out/tp-$k$r.trace --baseline $base failed"
        done
    done
fi
load1=$(cut -d' ' -f1 /proc/loadavg)
echo "comm_backend: load average $load0 before, $load1 after"
if awk -v a="$load0" -v b="$load1" 'BEGIN { exit !(a > 1.5 || b > 6) }'; then
    echo "comm_backend: warning: other programs were using the cores; the timings are noisy"
fi

"$py" - "$out" "$part" "$rounds" "$steps" "$rate" "$top" "$overlap" "$tpb" <<'EOF'
import json, math, os, re, statistics, sys
out, part, rounds, nsteps, rate, top = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
    int(sys.argv[4]), sys.argv[5], sys.argv[6]
overlap, tpb = sys.argv[7] == "1", sys.argv[8]
sys.path.insert(0, os.path.join(top, "bench"))
import bench_stats, parity_rule

def steps(name):
    return parity_rule.steps(out, name)

def rule_of(ref):  # the parity rule of one part, from its serial runs REF and REF2
    try:
        return parity_rule.Rule(top, steps(ref), steps(ref + "2"))
    except SystemExit as e:
        sys.exit("comm_backend: error: %s: %s; with more --steps rounding has time to show"
                 % (ref, e))

def median_ms(name):
    return statistics.median(bench_stats.steady(steps(name)))

def busy(name):  # shares of the machine's core time over one run: not idle, and in the
    # kernel (system, irq, softirq: mostly TCP over the bed's veth and its qdiscs)
    t = [[int(x) for x in l.split()[1:9]] for l in open(os.path.join(out, name + ".cpu"))]
    d = [y - x for x, y in zip(t[0], t[1])]
    n = sum(d) or math.nan
    return 1 - (d[3] + d[4]) / n, (d[2] + d[5] + d[6]) / n

def usage(name):  # the run's resources in words: per rank the cores used (CPU time over wall
    # time), the machine's busy cores, and what each node sent over the link per step (its
    # last rank's reading: the veth counts from the bed's start, start-up included)
    cores, tx = {}, {}
    for l in open(os.path.join(out, name + ".ranks")):
        r, host, t0, t1, ut, st, hz, txb, _ = l.split()
        cores[int(r)] = (int(ut) + int(st)) / int(hz) / (float(t1) - float(t0))
        tx[host] = max(tx.get(host, 0), int(txb))
    b, k = busy(name)
    return "cores/rank %s; machine %.0f%% (kernel %.0f%%); link MB/step %s%s" % (
        " ".join("%.2f" % cores[r] for r in sorted(cores)), 100 * b, 100 * k,
        " ".join("%s> %.1f" % (h[-1], v / nsteps / 1e6) for h, v in sorted(tx.items())),
        waits(name))

def waits(name):  # "; waiting for a core: ...": per rank, the share of its runnable time that
    # StarPU-MPI's progress thread and the engine's lane threads waited for a core (helix
    # train's "threads, rank R:" lines, helix/threads.h); "" when the log has none
    kinds = {"StarPU-MPI's progress thread": "StarPU-MPI", "comm lane threads": "lanes"}
    got = {}
    for l in open(os.path.join(out, name + ".log")):
        m = re.match(r"threads, rank (\d+): (.*)", l)
        for part in (m.group(2).split("; ") if m else []):
            w = re.match(r"(.*) \(\d+\) .* \((\d+)%\)$", part.strip())
            if w and w.group(1) in kinds:
                got.setdefault(kinds[w.group(1)], {})[int(m.group(1))] = w.group(2)
    return "".join("; %s waiting for a core %s%%" % (k, "/".join(v[r] for r in sorted(v)))
                   for k, v in sorted(got.items()))

def params(name):
    m = re.search(r"helix train: (\d+) parameters", open(os.path.join(out, name + ".log")).read())
    return int(m.group(1)) if m else 0

def paired(x, y):  # per-round ratios x / y, their geometric mean and 95% interval, in words
    q = [a / b for a, b in zip(x, y)]
    gm, ci = bench_stats.ratio_ci(q)
    return gm, ci, "per round %s, geometric mean %.3f%s" % (
        " ".join("%.3f" % v for v in q), gm, "" if ci is None else " (95%% CI %.3f-%.3f)" % ci)

ok = True
def judge(rule, name):  # (the worst loss difference over the tolerance, the words)
    global ok
    d, passed = rule.judge(steps(name))
    ok = ok and passed
    return d / rule.tolerance, "PASS" if passed else "FAIL"

med = statistics.median
table, verdicts = [], []  # the final table's rows: (run, ms/step, exposed, E, parity)
print()
print("Per run: median ms/step without the first step; cores/rank: each rank's CPU time over its "
      "wall time (start-up included); machine: the cores busy during the run (the kernel's "
      "share: TCP over the bed); link MB/step: what each node sent over the veth (A>, B>) over "
      "the run, per step; waiting for a core: per rank, the share of the time StarPU-MPI's "
      "progress thread and the lane threads had work that they waited for a core (helix "
      "train's threads report); parity: the worst loss difference to the serial run over the "
      "rule's tolerance.")
if part != "tp":
    rule = rule_of("ddp-a")
    n = params("ddp-a")
    print()
    print("DDP: dp 4 on 2+2 ranks across a %s link; %.1fM parameters (%.1f MB of fp32 gradients "
          "a step); the serial reference %.1f ms/step on every core" % (
              rate, n / 1e6, 4 * n / 1e6, median_ms("ddp-a")))
    names = {"mpi": "mpi", "smpi": "starpu-mpi"}
    ms, worst = {}, {}
    for r in range(1, rounds + 1):
        for k in ("mpi", "smpi"):
            name = "ddp-%s%d" % (k, r)
            q, verdict = judge(rule, name)
            worst[k] = max(worst.get(k, 0.0), q)
            ms.setdefault(k, []).append(median_ms(name))
            print("  round %d %-10s: %8.1f ms/step | %s | parity %s %.2g"
                  % (r, names[k], ms[k][-1], usage(name), verdict, q))
    for k in ("mpi", "smpi"):
        table.append(("ddp " + names[k], med(ms[k]), None, None, worst[k]))
    ratio = med(ms["smpi"]) / med(ms["mpi"])
    verdicts.append("DDP  starpu-mpi / mpi step time: %.3f (%s); acceptance <= 1.05 over >= 3 "
                    "rounds: %s" % (ratio, paired(ms["smpi"], ms["mpi"])[2],
                                    "NOT met" if ratio > 1.05 else
                                    "met" if rounds >= 3 else "met, but too few rounds"))
    verdicts.append("DDP  parity: %s" % rule.describe(max(worst.values()) * rule.tolerance))
if part != "ddp":
    rule = rule_of("tp-a")
    kinds = ["base", "off", "on"] if overlap else ["base", "off"]
    label = {"base": "serial-comm", "off": "whole ops", "on": "tile-level"}
    print()
    print("TP: tp 2 + sequence parallelism on 1+1 ranks across a %s link, --comm-backend %s; "
          "%.1fM parameters; the serial reference %.1f ms/step on every core" % (
              rate, tpb, params("tp-a") / 1e6, median_ms("tp-a")))
    print("  exposed: collective time per step in which the rank computed nothing (helix trace "
          "summarize); ECT and E, Flux's: span - the serial-comm run's compute, 1 - ECT / "
          "ECT(serial-comm); per rank")
    ms, exposed, eff, worst, ops = {}, {}, {}, {}, set()
    for r in range(1, rounds + 1):
        for k in kinds:
            name = "tp-%s%d" % (k, r)
            q, verdict = judge(rule, name)
            worst[k] = max(worst.get(k, 0.0), q)
            rs = json.load(open(os.path.join(out, name + ".summary.json")))["ranks"]
            ops |= {op for x in rs for op in x["comm"]}
            e = [math.nan if x["overlap_efficiency"] is None else x["overlap_efficiency"]
                 for x in rs]
            ms.setdefault(k, []).append(median_ms(name))
            exposed.setdefault(k, []).append(statistics.mean(x["exposed_comm_ms"] for x in rs))
            eff.setdefault(k, []).append(statistics.mean(e))
            print("  round %d %-11s: %8.1f ms/step | exposed %s of %s ms in flight | ECT %s ms, "
                  "E %s | %s | parity %s %.2g" % (
                      r, label[k], ms[k][-1],
                      " ".join("%.1f" % x["exposed_comm_ms"] for x in rs),
                      " ".join("%.1f" % x["comm_ms"] for x in rs),
                      " ".join("%.1f" % x["ect_ms"] for x in rs),
                      " ".join("%.3f" % v for v in e), usage(name), verdict, q))
    print("  collectives in the traces: %s" % ", ".join(sorted(ops)))
    for k in kinds:
        table.append(("tp " + label[k], med(ms[k]), med(exposed[k]), med(eff[k]), worst[k]))
    if overlap:
        cut = 1 - med(exposed["on"]) / med(exposed["off"])
        gm, ci, words = paired(ms["on"], ms["off"])
        verdicts.append("TP   exposed tp communication cut by the tile-level overlap: %.1f%% "
                        "(per round %s); acceptance >= 30%%: %s" % (
                            100 * cut, " ".join("%.1f%%" % (100 * (1 - a / b)) for a, b in
                                                zip(exposed["on"], exposed["off"])),
                            "met" if cut >= 0.30 else "NOT met"))
        verdicts.append("TP   tile-level / whole ops step time: %.3f (%s); acceptance no worse: "
                        "%s" % (med(ms["on"]) / med(ms["off"]), words, "met" if gm <= 1 else
                                "NOT met" if ci is None or ci[0] > 1 else
                                "not shown (slower by the geometric mean, but its interval "
                                "holds 1: more rounds)"))
    else:
        verdicts.append("TP   this helix has no --tp-comm-overlap: no tile-level runs, so no "
                        "verdict on the exposed time or the step")
    verdicts.append("TP   parity: %s" % rule.describe(max(worst.values()) * rule.tolerance))
print()
print("%-20s %10s %16s %8s %14s" % ("run (%d round%s)" % (rounds, "s" if rounds > 1 else ""),
                                    "ms/step", "exposed ms/step", "E", "parity, worst"))
for run, t, ex, e, q in table:
    print("%-20s %10.1f %16s %8s %14s" % (run, t, "-" if ex is None else "%.1f" % ex,
                                          "-" if e is None else "%.3f" % e,
                                          "%s %.2g" % ("PASS" if q <= 1 else "FAIL", q)))
print("(medians over the rounds; exposed and E: means over the ranks; parity: the worst loss "
      "difference over the tolerance, PASS at most 1)")
for v in verdicts:
    print(v)
print("parity of every run: %s" % ("PASS" if ok else "FAIL"))
sys.exit(0 if ok else 1)
EOF
