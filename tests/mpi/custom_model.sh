#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/custom_model.sh: examples/custom_model, a transformer variant written entirely in
# the example against helix/model.h, trains under helix's parallel passes and matches its own
# serial run on dp2 x tp2, ZeRO-3 (np 4) and dp2 x tp2 with ZeRO-2, under the tolerance rule
# of every parity test (tests/README.md, "Parity tolerances"; tests/mpi/parity_lib.sh):
# losses, gradient norms and the final parameters each within K x max(E, floor), E that
# metric's difference between the serial run and the serial run in a second summation order
# (--tile-seqs 2); two strands on dp2 x tp2 give dp2 x tp2's numbers bitwise.  The rule
# rejects a serial run with a 1% larger learning rate by 10x.
# A mesh the model's shape cannot take exits 2 with one message.
# shellcheck disable=SC2016,SC2034,SC2317  # ok evals its single-quoted checks
set -u
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/parity_lib.sh"
EX=$HX_BUILDDIR/examples/custom_model
plan 19

# cm_run NAME NP ARGS...: the example's run NAME (NP 1: one process, without mpirun)
cm_run() {
    cm_name=$1 cm_np=$2
    shift 2
    if [ "$cm_np" = 1 ]; then
        run "$EX" --log-json "$TMP/$cm_name.json" --save-params "$TMP/$cm_name.bin" "$@"
    else
        run hx_mpirun "$cm_np" "$EX" --log-json "$TMP/$cm_name.json" \
            --save-params "$TMP/$cm_name.bin" "$@"
    fi
}

# the final parameters' normwise relative difference of runs A and B ("inf": unreadable)
cm_params() {
    python3 - "$TMP/$1.bin" "$TMP/$2.bin" <<'PY'
import array, math, os, sys
def load(p):
    a = array.array("f")
    if os.path.exists(p):
        a.frombytes(open(p, "rb").read())
    return a
a, b = load(sys.argv[1]), load(sys.argv[2])
if not a or len(a) != len(b):
    print("inf"); sys.exit()
d = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
print("%.3g" % (d / math.sqrt(sum(x * x for x in a))))
PY
}

cm_run ref 1
ok "serial run: exit 0, the loss goes down" \
   'rc_is 0 && awk "/^loss / { exit !(\$4 < \$2) }" "$OUT" && out_has "^loss "'
cm_run order 1 --tile-seqs 2
ok "serial run in the second summation order: exit 0" 'rc_is 0'
PARITY_E_loss=$(log_diff "$TMP/ref.json" "$TMP/order.json" loss)
PARITY_E_grad_norm=$(log_diff "$TMP/ref.json" "$TMP/order.json" grad_norm)
PARITY_E_params=$(cm_params ref order)
echo "# parity-envelope custom_model (--tile-seqs 2): loss $PARITY_E_loss," \
    "grad_norm $PARITY_E_grad_norm, params $PARITY_E_params"
if [ "$PARITY_E_params" = 0 ] || [ "$PARITY_E_params" = inf ]; then
    echo "Bail out! the serial runs in two summation orders are equal or incomparable" \
        "(params difference $PARITY_E_params): the rule's envelope measures nothing"
    exit 1
fi
cm_run lr 1 --lr 2.02e-3
ok "the rule rejects a 1% larger learning rate: losses" \
   'parity_rejects lr loss "$(log_diff "$TMP/ref.json" "$TMP/lr.json" loss)"'
ok "the rule rejects a 1% larger learning rate: parameters" \
   'parity_rejects lr params "$(cm_params ref lr)"'

# cm_judge NAME: the three metrics of run NAME against the serial run
cm_judge() {
    cm_j=$1
    ok "$cm_j: losses within the rule" \
       'parity_within "$cm_j" loss "$(log_diff "$TMP/ref.json" "$TMP/$cm_j.json" loss)"'
    ok "$cm_j: gradient norms within the rule" 'parity_within "$cm_j" grad_norm \
       "$(log_diff "$TMP/ref.json" "$TMP/$cm_j.json" grad_norm)"'
    ok "$cm_j: final parameters within the rule" \
       'parity_within "$cm_j" params "$(cm_params ref "$cm_j")"'
}

cm_run dp2tp2 4 --tp 2
ok "np 4 --tp 2: exit 0 on dp 2 x tp 2" 'rc_is 0 && out_has "dp 2 x tp 2"'
cm_judge dp2tp2
cm_run zero3 4 --zero-stage 3
ok "np 4 --zero-stage 3: exit 0, parameters sharded 4 ways" 'rc_is 0 && out_has "s_p 4"'
cm_judge zero3
cm_run dp2tp2zero2 4 --tp 2 --zero-stage 2
ok "np 4 --tp 2 --zero-stage 2: exit 0" 'rc_is 0 && out_has "dp 2 x tp 2" && out_has "s_g 2"'
cm_judge dp2tp2zero2

# two strands only reorder the micro-batches' work: bitwise dp2tp2's numbers
cm_run dp2tp2strands 4 --tp 2 --strands
ok "np 4 --tp 2 --strands: exit 0" 'rc_is 0 && out_has "dp 2 x tp 2"'
ok "dp2tp2strands: losses, norms and parameters bitwise those of dp2tp2" \
   'cmp -s "$TMP/dp2tp2.json" "$TMP/dp2tp2strands.json" &&
    cmp -s "$TMP/dp2tp2.bin" "$TMP/dp2tp2strands.bin"'

run hx_mpirun 3 "$EX" --tp 3
ok "np 3 --tp 3: exit 2, one message naming the heads" \
   'rc_is 2 && [ "$(grep -c "helix: error:" "$ERR")" -eq 1 ] && err_has "num-attention-heads 4"'
finish
