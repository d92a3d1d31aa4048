#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/threads.sh: the end-of-run report of where each rank's threads spent the run
# (helix/threads.h, tools/train.c print_threads), under mpirun -np 2 on both backends: one
# "threads, rank R:" line from each rank on its stderr, naming the StarPU workers (as many as
# --workers), StarPU-MPI's progress thread and the engine's two lane threads, each with its
# seconds on a core and waiting for one.  The figures are times: only their form is checked.
# One process alone prints no such line (it has no communication threads to report).
# StarPU-MPI's thread keeps a thread of its own here (--mpi-driver off): driven, it is worker
# 0 and listed with the workers (tests/mpi/mpi_driver.sh).
# shellcheck disable=SC2016,SC2086  # ok evals its single-quoted checks; $TINY splits
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/../cli/lib.sh"
# shellcheck source=tests/mpi/lib.sh
. "$(dirname "$0")/lib.sh"
export HX_MPI_TIMEOUT=120

TINY="--preset tiny --train-iters 2 --progress-bar 0 --sample-tokens 0 --eval-interval 0"
T='[0-9]+\.[0-9]{2} s on a core, [0-9]+\.[0-9]{2} s waiting for one \([0-9]+%\)'
plan 4

# report_has R WORKERS: rank R's line names each kind with its thread count and figures
report_has() {
    grep -E "^threads, rank $1: StarPU workers \($2\) $T; StarPU-MPI's progress thread \(1\) $T; \
comm lane threads \(2\) $T(; other threads \([0-9]+\) $T)?$" "$ERR" >/dev/null
}
for backend in starpu-mpi mpi; do
    run hx_mpirun 2 "$HELIX" train $TINY --workers 2 --comm-backend "$backend" --mpi-driver off
    ok "$backend: each rank reports its threads once, 2 workers each" \
        'rc_is 0 && report_has 0 2 && report_has 1 2 &&
         [ "$(grep -c "^threads, rank" "$ERR")" -eq 2 ]'
done
run hx_mpirun 2 "$HELIX" train $TINY --workers 1
ok "--workers 1: one StarPU worker per rank" 'rc_is 0 && report_has 0 1 && report_has 1 1'
run "$HELIX" train $TINY
ok "one process alone: no threads report" \
    'rc_is 0 && out_has "^done: 2 steps" && ! err_has "^threads"'
finish
