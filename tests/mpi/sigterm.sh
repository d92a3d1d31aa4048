#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/sigterm.sh: stopping `mpirun -np 2 helix train` with a signal to mpirun keeps the
# checkpoint of the last step the ranks finished, complete, and every rank exits 0.
#
# What Open MPI 4.1's mpirun does with a SIGTERM (measured, see README "Checkpoints"): it
# sends the ranks SIGCONT, a second later (odls_base_sigkill_timeout) SIGTERM, a second later
# SIGKILL to their process groups, and exits 1 whatever the ranks do; a rank that exits ends
# the wait early, and the others are killed at once.  So the ranks finish the step, hand the
# checkpoint to a writer process of its own session (the kill does not reach it), meet, and
# all exit 0 together; the writer completes the file and `latest` after mpirun is gone.
# mpirun may end its forwarding of rank 0's stdout just before that SIGTERM (EIO): the stop
# still goes on, on stderr (tests/mpi/stdout_eio plays it).
# SIGUSR1 is forwarded to the ranks without that sequence: the ranks wait for the writer, and
# mpirun exits 0 (which it does only when every rank exits 0).
#
# tests/mpi/slow_fsync (an LD_PRELOAD library) adds 2 s to the checkpoint's fsync, so on any
# machine it takes longer to write than mpirun's grace period (the old synchronous save was
# killed mid-write, leaving a .tmp).  The model (C=256, 2 layers, T=8, a 20 MB checkpoint)
# keeps the step short: a SIGTERM finds a step in progress, and it and the hand-off must fit
# in the grace (the tracer prints the time each rank ran after its SIGTERM: 0.2 s in the
# ASan build with two busy loops on two cores; 0.4-0.8 s with C=512 and 4 layers, which
# failed once in CI).  Slower steps need a longer grace (README "Stopping under mpirun").
# Each rank is helix itself (sh execs it after writing down its pid), and its exit status is
# read by tests/mpi/exit_status, a tracer outside mpirun's process groups: a wrapper shell in
# the rank's group would be killed before it could record it.
#   HX_SIGTERM_REPEAT=5 tests/mpi/sigterm.sh   runs the SIGTERM case 5 times (acceptance);
#   HX_SIGTERM_MODEL="--hidden-size 512 --num-layers 8 --num-attention-heads 8 --seq-length 32
#   --micro-batch-size 1" replaces the model flags (that one: the issue's, 300 MB).
# shellcheck disable=SC2016,SC2034,SC2086,SC2317  # ok evals its quoted checks; $ARGS splits
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/../cli/lib.sh"
# shellcheck source=tests/mpi/lib.sh
. "$(dirname "$0")/lib.sh"

REPEAT=${HX_SIGTERM_REPEAT:-1}
TRACER=$HX_BUILDDIR/tests/mpi/exit_status
HX_MPI_TIMEOUT=150
export HX_MPI_TIMEOUT
MODEL=${HX_SIGTERM_MODEL:-"--hidden-size 256 --num-layers 2 --num-attention-heads 4 \
--seq-length 8 --micro-batch-size 1"}
ARGS="$MODEL --train-iters 100000 --log-interval 1 --progress-bar 0 --eval-interval 0"
PIDS=$TMP/pids
export PIDS
# the ranks' checkpoint fsync sleeps 2 s (an ASan build accepts a library preloaded before it)
HX_SLOW_FSYNC_S=2
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
export HX_SLOW_FSYNC_S ASAN_OPTIONS
HX_MPIRUN_FLAGS="-x LD_PRELOAD=$HX_BUILDDIR/tests/mpi/.libs/slow_fsync.so -x HX_SLOW_FSYNC_S \
-x ASAN_OPTIONS"
export HX_MPIRUN_FLAGS

# wait_for FILE PATTERN SECONDS: until a line of FILE matches (0), or the time is up (1).
wait_for() {
    i=0
    while [ $i -lt $(($3 * 10)) ]; do
        grep -q -e "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}

# stop SIG NAME INTERVAL: `mpirun -np 2 helix train $ARGS --save $TMP/NAME --save-interval
# INTERVAL`; once step 4 is printed and both ranks are traced, SIG goes to mpirun.  Sets RC
# (mpirun's), KSTEP (the last step printed), RANKS ("exited 0 exited 0", the ranks'
# statuses), AFTER (how long each rank ran after its SIGTERM, e.g. "0.42 s 0.41 s"), SAVED (the step `latest` names once the writer has let go of the directory's
# lock, or "none").
stop() {
    sig=$1 dir=$TMP/$2
    rm -rf "$PIDS" "$dir" && mkdir -p "$PIDS"
    : >"$OUT" # (the job below truncates it only once it starts: the last run's "step 4" must
    #          not be found meanwhile, which happened on a loaded machine)
    LAST_CMD="mpirun -np 2 helix train $ARGS --save $dir --save-interval $3; kill -$sig mpirun \
after step 4"
    hx_mpirun 2 sh -c 'echo $$ >"$PIDS/rank.$OMPI_COMM_WORLD_RANK"; exec "$@"' sh \
        "$HELIX" train $ARGS --save "$dir" --save-interval "$3" >"$OUT" 2>"$ERR" &
    job=$!
    t0=$(date +%s)
    if ! wait_for "$OUT" "^step *4/" 90; then
        UNSENT="no kill sent: step 4 not printed after $(($(date +%s) - t0)) s"
    elif ! wait_for "$PIDS/rank.0" . 30 || ! wait_for "$PIDS/rank.1" . 30; then
        UNSENT="no kill sent: the ranks did not write their pids"
    else
        UNSENT=
        for r in 0 1; do # (LeakSanitizer cannot run under a tracer: only the _exit path is)
            [ "$sig" = TERM ] && "$TRACER" "$(cat "$PIDS/rank.$r")" >"$PIDS/status.$r" 2>&1 &
        done
        [ "$sig" != TERM ] ||
            { wait_for "$PIDS/status.0" "attached\|cannot" 10 &&
                wait_for "$PIDS/status.1" "attached\|cannot" 10; }
        # the ranks' parent is mpirun
        kill -s "$sig" "$(sed -n 's/^PPid:[[:space:]]*//p' "/proc/$(cat "$PIDS/rank.0")/status")"
    fi
    wait $job
    RC=$?
    wait # the tracers
    # the step the ranks stopped after: the stop's own message (on stderr when mpirun ended
    # rank 0's stdout forwarding as the signal came: tools/train.c, wait_for_launcher_signal),
    # else the last step printed
    KSTEP=$(stop_step "$OUT" "$ERR")
    [ -n "$KSTEP" ] || KSTEP=$(sed -n 's|^step *\([0-9]*\)/.*|\1|p' "$OUT" | tail -n 1)
    RANKS=$(grep -h "^exited\|^killed" "$PIDS/status.0" "$PIDS/status.1" 2>/dev/null | tr '\n' ' ')
    AFTER=$(sed -n 's/ after SIGTERM$//p' "$PIDS/status.0" "$PIDS/status.1" 2>/dev/null | tr '\n' ' ')
    RANKS=${UNSENT:-${RANKS:-no status}}
    SAVED=$(saved_step "$dir")
}
# stop_step FILE...: the step the last "SIG... received; stopping after step N" names
stop_step() {
    sed -n 's/^helix train: SIG[A-Z0-9]* received; stopping after step \([0-9]*\)$/\1/p' \
        "$@" | tail -n 1
}
# saved_step DIR: the step `latest` names once the writer has let go of DIR's lock (it holds
# DIR/.lock until the checkpoint and `latest` are in place), or "none"
saved_step() {
    i=0
    while [ $i -lt 600 ] && ! flock -n "$1/.lock" true 2>/dev/null; do
        sleep 0.1
        i=$((i + 1))
    done
    step=$(sed -n 's/^ckpt-0*\([0-9][0-9]*\)\.bin$/\1/p' "$1/latest" 2>/dev/null)
    echo "${step:-none}"
}
# said PATTERN: a line of stdout, or of stderr (where a stop's messages go once mpirun has
# ended rank 0's stdout forwarding), matches
said() { grep -q -e "$1" "$OUT" "$ERR" 2>/dev/null; }
# handed DIR: the stop's message says a writer process writes step KSTEP's checkpoint to
# DIR and goes on after the job; or its save had completed before the signal.
handed() {
    said "^helix train: the checkpoint of step $KSTEP is being written to $1 by process [0-9]*, \
which outlives this job" ||
        said "^saved checkpoint of step $KSTEP to $1$"
}
# traced: the tracer could attach (77: not allowed here, e.g. Yama's ptrace_scope as non-root)
traced() { ! grep -q "cannot trace" "$PIDS/status.0" "$PIDS/status.1" 2>/dev/null; }
# complete DIR STEP: `latest` names ckpt-STEP, no .tmp is left, and a run resumes from it
# (helix checks the whole file and its checksum first).
complete() {
    [ "$SAVED" = "$2" ] && [ -z "$(find "$1" -name '*.tmp')" ] &&
        timeout 60 "$HELIX" train $ARGS --load "$1" --train-iters "$2" --sample-tokens 0 \
            >"$TMP/load.out" 2>&1 &&
        grep -q "checkpoint is at step $2, --train-iters is $2: nothing to train" "$TMP/load.out"
}

plan $((5 * REPEAT + 6))

n=0
while [ $n -lt "$REPEAT" ]; do
    n=$((n + 1))
    # a save only at the stop; every other repetition also one every 2 steps, which the
    # signal may find being written (the ranks then stop waiting and leave it to its writer)
    interval=$((n % 2 == 1 ? 100000 : 2))
    stop TERM "term$n" $interval
    ok "SIGTERM to mpirun ($n/$REPEAT, saves every $interval): stop after step $KSTEP, and say so" \
        'said "^helix train: SIGTERM received; stopping after step $KSTEP$"'
    ok "... its checkpoint is handed to a writer process that outlives the job (or was saved)" \
        'handed "$TMP/term$n"'
    if traced; then
        ok "... each rank exits 0 ($(echo $RANKS); $(echo ${AFTER:-no}) after its SIGTERM, of 1 s)" \
            '[ "$RANKS" = "exited 0 exited 0 " ]'
    else
        ok "... each rank exits 0 # SKIP cannot trace the ranks here (ptrace)" true
    fi
    ok "... mpirun exits $RC (Open MPI's mpirun exits 1 after its SIGTERM, whatever the ranks do)" \
        '[ "$RC" -eq 1 ] || [ "$RC" -eq 0 ]'
    ok "... then 'latest' names the checkpoint of step $KSTEP (got $SAVED), complete: it resumes" \
        'complete "$TMP/term$n" "$KSTEP"'
done

# mpirun ends its forwarding of rank 0's stdout (a pty: EIO) and the SIGTERM reaches the ranks
# a little later (seen once in CI-like load: the step line written as the kill began failed,
# and the rank exited 1).  tests/mpi/stdout_eio plays it: rank 0's stdout fails after 20
# flushes, and mpirun gets its SIGTERM 300 ms later, so the ranks get theirs ~1.3 s after the
# loss.  The stop goes on: its messages move to stderr and its checkpoint is complete.
HX_STDOUT_EIO_AFTER=20
export HX_STDOUT_EIO_AFTER
flags=$HX_MPIRUN_FLAGS
HX_MPIRUN_FLAGS="-x LD_PRELOAD=$HX_BUILDDIR/tests/mpi/.libs/slow_fsync.so:\
$HX_BUILDDIR/tests/mpi/.libs/stdout_eio.so -x HX_SLOW_FSYNC_S -x ASAN_OPTIONS \
-x HX_STDOUT_EIO_AFTER"
run hx_mpirun 2 "$HELIX" train $ARGS --save "$TMP/eio" --save-interval 100000
HX_MPIRUN_FLAGS=$flags
unset HX_STDOUT_EIO_AFTER
KSTEP=$(stop_step "$ERR")
ok "stdout lost (EIO) just before mpirun's SIGTERM: the stop goes on, and says so on stderr" \
    'err_has "^helix train: writing standard output failed (Input/output error) as SIGTERM \
arrived" && [ -n "$KSTEP" ]'
ok "... its checkpoint of step ${KSTEP:-?} is handed to a writer process (or was saved)" \
    'handed "$TMP/eio"'
SAVED=$(saved_step "$TMP/eio")
ok "... 'latest' names the checkpoint of step ${KSTEP:-?} (got $SAVED), complete: it resumes" \
    '[ -n "$KSTEP" ] && complete "$TMP/eio" "$KSTEP"'

stop USR1 usr1 100000
ok "SIGUSR1 to mpirun: the ranks stop after step $KSTEP and wait for the checkpoint" \
    'out_has "^helix train: SIGUSR1 received; stopping after step $KSTEP$" &&
     out_has "^saved checkpoint of step $KSTEP to $TMP/usr1$"'
ok "... every rank exits 0, so mpirun does too (status $RC)" 'rc_is 0'
ok "... 'latest' names the checkpoint of step $KSTEP (got $SAVED), complete: it resumes" \
    'complete "$TMP/usr1" "$KSTEP"'
finish
