#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/device/runtime.sh: device workers as a user asks for them.  --opencl N and
# --compute-on start what exists and say so; a device that does not exist, a CUDA worker
# from a StarPU without CUDA, and a bad count or placement are refused before any work,
# with exit 2 and one error line naming what was asked and what was found.  Under a
# CUDA-enabled StarPU (HX_STARPU_CUDA=yes, scripts/setup --cuda) --cuda 1 trains on a GPU,
# or, where there is none, is refused after StarPU started no CUDA worker.
set -u
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
device_require

TINY="--preset tiny --train-iters 2 --progress-bar 0 --sample-tokens 0 --eval-interval 0"
plan 8
# shellcheck disable=SC2086
run "$HELIX" train $TINY --opencl 1 --compute-on opencl
ok "--opencl 1 --compute-on opencl trains and says where compute runs" \
    'rc_is 0 && out_has "^devices: 1 OpenCL and 0 CUDA workers beside the CPU ones; compute tasks on opencl$" &&
     out_has "^done: 2 steps"'
# shellcheck disable=SC2086
run "$HELIX" train $TINY --opencl 8
ok "--opencl 8 on a machine with fewer devices: exit 2 naming the devices found" \
    'one_error 2 "8 OpenCL workers requested, but | found: |use --opencl | or fewer"'
if [ "${HX_STARPU_CUDA:-no}" = yes ]; then # configure found a CUDA-enabled StarPU
    # shellcheck disable=SC2086
    run "$HELIX" train $TINY --cuda 1
    ok "--cuda 1 under a StarPU with CUDA: trains on the GPU, or exit 2 saying none is usable" \
        '(rc_is 0 && out_has "^done: 2 steps") ||
         (rc_is 2 && err_has "^helix: error: .*1 CUDA worker requested, StarPU started 0: no usable CUDA device")'
else
    # shellcheck disable=SC2086
    run "$HELIX" train $TINY --cuda 1
    ok "--cuda 1 under a StarPU without CUDA: exit 2 saying how to get one" \
        'one_error 2 "1 CUDA worker requested, but this StarPU (1.3) was built without CUDA|scripts/setup --cuda"'
fi
# shellcheck disable=SC2086
run "$HELIX" train $TINY --compute-on gpu
ok "--compute-on gpu: exit 2 listing the placements" \
    'one_error 2 "--compute-on gpu is not a placement; use any, cpu, opencl or cuda"'
# shellcheck disable=SC2086
run env STARPU_NOPENCL=one "$HELIX" train $TINY
ok "STARPU_NOPENCL=one: exit 2 naming the variable" \
    'one_error 2 "STARPU_NOPENCL=one is not a device count"'
# shellcheck disable=SC2086
run env STARPU_NOPENCL=1 "$HELIX" train $TINY
ok "STARPU_NOPENCL=1 starts the OpenCL worker, the policy placing the tasks" \
    'rc_is 0 && out_has "^devices: 1 OpenCL and 0 CUDA workers beside the CPU ones; compute tasks on the device or CPU the policy picks$"'
# shellcheck disable=SC2086
run "$HELIX" train $TINY --opencl 1 --compute-on opencl --workers 1 --sched dmda
ok "--compute-on opencl under StarPU's dmda trains" 'rc_is 0 && out_has "^done: 2 steps"'
# StarPU re-measures the bus when the OpenCL device count in its files changes; starts with
# and without OpenCL workers keep apart files (runtime/devices.c: name_host_view), so in one
# STARPU_HOME each view is measured once, and never again as the kinds alternate
home=$TMP/bus-home
mkdir -p "$home"
: >"$TMP/bus-err"
for devices in "" "--opencl 1" "" "--opencl 1"; do
    # shellcheck disable=SC2086
    run env STARPU_HOME="$home" "$HELIX" train $TINY $devices
    cat "$ERR" >>"$TMP/bus-err"
done
ok "alternating CPU-only and OpenCL starts: the bus measured once per view, never again" \
    'rc_is 0 && [ "$(grep -c "No performance model for the bus" "$TMP/bus-err")" -eq 2 ] &&
     ! grep -q "recalibrating" "$TMP/bus-err" &&
     [ -e "$home/.starpu/sampling/bus/$(hostname)-opencl.config" ]'
finish
