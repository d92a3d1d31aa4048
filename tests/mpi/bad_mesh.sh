#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/bad_mesh.sh: a mesh that cannot work is refused before any work: exit status 2,
# exactly one "helix: error:" line (rank 0 speaks for all), naming the numbers, and no step.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
plan 54
M="--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --train-iters 2
 --micro-batch-size 2 --global-batch-size 8"

# refused NP WORDS FLAGS...: 3 checks (NP 1 runs without mpirun)
refused() {
    np=$1 words=$2
    shift 2
    if [ "$np" -eq 1 ]; then
        # shellcheck disable=SC2086
        run "$HELIX" train $M "$@"
    else
        # shellcheck disable=SC2086
        run hx_mpirun "$np" "$HELIX" train $M "$@"
    fi
    ok "np $np $*: exit status 2" 'rc_is 2'
    ok "np $np $*: one error line naming '$words'" \
       '[ "$(grep -c "helix: error:" "$ERR")" -eq 1 ] && err_has "$words"'
    ok "np $np $*: no training step" '! out_has "^step"'
}

refused 3 "cannot form a mesh" --tensor-model-parallel-size 2
refused 4 "does not divide --num-attention-heads 2" --tensor-model-parallel-size 4 \
    --num-attention-heads 2
refused 2 "dependency rule" --shard-params 2 --shard-grads 1
refused 2 "exceeds --num-layers 1" --pipeline-model-parallel-size 2 --num-layers 1
refused 2 "cannot share evenly" --micro-batch-size 2 --global-batch-size 6
refused 1 "cannot form a mesh" --tensor-model-parallel-size 2
refused 2 "give only one" --zero-stage 2 --shard-optim 2
refused 2 "divisible by 2" --tensor-model-parallel-size 2 --sequence-parallel --seq-length 33
refused 2 "not divisible by --pipeline-model-parallel-size 2" --pipeline-model-parallel-size 2 \
    --num-layers 3
refused 4 "not supported with --pipeline-model-parallel-size" --pipeline-model-parallel-size 2 \
    --zero-stage 3
refused 2 "use 1f1b, gpipe or fold" --pipeline-model-parallel-size 2 --pipeline-schedule zigzag
refused 2 "divisible by 4" --pipeline-model-parallel-size 2 --pipeline-fold --num-layers 2
refused 2 "contradict each other" --pipeline-model-parallel-size 2 --pipeline-fold \
    --pipeline-schedule gpipe --num-layers 4
refused 2 "cannot run the folded W" --pipeline-model-parallel-size 2 --pipeline-fold \
    --num-layers 4 --sched serial-comm
refused 2 "shards no parameter" --sched hx-prefetch --prefetch-memory 1M
refused 2 "needs --tensor-model-parallel-size > 1 and --sequence-parallel" \
    --tensor-model-parallel-size 2 --tp-comm-overlap
refused 1 "needs --tensor-model-parallel-size > 1" --tp-comm-overlap
refused 2 "must be a multiple of 4" --tensor-model-parallel-size 2 --sequence-parallel \
    --tp-comm-overlap --tile-seqs 2
finish
