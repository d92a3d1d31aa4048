#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/sim_gpu.sh: how close `helix simulate` comes to a real GPU (issue 23, "validated against
# reality").  For each row of a measured.tsv (perfmodels/h100/measured.tsv: the median step
# scripts/gpu-check measured on an H100 while it calibrated the models beside that file), it
# simulates the same flags on one rank of a machine with that GPU, with those models, and
# prints measured, simulated and their ratio.  A simulation is deterministic, so one run each.
#
#   bench/sim_gpu.sh [--models DIR] [--host NAME] [--machine FILE] [BUILD_DIR]
#     --models DIR    calibrated models and their measured.tsv (default perfmodels/h100)
#     --host NAME     the models' host name (default h100)
#     --machine FILE  the simulated machine (default machines/h100-sxm.machine)
#     BUILD_DIR       a build configured --with-starpu-simgrid (default $HX_BUILDDIR or build)
# Exit: 0 every row simulated, 1 a simulation failed, 2 bad usage.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
models=$top/perfmodels/h100 host=h100 machine=$top/machines/h100-sxm.machine
build=${HX_BUILDDIR:-$top/build}
while [ $# -gt 0 ]; do
    case $1 in
    --models | --host | --machine)
        [ $# -ge 2 ] || { echo "sim_gpu.sh: error: $1 needs a value" >&2; exit 2; }
        case $1 in --models) models=$2 ;; --host) host=$2 ;; *) machine=$2 ;; esac
        shift
        ;;
    -*) echo "sim_gpu.sh: error: unknown option '$1'" >&2; exit 2 ;;
    *) build=$1 ;;
    esac
    shift
done
helix=$build/tools/helix
if ! "$helix" simulate --help >/dev/null 2>&1 || ! grep -q '^#define HX_SIM_BUILD_BINARY' "$build/config.h"; then
    echo "sim_gpu.sh: error: $build has no simulation flavour: configure it" \
        "--with-starpu-simgrid (scripts/setup --simgrid; README \"Simulation\")" >&2
    exit 2
fi
[ -f "$models/measured.tsv" ] || { echo "sim_gpu.sh: error: $models/measured.tsv is missing" >&2; exit 2; }
out=$(mktemp -d "${TMPDIR:-/tmp}/hx-sim-gpu.XXXXXX") || exit 2
printf '%-10s %12s %12s %8s   %s\n' config measured_ms simulated_ms ratio flags
rc=0
grep -v '^#' "$models/measured.tsv" | while IFS='	' read -r name measured flags; do
    # the flags gpu-check ran, as it ran them: 12 steps, the median after 2 warm-up steps
    # shellcheck disable=SC2086
    "$helix" simulate --machine "$machine" --ranks 1 --perf-models "$models" \
        --perf-models-host "$host" $flags --train-iters 12 --workers 1 --cuda 1 \
        --compute-on cuda --eval-interval 0 --eval-iters 1 --sample-tokens 0 \
        --log-interval 1 >"$out/$name.log" 2>&1 || { echo "$name: simulation failed:"; tail -n 5 "$out/$name.log"; exit 1; }
    sim=$(sed -n 's/^step .*| \([0-9.]*\) ms\/step.*/\1/p' "$out/$name.log" | tail -n +3 | sort -n |
        awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    awk -v n="$name" -v m="$measured" -v s="$sim" -v f="$flags" \
        'BEGIN { printf "%-10s %12.2f %12.2f %8.3f   %s\n", n, m, s, s / m, f }'
done || rc=1
echo "logs: $out"
exit $rc
