#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/device/oclgrind.sh: every OpenCL kernel under Oclgrind (--data-races: out-of-bounds
# reads and writes, and races in local and global memory), which PoCL hides: a missing
# barrier and an out-of-bounds write both gave correct results on PoCL (shared/design/
# devices.md).  Oclgrind replaces the OpenCL platform (LD_PRELOAD), so StarPU's OpenCL worker
# runs on its simulator:
#   - one training step of a tiny model (1 layer, C=8, 2 heads, T=5) with every compute task
#     on the device, and one evaluation: 17 of the 30 compute ops, CLBlast's GEMM included;
#   - the codelet tests of the other thirteen (gelu_fwd: gelu; add: residual; xent_bwd:
#     crossentropy; xent_vp_stats, xent_vp: xent_vp; Llama's rmsnorm_fwd, add_rmsnorm_fwd,
#     rmsnorm_bwd_data, rmsnorm_bwd_weight: rmsnorm; swiglu_fwd, swiglu_bwd: swiglu;
#     rope_fwd, rope_bwd: rope), at their shapes.
# Each run must exit 0, pass its checks, and leave Oclgrind silent.  The kernels are the same
# code in every build, and Oclgrind does not run ASan binaries well: the sanitizer build skips.
set -u
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
device_require
if grep -q -e '-fsanitize' "$HX_BUILDDIR/Makefile" 2>/dev/null; then
    echo "1..0 # SKIP the sanitizer build: the kernels are checked by the other build's run"
    exit 0
fi
if ! command -v oclgrind >/dev/null 2>&1; then
    if [ "${HX_REQUIRE_OPENCL:-0}" = 1 ]; then
        echo "Bail out! oclgrind not found; apt-get install oclgrind (scripts/setup)"
        exit 1
    fi
    echo "1..0 # SKIP oclgrind not found (apt-get install oclgrind)"
    exit 0
fi

# silent: Oclgrind reported nothing (its diagnostics go to stderr, e.g. "Invalid write of
# size 4 at global memory address ...", "Read-write data race at ...")
silent() { ! grep -q -i -e "invalid \(read\|write\)" -e "data race" -e "divergence" "$ERR"; }

plan 9
run oclgrind --data-races "$HELIX" train --num-layers 1 --hidden-size 8 \
    --num-attention-heads 2 --seq-length 5 --micro-batch-size 2 --train-iters 1 \
    --eval-interval 1 --eval-iters 1 --progress-bar 0 --sample-tokens 0 --workers 1 \
    --opencl 1 --compute-on opencl --trace "$TMP/tiny.trace"
ok "a training step and an evaluation on Oclgrind's device: exit 0, Oclgrind silent" \
    'rc_is 0 && out_has "^done: 1 steps" && silent'
ops=$(python3 -c "
import json, sys
ev = json.load(open(sys.argv[1]))
ev = ev['traceEvents'] if isinstance(ev, dict) else ev
print(' '.join(sorted({e['name'] for e in ev if e.get('cat') == 'compute'})))" "$TMP/tiny.trace" 2>&1)
ok "... it ran 17 compute ops on the device ($ops)" '[ "$(echo "$ops" | wc -w)" -eq 17 ]'
for p in gelu residual crossentropy xent_vp rmsnorm swiglu rope; do
    LAST_CMD="oclgrind --data-races tests/codelets/$p (HX_TEST_DEVICE=opencl)"
    HX_TEST_DEVICE=opencl oclgrind --data-races "$HX_BUILDDIR/tests/codelets/$p" >"$OUT" 2>"$ERR"
    RC=$?
    n_ok=$(grep -c '^ok ' "$OUT")
    ok "codelets/$p on Oclgrind's device: $n_ok checks pass, Oclgrind silent" \
        'rc_is 0 && ! grep -q "^not ok" "$OUT" && [ "$n_ok" -gt 0 ] && silent'
done
finish
