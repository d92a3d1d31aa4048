#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/sim/analytic.sh: `helix simulate --device FILE`, the analytic performance models
# (runtime/sim_analytic.c) from a device description (devices/h100-sxm.device), on simulated
# H100s (machines/h100-sxm.machine):
#   runs         steps on one simulated GPU, and the same inputs give the same times
#   agreement    the GEMMs of a C=2048 layer (cuBLAS sgemm, the codelet hx_matmul): the
#                analytic model's total per step within 15% of the history models an H100
#                calibrated (perfmodels/h100), both read from the simulated traces
#   sensitivity  halving the GEMM peak raises the step; tensor parallelism over 2 GPUs runs
#                with its collectives on NVLink
#   profile      `helix simulate ... profile-overlap` (tp 2 + SP on two simulated H100s):
#                DHelix's overlap table in simulated time; every op's solo time the same in
#                every repeat, a GEMM's its model's, two kernels on the one GPU back to back
#                (StarPU 1.3.10 ended an asynchronous simulated CUDA task one kernel early:
#                codelets/codelets.h), collectives on the comm lane overlapping compute; and
#                helix plan-strands plans from it
#   bad input    a missing key, an unknown key, a value out of range and --device with
#                --perf-models are refused (exit 2) naming the file, line, key and a fix
# Needs the simulation flavour: skipped without it, unless HX_REQUIRE_SIMGRID=1.
set -u
. "$(dirname "$0")/../cli/lib.sh"
if ! grep -q '^#define HX_SIM_BUILD_BINARY' "$HX_BUILDDIR/config.h"; then
    if [ "${HX_REQUIRE_SIMGRID:-0}" = 1 ]; then
        echo "Bail out! helix was configured without --with-starpu-simgrid"
        exit 1
    fi
    echo "1..0 # SKIP the simulation flavour is not built (configure --with-starpu-simgrid)"
    exit 0
fi
SRC=${HX_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
DEVICE=$SRC/devices/h100-sxm.device
H100="--machine $SRC/machines/h100-sxm.machine --ranks 1"
GPU="--workers 1 --cuda 1 --compute-on cuda --eval-interval 0 --eval-iters 1 --log-interval 1"
C2048="--preset gpt2-124m --num-layers 2 --hidden-size 2048 --num-attention-heads 16"

step_ms() { sed -n 's/^step .*| \([0-9.]*\) ms\/step.*/\1/p' "$1"; }
faster() { [ "$(awk -v a="$(step_ms "$1" | tail -n 1)" -v b="$(step_ms "$2" | tail -n 1)" \
    'BEGIN { print (a + 0 < b + 0) ? 1 : 0 }')" = 1 ]; }
# milliseconds per step of the tasks named $2 in trace $1 (3 steps)
op_ms() {
    python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"] if isinstance(t, dict) else t
print("%.3f" % (sum(e["dur"] for e in ev if e.get("ph") == "X" and e["name"] == sys.argv[2]) / 3e3))' "$1" "$2"
}

plan 11
# shellcheck disable=SC2086
run "$HELIX" simulate $H100 --device "$DEVICE" $C2048 --train-iters 3 $GPU --keep "$TMP/a"
ok "analytic: 3 simulated steps of a C=2048 layer on one H100" \
    'rc_is 0 && [ "$(step_ms "$OUT" | wc -l)" = 3 ] && out_has "analytic models of device h100-sxm"'
cp "$OUT" "$TMP/first"
# shellcheck disable=SC2086
run "$HELIX" simulate $H100 --device "$DEVICE" $C2048 --train-iters 3 $GPU
ok "analytic: the same inputs give the same step times ($(step_ms "$OUT" | tr '\n' ' '))" \
    'rc_is 0 && [ "$(step_ms "$OUT")" = "$(step_ms "$TMP/first")" ]'

# shellcheck disable=SC2086
run "$HELIX" simulate $H100 --perf-models "$SRC/perfmodels/h100" --perf-models-host h100 \
    $C2048 --train-iters 3 $GPU --keep "$TMP/c"
an=$(op_ms "$TMP/a/trace.json" matmul)
cal=$(op_ms "$TMP/c/trace.json" matmul)
ok "analytic: GEMMs ${an:-?} ms a step against ${cal:-?} ms calibrated on an H100 (within 15%)" \
    'rc_is 0 && awk -v a="$an" -v c="$cal" "BEGIN { r = a / c; exit !(c > 0 && r > 0.85 && r < 1.15) }"'

sed 's/^gpu_gemm_tflops = .*/gpu_gemm_tflops = 33.45/' "$DEVICE" >"$TMP/half.device"
# shellcheck disable=SC2086
run "$HELIX" simulate $H100 --device "$TMP/half.device" $C2048 --train-iters 3 $GPU
ok "analytic: half the GEMM peak raises the step ($(step_ms "$OUT" | tail -n 1) ms against $(step_ms "$TMP/first" | tail -n 1) ms)" \
    'rc_is 0 && faster "$TMP/first" "$OUT"'

# shellcheck disable=SC2086
run "$HELIX" simulate --machine "$SRC/machines/h100-sxm.machine" --ranks 2 --device "$DEVICE" \
    --preset small --tensor-model-parallel-size 2 --sequence-parallel --train-iters 3 \
    --workers 2 --cuda 1 --compute-on cuda --eval-interval 0 --eval-iters 1 --log-interval 1
ok "analytic: tp 2 with sequence parallelism on two simulated H100s: 3 steps, tensor-parallel collectives on both ranks" \
    'rc_is 0 && [ "$(step_ms "$OUT" | wc -l)" = 3 ] && [ "$(grep -c "^  tensor-parallel" "$OUT")" = 2 ]'

# shellcheck disable=SC2086
run "$HELIX" simulate --machine "$SRC/machines/h100-sxm.machine" --ranks 2 --device "$DEVICE" \
    profile-overlap --num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 256 \
    --micro-batch-size 2 --tensor-model-parallel-size 2 --sequence-parallel \
    --num-micro-batches 2 --layer 1 --repeats 2 --classes --workers 2 --cuda 1 \
    --compute-on cuda --out "$TMP/overlap.json"
# (a GEMM's model: launch + flops / (peak x efficiency x the last wave's fill), sim_analytic.c)
table_check() {
    python3 - "$TMP/overlap.json" "$DEVICE" <<'PY'
import json, math, sys
t = json.load(open(sys.argv[1]))
dev = dict(l.split("=", 1) for l in open(sys.argv[2]) if "=" in l and not l.startswith("#"))
dev = {k.strip(): float(v.split("#")[0]) for k, v in dev.items() if k.strip() != "name"}
ops = {o["key"]: o for o in t["ops"]}
# a kernel's time is its model's, every repeat (a collective's also waits for its peer)
bad = [o["key"] for o in t["ops"] if o["kind"] == "comp" and
       o["solo_ms"] - o["solo_ms_min"] > 1e-3 * o["solo_ms"]]
gemm = next(o for o in t["ops"] if o["op"] == "matmul")
want = (dev["gpu_launch_us"] + gemm["flops"] / (dev["gpu_gemm_tflops"] * 1e12 *
        dev["gpu_gemm_efficiency"]) * 1e6) / 1e3
comp = [p for p in t["pairs"] if ops[p["a"]]["kind"] == ops[p["b"]]["kind"] == "comp"]
apart = [p["a"] + "||" + p["b"] for p in comp
         if p["corun_ms"] < 0.999 * (ops[p["a"]]["solo_ms"] + ops[p["b"]]["solo_ms"])]
comm = [p for p in t["pairs"] if not p["serialized"] and
        (ops[p["a"]]["kind"] == "comm") != (ops[p["b"]]["kind"] == "comm")]
hidden = max((p["oef"] for p in comm), default=0)
print("kernels varying: %s; GEMM %s %.4f ms (full-wave bound %.4f); comp||comp faster than "
      "back to back: %s; best comp||comm OEF %.2f" % (bad or "none", gemm["key"],
      gemm["solo_ms"], want, apart[:3] or "none", hidden))
# the model's GEMM time is at most the full-wave figure above (a partial last wave is slower)
ok = not bad and not apart and gemm["solo_ms"] >= want * 0.999 and hidden > 0.5 and comp
sys.exit(0 if ok else 1)
PY
}
table=$(table_check 2>&1)
ok "profile: a simulated overlap table of tp 2 + SP ($table)" \
    'rc_is 0 && out_has "wrote .*overlap.json" && [ -n "$table" ] && table_check >/dev/null 2>&1'
run "$HELIX" plan-strands --profile "$TMP/overlap.json" --out "$TMP/plan.json"
ok "profile: helix plan-strands plans from the simulated table" \
    'rc_is 0 && out_has "predicted makespan" && [ -s "$TMP/plan.json" ]'

grep -v '^gpu_sms' "$DEVICE" >"$TMP/nosms.device"
# shellcheck disable=SC2086
run "$HELIX" simulate $H100 --device "$TMP/nosms.device" --preset tiny $GPU
ok "analytic: a device file without gpu_sms is refused, naming the key and a line to add" \
    'rc_is 2 && err_has "nosms.device: gpu_sms is missing" && err_has "gpu_sms = 132"'
{ cat "$DEVICE"; echo "gpu_tensor_cores = yes"; } >"$TMP/unknown.device"
# shellcheck disable=SC2086
run "$HELIX" simulate $H100 --device "$TMP/unknown.device" --preset tiny $GPU
ok "analytic: an unknown key is refused with its line" \
    'rc_is 2 && err_has "unknown.device:[0-9]*: unknown key .gpu_tensor_cores."'
sed 's/^gpu_gemm_efficiency = .*/gpu_gemm_efficiency = 1.5/' "$DEVICE" >"$TMP/eff.device"
# shellcheck disable=SC2086
run "$HELIX" simulate $H100 --device "$TMP/eff.device" --preset tiny $GPU
ok "analytic: an efficiency above 1 is refused with the range" \
    'rc_is 2 && err_has "gpu_gemm_efficiency = .1.5.: expected a number from 0.001 to 1"'
# shellcheck disable=SC2086
run "$HELIX" simulate $H100 --device "$DEVICE" --perf-models "$SRC/perfmodels/h100" --preset tiny
ok "analytic: --device with --perf-models is refused (two sources of models)" \
    'rc_is 2 && err_has "give one"'
finish
