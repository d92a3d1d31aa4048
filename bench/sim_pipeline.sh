#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/sim_pipeline.sh: the W-folded pipeline (DHelix's model folding, --pipeline-fold)
# against 1F1B in simulation (issue 23, "hx-prefetch and the W fold"): p = 4 stages on 4
# simulated H100s of one node (machines/h100-sxm.machine, NVLink between stages), m = 8
# micro-batches, a GPT of 8 layers (C 1024, 16 heads, T 1024, micro-batches of 1 sequence),
# the analytic models of devices/h100-sxm.device.  Prints each schedule's simulated step,
# the mean bubble of its ranks (the share of the step with compute idle and no collective
# in flight: helix trace summarize) and the fold's step against 1F1B's.  1F1B's textbook
# bubble, (p - 1) / (m + p - 1), is printed beside them.
#   bench/sim_pipeline.sh [--device FILE] [BUILD_DIR]
# Exit: 0 both simulated, 1 one failed, 2 bad usage.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/sim_lib.sh"
device=$top/devices/h100-sxm.device build=
while [ $# -gt 0 ]; do
    case $1 in
    --device) device=$2; shift ;;
    -*) echo "sim_pipeline.sh: error: unknown option '$1'" >&2; exit 2 ;;
    *) build=$1 ;;
    esac
    shift
done
sim_init "$build"
p=4 m=8
common="--machine $top/machines/h100-sxm.machine --ranks $p --device $device
 --num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024
 --vocab-size 50304 --micro-batch-size 1 --global-batch-size $m
 --pipeline-model-parallel-size $p --workers 2 --cuda 1 --compute-on cuda --sample-tokens 0
 --eval-interval 0 --eval-iters 1 --log-interval 1 --train-iters 3"
rc=0
# shellcheck disable=SC2086
sim_run 1f1b $common --pipeline-schedule 1f1b || rc=1
# shellcheck disable=SC2086
sim_run fold $common --pipeline-fold || rc=1
[ "$rc" = 0 ] || exit 1
printf '%-6s %12s %12s\n' schedule step_ms bubble_%
printf '%-6s %12s %12s\n' 1f1b "$(sim_step 1f1b)" "$(sim_bubble 1f1b)"
printf '%-6s %12s %12s\n' fold "$(sim_step fold)" "$(sim_bubble fold)"
awk -v f="$(sim_step fold)" -v o="$(sim_step 1f1b)" -v p=$p -v m=$m 'BEGIN {
    printf "fold / 1f1b step: %.3f; 1F1B textbook bubble (p-1)/(m+p-1) = %.1f%%\n", f / o,
        100 * (p - 1) / (m + p - 1) }'
echo "logs: $SIM_OUT"
