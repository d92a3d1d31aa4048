#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/sim_scale.sh: how `helix simulate`'s wall time and memory grow with the simulated
# cluster (issue 23, "Scale").  A ~10B-parameter GPT (T 2048, vocabulary 50304) of one of two
# shapes, --shape deep (the default: C 5120, 32 layers, 40 heads, 10.3B parameters) or
# --shape wide (C 10240, 8 layers, 80 heads, 10.6B parameters: a quarter of the layers, so
# a quarter of the tasks and messages a step, which is what a simulation's wall time
# follows), on simulated H100 SXM nodes of 8 GPUs
# (machines/h100-sxm.machine, more nodes where needed) with the analytic models of
# devices/h100-sxm.device, one simulated training step each:
#    8 GPUs   tp 8                 (1 node)
#   64 GPUs   tp 8 x pp 2 x dp 4   (8 nodes; 4 micro-batches per pipeline)
#  256 GPUs   tp 8 x pp 2 x dp 16  (32 nodes)
# Prints per case: the simulated step, the wall time of the whole simulation (start-up
# included) and its peak memory (PSS, bench/sim_lib.sh).
#   bench/sim_scale.sh [--gpus "8 64 256"] [--shape deep|wide] [--iters N] [BUILD_DIR]
# Exit: 0 every case simulated, 1 one failed, 2 bad usage.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/sim_lib.sh"
gpus="8 64 256" iters=1 shape=deep build=
while [ $# -gt 0 ]; do
    case $1 in
    --gpus) gpus=$2; shift ;;
    --shape) shape=$2; shift ;;
    --iters) iters=$2; shift ;;
    -*) echo "sim_scale.sh: error: unknown option '$1'" >&2; exit 2 ;;
    *) build=$1 ;;
    esac
    shift
done
case $shape in
deep) layers="--num-layers 32 --hidden-size 5120 --num-attention-heads 40" ;;
wide) layers="--num-layers 8 --hidden-size 10240 --num-attention-heads 80" ;;
*) echo "sim_scale.sh: error: --shape '$shape': use deep or wide" >&2; exit 2 ;;
esac
sim_init "$build"
model="$layers --seq-length 2048 --max-position-embeddings 2048 --vocab-size 50304
 --micro-batch-size 1"
run="--workers 2 --cuda 1 --compute-on cuda --sample-tokens 0 --eval-interval 0
 --eval-iters 1 --log-interval 1 --train-iters $iters"
printf '%5s  %-22s %14s %10s %10s\n' gpus mesh simulated_ms wall_s peak_MB
rc=0
for g in $gpus; do
    nodes=$(((g + 7) / 8))
    sed "s/^nodes = .*/nodes = $nodes/" "$top/machines/h100-sxm.machine" >"$SIM_OUT/h100-$nodes.machine"
    pp=2
    [ "$g" -le 8 ] && pp=1
    dp=$((g / 8 / pp))
    # 4 micro-batches per pipeline (1 without one)
    mesh="--tensor-model-parallel-size 8 --pipeline-model-parallel-size $pp
 --global-batch-size $((dp * (pp > 1 ? 4 : 1)))"
    # shellcheck disable=SC2086
    if sim_run "gpus$g" --machine "$SIM_OUT/h100-$nodes.machine" --ranks "$g" \
        --device "$top/devices/h100-sxm.device" $model $mesh $run; then
        printf '%5s  %-22s %14s %10s %10s\n' "$g" "tp 8 x pp $pp x dp $dp" \
            "$(sim_step "gpus$g")" "$(cat "$SIM_OUT/gpus$g.wall")" "$(cat "$SIM_OUT/gpus$g.mem")"
    else
        rc=1
    fi
done
echo "logs: $SIM_OUT"
exit $rc
