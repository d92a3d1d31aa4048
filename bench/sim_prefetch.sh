#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/sim_prefetch.sh: hx-prefetch's all-gather prefetch under ZeRO-3 in simulation
# (issue 23, "hx-prefetch and the W fold"): dp N on simulated H100 SXM nodes
# (machines/h100-sxm.machine; N = 64 by default: 8 nodes), --zero-stage 3, a GPT of 4 layers
# (C 1024, 16 heads, T 1024, one sequence per rank), the analytic models of
# devices/h100-sxm.device.  Three policies on the same graph: hx-prefetch (each layer's
# parameters gathered ahead within --prefetch-memory), serial-comm on hx-prefetch's order
# (its no-overlap baseline) and hx-prio.  Prints each one's simulated step, rank 0's
# all-gather time in flight, exposed and the share hidden behind compute.
# --layers L (default 4) and --iters N (default 3; the last step is reported) shrink a large
# case: a ZeRO-3 step sends each rank p - 1 messages per tensor per collective.
#   bench/sim_prefetch.sh [--ranks N] [--layers L] [--iters N] [BUILD_DIR]
# Exit: 0 all simulated, 1 one failed, 2 bad usage.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/sim_lib.sh"
ranks=64 layers=4 iters=3 build=
while [ $# -gt 0 ]; do
    case $1 in
    --ranks) ranks=$2; shift ;;
    --layers) layers=$2; shift ;;
    --iters) iters=$2; shift ;;
    -*) echo "sim_prefetch.sh: error: unknown option '$1'" >&2; exit 2 ;;
    *) build=$1 ;;
    esac
    shift
done
sim_init "$build"
common="--machine $top/machines/h100-sxm.machine --ranks $ranks
 --device $top/devices/h100-sxm.device --num-layers $layers --hidden-size 1024
 --num-attention-heads 16 --seq-length 1024 --vocab-size 50304 --micro-batch-size 1
 --zero-stage 3 --workers 2 --cuda 1 --compute-on cuda --sample-tokens 0 --eval-interval 0
 --eval-iters 1 --log-interval 1 --train-iters $iters"
rc=0
# shellcheck disable=SC2086
sim_run prefetch $common --sched hx-prefetch --prefetch-memory 1G || rc=1
# shellcheck disable=SC2086
sim_run serial $common --sched serial-comm --prefetch-memory 1G || rc=1
# shellcheck disable=SC2086
sim_run prio $common --sched hx-prio || rc=1
printf '%-12s %10s %16s %14s %10s %8s\n' policy step_ms allgather_ms exposed_ms hidden_% wall_s
for c in prefetch serial prio; do
    [ -s "$SIM_OUT/$c.wall" ] || continue
    printf '%-12s %10s %16s %14s %10s %8s\n' "$c" "$(sim_step "$c")" \
        "$(sim_col "$c" allgather 1)" "$(sim_col "$c" allgather 2)" \
        "$(sim_col "$c" allgather 4)" "$(cat "$SIM_OUT/$c.wall")"
done
echo "logs: $SIM_OUT"
exit $rc
