#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/comm_backend.sh: `helix train --comm-backend mpi|nccl` (tools/train_args.c).
# Where this build or this StarPU cannot run NCCL (Debian's StarPU has no CUDA workers),
# asking for it, by the flag, a --config file or --compute-on cuda (whose default it is), is
# refused before any work: exit 2, nothing on stdout, one "helix: error:" line saying why and
# how to get a CUDA-enabled StarPU; under mpirun too, from rank 0 alone.  An explicit
# --comm-backend mpi beats the default of --compute-on cuda, and trains where MPI can.  In a
# CUDA build the library carries the NCCL backend (its functions, and the NCCL collectives it
# calls); a build without CUDA has neither.
# shellcheck disable=SC2016,SC2086,SC2034  # ok evals its single-quoted checks (WHY is used
# there); $TINY splits
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/../cli/lib.sh"
# shellcheck source=tests/mpi/lib.sh
. "$(dirname "$0")/lib.sh"
export HX_MPI_TIMEOUT=120

TINY="--preset tiny --train-iters 2 --progress-bar 0 --sample-tokens 0 --eval-interval 0"
WHY="has no CUDA workers|scripts/setup --cuda|README \"GPUs\""
cuda_build=0
if grep -q '^#define HX_HAVE_CUDA 1' "$HX_BUILDDIR/config.h"; then
    cuda_build=1
fi
# the StarPU helix was configured against (pkg-config), as its headers say
starpu_inc=$(pkg-config --cflags-only-I starpu-1.3 2>/dev/null | sed 's/^-I//; s/ .*//')
starpu_cuda=0
if grep -q '^#define STARPU_USE_CUDA 1' "${starpu_inc:-/usr/include/starpu/1.3}/starpu_config.h"
then
    starpu_cuda=1
fi
if [ "$cuda_build" = 0 ] && [ "$starpu_cuda" = 1 ]; then
    WHY="helix was built without CUDA and NCCL"
elif [ "$cuda_build" = 0 ]; then
    WHY="helix was built without CUDA and NCCL|$WHY"
fi
# every NCCL and CUDA call the backend needs is an undefined symbol of libhelix (from libnccl
# and libcudart): the code that makes them is compiled in and linked
# shellcheck disable=SC2317  # called through ok's eval
calls_nccl() {
    for s in ncclAllReduce ncclAllGather ncclReduceScatter ncclBroadcast ncclReduce ncclSend \
        ncclRecv ncclCommInitRank ncclGetUniqueId ncclCommGetAsyncError cudaEventQuery \
        cudaEventRecord; do
        grep -q -E " U $s(@.*)?$" "$TMP/syms" || return 1 # (cudart's are versioned)
    done
}
plan 10

run "$HELIX" train $TINY --comm-backend gloo
ok "--comm-backend gloo: exit 2 listing the backends" \
    'usage_error "--comm-backend gloo is not a backend; use mpi, starpu-mpi or nccl"'

if [ "$cuda_build" = 1 ] && [ "$starpu_cuda" = 1 ]; then # (the only case NCCL can run)
    for d in "--comm-backend nccl" "--comm-backend nccl in a --config file" \
        "--compute-on cuda" "--comm-backend nccl under mpirun"; do
        ok "$d refused # SKIP this StarPU has CUDA: NCCL can run here" true
    done
else
    run "$HELIX" train $TINY --comm-backend nccl
    ok "--comm-backend nccl: exit 2 before any work, one line saying why" \
        'usage_error "--comm-backend nccl: |$WHY|or use --comm-backend mpi"'
    printf 'comm-backend = nccl\n' >"$TMP/nccl.cfg"
    run "$HELIX" train $TINY --config "$TMP/nccl.cfg"
    ok "--comm-backend nccl in a --config file: refused alike" \
        'usage_error "--comm-backend nccl: |$WHY"'
    run "$HELIX" train $TINY --compute-on cuda
    ok "--compute-on cuda chooses NCCL, refused alike, naming the choice" \
        'usage_error "--comm-backend nccl (the default with --compute-on cuda): |$WHY"'
    run hx_mpirun 2 "$HELIX" train $TINY --comm-backend nccl
    ok "--comm-backend nccl under mpirun -np 2: exit 2, one line (rank 0's), no step" \
        'rc_is 2 && [ "$(grep -c "helix: error:" "$ERR")" -eq 1 ] &&
         has_words "--comm-backend nccl: |$WHY" && ! out_has "^step"'
fi

if [ "$starpu_cuda" = 1 ]; then
    ok "--compute-on cuda --comm-backend mpi # SKIP this StarPU has CUDA" true
else
    # the backend check passes (MPI), so the CUDA worker is what is refused, later
    run "$HELIX" train $TINY --compute-on cuda --comm-backend mpi
    ok "--compute-on cuda --comm-backend mpi: MPI kept, then the CUDA worker refused" \
        'one_error 2 "1 CUDA worker requested, but this StarPU" && ! err_has "comm-backend"'
fi

run "$HELIX" train $TINY --comm-backend mpi
ok "--comm-backend mpi trains" 'rc_is 0 && out_has "^done: 2 steps"'

lib=$HX_BUILDDIR/.libs/libhelix.so
if [ ! -f "$lib" ]; then
    echo "Bail out! $lib not found: build the library first (make)"
    exit 1
fi
nm -D "$lib" >"$TMP/syms" 2>"$TMP/nm.err" || {
    echo "Bail out! nm -D $lib failed: $(cat "$TMP/nm.err")"
    exit 1
}
if [ "$cuda_build" = 1 ]; then
    ok "libhelix defines the NCCL backend and its codelets" \
        'grep -q " T hx_nccl_open$" "$TMP/syms" && grep -q " T hx_nccl_allreduce$" "$TMP/syms" &&
         grep -q " D hx_cl_nccl_allreduce$" "$TMP/syms"'
    ok "libhelix calls NCCL's collectives and completion checks (undefined: from libnccl)" \
        calls_nccl
    ok "libhelix links libnccl" 'ldd "$lib" | grep -q "libnccl\.so"'
else
    ok "a build without CUDA has neither the NCCL backend nor an NCCL call" \
        '! grep -q -E " (U nccl|[TDB] hx_nccl_|[DB] hx_cl_nccl_)" "$TMP/syms"'
    ok "a build without CUDA does not link libnccl" '! ldd "$lib" | grep -q "libnccl"'
    ok "libhelix calls NCCL # SKIP helix built without CUDA" true
fi
finish
