#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/save_dir.sh: a --save directory belongs to one run.  A directory holding another
# run's checkpoints is refused before any work (exit 2, one line naming it and the two ways
# on, nothing on stdout, every file as it was) unless the run resumes from it: --load DIR or
# --load DIR/ckpt-N.bin continue DIR's run and save there.  A directory in use by a running
# helix is refused (its lock names the pid), not shared.  A run stopped by a non-finite loss
# says which checkpoint is kept, or that none was saved.
# shellcheck disable=SC2016,SC2034,SC2086,SC2317  # ok evals its single-quoted checks
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"

TINY="--num-layers 2 --hidden-size 32 --num-attention-heads 2 --seq-length 32 \
--micro-batch-size 4 --workers 2 --progress-bar 0 --sample-tokens 0 --log-interval 1"
D=$TMP/run

plan 14

# The issue's reproduction: a tiny run saves at 10 and 20, then another model is sent there.
run timeout 50 "$HELIX" train --preset tiny --train-iters 20 --save-interval 10 --save "$D" \
    --progress-bar 0 --sample-tokens 0
ok "a first run saves ckpt-10 and ckpt-20 in $D" \
    'rc_is 0 && latest_is "$D" 20 && [ -f "$D/ckpt-00000010.bin" ]'
keep "$D"
run timeout 50 "$HELIX" train --preset small --train-iters 10 --save-interval 5 --save "$D" \
    --progress-bar 0
ok "another run with --save $D and no --load: exit 2, one line naming it and the ways on" \
    'usage_error "$D|another run|--load $D|new --save directory"'
ok "... its checkpoints are byte for byte as they were" 'unchanged'

mkdir -p "$TMP/other"
run timeout 50 "$HELIX" train $TINY --train-iters 3 --save "$TMP/other"
run timeout 50 "$HELIX" train $TINY --load "$TMP/other" --train-iters 6 --save "$D"
ok "--load of another directory with --save $D: refused the same way, nothing changed" \
    'usage_error "$D|another run|--load $D" && unchanged'

# The same run: --load DIR, or a checkpoint file in DIR, resumes it and saves there.
run timeout 50 "$HELIX" train --preset tiny --train-iters 30 --save-interval 10 --load "$D" \
    --save "$D" --progress-bar 0 --sample-tokens 0
ok "--load $D --save $D resumes that run: exit 0, 'latest' names ckpt-30" \
    'rc_is 0 && out_has "resuming from $D$" && latest_is "$D" 30'
run timeout 50 "$HELIX" train --preset tiny --train-iters 40 --save-interval 10 \
    --load "$D/ckpt-00000030.bin" --save "$D" --progress-bar 0 --sample-tokens 0
ok "--load $D/ckpt-00000030.bin --save $D resumes it too: 'latest' names ckpt-40" \
    'rc_is 0 && latest_is "$D" 40'
mkdir -p "$TMP/empty"
run timeout 50 "$HELIX" train $TINY --train-iters 2 --save "$TMP/empty"
ok "an existing empty directory is a new run's: exit 0, saved" \
    'rc_is 0 && latest_is "$TMP/empty" 2'

# A directory in use: a run in the background holds it; a second one is refused.
L=$TMP/locked
"$HELIX" train $TINY --train-iters 100000 --save-interval 100000 --save "$L" \
    >"$TMP/first.out" 2>"$TMP/first.err" &
first=$!
i=0
while [ $i -lt 300 ] && ! grep -q "^step" "$TMP/first.out"; do
    sleep 0.1
    i=$((i + 1))
done
run timeout 50 "$HELIX" train $TINY --train-iters 2 --save "$L"
ok "a second run with --save $L while the first trains: exit 2, names the first's pid ($first)" \
    'usage_error "$L|in use|pid $first|choose another --save directory"'
kill -s TERM "$first"
wait "$first"
RC=$?
ok "... the first run is not disturbed: SIGTERM stops it, saved, exit 0" \
    'rc_is 0 && grep -q "^saved checkpoint of step" "$TMP/first.out" && [ -f "$L/latest" ]'
run timeout 50 "$HELIX" train $TINY --train-iters 2 --save "$L"
ok "... once it has ended, its directory is still its own: a new run without --load is refused" \
    'usage_error "$L|another run|--load $L"'

# A non-finite loss (decoupled weight decay of lr * wd = 100 overflows the weights within a
# dozen steps): the message says which checkpoint stays, or that none was saved.
DIVERGE="--lr 10 --weight-decay 10 --lr-warmup-iters 0 --clip-grad 0 --train-iters 40"
run timeout 50 "$HELIX" train $TINY $DIVERGE --save "$TMP/nan1" --save-interval 100
ok "a loss that diverges before the first save: exit 1, 'no checkpoint was saved in' it" \
    'rc_is 1 && out_has "^helix train: stopped; no checkpoint was saved in $TMP/nan1$" &&
     ! out_has "last good checkpoint"'
ok "... and there is none" '[ ! -e "$TMP/nan1/latest" ]'
run timeout 50 "$HELIX" train $TINY $DIVERGE --save "$TMP/nan2" --save-interval 2
kept=$(cat "$TMP/nan2/latest" 2>/dev/null)
ok "saving every 2 steps: exit 1, names the checkpoint kept ($kept), the one 'latest' names" \
    'rc_is 1 && [ -n "$kept" ] && [ -f "$TMP/nan2/$kept" ] &&
     out_has "^helix train: stopped; the last good checkpoint, $TMP/nan2/$kept, is kept$"'
step=$(echo "$kept" | sed -n 's/^ckpt-0*\([0-9][0-9]*\)\.bin$/\1/p')
run timeout 50 "$HELIX" train --load "$TMP/nan2" --train-iters "${step:-1}" --workers 2 \
    --sample-tokens 0
ok "... which is finite: it loads, and its validation loss is a number" \
    'rc_is 0 && out_has "^validation | step ${step:-x} | val loss [0-9]"'
finish
