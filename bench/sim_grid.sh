#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/sim_grid.sh: AxoNN's four overlap optimisations (papers.md §1.6, the paper's Section
# IV) in simulation: its running example's grid, Gx 2 x Gy 2 x Gz 4 on 16 GPUs = 4
# Perlmutter-like nodes (machines/perlmutter.machine, devices/a100-40g.device), a GPT with
# GPT-20B's layer (C 7168, 56 heads, T 2048; --layers of them, 4 by default), AxoNN's batch
# of 32k tokens (16 sequences), activation checkpointing (--recompute-activations full), on
# hx-prefetch's order (one layer ahead).  Five runs of the same graph, AxoNN's cumulative
# order: none of the optimisations (--no-overlap all), +O1 (the input-gradient all-reduce
# under the weight-gradient GEMM), +O2 (deferred reduce-scatters), +O3 (all-gather
# prefetch), +O4 (gathered weights reused by the recomputation) = all.  Prints each one's
# simulated step, its gain over the previous, and rank 0's exposed communication.  The
# numbers are the simulator's (analytic A100 models, the machine's links), not a GPU's.
#   bench/sim_grid.sh [--layers L] [--iters N] [BUILD_DIR]
# Exit: 0 all simulated, 1 one failed, 2 bad usage.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/sim_lib.sh"
layers=4 iters=2 build=
while [ $# -gt 0 ]; do
    case $1 in
    --layers) layers=$2; shift ;;
    --iters) iters=$2; shift ;;
    -*) echo "sim_grid.sh: error: unknown option '$1'" >&2; exit 2 ;;
    *) build=$1 ;;
    esac
    shift
done
sim_init "$build"
common="--machine $top/machines/perlmutter.machine --ranks 16
 --device $top/devices/a100-40g.device --num-layers $layers --hidden-size 7168
 --num-attention-heads 56 --seq-length 2048 --vocab-size 51200 --micro-batch-size 2
 --global-batch-size 16 --tp-grid 2x2x4 --recompute-activations full --sched hx-prefetch
 --workers 2 --cuda 1 --compute-on cuda --sample-tokens 0 --eval-interval 0 --eval-iters 1
 --log-interval 1 --train-iters $iters"
names="none o1 o12 o123 all"
offs="all defer-rs,prefetch,cache prefetch,cache cache -"
rc=0
set -- $offs
for c in $names; do
    off=$1
    shift
    # shellcheck disable=SC2086
    if [ "$off" = - ]; then
        sim_run "$c" $common || rc=1
    else
        sim_run "$c" $common --no-overlap "$off" || rc=1
    fi
done
printf '%-6s %-28s %10s %9s %12s %8s\n' run "--no-overlap" step_ms gain_% exposed_ms wall_s
prev=
set -- $offs
for c in $names; do
    off=$1
    shift
    [ -s "$SIM_OUT/$c.wall" ] || continue
    s=$(sim_step "$c")
    g=$(awk -v a="$prev" -v b="$s" 'BEGIN { if (a == "" || b == "") print "-"; else printf "%.1f", 100 * (a - b) / a }')
    printf '%-6s %-28s %10s %9s %12s %8s\n' "$c" "$off" "$s" "$g" "$(sim_col "$c" all 2)" \
        "$(cat "$SIM_OUT/$c.wall")"
    prev=$s
done
echo "logs: $SIM_OUT"
exit $rc
