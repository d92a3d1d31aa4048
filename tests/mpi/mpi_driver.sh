#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/mpi_driver.sh: StarPU-MPI's thread driving CPU worker 0 (--mpi-driver,
# runtime/mpi_driver.c), under mpirun -np 2 on the StarPU-MPI backend:
#   - on, with 1 and 2 workers a rank and under eager, trains to bitwise the losses, gradient
#     norms and final parameters of off: a driver moves which thread runs a task, never what
#     the task computes;
#   - it is engaged: with it on, the threads report (tools/train.c) lists no StarPU-MPI
#     progress thread apart from the workers, since StarPU makes that thread worker 0; with
#     it off, that thread is listed;
#   - auto (the default) follows hx_mpi_driver_wanted's rule for this machine's cores (2
#     ranks of 1 worker, each with StarPU-MPI's thread), and a STARPU_MPI_DRIVER_CALL_FREQUENCY
#     of 0 in the ranks' environment turns it off, as StarPU's own variable;
#   - on with --comm-backend mpi trains too (its thread has no transfer of its own to poll);
#   - a word other than auto, on and off is refused before any work (exit 2).
# The model is parity_lib.sh's, 6 steps.
# shellcheck disable=SC2016,SC2034  # ok evals its single-quoted checks; parity_lib.sh reads PARITY_MODEL
PARITY_MODEL="--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32
 --micro-batch-size 2 --global-batch-size 8 --train-iters 6 --lr 2e-3 --eval-interval 0
 --eval-iters 1 --sample-tokens 0 --log-interval 1 --seed 7"
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/parity_lib.sh"
plan 18
SMPI="--comm-backend starpu-mpi"
# progress_listed: the last run's ranks both list StarPU-MPI's thread apart from the workers
progress_listed() {
    [ "$(grep -c "^threads, rank [01]: .*StarPU-MPI's progress thread (1)" "$ERR")" -eq 2 ]
}
# shellcheck disable=SC2086
{
    parity_bitwise off "" 2 $SMPI --mpi-driver off
    ok "off: StarPU-MPI's thread is its own on both ranks" 'progress_listed'
    parity_bitwise on off 2 $SMPI --mpi-driver on
    ok "on: StarPU-MPI's thread runs worker 0, so no thread of its own is listed" \
        'grep -q "^threads, rank 0: StarPU workers (1)" "$ERR" && ! progress_listed'
    HX_MPI_NCPU=2
    parity_bitwise on-2w off 2 $SMPI --mpi-driver on
    unset HX_MPI_NCPU
    ok "on, 2 workers: StarPU-MPI's thread and one worker thread run the tasks" \
        'grep -q "^threads, rank 0: StarPU workers (2)" "$ERR" && ! progress_listed'
    parity_bitwise on-eager off 2 $SMPI --mpi-driver on --sched eager
    # auto: 2 ranks of 1 worker, each with StarPU-MPI's thread, on this machine's cores
    # (hx_mpi_driver_wanted: more busy threads than cores, the workers alone fitting)
    if [ $((2 * (1 + 1))) -gt "$(nproc)" ] && [ 2 -le "$(nproc)" ]; then
        want=driven
    else
        want=own
    fi
    parity_bitwise auto off 2 $SMPI
    ok "auto on $(nproc) cores: StarPU-MPI's thread is $want" \
        'if [ $want = driven ]; then ! progress_listed; else progress_listed; fi'
    HX_MPIRUN_FLAGS="-x STARPU_MPI_DRIVER_CALL_FREQUENCY=0"
    parity_bitwise auto-env0 off 2 $SMPI
    unset HX_MPIRUN_FLAGS
    ok "auto with STARPU_MPI_DRIVER_CALL_FREQUENCY=0: StarPU-MPI's thread is its own" \
        'progress_listed'
}
# shellcheck disable=SC2086
run hx_mpirun 2 "$HELIX" train $PARITY_MODEL --comm-backend mpi --mpi-driver on --progress-bar 0
ok "on with --comm-backend mpi: trains" 'rc_is 0 && out_has "^done: 6 steps"'
# shellcheck disable=SC2086
run "$HELIX" train $PARITY_MODEL --mpi-driver sometimes
ok "--mpi-driver sometimes: refused before any work, naming the choices" \
    'usage_error "--mpi-driver sometimes is not a choice; use auto, on or off"'
finish
