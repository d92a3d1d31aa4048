#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/resume.sh: a run killed with SIGKILL between saves, or stopped by SIGTERM/SIGINT
# mid-step (finish the step, save, exit 0), resumes with --load and prints the same step and
# validation losses, to the last digit (stdout and the %.9g --log-json), as an uninterrupted
# run, and ends with byte-identical checkpoints; `helix sample` from a checkpoint repeats.
# shellcheck disable=SC2016,SC2034,SC2086,SC2317  # ok evals its quoted checks; $ARGS splits
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"

ARGS="--num-layers 2 --hidden-size 32 --num-attention-heads 2 --seq-length 32 \
--micro-batch-size 4 --global-batch-size 8 --log-interval 1 --eval-interval 10 \
--sample-tokens 0 --workers 2 --progress-bar 0 --train-iters 40 --save-interval 10"

# records FILE: what must not depend on interruptions, one line per step or validation:
# "21 loss 4.7555 | lr 1.40e-03 | grad norm 1.4574" and "20 val loss 4.7331" (no timings).
records() {
    sed -n -e 's/^step *\([0-9]*\)\/[0-9]* | \(loss .* | grad norm [^ ]*\) | .*/\1 \2/p' \
        -e 's/^validation | step \([0-9]*\) | \(val loss [^ ]*\) .*/\1 \2/p' "$1"
}
# jrecords FILE: the --log-json lines without the timing fields ms, tokens_per_s and mfu.
jrecords() {
    sed -e 's/, "ms": [^,}]*//' -e 's/, "tokens_per_s": [^,}]*//' -e 's/, "mfu": [^,}]*//' "$1"
}
# after N / upto N: keep the lines of records or jrecords of steps > N, or <= N.
after() { awk -v n="$1" '{ s = $1; if (s ~ /^\{/) s = $2; if (s + 0 > n) print }'; }
upto() { awk -v n="$1" '{ s = $1; if (s ~ /^\{/) s = $2; if (s + 0 <= n) print }'; }
# same_after N NAME: the stdout and JSON records of run NAME after step N are the reference's
# (and there are some: the reference's records after N include every step up to 40).
same_after() {
    records "$TMP/ref.out" | after "$1" >"$TMP/want" &&
        records "$TMP/$2.out" | after "$1" >"$TMP/got" && [ -s "$TMP/want" ] &&
        cmp -s "$TMP/want" "$TMP/got" || return 1
    jrecords "$TMP/ref.jsonl" | after "$1" >"$TMP/want" &&
        jrecords "$TMP/$2.jsonl" | after "$1" >"$TMP/got" && [ -s "$TMP/want" ] &&
        cmp -s "$TMP/want" "$TMP/got"
}
# same_vals N FIRST SECOND: the validation losses of run FIRST up to step N and of SECOND
# after N are the reference's four (steps 10, 20, 30, 40; one before step 1 is not counted).
same_vals() {
    records "$TMP/ref.out" | after 0 | grep ' val loss ' >"$TMP/want"
    { records "$TMP/$2.out" | upto "$1"; records "$TMP/$3.out" | after "$1"; } | after 0 |
        grep ' val loss ' >"$TMP/got"
    [ "$(lines "$TMP/want")" -eq 4 ] && cmp -s "$TMP/want" "$TMP/got"
}
# saved NAME: the step of the last "saved checkpoint of step S" line of run NAME (or 0).
saved() { sed -n 's/^saved checkpoint of step \([0-9]*\) .*/\1/p' "$TMP/$1.out" | tail -n 1; }
# Only ckpt-*.bin files (at most two), `latest` and the run's lock (.lock) in DIR; "$2" more
# names allowed (pattern).
tidy() {
    n=$(find "$1" -name 'ckpt-*.bin' | wc -l)
    [ "$n" -ge 1 ] && [ "$n" -le 2 ] && [ -f "$1/latest" ] &&
        [ -z "$(find "$1" -type f ! -name 'ckpt-*.bin' ! -name latest ! -name .lock \
            ! -name "${2:-latest}")" ]
}

# interrupt SIG AT NAME: `helix train $ARGS --save $TMP/NAME` in the background (under
# timeout), its stdout read line by line through a fifo into $TMP/NAME.out; once it prints
# step AT or later, SIG goes to helix itself.  RC: its status; KSTEP: the step printed then.
interrupt() {
    sig=$1 at=$2 name=$3
    rm -f "$TMP/fifo" "$TMP/pid"
    mkfifo "$TMP/fifo" || return 1
    LAST_CMD="$HELIX train (...) --save $TMP/$name, SIG$sig once step $at is printed"
    timeout 50 sh -c 'echo $$ >"$1"; shift; exec "$@"' sh "$TMP/pid" "$HELIX" train $ARGS \
        --save "$TMP/$name" --log-json "$TMP/$name.jsonl" >"$TMP/fifo" 2>"$ERR" &
    bg=$!
    KSTEP=0
    while IFS= read -r line; do
        printf '%s\n' "$line"
        set -f
        set -- $line # "step", "25/40", "|", ...
        set +f
        if [ "$KSTEP" -eq 0 ] && [ "${1:-}" = step ] && [ "${2%%/*}" -ge "$at" ]; then
            KSTEP=${2%%/*}
            kill -s "$sig" "$(cat "$TMP/pid")"
        fi
    done <"$TMP/fifo" >"$OUT"
    wait "$bg" 2>/dev/null # (a shell may say "Killed")
    RC=$?
    cp "$OUT" "$TMP/$name.out"
}

# resume NAME: the same command line with --load, after an interruption.
resume() {
    run timeout 50 "$HELIX" train $ARGS --load "$TMP/$1" --save "$TMP/$1" \
        --log-json "$TMP/$1-2.jsonl"
    cp "$OUT" "$TMP/$1-2.out"
}

plan 21

run timeout 50 "$HELIX" train $ARGS --save "$TMP/ref" --log-json "$TMP/ref.jsonl"
cp "$OUT" "$TMP/ref.out"
ok "reference: 40 steps uninterrupted, 4 validations, saves at 30 and 40 kept" \
    'rc_is 0 && [ "$(grep -c "^step" "$OUT")" -eq 40 ] &&
     [ "$(grep -c "^validation | step [1-9]" "$OUT")" -eq 4 ] && tidy "$TMP/ref" &&
     latest_is "$TMP/ref" 40 && [ -f "$TMP/ref/ckpt-00000030.bin" ]'

# (a) SIGKILL between saves: the checkpoint of step 20 (the last complete one) is what is left.
interrupt KILL 25 kill
S=$(saved kill)
ok "SIGKILL once step 25 is printed: killed (status 137) at step $KSTEP, last save step $S" \
    'rc_is 137 && [ "$KSTEP" -ge 25 ] && [ "${S:-0}" -ge 20 ] && [ $((S % 10)) -eq 0 ] &&
     [ "$S" -lt 40 ]'
ok "... its save directory names ckpt-$S in 'latest', holds at most 2 checkpoints" \
    'latest_is "$TMP/kill" "$S" && tidy "$TMP/kill" "ckpt-*.bin.tmp"'
# a save killed before its rename leaves a .tmp: it must not count, and the next save prunes it
head -c 1000 "$TMP/kill/ckpt-$(printf %08d "$S").bin" \
    >"$TMP/kill/ckpt-$(printf %08d $((S + 10))).bin.tmp"
resume kill
ok "--load after SIGKILL: exit 0, resumes from step $S (a .tmp beside it does not count)" \
    'rc_is 0 && out_has "resuming from $TMP/kill$" &&
     [ "$(grep "^step" "$OUT" | head -n 1 | cut -c1-15)" = "$(printf "step %5d/40 |" $((S + 1)))" ]'
ok "... losses, lr and grad norm of steps $((S + 1))..40 equal the reference's (stdout, JSON)" \
    'same_after "$S" kill-2'
ok "... validation losses at steps 10, 20, 30, 40 equal the reference's" \
    'same_vals "$S" kill kill-2'
ok "... the directory then holds ckpt-30, ckpt-40 and latest only (the .tmp is gone)" \
    '[ "$(cd "$TMP/kill" && echo *)" = "ckpt-00000030.bin ckpt-00000040.bin latest" ] &&
     latest_is "$TMP/kill" 40'
ok "... and both checkpoints are byte-identical to the uninterrupted run's" \
    'cmp -s "$TMP/ref/ckpt-00000030.bin" "$TMP/kill/ckpt-00000030.bin" &&
     cmp -s "$TMP/ref/ckpt-00000040.bin" "$TMP/kill/ckpt-00000040.bin"'

# (b) SIGTERM and SIGINT mid-step: the step finishes, is saved, and the run exits 0.
for sig in TERM INT; do
    interrupt "$sig" 13 "$sig"
    S=$(saved "$sig")
    ok "SIG$sig once step 13 is printed: exit 0, 'SIG$sig received; stopping after step $S'" \
        'rc_is 0 && [ "$KSTEP" -ge 13 ] && [ "${S:-0}" -ge 13 ] && [ ! -s "$ERR" ] &&
         out_has "^helix train: SIG$sig received; stopping after step $S$"'
    ok "... the last step run ($S) is saved and named by 'latest'; no 'done:' line" \
        '[ "$(grep "^step" "$OUT" | tail -n 1 | cut -c1-15)" = "$(printf "step %5d/40 |" "$S")" ] &&
         latest_is "$TMP/$sig" "$S" && tidy "$TMP/$sig" && ! out_has "^done:"'
    resume "$sig"
    ok "--load after SIG$sig: exit 0; steps $((S + 1))..40 and validations equal the reference's" \
        'rc_is 0 && same_after "$S" "$sig-2" && same_vals "$S" "$sig" "$sig-2"'
    ok "... and so is its final checkpoint, byte for byte" \
        'cmp -s "$TMP/ref/ckpt-00000040.bin" "$TMP/$sig/ckpt-00000040.bin"'
done

# (d) sampling from a resumed run's checkpoint is deterministic.
run timeout 50 "$HELIX" sample --load "$TMP/kill" --tokens 20 --seed 5 --temperature 0 --workers 2
cp "$OUT" "$TMP/sample1"
ok "sample --load DIR --tokens 20 --temperature 0: exit 0, 20 characters" \
    'rc_is 0 && [ "$(head -c 20 "$OUT" | wc -c)" -eq 20 ] && [ ! -s "$ERR" ]'
run timeout 50 "$HELIX" sample --load "$TMP/kill" --tokens 20 --seed 5 --temperature 0 --workers 2
ok "... a second time prints the same text" 'rc_is 0 && cmp -s "$TMP/sample1" "$OUT"'
run timeout 50 "$HELIX" sample --load "$TMP/ref" --tokens 20 --seed 5 --temperature 0 --workers 2
ok "... which is also the uninterrupted run's sample" 'rc_is 0 && cmp -s "$TMP/sample1" "$OUT"'
run timeout 50 "$HELIX" sample --load "$TMP/kill" --prompt "The old" --tokens 20 --seed 5 \
    --temperature 0.8 --top-k 40 --workers 2
cp "$OUT" "$TMP/sample2"
ok "sample --prompt 'The old' --temperature 0.8: exit 0, continues the prompt" \
    'rc_is 0 && [ "$(head -c 7 "$OUT")" = "The old" ] && [ "$(wc -c <"$OUT")" -eq 28 ]'
run timeout 50 "$HELIX" sample --load "$TMP/kill" --prompt "The old" --tokens 20 --seed 5 \
    --temperature 0.8 --top-k 40 --workers 2
ok "... the same seed repeats it exactly" 'rc_is 0 && cmp -s "$TMP/sample2" "$OUT"'

finish
