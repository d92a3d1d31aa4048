# SPDX-License-Identifier: MIT
# tests/mpi/parity_lib.sh: the oracle of every distributed configuration (architecture.md
# §5): a mesh must give the serial run's losses and final parameters.  Sourced after
# tests/cli/lib.sh and tests/mpi/lib.sh.
#   parity_reference        the serial run (1 rank), once per script, in $TMP/ref
#   parity_check NAME NP FLAGS...   mpirun -np NP of the same run with FLAGS; three checks:
#       it exits 0, every step's loss is within PARITY_TOL (relative) of the serial loss,
#       and every final parameter within PARITY_TOL (normwise relative, tests/mpi/ckpt_compare)
#   parity_same A B         runs A and B agree bitwise (losses and gradient norms)
#   parity_bitwise NAME BASE NP FLAGS...   the run (NP 1: without mpirun) exits 0 and its
#       losses, gradient norms and final parameters equal run BASE's bitwise (BASE "": a
#       base for later runs, one check)
# The model is small but has every part: 2 layers, 4 heads, 8 micro-batches of 2 sequences
# (so 4 data-parallel ranks still accumulate 2 micro-batches each), 20 AdamW steps.

PARITY_TOL=${PARITY_TOL:-1e-5}
PARITY_MODEL=${PARITY_MODEL:-"--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32
 --micro-batch-size 2 --global-batch-size 16 --train-iters 20 --lr 2e-3 --lr-warmup-iters 5
 --eval-interval 0 --eval-iters 2 --sample-tokens 16 --log-interval 5 --seed 7"}
COMPARE=$HX_BUILDDIR/tests/mpi/ckpt_compare

parity_reference() {
    # shellcheck disable=SC2086  # the model flags are words
    run "$HELIX" train $PARITY_MODEL --log-json "$TMP/ref.json" --save "$TMP/ref"
    ok "serial reference run" 'rc_is 0 && [ -s "$TMP/ref.json" ]'
}

# Largest relative difference of the per-step losses (KEY loss) or gradient norms (KEY
# grad_norm) of two JSON logs; "inf" when the steps differ (a run that stopped early fails).
log_diff() {
    python3 - "$1" "$2" "$3" <<'PY'
import json, sys
def values(p, key):
    return {r["step"]: r[key] for r in map(json.loads, open(p)) if key in r}
a, b = values(sys.argv[1], sys.argv[3]), values(sys.argv[2], sys.argv[3])
if not a or a.keys() != b.keys():
    print("inf"); sys.exit()
print("%.3g" % max(abs(a[k] - b[k]) / abs(a[k]) for k in a))
PY
}

# parity_same A B: runs A and B (their $TMP/NAME.json logs) have bitwise the same loss and
# gradient norm at every step, and at least one step
parity_same() {
    python3 -c "import json,sys; l=lambda p:[(r['loss'],r['grad_norm']) for r in map(json.loads,open(p)) if 'loss' in r]; sys.exit(not l(sys.argv[1]) or l(sys.argv[1])!=l(sys.argv[2]))" "$TMP/$1.json" "$TMP/$2.json"
}

le_tol() { python3 -c "import sys; sys.exit(0 if float('$1') <= float('$2') else 1)"; }

parity_check() {
    name=$1 np=$2
    shift 2
    # shellcheck disable=SC2086
    run hx_mpirun "$np" "$HELIX" train $PARITY_MODEL --log-json "$TMP/$name.json" \
        --save "$TMP/$name" "$@"
    ok "$name: mpirun -np $np $* trains" 'rc_is 0'
    d=$(log_diff "$TMP/ref.json" "$TMP/$name.json" loss)
    gn=$(log_diff "$TMP/ref.json" "$TMP/$name.json" grad_norm)
    echo "# $name: worst relative difference over 20 steps: loss $d, gradient norm $gn"
    ok "$name: losses and gradient norms equal the serial run's (<= $PARITY_TOL)" \
       'le_tol "$d" "$PARITY_TOL" && le_tol "$gn" "$PARITY_TOL"'
    "$COMPARE" "$TMP/ref" "$TMP/$name" "$PARITY_TOL" >"$TMP/cmp.txt" 2>&1
    crc=$?
    diag <"$TMP/cmp.txt"
    ok "$name: final parameters equal the serial run's (<= $PARITY_TOL)" '[ $crc -eq 0 ]'
}

parity_bitwise() {
    name=$1 base=$2 np=$3
    shift 3
    if [ "$np" -eq 1 ]; then
        # shellcheck disable=SC2086
        run "$HELIX" train $PARITY_MODEL --log-json "$TMP/$name.json" --save "$TMP/$name" "$@"
    else
        # shellcheck disable=SC2086
        run hx_mpirun "$np" "$HELIX" train $PARITY_MODEL --log-json "$TMP/$name.json" \
            --save "$TMP/$name" --comm-timeout 60 "$@"
    fi
    ok "$name: np $np $* trains" 'rc_is 0'
    [ -n "$base" ] || return 0
    "$COMPARE" "$TMP/$base" "$TMP/$name" 0 >"$TMP/cmp.txt" 2>&1
    crc=$?
    diag <"$TMP/cmp.txt"
    ok "$name: bitwise $base's losses, gradient norms and final parameters" \
        'parity_same "$base" "$name" && [ $crc -eq 0 ]'
}
