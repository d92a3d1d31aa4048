#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/device/codelets.sh: every codelet test of tests/codelets/ again, with every compute
# task on one OpenCL worker (HX_TEST_DEVICE=opencl: tests/codelets/harness.h), so each device
# kernel meets the same double-precision references at the same odd shapes (T=17, C=96,
# 3 heads, V=257, tiles that do not divide) and tolerance (normwise relative 1e-5) as the CPU
# kernels.  One line per program: its checks and its worst error; a failure lists its TAP.
set -u
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
device_require

PROGRAMS="matmul layernorm gelu attention crossentropy embedding residual adamw xent_vp"
PROGRAMS="$PROGRAMS rmsnorm swiglu rope rope_gqa_torch norm_split"
plan 14
for p in $PROGRAMS; do
    LAST_CMD="HX_TEST_DEVICE=opencl tests/codelets/$p"
    HX_TEST_DEVICE=opencl "$HX_BUILDDIR/tests/codelets/$p" >"$OUT" 2>"$ERR"
    RC=$?
    n_ok=$(grep -c '^ok ' "$OUT")
    n_plan=$(sed -n 's/^1\.\.\([0-9]*\).*/\1/p' "$OUT" | head -n 1)
    worst=$(sed -n 's/^# worst normwise relative error: \([^[]*\).*/\1/p' "$OUT")
    ok "codelets/$p on an OpenCL worker: $n_ok of ${n_plan:-?} checks pass (worst error ${worst:-?})" \
        'rc_is 0 && [ "$n_ok" = "$n_plan" ] && out_has "^# compute tasks on 1 OpenCL worker"'
done
finish
