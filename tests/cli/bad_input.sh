#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/bad_input.sh: every bad input to `helix` is a usage error: exit status 2, nothing
# on stdout (so no "step" line: no work started), and exactly one line on stderr that names
# the problem (each case lists the words it must contain).  Without a command, the usage.
# shellcheck disable=SC2016,SC2034,SC2317  # ok evals its single-quoted checks
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"

# bad DESC 'WORD|WORD...' ARGS...: `helix ARGS` fails as a usage error naming every WORD.
bad() {
    bad_desc=$1
    bad_words=$2
    shift 2
    run "$HELIX" "$@"
    ok "$bad_desc: exit 2, one line naming it" 'usage_error "$bad_words"'
}

usage_error() {
    [ "$RC" -eq 2 ] && [ ! -s "$OUT" ] && [ "$(lines "$ERR")" -eq 1 ] || return 1
    err_has '^helix: error: ' || return 1
    set -f # the words are literal text, split on '|' only
    old_ifs=$IFS
    IFS='|'
    missing=0
    for word in $1; do
        grep -q -F -e "$word" "$ERR" || missing=1
    done
    IFS=$old_ifs
    set +f
    return "$missing"
}

printf '' >"$TMP/empty.txt"
printf 'hello, world\n' >"$TMP/short.txt"

plan 15

bad "unknown flag" "unknown flag --num-layer|did you mean --num-layers" \
    train --num-layer 2
bad "non-numeric integer" "--train-iters|integer|'abc'" train --train-iters abc
bad "non-numeric float, --name=value form" "--lr|number|'fast'" train --lr=fast
bad "out of range" "--num-layers 0|out of range" train --num-layers 0
bad "heads not dividing the hidden size" \
    "--hidden-size 64|not divisible|--num-attention-heads 5" \
    train --hidden-size 64 --num-attention-heads 5
bad "global batch not a multiple of the micro-batch" \
    "--global-batch-size 6|not a multiple|--micro-batch-size 4" \
    train --micro-batch-size 4 --global-batch-size 6
bad "unknown --sched, with the choices" "unknown --sched 'bogus'|hx-prio|eager|dmda" \
    train --sched bogus
bad "missing --data-path file" "$TMP/missing.txt|--data-path" \
    train --data-path "$TMP/missing.txt"
bad "--data-path names a directory" "'$TMP'" train --data-path "$TMP"
bad "empty data file" "$TMP/empty.txt|empty" train --data-path "$TMP/empty.txt"
bad "data shorter than --seq-length" "$TMP/short.txt|13 tokens|--seq-length 32" \
    train --data-path "$TMP/short.txt" --seq-length 32
bad "missing value at the end" "--lr needs a value" train --lr
bad "unexpected positional argument" "unexpected argument 'foo'" train --num-layers 2 foo
bad "unknown command" "unknown command 'trian'|helix --help" trian
run "$HELIX"
ok "no command: exit 2, the usage on stderr, empty stdout" \
    'rc_is 2 && [ ! -s "$OUT" ] && err_has "^usage: helix <command>"'

finish
