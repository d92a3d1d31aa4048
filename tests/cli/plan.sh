#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/plan.sh: `helix plan` (tools/plan.c) on a small model and 4 ranks of this bed, 2
# a node.  It lists itself in `helix --help`; it prices every configuration and prints the
# best with a command line each, the same bytes twice (nothing is timed); the top three
# command lines run as printed (mpirun -np 4 helix train ... --train-iters 2) and build the
# mesh the plan says; a train flag fixes its choice in every row; a memory budget no
# configuration fits exits 2 naming the least any needs.  Bad input exits 2 with one
# message: no machine or device, no --global-batch-size, a flag for a run (--shard-params),
# ranks that do not fill whole nodes, a budget that is no number.  `--measure` under mpirun
# times the bed's collectives into a file that `--comm` prices with; a damaged file is
# refused naming its line, and --measure on one rank exits 2.  --simulate-top simulates the
# best (helix simulate) and ranks them again by simulated step, or, without the simulation
# flavour, fails saying so.
# shellcheck disable=SC2016,SC2034,SC2317  # ok evals its single-quoted checks
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../mpi/lib.sh"

BED="--machine $HX_SRCDIR/machines/this-bed.machine --device $HX_SRCDIR/devices/a40.device
 --gpus 4 --gpus-per-node 2"
MODEL="--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32
 --vocab-size 256 --global-batch-size 8"
one_error() { [ "$(grep -c "error:" "$ERR")" -eq 1 ]; }
# the rows of the table: lines that start with a rank number and a tp (or AxoNN's grid)
rows() { awk '/^command lines:/ { exit } /^ *[0-9]+ +[0-9x]+ +[0-9]+ / { print }' "$OUT"; }
plan 22

run "$HELIX" --help
ok "plan is listed in helix --help" 'rc_is 0 && out_has "  plan "'

# shellcheck disable=SC2086  # the flag lists are words
run "$HELIX" plan $BED $MODEL
ok "helix plan: exit 0, every configuration priced, the best 5 with a command line each" \
   'rc_is 0 && out_has "configurations priced" && [ "$(rows | wc -l)" -eq 5 ] &&
    [ "$(grep -c "^ *[0-9]  mpirun -np 4 helix train " "$OUT")" -eq 5 ]'
cp "$OUT" "$TMP/plan1.out"
# shellcheck disable=SC2086
run "$HELIX" plan $BED $MODEL
ok "the same plan twice: the same bytes (nothing is timed)" \
   'rc_is 0 && cmp -s "$OUT" "$TMP/plan1.out"'

# the top three command lines run as printed, and build the plan's mesh
for k in 1 2 3; do
    line=$(sed -n "s/^ *$k  mpirun -np 4 helix train //p" "$TMP/plan1.out")
    row=$(awk -v k="$k" '$1 == k && NF > 20 { print $2, $3, $5; exit }' "$TMP/plan1.out")
    rt=${row%% *} rd=${row##* } rp=${row#* }
    rp=${rp%% *}
    # shellcheck disable=SC2086
    run hx_mpirun 4 "$HELIX" train $line --train-iters 2 --eval-iters 1 --sample-tokens 0 \
        --progress-bar 0
    case $rt in # a grid's mesh line names it after tp's ranks
    *x*) mesh="pp $rp x dp $rd x tp [0-9]* (grid $rt" ;;
    *) mesh="pp $rp x dp $rd x tp $rt" ;;
    esac
    ok "command line $k (tp $rt, pp $rp, dp $rd) runs: exit 0 on that mesh" \
       'rc_is 0 && out_has "$mesh" && out_has "^done: 2 steps"'
done

# AxoNN's grid: --tp-grid fixes it in every row, and its best command line runs on it
# shellcheck disable=SC2086
run "$HELIX" plan $BED $MODEL --tp-grid 1x2x2 --top 100
ok "--tp-grid 1x2x2 fixes the grid in every row" \
   'rc_is 0 && [ "$(rows | wc -l)" -gt 3 ] && [ "$(rows | awk "\$2 != \"1x2x2\"" | wc -l)" -eq 0 ]'
line=$(sed -n "s/^ *1  mpirun -np 4 helix train //p" "$OUT")
# shellcheck disable=SC2086
run hx_mpirun 4 "$HELIX" train $line --train-iters 2 --eval-iters 1 --sample-tokens 0 \
    --progress-bar 0
ok "the grid's first command line (--tp-grid 1x2x2) runs on that grid" \
   'rc_is 0 && out_has "(grid 1x2x2, 1 data)" && out_has "^done: 2 steps"'

# shellcheck disable=SC2086
run "$HELIX" plan $BED $MODEL --tensor-model-parallel-size 2 --top 100
ok "--tensor-model-parallel-size 2 fixes tp in every row" \
   'rc_is 0 && [ "$(rows | wc -l)" -gt 3 ] && [ "$(rows | awk "\$2 != 2" | wc -l)" -eq 0 ]'
# shellcheck disable=SC2086
run "$HELIX" plan $BED $MODEL --zero-stage 3 --top 100
ok "--zero-stage 3 keeps ZeRO-3 only (dp > 1), its command lines say it once" \
   'rc_is 0 && [ "$(rows | awk "\$5 > 1 && \$11 != \"zero-3\"" | wc -l)" -eq 0 ] &&
    [ "$(grep -c -- "--shard-params" "$OUT")" -eq 0 ]'
# shellcheck disable=SC2086
run "$HELIX" plan $BED $MODEL --memory-per-gpu 0.0001
ok "a budget nothing fits: exit 2, the least any configuration needs" \
   'rc_is 2 && one_error && err_has "fits in 0.00 GiB a rank (the smallest needs"'

# measured collectives: 2 ranks, 1 a node (each its own "node" here)
run hx_mpirun 2 "$HELIX" plan --measure "$TMP/comm.txt" --gpus-per-node 1
ok "--measure on 2 ranks: exit 0, every collective of the one-rank-a-node shape written" \
   'rc_is 0 && for op in allreduce allgather reduce_scatter recv; do
        grep -q "^$op 2 2 [0-9.]* [0-9.]*\$" "$TMP/comm.txt" || exit 1; done'
# shellcheck disable=SC2086
run "$HELIX" plan --machine "$HX_SRCDIR/machines/this-bed.machine" \
    --device "$HX_SRCDIR/devices/a40.device" --gpus 2 --gpus-per-node 1 $MODEL
cp "$OUT" "$TMP/ring.out"
# shellcheck disable=SC2086
run "$HELIX" plan --machine "$HX_SRCDIR/machines/this-bed.machine" \
    --device "$HX_SRCDIR/devices/a40.device" --gpus 2 --gpus-per-node 1 $MODEL \
    --comm "$TMP/comm.txt"
ok "--comm: the measured shapes price the collectives (another plan than the ring model's)" \
   'rc_is 0 && out_has "configurations priced" && ! cmp -s "$OUT" "$TMP/ring.out"'
printf 'allreduce 2 2 10\n' >"$TMP/bad.txt"
# shellcheck disable=SC2086
run "$HELIX" plan $BED $MODEL --comm "$TMP/bad.txt"
ok "a damaged --comm file: exit 2 naming its line" \
   'rc_is 2 && one_error && err_has "bad.txt:1: expected"'
run "$HELIX" plan --measure "$TMP/one.txt"
ok "--measure on one rank: exit 2, run it under mpirun" \
   'rc_is 2 && one_error && err_has "under mpirun" && [ ! -e "$TMP/one.txt" ]'
# shellcheck disable=SC2086
run "$HELIX" plan $BED $MODEL --recompute-activations sometimes
ok "--recompute-activations sometimes: exit 2 naming the modes" \
   'rc_is 2 && one_error && err_has "full, selective or none"'

# --simulate-top: the best 2 of 2 ranks simulated, ranked again by simulated step
# shellcheck disable=SC2086
run "$HELIX" plan --machine "$HX_SRCDIR/machines/this-bed.machine" \
    --device "$HX_SRCDIR/devices/this-bed.device" --gpus 2 --gpus-per-node 1 $MODEL \
    --top 2 --simulate-top 2
if grep -q '^#define HX_SIM_BUILD_BINARY' "$HX_BUILDDIR/config.h"; then
    ok "--simulate-top 2: both simulated, ranked again by simulated step" \
       'rc_is 0 && out_has "the best 2 simulated" &&
        awk "/the best 2 simulated/ { on = 1; next } /^command lines:/ { on = 0 }
             on && /^ *[12] / { n++; if (\$4 <= 0 ||
             \$4 < prev) exit 1; prev = \$4 } END { exit n != 2 }" "$OUT"'
else
    ok "--simulate-top without the simulation flavour: exit 1 saying so" \
       'rc_is 1 && err_has "without the simulation flavour"'
fi

# bad input
# shellcheck disable=SC2086
run "$HELIX" plan $MODEL
ok "no --machine: exit 2, one message" 'rc_is 2 && one_error && err_has "--machine FILE"'
# shellcheck disable=SC2086
run "$HELIX" plan $BED --num-layers 2 --hidden-size 64 --num-attention-heads 4
ok "no --global-batch-size: exit 2 naming it" \
   'rc_is 2 && one_error && err_has "give --global-batch-size"'
# shellcheck disable=SC2086
run "$HELIX" plan $BED $MODEL --shard-params 2
ok "--shard-params: exit 2, the plan picks it" \
   'rc_is 2 && one_error && err_has "--shard-params is for a run"'
# shellcheck disable=SC2086
run "$HELIX" plan $BED $MODEL --gpus 6 --memory-per-gpu x
ok "--memory-per-gpu x: exit 2 naming it" 'rc_is 2 && one_error && err_has "memory-per-gpu"'
# shellcheck disable=SC2086
run "$HELIX" plan $BED $MODEL --gpus 3
ok "--gpus 3 at 2 a node: exit 2, whole nodes" \
   'rc_is 2 && one_error && err_has "3 ranks at 2 a node"'
finish
