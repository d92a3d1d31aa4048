#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/lanes.sh: tests/mpi/lanes.c on scripts/netbed: 4 ranks, 2 on each of two emulated
# nodes joined by a 50 Mbit/s link, once per backend (mpi, starpu-mpi).  An intra-node
# all-reduce posted after an inter-node one must complete first (the completion order, not a
# time).  Why so slow a link: the inter-node all-reduce's time is then the link's (4 MiB each
# way for two pairs: 1.4-2 s), far above the intra-node one's, which is CPU-bound (1-40 ms;
# 270 ms measured under ASan with 4 ranks on 2 loaded cores).  Each launch's TAP lines are
# renumbered into this stream with a "BACKEND:" prefix, then one line says it exited 0 after
# its whole plan.  The bed needs root, network namespaces (ip netns, unshare) and Open MPI's
# mpirun: without them the whole test is skipped, saying which is missing.
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/../cli/lib.sh"
# shellcheck source=tests/mpi/lib.sh
. "$(dirname "$0")/lib.sh"
NETBED=${HX_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/scripts/netbed
LANES=$HX_BUILDDIR/tests/mpi/lanes

skip_all() {
    echo "1..0 # SKIP $*"
    exit 0
}
[ "$(id -u)" -eq 0 ] || skip_all "scripts/netbed needs root (ip netns, tc)"
if ! command -v ip >/dev/null || ! ip netns list >/dev/null 2>&1; then
    skip_all "no 'ip netns' (iproute2) for scripts/netbed"
fi
command -v tc >/dev/null || skip_all "no tc (iproute2) to shape the netbed link"
unshare --net --uts true 2>/dev/null ||
    skip_all "cannot create network/UTS namespaces here (unshare --net --uts fails)"
if ! mpirun --version 2>/dev/null | grep -q "Open MPI"; then
    skip_all "no Open MPI mpirun for scripts/netbed"
fi

STARPU_NCPU=1 # lanes.c posts in submission order on one worker
export STARPU_NCPU
# StarPU measures the bus of a host it has not met (nodeA, nodeB: the bed's hostnames) at its
# first start and writes the files under STARPU_HOME; two ranks of one node doing that at
# once can read each other's half-written files: in the fresh-clone CI of 6c202ae, rank 0
# aborted in _starpu_load_bus_performance_files.  scripts/netbed copies this host's files to
# the nodes' names (seed_starpu_bus), and tests/Makefile.am measures this host's before any
# test; where that failed, one rank per node meets the nodes first.
bus=$STARPU_HOME/.starpu/sampling/bus
if [ ! -e "$bus/$(hostname).config" ] &&
    { [ ! -e "$bus/nodeA.config" ] || [ ! -e "$bus/nodeB.config" ]; }; then
    timeout -k 10 120 "$NETBED" run -- -np 2 --host nodeA:1,nodeB:1 "$HELIX" train \
        --preset tiny --train-iters 1 --eval-interval 0 --eval-iters 1 --sample-tokens 0 \
        >"$TMP/bus.log" 2>&1 || diag <"$TMP/bus.log"
fi
n=0
failed=0
for backend in mpi starpu-mpi; do
    HX_COMM_BACKEND=$backend
    export HX_COMM_BACKEND
    # netbed run: its own bed (namespaces hxnb<pid>), torn down on exit or on TERM
    run timeout -k 10 120 "$NETBED" run --rate 50mbit -- -np 4 "$LANES"
    grep "^lanes: rank" "$ERR" | sort | diag
    relay_launch "$backend, on netbed"
done
echo "1..$n"
[ "$failed" -eq 0 ]
