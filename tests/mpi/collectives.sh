#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/collectives.sh: tests/mpi/collectives.c in a world of 1 (no mpirun: a singleton
# MPI), 2, 3 and 4 ranks, on each backend: the MPI engine, and StarPU-MPI with each of its
# algorithms forced (HX_SMPI_ALGO=tree, ring, and halving at 4 ranks), once with packing
# off (HX_SMPI_PACK=0: an all-reduce's tiles each their own) and once with all packing on
# (HX_SMPI_PACK=all: a collective's tensors in one ring, all-gathers and reduce-scatters too).  Each launch's TAP lines are renumbered into
# this one stream with an "np N, BACKEND:" prefix, then one more line per launch says it
# exited 0 and ran its whole plan; the plan comes last.  Ranks get one worker each
# (tests/mpi/lib.sh).
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/../cli/lib.sh"
# shellcheck source=tests/mpi/lib.sh
. "$(dirname "$0")/lib.sh"
COLL=$HX_BUILDDIR/tests/mpi/collectives
HX_MPI_TIMEOUT=120
export HX_MPI_TIMEOUT
n=0
failed=0
for launch in "1 mpi" "2 mpi" "3 mpi" "4 mpi" "2 starpu-mpi tree" "2 starpu-mpi ring" \
    "3 starpu-mpi tree" "3 starpu-mpi ring" "4 starpu-mpi tree" "4 starpu-mpi ring" \
    "4 starpu-mpi halving" "3 starpu-mpi unpacked" "3 starpu-mpi packed"; do
    # shellcheck disable=SC2086  # a launch is a list of words
    set -- $launch
    np=$1
    HX_COMM_BACKEND=$2
    HX_SMPI_ALGO=${3:-} HX_SMPI_PACK=''
    case $HX_SMPI_ALGO in
    unpacked) HX_SMPI_ALGO='' HX_SMPI_PACK=0 ;;
    packed) HX_SMPI_ALGO='' HX_SMPI_PACK=all ;;
    esac
    export HX_COMM_BACKEND HX_SMPI_ALGO HX_SMPI_PACK
    how="$2${3:+ $3}"
    if [ "$np" -eq 1 ]; then
        run "$COLL"
    else
        run hx_mpirun "$np" "$COLL"
    fi
    relay_launch "np $np, $how"
done
echo "1..$n"
[ "$failed" -eq 0 ]
