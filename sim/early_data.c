/* SPDX-License-Identifier: MIT */
/* sim/early_data.c: StarPU-MPI's early data without its copy, in the simulation flavour only
 * (Makefile.am links it into sim/helix-sim; issue 23).
 *
 * A message that arrives before its receive is posted (the receiving tile is still read by
 * earlier tasks, or the rank has not submitted that far) is taken by StarPU-MPI into a
 * buffer of its own, and copied into the tile when the receive is posted
 * (_starpu_mpi_early_data_cb calls the interface's unpack_data: memcpy, then free).  Under
 * SMPI a tile's bytes never arrive (sim/contiguous.c copies only messages of at most
 * HX_SIM_COPY_MAX bytes), so the copy moves nothing, yet it writes every page of the tile:
 * the kernel backs each with memory.  Measured on tp 8 x pp 2, 2 layers of C 5120 (16
 * simulated H100s, /tmp perf and smaps): half the wall time went to that memcpy and its
 * page faults, and the tiles and packed-all-reduce scratch it touched were most of the
 * memory.  So for the interfaces helix sends (vector: packed chunks and scratch; matrix:
 * tiles) an unpack of more than HX_SIM_COPY_MAX bytes frees the buffer and copies nothing;
 * smaller ones (helix's gathered trace text, runtime/trace.c) are copied as before.  The
 * simulated time is unchanged: host copies take none. */
#include <starpu.h>

#include "sim/payloads.h"

typedef int (*unpack_fn)(starpu_data_handle_t, unsigned, void *, size_t);
static unpack_fn vector_unpack, matrix_unpack;

/* StarPU's unpack for small messages; above HX_SIM_COPY_MAX, only its free */
static int unpack_or_free(unpack_fn own, starpu_data_handle_t h, unsigned node, void *ptr,
                          size_t count)
{
    if (count <= HX_SIM_COPY_MAX) {
        return own(h, node, ptr, count);
    }
    starpu_free_on_node_flags(node, (uintptr_t)ptr, count, 0);
    return 0;
}

static int unpack_vector(starpu_data_handle_t h, unsigned node, void *ptr, size_t count)
{
    return unpack_or_free(vector_unpack, h, node, ptr, count);
}

static int unpack_matrix(starpu_data_handle_t h, unsigned node, void *ptr, size_t count)
{
    return unpack_or_free(matrix_unpack, h, node, ptr, count);
}

void hx_sim_early_data_install(void)
{
    /* each simulated rank has its own copy of StarPU's tables (SMPI privatizes the binary) */
    if (vector_unpack == NULL) {
        vector_unpack = starpu_interface_vector_ops.unpack_data;
        starpu_interface_vector_ops.unpack_data = unpack_vector;
    }
    if (matrix_unpack == NULL) {
        matrix_unpack = starpu_interface_matrix_ops.unpack_data;
        starpu_interface_matrix_ops.unpack_data = unpack_matrix;
    }
}
