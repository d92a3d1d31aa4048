#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/device/parity.sh: the whole model on an OpenCL device against the serial CPU run,
# under the tolerance rule of every parity test (tests/README.md, "Parity tolerances";
# tests/mpi/parity_lib.sh: 2 layers, 4 heads, 8 micro-batches, 20 AdamW steps):
#   opencl      every compute task on the OpenCL worker (counted from the trace)
#   opencl-2    the same again: bitwise the first (fixed-tree reductions, no atomics)
#   mixed-prio  1 CPU + 1 OpenCL worker under hx-prio, and mixed-dmda under StarPU's dmda:
#               compute tasks ran on the CPU worker, and under dmda on both (where hx-prio
#               puts them depends on how calibrated the shared perf models are by then:
#               tests/device/placement.sh checks its placement with models of its own)
#   evict       the device run with STARPU_LIMIT_OPENCL_MEM far below the model's tiles, so
#               StarPU evicts and fetches again: more transfers than the opencl run
#   opencl-dp2  two data-parallel ranks, each with its OpenCL device (collectives on the CPU)
set -u
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../mpi/lib.sh"
. "$(dirname "$0")/../mpi/parity_lib.sh"
device_require
PARITY_FAMILY=opencl


plan 23
parity_reference
DEV="--opencl 1 --compute-on opencl"
# shellcheck disable=SC2086
parity_check opencl 1 $DEV --trace "$TMP/opencl.trace"
c=$(trace_count "$TMP/opencl.trace")
ok "opencl: every compute task ran on the OpenCL worker ($c)" \
    '[ "$(count_of "$c" cpu)" = 0 ] && [ "$(count_of "$c" opencl)" -gt 0 ]'
# shellcheck disable=SC2086
parity_bitwise opencl-2 opencl 1 $DEV
for sched in hx-prio dmda; do
    parity_check "mixed-$sched" 1 --workers 1 --opencl 1 --sched "$sched" \
        --trace "$TMP/mixed-$sched.trace"
    c=$(trace_count "$TMP/mixed-$sched.trace")
    if [ "$sched" = dmda ]; then
        ok "mixed-$sched: compute tasks ran on the CPU and on the OpenCL worker ($c)" \
            '[ "$(count_of "$c" cpu)" -gt 0 ] && [ "$(count_of "$c" opencl)" -gt 0 ]'
    else
        ok "mixed-$sched: compute tasks ran on the CPU worker ($c)" \
            '[ "$(count_of "$c" cpu)" -gt 0 ]'
    fi
done
STARPU_LIMIT_OPENCL_MEM=1
export STARPU_LIMIT_OPENCL_MEM
# shellcheck disable=SC2086
parity_check evict 1 $DEV --trace "$TMP/evict.trace"
unset STARPU_LIMIT_OPENCL_MEM
ce=$(trace_count "$TMP/evict.trace")
c=$(trace_count "$TMP/opencl.trace")
ok "evict: with 1 MB of device memory StarPU fetched more ($ce) than with all of it ($c)" \
    '[ "$(count_of "$ce" fetch)" -gt "$(count_of "$c" fetch)" ]'
# shellcheck disable=SC2086
parity_check opencl-dp2 2 $DEV
finish
