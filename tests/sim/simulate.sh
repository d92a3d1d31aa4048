#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/sim/simulate.sh: `helix simulate` on this machine's description
# (machines/this-bed.machine), with the performance models in tests/sim/models: StarPU's
# history files of --preset tiny, written here by `helix train` under STARPU_CALIBRATE=1 on
# one rank and on two (--comm-backend starpu-mpi), loaded machine and all.
#   runs        the simulated steps print a step time, and the trace summary follows
#   determinism the same inputs twice: the same simulated times, to the last digit
#   sensitivity halving hx_matmul's model lowers the step time; on two ranks (data
#               parallel, StarPU-MPI's all-reduce on SimGrid's network) a link at half the
#               rate raises it, and serial-comm is never faster than hx-prio
#   GPUs        a simulated CUDA worker (machines/h100-sxm.machine) with the models
#               scripts/gpu-check calibrated on an H100 (perfmodels/h100): every compute task
#               on it, and the simulated step of GPT-2 124M's two layers within 15% of the step
#               gpu-check measured there (perfmodels/h100/measured.tsv); --cuda on a machine
#               without GPUs is refused
#   bad input   a missing machine file, an unknown policy, --save, models of no host and a
#               missing model are refused (exit 2) with a message that names the fix
# Needs the simulation flavour (configure --with-starpu-simgrid): skipped without it, unless
# HX_REQUIRE_SIMGRID=1 (scripts/check sets it where it builds the flavour).
set -u
. "$(dirname "$0")/../cli/lib.sh"
if ! grep -q '^#define HX_SIM_BUILD_BINARY' "$HX_BUILDDIR/config.h"; then
    if [ "${HX_REQUIRE_SIMGRID:-0}" = 1 ]; then
        echo "Bail out! helix was configured without --with-starpu-simgrid (scripts/setup" \
            "--simgrid builds the StarPU it needs)"
        exit 1
    fi
    echo "1..0 # SKIP the simulation flavour is not built (configure --with-starpu-simgrid)"
    exit 0
fi
SRC=${HX_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
MACHINE=$SRC/machines/this-bed.machine
MODELS=$SRC/tests/sim/models
SIM="--machine $MACHINE --ranks 1 --preset tiny --train-iters 3 --log-interval 1"

# the step lines' simulated milliseconds, one per line
step_ms() { sed -n 's/^step .*| \([0-9.]*\) ms\/step.*/\1/p' "$1"; }
# awk: is the last step of $1 faster than the last of $2?
faster() { [ "$(awk -v a="$(step_ms "$1" | tail -n 1)" -v b="$(step_ms "$2" | tail -n 1)" \
    'BEGIN { print (a + 0 < b + 0) ? 1 : 0 }')" = 1 ]; }

plan 17
# shellcheck disable=SC2086
run "$HELIX" simulate $SIM --perf-models "$MODELS"
ok "simulate: 3 simulated steps on one rank of $(basename "$MACHINE")" \
    'rc_is 0 && [ "$(step_ms "$OUT" | wc -l)" = 3 ] && out_has "^done: 3 simulated steps"'
ok "simulate: the summary of the simulated trace follows (compute per rank)" \
    'out_has "^simulated trace" && out_has "compute"'
cp "$OUT" "$TMP/first"

# shellcheck disable=SC2086
run "$HELIX" simulate $SIM --perf-models "$MODELS"
ok "simulate: the same inputs give the same simulated step times ($(step_ms "$OUT" | tr '\n' ' '))" \
    'rc_is 0 && [ "$(step_ms "$OUT")" = "$(step_ms "$TMP/first")" ]'

# hx_matmul's history entries: "hash size flops mean dev sum sum2 n"; times halved
mkdir -p "$TMP/half/codelets/45"
cp "$MODELS"/codelets/45/* "$TMP/half/codelets/45/"
for f in "$TMP"/half/codelets/45/hx_matmul.*; do
    awk 'NF == 8 && $1 ~ /^[0-9a-f]+$/ { $4 /= 2; $5 /= 2; $6 /= 2; $7 /= 4 } { print }' "$f" \
        >"$f.new" && mv "$f.new" "$f"
done
# shellcheck disable=SC2086
run "$HELIX" simulate $SIM --perf-models "$TMP/half"
ok "simulate: halving hx_matmul's model lowers the step ($(step_ms "$OUT" | tail -n 1) ms against $(step_ms "$TMP/first" | tail -n 1) ms)" \
    'rc_is 0 && faster "$OUT" "$TMP/first"'

# two ranks: this-bed's two nodes, and the same at half the link's rate
DP2="--ranks 2 --preset tiny --train-iters 3 --log-interval 1 --perf-models $MODELS"
awk -F' = ' '$1 == "nic_gbits_per_s" { print $1 " = " $2 / 2; next } { print }' "$MACHINE" \
    >"$TMP/slow.machine"
# shellcheck disable=SC2086
run "$HELIX" simulate --machine "$MACHINE" $DP2
ok "simulate: dp 2 over this-bed's link: 3 simulated steps with all-reduces on both ranks" \
    'rc_is 0 && [ "$(step_ms "$OUT" | wc -l)" = 3 ] && [ "$(grep -c "^  allreduce" "$OUT")" = 2 ]'
ok "simulate: the trace summary names each rank's simulated node (node0, node1), not this machine" \
    'out_has "^rank 0 (node0)" && out_has "^rank 1 (node1)"'
cp "$OUT" "$TMP/dp2"
# shellcheck disable=SC2086
run "$HELIX" simulate --machine "$TMP/slow.machine" $DP2
ok "simulate: the link at half the rate raises the step ($(step_ms "$OUT" | tail -n 1) ms against $(step_ms "$TMP/dp2" | tail -n 1) ms)" \
    'rc_is 0 && faster "$TMP/dp2" "$OUT"'
# shellcheck disable=SC2086
run "$HELIX" simulate --machine "$MACHINE" $DP2 --sched serial-comm
ok "simulate: serial-comm is not faster than hx-prio ($(step_ms "$OUT" | tail -n 1) ms against $(step_ms "$TMP/dp2" | tail -n 1) ms)" \
    'rc_is 0 && ! faster "$OUT" "$TMP/dp2"'

# a GPU: the calibrated H100 models against what the H100 measured with the same flags
GPU_MODELS=$SRC/perfmodels/h100
gpu_flags=$(awk -F'\t' '$1 == "gpt2-124m" { print $3 }' "$GPU_MODELS/measured.tsv")
gpu_ms=$(awk -F'\t' '$1 == "gpt2-124m" { print $2 }' "$GPU_MODELS/measured.tsv")
# shellcheck disable=SC2086
run "$HELIX" simulate --machine "$SRC/machines/h100-sxm.machine" --ranks 1 \
    --perf-models "$GPU_MODELS" --perf-models-host h100 $gpu_flags --train-iters 4 \
    --workers 1 --cuda 1 --compute-on cuda --eval-interval 0 --eval-iters 1 --log-interval 1
ok "simulate: one simulated H100 ($gpu_flags): 4 steps, compute on its CUDA worker" \
    'rc_is 0 && [ "$(step_ms "$OUT" | wc -l)" = 4 ] && out_has "^devices: 0 OpenCL and 1 CUDA workers beside the CPU ones; compute tasks on cuda$"'
sim_ms=$(step_ms "$OUT" | tail -n 1)
ok "simulate: its step ${sim_ms:-?} ms is within 15% of the ${gpu_ms:-?} ms an H100 measured (perfmodels/h100/measured.tsv)" \
    '[ -n "$sim_ms" ] && [ -n "$gpu_ms" ] && awk -v s="$sim_ms" -v m="$gpu_ms" "BEGIN { r = s / m; exit !(r > 0.85 && r < 1.15) }"'
# shellcheck disable=SC2086
run "$HELIX" simulate $SIM --perf-models "$MODELS" --cuda 1
ok "simulate: --cuda on a machine without GPUs is refused, naming gpus_per_node" \
    'rc_is 2 && err_has "the simulated machine gives each rank 0 GPUs" && err_has "gpus_per_node"'

run "$HELIX" simulate --machine "$TMP/none.machine" --preset tiny
ok "simulate: a missing machine file is refused, named" \
    'rc_is 2 && err_has "none.machine"'
# shellcheck disable=SC2086
run "$HELIX" simulate $SIM --perf-models "$MODELS" --save "$TMP/ckpt"
ok "simulate: --save is refused (no weights are computed)" \
    'rc_is 2 && err_has "no weights to save or load" && [ ! -e "$TMP/ckpt" ]'
# shellcheck disable=SC2086
run "$HELIX" simulate $SIM --perf-models "$MODELS" --sched no-such-policy
ok "simulate: an unknown policy is refused as train refuses it" \
    'rc_is 2 && err_has "no-such-policy"'
mkdir -p "$TMP/empty/codelets/45"
# shellcheck disable=SC2086
run "$HELIX" simulate $SIM --perf-models "$TMP/empty"
ok "simulate: a models directory without models is refused, naming STARPU_CALIBRATE" \
    'rc_is 2 && err_has "no performance model"'
mkdir -p "$TMP/nomatmul/codelets/45"
cp "$MODELS"/codelets/45/* "$TMP/nomatmul/codelets/45/"
rm "$TMP"/nomatmul/codelets/45/hx_matmul.*
# shellcheck disable=SC2086
run "$HELIX" simulate $SIM --perf-models "$TMP/nomatmul"
ok "simulate: a missing model (hx_matmul) is named before any task runs, with the fix" \
    'rc_is 2 && err_has "no performance model of matmul" && err_has "hx_matmul" && err_has "STARPU_CALIBRATE=1"'
run "$HELIX" simulate --preset tiny
ok "simulate: no --machine is refused" 'rc_is 2 && err_has "no --machine"'
finish
