#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/bench.sh: `helix bench` runs a configuration in a child process and prints its
# figures (ms/step, tokens/s, GFLOP/s, fraction of the measured sgemm peak, RSS, overhead)
# and the loss-parity verdict of the same run; bad flags exit 2.  Nothing here is timed.
set -u
. "$(dirname "$0")/lib.sh"
if ! "${HX_TORCH_PYTHON:-/usr/bin/python3}" -c 'import torch' 2>/dev/null &&
    [ "${HX_REQUIRE_TORCH:-0}" != 1 ]; then
    echo "1..0 # SKIP the parity check needs PyTorch (apt-get install python3-torch)"
    exit 0
fi
plan 5
run "$HELIX" bench --configs B --steps 1 --warmup 0 --workers 2
ok "bench --configs B: exit 0" 'rc_is 0'
ok "... reports the sgemm peak it measured" 'out_has "sgemm peak [0-9.]* GFLOP/s"'
ok "... one row for B with every figure" \
    'out_has "^B  *[0-9.]*  *[0-9]*  *[0-9.]*  *[0-9.]*%  *[0-9]*  *-*[0-9.]*%$"'
ok "... and loss parity with PyTorch passed in the same run" 'out_has "^loss parity.*: PASS$"'
run "$HELIX" bench --configs Z
ok "an unknown configuration: exit 2 with one error line" \
    'rc_is 2 && err_has "^helix: error: --configs: unknown configuration" && ! out_has "cfg"'
finish
