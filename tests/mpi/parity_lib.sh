# SPDX-License-Identifier: MIT
# tests/mpi/parity_lib.sh: the oracle of every distributed configuration (architecture.md
# §5): a mesh must give the serial run's losses, gradient norms and final parameters, within
# the tolerance rule of every parity test (tests/README.md, "Parity tolerances"), or bitwise
# where only the schedule differs.  Sourced after tests/cli/lib.sh and tests/mpi/lib.sh.
#   parity_reference        the serial run (1 rank), once per script, in $TMP/ref, and the
#       rule's envelope: the same serial run in a second, equally exact summation order
#       ($PARITY_ORDER) gives E per metric; bails out if the two are bitwise equal (E would
#       measure nothing); then checks that the rule rejects a serial run with a 1% larger
#       learning rate by 10x or more (two checks)
#   parity_check NAME NP FLAGS...   mpirun -np NP of the same run with FLAGS (NP 1: one
#       process, without mpirun); three checks:
#       it exits 0; the losses and gradient norms (worst relative difference over the steps)
#       and the final parameters (tests/mpi/ckpt_compare's difference) are each within
#       K x max(E, floor) of the serial run's, E that metric's envelope
#   parity_heavy FUNC NAME ...   parity_check or parity_bitwise, skipped in the sanitizer build
#   parity_same A B         runs A and B agree bitwise (losses and gradient norms)
#   parity_bitwise NAME BASE NP FLAGS...   the run (NP 1: without mpirun) exits 0 and its
#       losses, gradient norms and final parameters equal run BASE's bitwise (BASE "": a
#       base for later runs, one check)
# Every judged metric prints a line, so the worst ratio per family can be collected:
#   # parity-ratio FAMILY NAME METRIC MEASURED TOLERANCE RATIO
# (parity-reject for the 1% learning-rate run; parity-envelope gives E).
# The model is small but has every part: 2 layers, 4 heads, 8 micro-batches of 2 sequences
# (so 4 data-parallel ranks still accumulate 2 micro-batches each), 20 AdamW steps.

# The rule's K and floor: one definition, in tools/parity.h (torch_parity's too)
parity_h="$(dirname "$0")/../../tools/parity.h"
PARITY_K=$(sed -n 's/^#define PARITY_K \([0-9.e+-]*\).*/\1/p' "$parity_h")
PARITY_FLOOR=$(sed -n 's/^#define PARITY_FLOOR \([0-9.e+-]*\).*/\1/p' "$parity_h")
if [ -z "$PARITY_K" ] || [ -z "$PARITY_FLOOR" ]; then
    echo "Bail out! no PARITY_K and PARITY_FLOOR in $parity_h"
    exit 1
fi
PARITY_FAMILY=$(basename "$0" .sh | sed 's/^parity_//')
PARITY_MODEL=${PARITY_MODEL:-"--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32
 --micro-batch-size 2 --global-batch-size 16 --train-iters 20 --lr 2e-3 --lr-warmup-iters 5
 --eval-interval 0 --eval-iters 2 --sample-tokens 16 --log-interval 5 --seed 7"}
# The second summation order: one row tile per micro-batch instead of the default split
# (half of one), so every weight, bias and LayerNorm gradient sums its rows in other groups
parity_mbs=$(echo "$PARITY_MODEL" | sed -n 's/.*--micro-batch-size \([0-9]*\).*/\1/p')
PARITY_ORDER="--tile-seqs ${parity_mbs:-2}"
COMPARE=$HX_BUILDDIR/tests/mpi/ckpt_compare

# Largest relative difference of the per-step losses (KEY loss) or gradient norms (KEY
# grad_norm) of two JSON logs; "inf" when a log is missing, holds a null (NaN) or other steps
# (a run that stopped early fails).
log_diff() {
    python3 - "$1" "$2" "$3" <<'PY'
import json, os, sys
def values(p, key):
    if not os.path.exists(p):
        return {}
    return {r["step"]: r[key] for r in map(json.loads, open(p)) if key in r}
a, b = values(sys.argv[1], sys.argv[3]), values(sys.argv[2], sys.argv[3])
if not a or a.keys() != b.keys() or None in list(a.values()) + list(b.values()):
    print("inf"); sys.exit()
print("%.3g" % max(abs(a[k] - b[k]) / abs(a[k]) for k in a))
PY
}

# param_diff A B: the difference of the final parameters of runs A and B (ckpt_compare's
# "difference": normwise relative, the whole model's or the worst tensor's; "inf" when it
# cannot compare them); its report in $TMP/cmp.txt
param_diff() {
    "$COMPARE" "$TMP/$1" "$TMP/$2" inf >"$TMP/cmp.txt" 2>&1
    pd_d=$(sed -n 's/^parameters: difference \([^ ,]*\).*/\1/p' "$TMP/cmp.txt")
    echo "${pd_d:-inf}"
}

# parity_within NAME METRIC MEASURED: the rule for one metric of run NAME; prints
#   # parity-ratio FAMILY NAME METRIC MEASURED TOLERANCE RATIO
# and succeeds when MEASURED <= TOLERANCE = K x max(E of METRIC, floor)
parity_within() { parity_rule parity-ratio "$@"; }
# parity_rejects NAME METRIC MEASURED: the same line, tagged parity-reject; succeeds when the
# rule rejects MEASURED by 10x or more (RATIO >= 10)
parity_rejects() { parity_rule parity-reject "$@"; }
parity_rule() {
    case $3 in
        loss) pr_e=$PARITY_E_loss ;;
        grad_norm) pr_e=$PARITY_E_grad_norm ;;
        *) pr_e=$PARITY_E_params ;;
    esac
    python3 - "$1" "$PARITY_FAMILY" "$2" "$3" "$4" "$pr_e" "$PARITY_K" "$PARITY_FLOOR" <<'PY'
import sys
tag, fam, name, metric = sys.argv[1:5]
measured, e, k, floor = (float(x or "inf") for x in sys.argv[5:9])
tol = k * max(e, floor)
ratio = measured / tol
print("# %s %s %s %s %.3g %.3g %.3g" % (tag, fam, name, metric, measured, tol, ratio))
sys.exit(0 if (ratio <= 1 if tag == "parity-ratio" else ratio >= 10) else 1)
PY
}

parity_reference() {
    # shellcheck disable=SC2086  # the model flags are words
    run "$HELIX" train $PARITY_MODEL --log-json "$TMP/ref.json" --save "$TMP/ref"
    ok "serial reference run" 'rc_is 0 && [ -s "$TMP/ref.json" ]'
    # the envelope: the same run in the second summation order
    # shellcheck disable=SC2086
    run "$HELIX" train $PARITY_MODEL --log-json "$TMP/ref-order.json" --save "$TMP/ref-order" \
        $PARITY_ORDER
    PARITY_E_loss=$(log_diff "$TMP/ref.json" "$TMP/ref-order.json" loss)
    PARITY_E_grad_norm=$(log_diff "$TMP/ref.json" "$TMP/ref-order.json" grad_norm)
    PARITY_E_params=$(param_diff ref ref-order)
    diag <"$TMP/cmp.txt"
    echo "# parity-envelope $PARITY_FAMILY ($PARITY_ORDER): loss $PARITY_E_loss," \
        "grad_norm $PARITY_E_grad_norm, params $PARITY_E_params"
    if ! rc_is 0; then
        echo "Bail out! the serial run with $PARITY_ORDER failed (exit $RC): the tolerance" \
            "rule has no envelope"
        exit 1
    fi
    if [ "$PARITY_E_loss" = inf ] || [ "$PARITY_E_grad_norm" = inf ] ||
        [ "$PARITY_E_params" = inf ]; then
        echo "Bail out! the serial runs with and without $PARITY_ORDER could not be compared" \
            "(see the lines above): the tolerance rule has no envelope"
        exit 1
    fi
    if [ "$PARITY_E_params" = 0 ] && parity_same ref ref-order; then
        echo "Bail out! the serial runs with and without $PARITY_ORDER are bitwise equal: the" \
            "envelope of the tolerance rule measures nothing (tests/README.md)"
        exit 1
    fi
    # the rule has teeth: a 1% larger learning rate (a stand-in for a wrong gradient) is
    # rejected on every metric by 10x or more
    pr_lr=$(echo "$PARITY_MODEL" | sed -n 's/.*--lr \([^ ]*\).*/\1/p')
    if [ -z "$pr_lr" ]; then
        echo "Bail out! PARITY_MODEL sets no --lr to perturb"
        exit 1
    fi
    pr_lr=$(python3 -c "print(float('$pr_lr') * 1.01)")
    # shellcheck disable=SC2086
    run "$HELIX" train $PARITY_MODEL --log-json "$TMP/ref-lr.json" --save "$TMP/ref-lr" \
        --lr "$pr_lr"
    d=$(log_diff "$TMP/ref.json" "$TMP/ref-lr.json" loss)
    gn=$(log_diff "$TMP/ref.json" "$TMP/ref-lr.json" grad_norm)
    pd=$(param_diff ref ref-lr)
    ok "the rule rejects the serial run with --lr $pr_lr (1% larger) by 10x or more" \
        'rc_is 0 && parity_rejects lr+1% loss "$d" && parity_rejects lr+1% grad_norm "$gn" &&
         parity_rejects lr+1% params "$pd"'
}

# parity_same A B: runs A and B (their $TMP/NAME.json logs) have bitwise the same loss and
# gradient norm at every step, and at least one step
parity_same() {
    python3 -c "import json,sys; l=lambda p:[(r['loss'],r['grad_norm']) for r in map(json.loads,open(p)) if 'loss' in r]; sys.exit(not l(sys.argv[1]) or l(sys.argv[1])!=l(sys.argv[2]))" "$TMP/$1.json" "$TMP/$2.json"
}

parity_check() {
    name=$1 np=$2
    shift 2
    pc_how="mpirun -np $np"
    if [ "$np" -eq 1 ]; then # (one process, without mpirun: tests/device/parity.sh)
        pc_how="one process,"
        # shellcheck disable=SC2086
        run "$HELIX" train $PARITY_MODEL --log-json "$TMP/$name.json" --save "$TMP/$name" "$@"
    else
        # shellcheck disable=SC2086
        run hx_mpirun "$np" "$HELIX" train $PARITY_MODEL --log-json "$TMP/$name.json" \
            --save "$TMP/$name" "$@"
    fi
    ok "$name: $pc_how $* trains" 'rc_is 0'
    d=$(log_diff "$TMP/ref.json" "$TMP/$name.json" loss)
    gn=$(log_diff "$TMP/ref.json" "$TMP/$name.json" grad_norm)
    ok "$name: losses and gradient norms equal the serial run's (tolerance rule)" \
       'parity_within "$name" loss "$d" && parity_within "$name" grad_norm "$gn"'
    pd=$(param_diff ref "$name")
    diag <"$TMP/cmp.txt"
    ok "$name: final parameters equal the serial run's (tolerance rule)" \
       'parity_within "$name" params "$pd"'
}

# parity_heavy FUNC NAME ARGS...: FUNC (parity_check or parity_bitwise) NAME ARGS..., but in
# the sanitizer build (HX_SANITIZED=1) its checks are skipped, saying so: for the 4-rank
# meshes and policy repeats whose own code smaller meshes already run under the sanitizers,
# so the two builds' suites stay inside CI's 30 minutes (tests/README.md, "The sanitizer
# build runs fewer meshes"; the -Werror build still runs every mesh)
parity_heavy() {
    if [ "${HX_SANITIZED:-0}" != 1 ]; then
        "$@"
        return
    fi
    case $1 in
    parity_check) whats="trains|losses and gradient norms|final parameters" ;;
    parity_bitwise) whats="trains${3:+|bitwise $3's losses, gradient norms and final parameters}" ;;
    *) echo "Bail out! parity_heavy: unknown check '$1'"; exit 1 ;;
    esac
    old_ifs=$IFS
    IFS='|'
    for what in $whats; do
        TAP_N=$((TAP_N + 1))
        echo "ok $TAP_N - $2: $what # SKIP sanitizer build: run in the -Werror build"
    done
    IFS=$old_ifs
    return 0
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
