#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/rank_flags.sh: ranks started with different settings (an MPMD launch, `A : B`)
# are refused before any work: exit status 2, exactly one "helix: error:" line from rank 0
# naming the setting, both values and the rank, and no step.  Without the comparison a
# different --hidden-size corrupted the heap, --seed trained two different replicas (exit 0),
# --train-iters left a rank waiting for the watchdog.  A rank whose own input is bad while
# rank 0's is good stops every rank with its message; the same settings reached another way
# (a --config file, other --workers) run.
# shellcheck disable=SC2016,SC2086  # ok evals its single-quoted checks; $M splits
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/../cli/lib.sh"
# shellcheck source=tests/mpi/lib.sh
. "$(dirname "$0")/lib.sh"
plan 16
# --comm-timeout: the old failure modes end in seconds instead of the 300 s default
M="--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --train-iters 2
 --micro-batch-size 2 --global-batch-size 4 --progress-bar 0 --sample-tokens 0
 --eval-interval 0 --comm-timeout 10"
export HX_MPI_TIMEOUT=120

# mpmd DESC WORDS RANK1-FLAGS...: rank 0 runs $M, rank 1 $M and RANK1-FLAGS; 3 checks.
mpmd() {
    desc=$1 words=$2
    shift 2
    run hx_mpirun 1 "$HELIX" train $M : -np 1 "$HELIX" train $M "$@"
    ok "$desc: exit status 2" 'rc_is 2'
    ok "$desc: one error line, from rank 0, naming '$words'" \
        '[ "$(grep -c "helix: error:" "$ERR")" -eq 1 ] && grep -q -F -e "$words" "$ERR"'
    ok "$desc: no training step" '! out_has "^step"'
}

mpmd "rank 1 with --hidden-size 128" \
    "rank 1 has --hidden-size 128, rank 0 has --hidden-size 64" --hidden-size 128
mpmd "rank 1 with --seed 99" "rank 1 has --seed 99, rank 0 has --seed 1234" --seed 99
mpmd "rank 1 with --train-iters 10" "rank 1 has --train-iters 10, rank 0 has --train-iters 2" \
    --train-iters 10
mpmd "rank 1 with a bad --lr" "rank 1 (rank 0 accepted its own input): --lr expects a number" \
    --lr x
printf 'num-layers = 2\nhidden-size = 64\nseed = 7\n' >"$TMP/seed7.cfg"
mpmd "rank 1 with a --config that sets --seed 7" \
    "rank 1 has --seed 7, rank 0 has --seed 1234" --config "$TMP/seed7.cfg"

# the same settings, one rank's from a config file and its own worker count: they train
printf 'num-layers = 2\nhidden-size = 64\nseed = 1234\n' >"$TMP/same.cfg"
run hx_mpirun 1 "$HELIX" train $M --workers 1 : -np 1 "$HELIX" train $M --config \
    "$TMP/same.cfg" --workers 2
ok "the same settings by other means (--config, --workers): exit 0, 2 steps" \
    'rc_is 0 && [ "$(grep -c "^step" "$OUT")" -eq 2 ] && ! grep -q "helix: error:" "$ERR"'
finish
