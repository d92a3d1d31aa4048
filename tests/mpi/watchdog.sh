#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/watchdog.sh: a rank that dies or stops never hangs the job.  With --comm-timeout
# 3 the survivors, waiting in a collective, print the watchdog line of include/helix/comm.h
# (channel, seq, started count, op, bytes, world ranks, lane) and exit with status 3.  These
# jobs have one node, so every channel is on the intra-node lane.
#
# How mpirun (Open MPI 4.1) treats a lost rank decides who speaks:
#  - a rank killed by a signal: mpirun itself aborts the job within about a second (SIGTERM,
#    then SIGKILL after odls_base_sigkill_timeout = 1 s) before any watchdog could speak;
#    that path is checked too (nothing hangs, the status is non-zero).  To see the survivors'
#    own behaviour, as on a launcher that does not notice the death, the kill cases run with
#    --mca orte_enable_recovery 1: mpirun then leaves the survivors alone (and exits 0, so
#    each rank's status is recorded by a wrapper).
#  - a stopped rank (SIGSTOP): mpirun notices nothing, the watchdog ends the survivors, and
#    mpirun then aborts the job with their status 3, killing the stopped rank.
# Cases: a control run; stop mid-graph; stop before a host barrier; kill mid-graph at np 4
# (recovery), also on the StarPU-MPI backend; kill at np 2 (mpirun's abort); kill -9 of rank 1 of `helix train` mid-run;
# a checkpoint whose write takes 2 s (tests/mpi/slow_fsync delays its fsync) with
# --comm-timeout 1: rank 0 waits for its writer process in heartbeat all-reduces, so the job
# completes; and rank 0 killed -9 during that wait: rank 1 is still ended by the watchdog,
# and the writer, in a session of its own, still completes the checkpoint.
# The jobs are tests/mpi/lost_rank.c (rank 1 vanishes in its 6th producer, see there).
# shellcheck disable=SC2016,SC2034,SC2086,SC2317  # ok evals its single-quoted checks; $TRAIN splits
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/../cli/lib.sh"
# shellcheck source=tests/mpi/lib.sh
. "$(dirname "$0")/lib.sh"
plan 28
LOST=$HX_BUILDDIR/tests/mpi/lost_rank
LIMIT_MS=15000               # the launch, 3 s of watchdog and the teardown
HX_MPI_TIMEOUT=60            # hx_mpirun's bound: a hang fails here instead of hanging make
export HX_MPI_TIMEOUT
RECOVER="--mca orte_enable_recovery 1 -x HX_RC_DIR"
HX_RC_DIR=$TMP/rc
export HX_RC_DIR
WD="no collective progress for 3 s (--comm-timeout): waiting on channel"

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# timed NP CMD...: hx_mpirun NP CMD...; ELAPSED in ms
timed() {
    t0=$(now_ms)
    run hx_mpirun "$@"
    ELAPSED=$(($(now_ms) - t0))
}

# Each rank's exit status lands in $HX_RC_DIR/rc.RANK (mpirun's own status hides them
# when recovery is on); rank_rc R prints it, or "none".
per_rank() { # NP VICTIM [BACKEND]
    rm -rf "$HX_RC_DIR" && mkdir -p "$HX_RC_DIR"
    # shellcheck disable=SC2016  # expanded by each rank's shell
    timed "$1" sh -c '"$@"; echo $? >"$HX_RC_DIR/rc.$OMPI_COMM_WORLD_RANK"' \
        sh "$LOST" --victim "$2" --timeout 3 --backend "${3:-mpi}"
}
rank_rc() { cat "$HX_RC_DIR/rc.$1" 2>/dev/null || echo none; }

# 1: control, the same job with nobody lost: no false alarm at a 3 s timeout
timed 2 "$LOST" --victim none --timeout 3
ok "control: the job ends normally (status 0)" 'rc_is 0 && ! err_has "no collective progress"'

# 2-5: rank 1 stops in a producer; rank 0 waits in the world's first all-reduce
timed 2 "$LOST" --victim stop --timeout 3
ok "stop mid-graph: the job exits non-zero (status $RC)" '! rc_is 0'
FIRST="world seq 0 (#1 started here): allreduce of 16384 bytes with world ranks"
ok "stop mid-graph: rank 0 names the collective it waits on" \
    'err_has "\[rank 0\] $WD $FIRST 0,1 (intra-node lane)$"'
ok "stop mid-graph: the hint follows" \
    'err_has "\[rank 0\] hint: a peer rank died or stopped; raise --comm-timeout"'
ok "stop mid-graph: over in ${ELAPSED} ms (< $LIMIT_MS)" '[ "$ELAPSED" -lt $LIMIT_MS ]'

# 6-8: rank 1 stops before a host barrier: host calls are watched too
timed 2 "$LOST" --victim stop-host --timeout 3
ok "stop before a host barrier: the job exits non-zero (status $RC)" '! rc_is 0'
ok "stop before a host barrier: rank 0 names the host barrier" \
    'err_has "\[rank 0\] $WD world seq 0 (#[0-9]* started here): host barrier of 0 bytes \
with world ranks 0,1 (intra-node lane)$"'
ok "stop before a host barrier: over in ${ELAPSED} ms (< $LIMIT_MS)" '[ "$ELAPSED" -lt $LIMIT_MS ]'

# 9-12: rank 1 of 4 kills itself mid-graph; mpirun leaves the survivors alone (recovery)
HX_MPIRUN_FLAGS=$RECOVER per_rank 4 kill
ok "kill at np 4: ranks 0, 2, 3 exit with status 3 (got $(rank_rc 0) $(rank_rc 2) $(rank_rc 3))" \
    '[ "$(rank_rc 0)$(rank_rc 2)$(rank_rc 3)" = 333 ]'
ok "kill at np 4: rank 1 died of SIGKILL (status $(rank_rc 1))" '[ "$(rank_rc 1)" = 137 ]'
survivors_speak() {
    for r in 0 2 3; do
        err_has "\[rank $r\] $WD $FIRST 0,1,2,3 (intra-node lane)$" || return 1
    done
}
ok "kill at np 4: every survivor prints the watchdog line" survivors_speak
ok "kill at np 4: over in ${ELAPSED} ms (< $LIMIT_MS)" '[ "$ELAPSED" -lt $LIMIT_MS ]'

# 13-15: the same kill on the StarPU-MPI backend: the survivors wait inside its transfers,
# and the engine's watchdog names the collective all the same
HX_MPIRUN_FLAGS=$RECOVER per_rank 4 kill starpu-mpi
ok "kill at np 4, StarPU-MPI: ranks 0, 2, 3 exit with status 3 (got $(rank_rc 0) $(rank_rc 2) \
$(rank_rc 3))" '[ "$(rank_rc 0)$(rank_rc 2)$(rank_rc 3)" = 333 ]'
ok "kill at np 4, StarPU-MPI: every survivor prints the watchdog line" survivors_speak
# ... and under it what the collective still waits for: rank 0, the tree's root, first of
# all the receive of rank 1's contribution (tensor 0, step 0 of the binomial reduce)
ok "kill at np 4, StarPU-MPI: rank 0 lists its transfers not done, first the receive from \
rank 1" 'err_has "\[rank 0\]   [0-9]* of its [0-9]* StarPU-MPI operations not done, oldest \
first:$" && grep -A1 "^helix: error: \[rank 0\]   [0-9]* of its" "$ERR" | tail -n 1 |
    grep -q "\[rank 0\]     receive from world rank 1, tensor 0 step 0$"'

# 16-17: the same kill under mpirun's defaults: mpirun aborts the job itself
timed 2 "$LOST" --victim kill --timeout 3
ok "kill at np 2, mpirun's defaults: mpirun aborts the job (status $RC)" \
    '! rc_is 0 && err_has "exited on signal 9"'
ok "kill at np 2, mpirun's defaults: over in ${ELAPSED} ms (< $LIMIT_MS)" \
    '[ "$ELAPSED" -lt $LIMIT_MS ]'

# 18-22: helix train, rank 1 killed from outside once steps run (recovery, statuses per rank)
rm -rf "$HX_RC_DIR" && mkdir -p "$HX_RC_DIR"
# shellcheck disable=SC2016  # expanded by each rank's shell
WRAP='"$@" & p=$!; echo $p >"$HX_RC_DIR/pid.$OMPI_COMM_WORLD_RANK"; wait $p
echo $? >"$HX_RC_DIR/rc.$OMPI_COMM_WORLD_RANK"'
HX_MPIRUN_FLAGS=$RECOVER hx_mpirun 2 sh -c "$WRAP" sh "$HELIX" train --num-layers 2 \
    --hidden-size 64 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2 --global-batch-size 16 --train-iters 1000000 \
    --log-interval 1 --progress-bar 0 --comm-timeout 3 >"$OUT" 2>"$ERR" &
job=$!
i=0
while [ $i -lt 300 ] && ! grep -q "^step .* 20/" "$OUT" 2>/dev/null; do
    sleep 0.1
    i=$((i + 1))
done
ok "train: 20 steps ran at np 2 before the kill" 'out_has "^step .* 20/"'
t0=$(now_ms)
kill -9 "$(cat "$HX_RC_DIR/pid.1" 2>/dev/null)" 2>/dev/null
wait $job
ELAPSED=$(($(now_ms) - t0))
LAST_CMD="helix train at np 2, rank 1 killed"
ok "train: rank 0 exits with status 3 (got $(rank_rc 0)); rank 1 was killed ($(rank_rc 1))" \
    '[ "$(rank_rc 0)" = 3 ] && [ "$(rank_rc 1)" = 137 ]'
ANY="[a-z_]* seq [0-9]* (#[0-9]* started here): [a-z_ ]* of [0-9]* bytes with world ranks 0,1 \
(intra-node lane)"
ok "train: rank 0 prints the watchdog line" 'err_has "\[rank 0\] $WD $ANY$"'
ok "train: rank 0 prints the hint" 'err_has "\[rank 0\] hint: a peer rank died or stopped"'
ok "train: over ${ELAPSED} ms after the kill (< 10000)" '[ "$ELAPSED" -lt 10000 ]'

# 23-25: a slow checkpoint write (2 s) is progress, not a lost peer
SLOW="-x LD_PRELOAD=$HX_BUILDDIR/tests/mpi/.libs/slow_fsync.so -x HX_SLOW_FSYNC_S=2 \
-x ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
TRAIN="--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 \
--micro-batch-size 2 --global-batch-size 16 --log-interval 1 --progress-bar 0 --sample-tokens 0 \
--eval-interval 0 --comm-timeout 1 --save-interval 2"
LAST_CMD="helix train at np 2, --comm-timeout 1, each checkpoint's fsync 2 s"
HX_MPIRUN_FLAGS=$SLOW hx_mpirun 2 "$HELIX" train $TRAIN --train-iters 4 --save "$TMP/slow" \
    >"$OUT" 2>"$ERR"
RC=$?
ok "a checkpoint written for 2 s, --comm-timeout 1: the job completes (status $RC)" \
    'rc_is 0 && ! err_has "no collective progress"'
ok "... both saves are reported complete, and 'latest' names the second" \
    'out_has "^saved checkpoint of step 2 to $TMP/slow$" &&
     out_has "^saved checkpoint of step 4 to $TMP/slow$" &&
     [ "$(cat "$TMP/slow/latest")" = ckpt-00000004.bin ]'
ok "... no .tmp is left" '[ -z "$(find "$TMP/slow" -name "*.tmp")" ]'

# 26-28: rank 0 dies while rank 1 waits for its writer: the watchdog still ends rank 1
rm -rf "$HX_RC_DIR" && mkdir -p "$HX_RC_DIR"
LAST_CMD="helix train at np 2, --comm-timeout 1, slow checkpoint, rank 0 killed while it waits"
HX_MPIRUN_FLAGS="$RECOVER $SLOW" hx_mpirun 2 sh -c "$WRAP" sh "$HELIX" train $TRAIN \
    --train-iters 100 --save "$TMP/dead" >"$OUT" 2>"$ERR" &
job=$!
i=0
while [ $i -lt 300 ] && [ ! -f "$TMP/dead/ckpt-00000002.bin.tmp" ]; do
    sleep 0.1
    i=$((i + 1))
done
kill -9 "$(cat "$HX_RC_DIR/pid.0" 2>/dev/null)" 2>/dev/null
wait $job
ok "rank 0 killed during its wait: rank 1 exits with status 3 (got $(rank_rc 1))" \
    '[ "$(rank_rc 0)" = 137 ] && [ "$(rank_rc 1)" = 3 ]'
# The kill follows the writer's .tmp file, which can appear before rank 0 has joined the
# save's agreement (a broadcast right after the fork; seen on a loaded machine): rank 1 then
# waits on that broadcast rather than on a heartbeat.  Either is the save's collective.
HB="no collective progress for 1 s \(--comm-timeout\): waiting on channel world seq [0-9]+ \
\(#[0-9]+ started here\): host (allreduce of 12|bcast of 0) bytes with world ranks 0,1 \
\(intra-node lane\)"
ok "... naming the save's collective it waits on (a heartbeat, or the agreement)" \
    'grep -qE "^helix: error: \[rank 1\] $HB$" "$ERR"'
i=0
while [ $i -lt 100 ] && ! flock -n "$TMP/dead/.lock" true 2>/dev/null; do
    sleep 0.1
    i=$((i + 1))
done
ok "... and the writer process, which outlives rank 0, completes the checkpoint of step 2" \
    '[ "$(cat "$TMP/dead/latest" 2>/dev/null)" = ckpt-00000002.bin ] &&
     [ -z "$(find "$TMP/dead" -name "*.tmp")" ]'
finish
