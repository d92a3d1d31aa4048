#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/hostile.sh: what a hostile new user tried (issue 20), each with its exact exit
# status and one `helix: error:` line.  Output that cannot be written (stdout or --log-json on
# /dev/full) exits 1 and never 0; the run stops cleanly, saving the steps it made.  An empty
# path is an error, an empty prompt a prompt.  Bytes of a config file are escaped when echoed,
# a UTF-8 byte-order mark is skipped, and "did you mean" never names the same text.  Numbers
# that overflow or make no sense (--shard-params 65536x65536, --comm-timeout 0.001) are
# refused.  Resuming: a shorter --seq-length works, a longer one is refused in the user's
# terms; the learning-rate schedule is the checkpoint's (a longer --train-iters does not
# stretch its decay; a changed schedule flag says so in one line); a --log-json resumed into
# holds each step once.  The good checkpoint made first is never touched.
# shellcheck disable=SC2016,SC2034,SC2086,SC2317  # ok evals its single-quoted checks
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"

TINY="--num-layers 2 --hidden-size 32 --num-attention-heads 2 --seq-length 32 \
--micro-batch-size 4 --workers 2 --progress-bar 0 --sample-tokens 0 --log-interval 1"
GOOD=$TMP/good

# to_full ARGS...: `helix ARGS` with stdout on /dev/full (a full disk).
to_full() {
    LAST_CMD="$HELIX $* >/dev/full"
    : >"$OUT"
    timeout 50 "$HELIX" "$@" >/dev/full 2>"$ERR"
    RC=$?
}
# lrs FILE: "step lr" of each step object of a --log-json file.
lrs() { sed -n 's/^{"step": \([0-9]*\), "loss": [^,]*, "lr": \([^,]*\),.*/\1 \2/p' "$1"; }
# jrecords FILE: the --log-json lines without the timing fields.
jrecords() {
    sed -e 's/, "ms": [^,}]*//' -e 's/, "tokens_per_s": [^,}]*//' -e 's/, "mfu": [^,}]*//' "$1"
}

good_checkpoint "$GOOD" $TINY

plan 37

# --- output that cannot be written -------------------------------------------------------
FULL="writing standard output failed|No space left on device"
to_full train $TINY --load "$GOOD" --save "$GOOD" --train-iters 6
ok "train, stdout on /dev/full: exit 1, one error line, stopped before any step" \
    'one_error 1 "$FULL|stopped before step 4|nothing was saved" && unchanged'
to_full train --help
ok "train --help, stdout on /dev/full: exit 1, one error line" 'one_error 1 "$FULL"'
to_full version
ok "version, stdout on /dev/full: exit 1, one error line" 'one_error 1 "$FULL"'
to_full sample --load "$GOOD" --tokens 5 --workers 2
ok "sample, stdout on /dev/full: exit 1, one error line" \
    'one_error 1 "writing the sample to standard output failed|No space left on device"'
# the JSON log fails at step 5's record (written when step 5 is reported): the run stops
# after that step, saves it, and exits 1; its checkpoint then resumes
cp -R "$GOOD" "$TMP/jfull"
run timeout 50 "$HELIX" train $TINY --load "$TMP/jfull" --save "$TMP/jfull" --train-iters 8 \
    --log-json /dev/full
ok "--log-json /dev/full: exit 1, one error line naming it, stopped after step 5, saved" \
    'one_error 1 "writing --log-json /dev/full failed (No space left on device)|stopped after step 5|saved in $TMP/jfull" &&
     out_has "^saved checkpoint of step 5 " && ! out_has "^step     6/"'
ok "... its checkpoint of step 5 is complete and named by 'latest'" \
    '[ "$(cat "$TMP/jfull/latest")" = ckpt-00000005.bin ] &&
     "$HELIX" sample --load "$TMP/jfull" --tokens 2 --workers 2 >/dev/null 2>&1'
run timeout 50 "$HELIX" train $TINY --train-iters 3 --log-json /dev/full
ok "--log-json /dev/full from scratch: exit 1 before step 1 (the first validation's record)" \
    'one_error 1 "--log-json /dev/full failed|stopped before step 1" && ! out_has "^step "'

# --- empty values: a path is an error, a prompt is a prompt -------------------------------
run timeout 50 "$HELIX" train $TINY --train-iters 1 --load "" --save ""
ok "train --load '' --save '': exit 2, one line naming --load" \
    'one_error 2 "--load is given an empty value" && [ ! -s "$OUT" ]'
printf 'train-iters = 1\nsave =\n' >"$TMP/save.cfg"
bad "a config line 'save ='" "$TMP/save.cfg:2|--save is given an empty value" \
    train $TINY --config "$TMP/save.cfg"
nempty=0
for flag in data-path config log-json trace dump-dot load-llmc strand-plan; do
    run timeout 50 "$HELIX" train $TINY --train-iters 1 --$flag ""
    if one_error 2 "--$flag is given an empty value" && [ ! -s "$OUT" ]; then
        nempty=$((nempty + 1))
    else
        echo "# --$flag '': status $RC" && diag <"$ERR"
    fi
done
ok "train --data-path --config --log-json --trace --dump-dot --load-llmc --strand-plan '': \
each exit 2 naming the flag ($nempty of 7)" '[ "$nempty" -eq 7 ]'
nempty=0
for cmd in "sample --load" "profile-overlap --out" "plan-strands --out" "bench --configs"; do
    run timeout 50 "$HELIX" $cmd ""
    if one_error 2 "--${cmd#* --} is given an empty value"; then
        nempty=$((nempty + 1))
    else
        echo "# $cmd '': status $RC" && diag <"$ERR"
    fi
done
ok "sample --load, profile-overlap --out, plan-strands --out, bench --configs '': each exit 2 \
($nempty of 4)" '[ "$nempty" -eq 4 ]'
run timeout 50 "$HELIX" sample --load "$GOOD" --prompt "" --tokens 5 --temperature 0 --workers 2
ok "sample --prompt '': exit 0, 5 bytes after nothing, then a newline" \
    'rc_is 0 && [ "$(wc -c <"$OUT")" -eq 6 ] && [ ! -s "$ERR" ]'
printf 'sample-prompt = ""\n' >"$TMP/prompt.cfg"
run timeout 50 "$HELIX" train $TINY --train-iters 1 --sample-tokens 4 --config "$TMP/prompt.cfg"
ok "train, config 'sample-prompt = \"\"': exit 0, a 4-token sample" \
    'rc_is 0 && [ "$(sed -n "/^sample (4 tokens/{n;p;}" "$OUT" | wc -c)" -ge 2 ]'

# --- config files ---------------------------------------------------------------------------
printf 'lr = 1e-3\n\001\002\033[31mred = 1\n' >"$TMP/garbage.cfg"
bad "binary garbage in a config file" "$TMP/garbage.cfg:2|unknown flag --\\x01\\x02\\x1b[31mred" \
    train --config "$TMP/garbage.cfg"
ok "... echoed escaped: no control byte reaches the terminal" \
    '! LC_ALL=C grep -q "$(printf "[\001\002\033]")" "$ERR"'
printf 'save = \033[31mred\n' >"$TMP/esc.cfg"
bad "a terminal escape in a config file's path" \
    "$TMP/esc.cfg:1|--save '\\x1b[31mred' holds a control character" \
    train $TINY --config "$TMP/esc.cfg"
ok "... echoed escaped" '! LC_ALL=C grep -q "$(printf "\033")" "$ERR"'
printf 'train-iters = 1\n\000\001garbage\n' >"$TMP/nul.cfg"
bad "a config file holding a NUL byte" "$TMP/nul.cfg|NUL byte|binary" \
    train $TINY --config "$TMP/nul.cfg"
printf '\357\273\277train-iters = 1\n' >"$TMP/bom.cfg"
run timeout 50 "$HELIX" train $TINY --config "$TMP/bom.cfg"
ok "a config file starting with a UTF-8 byte-order mark: read (exit 0, 1 step)" \
    'rc_is 0 && [ "$(grep -c "^step" "$OUT")" -eq 1 ]'
printf 'train-iters\302\240= 1\n' >"$TMP/nbsp.cfg"
bad "a flag name with a no-break space: named as stray bytes" \
    "$TMP/nbsp.cfg:1|--train-iters\\u00a0|--train-iters with stray bytes" \
    train --config "$TMP/nbsp.cfg"
ok "... and never 'did you mean' the same text" '! err_has "did you mean --train-iters?"'
bad "an unknown flag far from every name: no suggestion" "unknown flag --xyzzy|see --help" \
    train --xyzzy 1
ok "... (none offered)" '! err_has "did you mean"'
printf 'sample-prompt = "a # b\\n" # a comment\n' >"$TMP/quoted.cfg"
run timeout 50 "$HELIX" train $TINY --train-iters 1 --config "$TMP/quoted.cfg" --save "$TMP/q"
run timeout 50 "$HELIX" train $TINY --load "$TMP/q" --train-iters 2 --sample-tokens 1 \
    --sample-prompt "a # b
"
cp "$OUT" "$TMP/q1"
run timeout 50 "$HELIX" train $TINY --load "$TMP/q" --train-iters 2 --sample-tokens 1
ok "a quoted prompt with '#' and a newline survives the checkpoint's settings" \
    'rc_is 0 && [ "$(sed -n "/^sample/,\$p" "$OUT")" = "$(sed -n "/^sample/,\$p" "$TMP/q1")" ] &&
     [ "$(sed -n "/^sample/{n;p;}" "$OUT")" = "a # b" ]'

LONG=$(head -c 9000 /dev/zero | tr '\0' x)
bad "a --sample-prompt too long for a checkpoint's settings, with --save: refused before work" \
    "do not fit in the 8192 bytes|--sample-prompt" \
    train $TINY --train-iters 1 --sample-prompt "$LONG" --save "$TMP/long"
ok "... and nothing was created" '[ ! -e "$TMP/long" ]'

# --- numbers ----------------------------------------------------------------------------------
bad "--shard-params 65536x65536: no overflow in the message" \
    "--shard-params 65536x65536|4294967296 ranks" train --shard-params 65536x65536
bad "--shard-params with a sign or blanks" "--shard-params '+2'|not a sharding factor" \
    train --shard-params +2
bad "--comm-timeout 0.001: below the 1 s minimum" "--comm-timeout 0.001|1 s minimum|0 for no" \
    train $TINY --train-iters 1 --comm-timeout 0.001
run timeout 50 "$HELIX" train --help
ok "--help says --comm-timeout's minimum and that 0 is never" \
    'rc_is 0 && out_has "comm-timeout N .*at least 1; 0: never"'

# --- resuming -------------------------------------------------------------------------------
bad "--load with a longer --seq-length: named as the user gave it" \
    "--seq-length 128 is longer than the 32 positions|$GOOD|--seq-length 32 or less" \
    train $TINY --load "$GOOD" --seq-length 128 --train-iters 6
ok "... and not as a flag the user never passed" '! err_has "max-position-embeddings"'
run timeout 50 "$HELIX" train $TINY --load "$GOOD" --seq-length 16 --train-iters 5
ok "--load with a shorter --seq-length 16: exit 0, steps 4 and 5 trained" \
    'rc_is 0 && [ "$(grep -c "^step" "$OUT")" -eq 2 ] && [ ! -s "$ERR" ] && unchanged'

# the learning-rate schedule of a 4-step run (warmup 1, decay over 4 steps to --min-lr),
# resumed to 8 steps, is the uninterrupted run's with --lr-decay-iters 4
SCHED="--lr-warmup-iters 1 --lr 1e-3 --min-lr 1e-4 --eval-interval 0"
run timeout 50 "$HELIX" train $TINY $SCHED --train-iters 8 --lr-decay-iters 4 \
    --log-json "$TMP/lr_ref.jsonl"
run timeout 50 "$HELIX" train $TINY $SCHED --train-iters 4 --save "$TMP/lr4"
run timeout 50 "$HELIX" train $TINY --load "$TMP/lr4" --train-iters 8 \
    --log-json "$TMP/lr_res.jsonl"
lrs "$TMP/lr_ref.jsonl" | awk '$1 > 4' >"$TMP/lr_want"
lrs "$TMP/lr_res.jsonl" >"$TMP/lr_got"
ok "resume with --train-iters 8 after 4: the lr of steps 5..8 is the 4-step schedule's" \
    'rc_is 0 && [ "$(lines "$TMP/lr_want")" -eq 4 ] && cmp -s "$TMP/lr_want" "$TMP/lr_got" &&
     ! out_has "schedule changed"'
run timeout 50 "$HELIX" train $TINY --load "$TMP/lr4" --train-iters 6 --lr-decay-iters 8 \
    --min-lr 1e-4
ok "... a resume that changes --lr-decay-iters says so in one line on stdout, and goes on" \
    'rc_is 0 && [ "$(grep -c "schedule changed" "$OUT")" -eq 1 ] &&
     out_has "^learning-rate schedule changed from the checkpoint.s: --lr-decay-iters 8 (was 4); from step 5 on" &&
     [ "$(grep -c "^step" "$OUT")" -eq 2 ]'

# a --log-json resumed into: the steps after the checkpoint run again, and are logged once
run timeout 50 "$HELIX" train $TINY --train-iters 6 --eval-interval 3 --log-json "$TMP/j_ref.jsonl"
run timeout 50 "$HELIX" train $TINY --train-iters 6 --eval-interval 3 --save-interval 3 \
    --save "$TMP/j6" --log-json "$TMP/j.jsonl"
run timeout 50 "$HELIX" train $TINY --train-iters 6 --eval-interval 3 \
    --load "$TMP/j6/ckpt-00000003.bin" --log-json "$TMP/j.jsonl"
ok "--log-json resumed into from step 3 after 6 were logged: each step once, as uninterrupted" \
    'rc_is 0 && [ "$(grep -c "\"loss\"" "$TMP/j.jsonl")" -eq 6 ] &&
     jrecords "$TMP/j_ref.jsonl" >"$TMP/j_want" && jrecords "$TMP/j.jsonl" >"$TMP/j_got" &&
     cmp -s "$TMP/j_want" "$TMP/j_got"'

ok "the good checkpoint directory is byte for byte as it was made" 'unchanged'

finish
