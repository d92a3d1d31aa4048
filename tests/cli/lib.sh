# SPDX-License-Identifier: MIT
# tests/cli/lib.sh: TAP helpers for the shell tests, sourced as  . "$(dirname "$0")/lib.sh".
# plan N; run CMD... (sets RC, and OUT and ERR: files with its stdout and stderr); ok DESC EXPR
# (one TAP line: ok if the shell expression EXPR, eval'ed, succeeds, else "not ok" and the last
# run's status and output); finish (exits 0 only if all N ran and passed).  HELIX: the command.

# shellcheck shell=sh disable=SC2034  # HELIX, OUT, ERR... are for the tests that source this
# Where the build is: the test environment exports HX_BUILDDIR; by hand, from the build's
# tests/ folder (../tools/helix), or in an in-tree build, from this script's location.
if [ -z "${HX_BUILDDIR:-}" ]; then
    if [ -x ../tools/helix ]; then
        HX_BUILDDIR=$(cd .. && pwd)
    else
        HX_BUILDDIR=$(cd "$(dirname "$0")/../.." && pwd)
    fi
fi
HELIX=$HX_BUILDDIR/tools/helix
STARPU_NCPU=${STARPU_NCPU:-2}
STARPU_HOME=${STARPU_HOME:-$HX_BUILDDIR/tests/.starpu}
export HX_BUILDDIR STARPU_NCPU STARPU_HOME

TMP=$(mktemp -d "${TMPDIR:-/tmp}/hx-cli.XXXXXX") || exit 99
trap 'rm -rf "$TMP"' EXIT
OUT=$TMP/stdout
ERR=$TMP/stderr
RC=0
LAST_CMD=
TAP_PLANNED=0
TAP_N=0
TAP_FAILED=0

plan() {
    TAP_PLANNED=$1
    echo "1..$1"
}

# Run a command, keeping its exit status in RC and its output in the files $OUT and $ERR.
run() {
    LAST_CMD=$*
    "$@" >"$OUT" 2>"$ERR"
    RC=$?
}

# Print each line of standard input as a TAP comment.
diag() {
    sed 's/^/# /'
}

# ok DESC EXPR: one test, passed when the shell expression EXPR (e.g. 'rc_is 0 && out_has x')
# succeeds.  Quote EXPR with single quotes so that it is expanded when checked.
ok() {
    TAP_N=$((TAP_N + 1))
    if eval "$2"; then
        echo "ok $TAP_N - $1"
    else
        TAP_FAILED=$((TAP_FAILED + 1))
        echo "not ok $TAP_N - $1"
        {
            echo "failed check: $2"
            echo "last command: $LAST_CMD"
            echo "exit status: $RC; stdout (last 5 lines):"
            tail -n 5 "$OUT" 2>/dev/null
            echo "stderr (last 5 lines):"
            tail -n 5 "$ERR" 2>/dev/null
        } | diag
    fi
}

# Exit status of the test program: nonzero if a test failed or the count is not the plan.
finish() {
    if [ "$TAP_N" -ne "$TAP_PLANNED" ]; then
        echo "# planned $TAP_PLANNED tests, ran $TAP_N"
        exit 1
    fi
    if [ "$TAP_FAILED" -ne 0 ]; then
        echo "# $TAP_FAILED of $TAP_N tests failed"
        exit 1
    fi
    exit 0
}

# Small predicates for ok.
rc_is() { [ "$RC" -eq "$1" ]; }
out_has() { grep -q -e "$1" "$OUT"; }
err_has() { grep -q -e "$1" "$ERR"; }
lines() { wc -l <"$1" | tr -d ' '; }
