#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/sim_strands.sh: DHelix's question in simulation (issue 23): on DHelix's A40 cluster
# (machines/a40-ib100.machine: 8 nodes of 8 A40s on PCIe 4.0, 100 Gb/s InfiniBand; analytic
# models of devices/a40.device), DHelix's GPT setting (GPT-6.7B's layer: C 4096, 32 heads,
# FFN 4C; sequence length 8192; tensor and sequence parallelism over the 8 GPUs of a node),
# 64 GPUs as tp 8 x pp 2 x dp 4, micro-batches of one sequence, each schedule simulated once:
#   megatron  1F1B, no strands (--sched hx-prio): the Megatron-LM baseline;
#   wavelet   Wavelet+: the folded W, two strands interleaved round-robin
#             (--pipeline-fold --strands --sched hx-wavelet; DHelix's Wavelet+ reuses the fold);
#   dhelix    the folded W, two strands, the pairing plan of `helix plan-strands` from a
#             simulated profile (--strand-plan, --sched hx-strand);
#   fold      the folded W alone (no strands, hx-prio): what of dhelix's time is the fold's.
# The profile: `helix simulate profile-overlap` on one node (8 ranks, tp 8 + SP) of the same
# machine and models, layer 1 of a 2-layer model of the same shape, in simulated time.
# Prints per schedule: the simulated step, tokens/s, rank 0's tensor-parallel communication
# in flight, exposed and hidden, and the gain over megatron and over wavelet, beside the
# paper's (DHelix +26-40% over Megatron, Wavelet+ +6-16%; papers.md 2.7).  Layers are
# trimmed for this machine's wall time (DHelix trims them too, to fit memory): --layers L
# (default 12) of GPT-6.7B's 32, --micro-batches M per pipeline (default 8), --iters N
# simulated steps (default 1; the last is reported: steps 1 and 2 differed by under 0.6%).
# The fold cuts the model into 2 x pp chunks, and an SI block pairs a forward layer with a
# backward layer only after the backward's top two (graphs/schedule.c), so chunks of at
# least 3 layers (L >= 12 here) are needed for the strands to co-run at all.
#   bench/sim_strands.sh [--layers L] [--micro-batches M] [--iters N] [BUILD_DIR]
# Exit: 0 every schedule simulated, 1 one failed, 2 bad usage.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/sim_lib.sh"
layers=12 m=8 iters=1 build=
while [ $# -gt 0 ]; do
    case $1 in
    --layers) layers=$2; shift ;;
    --micro-batches) m=$2; shift ;;
    --iters) iters=$2; shift ;;
    -*) echo "sim_strands.sh: error: unknown option '$1'" >&2; exit 2 ;;
    *) build=$1 ;;
    esac
    shift
done
sim_init "$build"
machine=$top/machines/a40-ib100.machine device=$top/devices/a40.device
tp=8 pp=2 dp=4
shape="--hidden-size 4096 --num-attention-heads 32 --seq-length 8192 --micro-batch-size 1
 --vocab-size 50304 --tensor-model-parallel-size $tp --sequence-parallel"
devs="--workers 2 --cuda 1 --compute-on cuda"
# 1. the overlap table of the simulated machine: one node, a layer of the same shape
# shellcheck disable=SC2086
sim_run profile --machine "$machine" --ranks $tp --device "$device" profile-overlap $shape \
    --num-layers 2 --layer 1 --num-micro-batches 2 --repeats 1 --classes $devs \
    --out "$SIM_OUT/overlap.json" || exit 1
# 2. the plan
"$HELIX" plan-strands --profile "$SIM_OUT/overlap.json" --out "$SIM_OUT/plan.json" \
    >"$SIM_OUT/plan.log" 2>&1 || { cat "$SIM_OUT/plan.log" >&2; exit 1; }
# 3. the schedules, 64 ranks
common="--machine $machine --ranks $((tp * pp * dp)) --device $device $shape
 --num-layers $layers --pipeline-model-parallel-size $pp --global-batch-size $((m * dp))
 $devs --sample-tokens 0 --eval-interval 0 --eval-iters 1 --log-interval 1 --train-iters $iters"
rc=0
# shellcheck disable=SC2086
sim_run megatron $common --sched hx-prio || rc=1
# shellcheck disable=SC2086
sim_run wavelet $common --pipeline-fold --strands --sched hx-wavelet || rc=1
# shellcheck disable=SC2086
sim_run dhelix $common --pipeline-fold --strands --strand-plan "$SIM_OUT/plan.json" \
    --sched hx-strand || rc=1
# shellcheck disable=SC2086
sim_run fold $common --pipeline-fold --sched hx-prio || rc=1
[ "$rc" = 0 ] || exit 1
grep -E "^(steps|predicted)" "$SIM_OUT/plan.log"
tokens=$((m * dp * 8192))
printf '%-9s %10s %10s %12s %12s %9s %8s %8s %7s %7s\n' schedule step_ms tokens/s \
    tp_flight_ms tp_exposed_ms tp_hidden bubble_% wall_s vs_meg vs_wav
for s in megatron wavelet dhelix fold; do
    awk -v s="$s" -v t="$(sim_step "$s")" -v meg="$(sim_step megatron)" \
        -v wav="$(sim_step wavelet)" -v tok=$tokens -v fl="$(sim_col "$s" tensor-parallel 1)" \
        -v ex="$(sim_col "$s" tensor-parallel 2)" -v hid="$(sim_col "$s" tensor-parallel 4)" \
        -v bub="$(sim_bubble "$s")" -v wall="$(cat "$SIM_OUT/$s.wall")" 'BEGIN {
        printf "%-9s %10.1f %10.0f %12.1f %12.1f %8.1f%% %8.1f %8.1f %+6.1f%% %+6.1f%%\n", s, t,
            tok / (t / 1e3), fl, ex, hid, bub, wall, 100 * (meg / t - 1), 100 * (wav / t - 1) }'
done
echo "(gains: step of megatron or wavelet over this step, - 1; DHelix's paper: +26-40% over"
echo " Megatron for GPT at sequence length 8192 on 64 A40s, Wavelet+ +6-16%)"
echo "logs: $SIM_OUT"
