#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/train_smoke.sh: `helix train` on a tiny model learns (the loss of the last of 60
# steps is more than 1 nat below the first) and prints one "step" line per step with
# --log-interval 1 (every 10th and the last with 10) and a "done:" line; gradient accumulation,
# --data-path and --dump-dot work; --help lists every flag with its default; `helix --help`
# and `helix version` work.
# shellcheck disable=SC2016,SC2034,SC2086,SC2317  # ok evals its quoted checks; $TINY splits
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"

TINY="--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 \
--micro-batch-size 4 --lr 3e-3 --workers 2 --log-interval 1"

# Loss of the first and of the last "step" line ("step  1/60 | loss 5.53 | ...").
first_loss() { awk -F'|' '/^step/ { split($2, f, " "); print f[2]; exit }' "$OUT"; }
last_loss() { awk -F'|' '/^step/ { split($2, f, " "); v = f[2] } END { print v }' "$OUT"; }
step_lines() { grep -c '^step' "$OUT"; }
logged_steps() { awk '/^step/ { printf "%s ", $2 }' "$OUT"; }
# The step lines count 1/N .. N/N, in order.
steps_numbered() {
    awk -v n="$1" '/^step/ { i++; if ($2 != i "/" n) bad = 1 } END { exit bad || i != n }' "$OUT"
}
# The last loss is below the first by more than $1.
loss_dropped_by() {
    awk -v a="$(first_loss)" -v b="$(last_loss)" -v d="$1" \
        'BEGIN { exit !(a != "" && b != "" && b + d < a) }'
}
# Each "  --flag" line of --help ends with its default in brackets; at least $1 of them.
help_defaults() {
    awk -v min="$1" '/^  --/ { n++; if ($NF !~ /^\[.*\]$/) bad = 1 } END { exit bad || n < min }' \
        "$OUT"
}

plan 18

run "$HELIX" train $TINY --train-iters 60
ok "tiny model, 60 steps: exit 0" 'rc_is 0'
ok "one 'step' line per step (60)" '[ "$(step_lines)" -eq 60 ]'
ok "steps are numbered 1/60 .. 60/60" 'steps_numbered 60'
ok "last loss < first loss - 1.0 ($(first_loss) -> $(last_loss))" 'loss_dropped_by 1.0'
ok "'done:' line present, with the losses" 'out_has "^done: 60 steps, loss [0-9.]* -> [0-9.]*$"'
ok "header names the configuration" 'out_has "^helix train: .*2 layers, C=64, 4 heads, T=32"'

run "$HELIX" train $TINY --global-batch-size 8 --train-iters 5
ok "--global-batch-size 8 with micro 4: exit 0" 'rc_is 0'
ok "... runs 2 micro-batches per step" 'out_has "batch 4 x 2 micro-batches"'
ok "... prints 5 step lines and done:" '[ "$(step_lines)" -eq 5 ] && out_has "^done:"'

run "$HELIX" train $TINY --train-iters 25 --log-interval 10
ok "--log-interval 10 over 25 steps: steps 1, 11, 21 and the last, 25" \
    'rc_is 0 && [ "$(logged_steps)" = "1/25 11/25 21/25 25/25 " ]'

# A small text file: 64 lines of about 50 bytes, far more than one sequence of 33 tokens.
i=0
while [ $i -lt 64 ]; do
    echo "line $i: the quick brown fox jumps over the lazy dog."
    i=$((i + 1))
done >"$TMP/small.txt"
run "$HELIX" train $TINY --train-iters 5 --data-path "$TMP/small.txt"
ok "--data-path on a small text file: exit 0" 'rc_is 0'
ok "... trains on that file (named in the header) to the end" \
    'out_has "^data: $TMP/small.txt, [0-9]* training" && out_has "^done: 5 steps"'

run "$HELIX" train $TINY --train-iters 1 --dump-dot "$TMP/step.dot"
ok "--dump-dot writes a Graphviz file starting with 'digraph'" \
    'rc_is 0 && [ "$(head -c 7 "$TMP/step.dot" 2>/dev/null)" = digraph ]'

run "$HELIX" train --help
ok "train --help: exit 0, nothing on stderr" 'rc_is 0 && [ ! -s "$ERR" ]'
ok "train --help lists --num-layers, --seq-length, --sched, --data-path, --lr" \
    'out_has "^  --num-layers N " && out_has "^  --seq-length N " && out_has "^  --sched STR " &&
     out_has "^  --data-path STR " && out_has "^  --lr N "'
ok "train --help gives a default in brackets for each of its 20+ flags" 'help_defaults 20'

run "$HELIX" --help
ok "helix --help: exit 0, lists the train command" 'rc_is 0 && out_has "^  train "'

run "$HELIX" version
ok "helix version prints 'helix X.Y.Z'" 'rc_is 0 && out_has "^helix [0-9][0-9.]*$"'

finish
