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

# The test's scratch folder (tests put their own files here too, and set no trap of their
# own: replacing TMP or the trap leaked this folder, one per run)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/hx-cli.XXXXXX") || exit 99
trap 'rm -rf "$TMP"' EXIT
OUT=$TMP/stdout
ERR=$TMP/stderr
RC=0
LAST_CMD=
TAP_PLANNED=0
TAP_N=0
TAP_FAILED=0

# pocl_process: settings for the processes that follow, which load PoCL (tests/device/lib.sh
# calls it for every device test; tests/cli/examples.sh before its OpenCL run).
# The sanitizer build's leak check at exit must not scan thread-local storage in a process
# that loaded PoCL: GCC 12's LeakSanitizer then reads a dynamic-TLS block of the main thread
# whose bounds are garbage ("DTLS 15 at 0x1b0cf-0x80001c1d1"), its tracer segfaults ("Tracer
# caught signal 11"), and the process exits 1 after a run that succeeded.  Measured on
# tests/device/parity.sh's opencl-dp2 with a fresh STARPU_HOME: 3 of 4 runs failed so, 0 of
# 3 with use_tls=0.  Heap blocks are still checked; only pointers held in TLS stop counting
# as roots: helix's own TLS holds none (two ints, in schedulers/hx_prio.c and
# runtime/comm_nccl.c), and the libraries that keep some (StarPU, PoCL, LLVM, CLBlast) are
# suppressed in tests/lsan.supp anyway.
# The sanitizer build records where each block was allocated by frame pointers here, not
# by DWARF unwinding (fast_unwind_on_malloc=1): PoCL's CPU device and its LLVM allocate on
# every kernel launch through deep uninstrumented stacks, and unwinding each one from DWARF
# made tests/device/runtime.sh take 199 s instead of 12 s, codelets.sh 373 s.  The leak
# check keeps working: helix is built with frame pointers, and a library's block still has
# that library as its caller, the frame tests/lsan.supp matches.  MPI launches keep the slow
# unwinder (hx_mpirun passes HX_MPI_ASAN_OPTIONS on): Open MPI's blocks come from plugins
# that MPI_Finalize unloads, so only the deep frames into libmpi/libopen-pal name them.
pocl_process() {
    LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}use_tls=0"
    export LSAN_OPTIONS
    if [ "${HX_SANITIZED:-0}" = 1 ]; then
        HX_MPI_ASAN_OPTIONS=${HX_MPI_ASAN_OPTIONS:-${ASAN_OPTIONS:-}}
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=1"
        export ASAN_OPTIONS HX_MPI_ASAN_OPTIONS
    fi
}

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
            # mpirun's epilogue fills the last lines and buries the cause: show the errors
            # helix and StarPU reported, and a sanitizer's report, wherever they are.
            # (helix's "error:" and "internal error", StarPU's and libc's assertions, signals)
            if grep -qiE "error|assert|abort|signal" "$ERR" 2>/dev/null; then
                echo "stderr lines that report an error (first 10):"
                grep -iE "error|assert|abort|signal" "$ERR" | head -n 10
            fi
            if grep -qE "^==[0-9]+==ERROR|runtime error:" "$ERR" 2>/dev/null; then
                echo "sanitizer report (first 60 lines of it):"
                sed -n '/^==[0-9]*==ERROR\|runtime error:/,$p' "$ERR" | head -n 60
            fi
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

# ---- input errors: the scripts that feed helix bad input ----
# has_words 'WORD|WORD...': every WORD (literal text, split on '|' only) is in $ERR.
# one_error STATUS 'WORD|...': exit STATUS, and stderr is exactly one "helix: error:" line
#   naming every WORD.
# usage_error 'WORD|...': one_error 2 with nothing on stdout (no work started).
# bad DESC 'WORD|...' ARGS...: one check that `helix ARGS` (run by bad_run: `run timeout 50`
#   unless the script redefines it) is a usage_error and the kept directory is unchanged.
# good_checkpoint DIR FLAGS...: train 3 steps with FLAGS, saving to DIR (or bail out: the
#   cases need it), then keep DIR.
# keep DIR: remember DIR's file names and checksums (its .lock aside: it holds a pid);
#   unchanged: DIR is byte for byte as kept.
# latest_is DIR STEP: DIR/latest names the checkpoint of STEP.
# bytes B...: the bytes of values B; le32 N, le16 N: N as little-endian bytes; zeros N.
has_words() {
    set -f
    hw_ifs=$IFS
    IFS='|'
    hw_missing=0
    for hw_word in $1; do
        grep -q -F -e "$hw_word" "$ERR" || hw_missing=1
    done
    IFS=$hw_ifs
    set +f
    return "$hw_missing"
}
one_error() {
    [ "$RC" -eq "$1" ] && [ "$(lines "$ERR")" -eq 1 ] && err_has '^helix: error: ' &&
        has_words "$2"
}
usage_error() { one_error 2 "$1" && [ ! -s "$OUT" ]; }
bad_run() { run timeout 50 "$HELIX" "$@"; }
bad() {
    bad_desc=$1
    bad_words=$2
    shift 2
    bad_run "$@"
    # shellcheck disable=SC2016  # ok evals the check
    ok "$bad_desc: exit 2, one line naming it" 'usage_error "$bad_words" && unchanged'
}
good_checkpoint() {
    gc_dir=$1
    shift
    run timeout 60 "$HELIX" train "$@" --train-iters 3 --save "$gc_dir"
    if [ "$RC" -ne 0 ] || [ ! -f "$gc_dir/ckpt-00000003.bin" ]; then
        echo "Bail out! could not train the checkpoint the cases need"
        diag <"$ERR"
        exit 1
    fi
    keep "$gc_dir"
}
snapshot() { (cd "$1" && ls -A --ignore=.lock && cksum ./*); }
keep() {
    KEPT=$1
    snapshot "$1" >"$TMP/kept.sum"
}
unchanged() { [ "$(snapshot "$KEPT")" = "$(cat "$TMP/kept.sum")" ]; }
# shellcheck disable=SC2059  # the format is made of octal escapes
bytes() { printf "$(printf '\\%03o' "$@")"; }
le32() { bytes $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)); }
le16() { bytes $(($1 & 255)) $(($1 >> 8 & 255)); }
latest_is() { [ "$(cat "$1/latest" 2>/dev/null)" = "$(printf 'ckpt-%08d.bin' "$2")" ]; }
zeros() { dd if=/dev/zero bs="$1" count=1 2>/dev/null; }
