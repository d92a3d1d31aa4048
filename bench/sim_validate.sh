#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/sim_validate.sh: `helix simulate` against measured runs on this machine (issue 23,
# "Validated against reality here").  For each case, back to back on this machine:
#   1. calibrate: the real run with STARPU_CALIBRATE=1, each rank writing its own models
#      (bench/sim_models_merge.py joins them: pipeline stages see different shapes);
#   2. measure: the real run again, uncalibrated: the median step of steps 4..N
#      (--log-json);
#   3. simulate: the same flags under `helix simulate` on machines/this-bed.machine (this
#      machine plus scripts/netbed's two nodes at 1 Gbit/s) with those models: the median
#      simulated step of the same steps;
# and prints measured, simulated and their ratio (the issue's bound: within 15%).
# Cases: serial on 2 workers (one rank); on 1+1 ranks with 1 worker each across the netbed
# link (no oversubscription): dp 2, tp 2 + SP, pp 2 1F1B, fold 2 and ZeRO-3, all with
# --comm-backend starpu-mpi (the one a simulation has).  The model: --preset small with
# 8-sequence micro-batches (4 layers, C 128, T 128).  Extra cases, not in the default list:
# dp2-sc, tp2sp-sc and zero3-sc are dp2, tp2sp and zero3 under --sched serial-comm (no
# overlap: communication and compute never run at once).
#   bench/sim_validate.sh [--cases "serial dp2 ..."] [--steps N] [--rate 1gbit]
#                         [--machine FILE] [--trace] [BUILD_DIR]
# --machine: the simulated machine (default machines/this-bed.machine).  --trace: both runs
# write a trace, and a second line per case gives rank 0's compute time and communication in
# flight per step, measured against simulated (`helix trace summarize`): where a gap is; and
# a warning where the measured compute differs from the simulated by over 10% (this machine
# changed speed between the calibration and the measured run: the ratio then measures that).
# BUILD_DIR needs the simulation flavour (configure --with-starpu-simgrid).  Needs root (the
# bed's namespaces) and a quiet machine: the measured runs are timed.
# Exit: 0 every case ran, 1 one failed, 2 bad usage.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/sim_lib.sh"
cases="serial dp2 tp2sp pp2 fold2 zero3" steps=20 rate=1gbit build='' trace=0
machine_file=$top/machines/this-bed.machine
while [ $# -gt 0 ]; do
    case $1 in
    --cases) cases=$2; shift ;;
    --steps) steps=$2; shift ;;
    --rate) rate=$2; shift ;;
    --machine) machine_file=$2; shift ;;
    --trace) trace=1 ;;
    -*) echo "sim_validate.sh: error: unknown option '$1'" >&2; exit 2 ;;
    *) build=$1 ;;
    esac
    shift
done
if [ ! -r "$machine_file" ]; then
    echo "sim_validate.sh: error: no machine file '$machine_file' (machines/README.md)" >&2
    exit 2
fi
sim_init "$build"
model="--preset small --train-iters $steps --eval-interval 0 --eval-iters 1 --sample-tokens 0
 --log-interval 1 --comm-backend starpu-mpi"
flags_of() {
    case $1 in
    serial) echo "--workers 2" ;;
    dp2) echo "--workers 1 --global-batch-size 16" ;;
    tp2sp) echo "--workers 1 --tensor-model-parallel-size 2 --sequence-parallel" ;;
    pp2) echo "--workers 1 --pipeline-model-parallel-size 2 --global-batch-size 32" ;;
    fold2) echo "--workers 1 --pipeline-model-parallel-size 2 --pipeline-fold" \
        "--global-batch-size 32" ;;
    zero3) echo "--workers 1 --zero-stage 3 --global-batch-size 16" ;;
    *-sc) echo "$(flags_of "${1%-sc}") --sched serial-comm" ;;
    *) return 1 ;;
    esac
}
# each rank's own models directory (STARPU_PERF_MODEL_DIR is read per process)
cat >"$SIM_OUT/rank-env.sh" <<'SH'
#!/bin/sh
export STARPU_PERF_MODEL_DIR="$HX_VALIDATE_MODELS/rank${OMPI_COMM_WORLD_RANK:-0}"
exec "$@"
SH
chmod +x "$SIM_OUT/rank-env.sh"
real_run() { # NAME CALIBRATE FLAGS...
    local name=$1 cal=$2
    shift 2
    export HX_VALIDATE_MODELS="$SIM_OUT/$name-models" STARPU_HOSTNAME=this-bed \
        STARPU_CALIBRATE=$cal STARPU_HISTORY_MAX_ERROR=1000 STARPU_WORKERS_NOBIND=1
    # shellcheck disable=SC2086
    if [ "$name" = serial ] || [ "${name%-cal}" = serial ]; then
        "$SIM_OUT/rank-env.sh" "$HELIX" train $model "$@" --log-json "$SIM_OUT/$name.json" \
            >"$SIM_OUT/$name.log" 2>&1
    else
        "$top/scripts/netbed" run --rate "$rate" -- -np 2 --host nodeA:1,nodeB:1 \
            -x HX_VALIDATE_MODELS -x STARPU_HOSTNAME -x STARPU_CALIBRATE \
            -x STARPU_HISTORY_MAX_ERROR -x STARPU_WORKERS_NOBIND \
            "$SIM_OUT/rank-env.sh" "$HELIX" train $model "$@" --log-json "$SIM_OUT/$name.json" \
            >"$SIM_OUT/$name.log" 2>&1
    fi
}
median_ms() { # the median "ms" of steps 4.. of a --log-json file, or of a simulate log
    python3 - "$1" <<'PY'
import json, re, sys
p = sys.argv[1]
if p.endswith(".json"):
    v = [r["ms"] for r in map(json.loads, open(p)) if "ms" in r and r.get("step", 0) >= 4]
else:
    v = [float(m.group(2)) for m in (re.match(r"^step +(\d+)/\d+ .*\| ([0-9.]+) ms/step", l)
                                    for l in open(p)) if m and int(m.group(1)) >= 4]
v.sort()
print("%.2f" % v[len(v) // 2] if v else "?")
PY
}
# rank 0's compute busy time and communication in flight per step of a trace, "C / F" (ms)
per_step() {
    "$HELIX" trace summarize "$1" 2>/dev/null | awk '/^rank / { r0 = ($2 == "0") }
        r0 && $1 == "busy" && $2 == "compute" { c = $3 }
        r0 && $1 == "all" { f = $2 }
        END { printf "%s / %s", (c == "" ? "?" : c), (f == "" ? "0" : f) }'
}
printf '%-8s %12s %14s %7s   %s\n' case measured_ms simulated_ms ratio flags
rc=0
for c in $cases; do
    f=$(flags_of "$c") || { echo "sim_validate.sh: error: unknown case '$c'" >&2; exit 2; }
    traced=() sim_traced=()
    if [ "$trace" = 1 ]; then
        traced=(--trace "$SIM_OUT/$c.trace.json")
        sim_traced=(--trace "$SIM_OUT/$c-sim.trace.json")
    fi
    # shellcheck disable=SC2086
    if ! real_run "$c-cal" 1 $f || ! real_run "$c" 0 $f "${traced[@]}"; then
        echo "$c: the real run failed: $SIM_OUT/$c*.log" >&2
        rc=1
        continue
    fi
    python3 "$top/bench/sim_models_merge.py" "$SIM_OUT/$c-merged" \
        "$SIM_OUT/$c-cal-models"/rank* >/dev/null || { rc=1; continue; }
    ranks=2 machine=$machine_file
    if [ "$c" = serial ]; then # one rank of this machine's two cores
        ranks=1 machine=$SIM_OUT/this-bed-2cores.machine
        sed 's/^cores_per_rank = .*/cores_per_rank = 2/' "$machine_file" >"$machine"
    fi
    # shellcheck disable=SC2086
    if ! sim_run "$c-sim" --machine "$machine" --ranks $ranks \
        --perf-models "$SIM_OUT/$c-merged" --perf-models-host this-bed $model $f \
        "${sim_traced[@]}"; then
        rc=1
        continue
    fi
    m=$(median_ms "$SIM_OUT/$c.json")
    s=$(median_ms "$SIM_OUT/$c-sim.log")
    printf '%-8s %12s %14s %7s   %s\n' "$c" "$m" "$s" \
        "$(awk -v a="$s" -v b="$m" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "?" }')" \
        "$f"
    if [ "$trace" = 1 ]; then
        mc=$(per_step "$SIM_OUT/$c.trace.json") sc=$(per_step "$SIM_OUT/$c-sim.trace.json")
        printf '%-8s rank 0, ms per step: compute / communication in flight: measured %s,' \
            '' "$mc"
        printf ' simulated %s\n' "$sc"
        # The models come from the calibration run: where the machine's speed changed
        # between it and the measured run, the ratio measures that, not the simulation.
        awk -v m="${mc%% *}" -v s="${sc%% *}" -v c="$c" 'BEGIN {
            if (m > 0 && s > 0 && (m / s > 1.1 || s / m > 1.1))
                printf "%-8s warning: rank 0 computed %.0f%% %s than its models say: the " \
                    "machine changed speed between the calibration and the measured run; " \
                    "rerun the case\n", c, 100 * (m > s ? m / s - 1 : 1 - m / s), \
                    (m > s ? "longer" : "shorter") }'
    fi
done
echo "logs: $SIM_OUT"
exit $rc
