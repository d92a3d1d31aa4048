/* SPDX-License-Identifier: MIT */
/* runtime/tensor.c: a tensor's buffer and its row-tile StarPU handles.
 * Tile i of a (rows, cols) tensor is the StarPU matrix at data + i*tile_rows*cols with
 * NX = cols (contiguous), NY = the tile's rows and LD = cols.  Buffers are 64-byte aligned
 * and zeroed, so a tensor nobody wrote reads as zeros, never as garbage.  With device workers
 * running they are also pinned (page-locked, StarPU's allocator), so StarPU's copies to and
 * from a device are asynchronous DMA instead of staged ones (it warns otherwise).  In a
 * simulation they are not zeroed, so never backed: no kernel runs to read them. */
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "helix/error.h"
#include "helix/runtime.h"
#include "helix/tensor.h"

size_t hx_dtype_size(enum hx_dtype dt)
{
    return dt == HX_F64 ? 8 : 4;
}

size_t hx_tensor_numel(const struct hx_tensor *t)
{
    return (size_t)t->rows * (size_t)t->cols;
}

size_t hx_tensor_bytes(const struct hx_tensor *t)
{
    return hx_tensor_numel(t) * hx_dtype_size(t->dtype);
}

int hx_tile_row0(const struct hx_tensor *t, int i)
{
    return i * t->tile_rows;
}

int hx_tile_nrows(const struct hx_tensor *t, int i)
{
    int r0 = i * t->tile_rows;
    int n = t->rows - r0;
    return n < t->tile_rows ? n : t->tile_rows;
}

/* the allocation: whole 64-byte lines, at least one */
static size_t alloc_bytes(const struct hx_tensor *t)
{
    size_t a = (hx_tensor_bytes(t) + 63) / 64 * 64;
    return a ? a : 64;
}

static void free_data(struct hx_tensor *t)
{
    if (t->pinned && t->data != NULL) {
        starpu_free_flags(t->data, alloc_bytes(t), t->pinned);
    } else {
        free(t->data);
    }
    t->data = NULL;
}

/* The flags of StarPU's allocator for a tensor's host copy, 0 for the C library's: pinned
 * (page-locked) while device workers run, so StarPU's copies to and from them are DMA.  A
 * simulation takes the C library's and never touches the buffer (no memset: no kernel reads
 * it, and the host code that would read data skips), so the kernel backs none of it: a model
 * far larger than this machine's memory takes almost none.  (StarPU's folded allocation,
 * STARPU_MALLOC_SIMULATION_FOLDED, maps and populates a file block per 64 MiB of every
 * tensor: 64 simulated ranks of a 10B model spent minutes in page tables.)  SMPI copies no
 * payload into them either (sim/contiguous.c). */
static int starpu_alloc_flags(void)
{
    if (hx_runtime_simulated()) {
        return 0;
    }
    return hx_runtime_opencl_workers() + hx_runtime_cuda_workers() > 0 ? STARPU_MALLOC_PINNED : 0;
}

int hx_tensor_realize(struct hx_tensor *t)
{
    if (t->data != NULL) {
        return HX_OK;
    }
    size_t bytes = hx_tensor_bytes(t);
    size_t alloc = alloc_bytes(t);
    t->pinned = starpu_alloc_flags();
    if (t->pinned) {
        starpu_malloc_set_align(64);
        if (starpu_malloc_flags(&t->data, alloc, t->pinned) != 0) {
            t->data = NULL;
        }
    } else {
        t->data = aligned_alloc(64, alloc);
    }
    t->handles = calloc((size_t)t->ntiles, sizeof(void *));
    if (t->data == NULL || t->handles == NULL) {
        free_data(t);
        free(t->handles);
        t->data = NULL;
        t->handles = NULL;
        return HX_ERR(HX_ENOMEM, "tensor %s (%d x %d, %zu bytes): allocation failed; use a "
                      "smaller model or batch", t->name, t->rows, t->cols, bytes);
    }
    if (!hx_runtime_simulated()) { /* (untouched pages: nothing to clear, no reader) */
        memset(t->data, 0, alloc);
    }
    size_t es = hx_dtype_size(t->dtype);
    for (int i = 0; i < t->ntiles; i++) {
        starpu_data_handle_t h;
        uintptr_t ptr = (uintptr_t)t->data + (size_t)hx_tile_row0(t, i) * t->cols * es;
        /* StarPU's matrix: nx is the contiguous dimension (our cols), ny the rows */
        starpu_matrix_data_register(&h, STARPU_MAIN_RAM, ptr, (uint32_t)t->cols,
                                    (uint32_t)t->cols, (uint32_t)hx_tile_nrows(t, i), es);
        starpu_data_set_name(h, t->name);
        t->handles[i] = h;
    }
    return HX_OK;
}

void hx_tensor_release(struct hx_tensor *t)
{
    if (t->handles != NULL) {
        for (int i = 0; i < t->ntiles; i++) {
            if (t->handles[i] != NULL) {
                starpu_data_unregister((starpu_data_handle_t)t->handles[i]);
            }
        }
        free(t->handles);
        t->handles = NULL;
    }
    free_data(t);
}

int hx_tensor_begin_access(struct hx_tensor *t, char mode)
{
    HX_ASSERT(t->handles != NULL, "tensor %s is not realized", t->name);
    enum starpu_data_access_mode m = mode == 'w' ? STARPU_RW : STARPU_R;
    for (int i = 0; i < t->ntiles; i++) {
        int ret = starpu_data_acquire((starpu_data_handle_t)t->handles[i], m);
        if (ret != 0) {
            for (int j = 0; j < i; j++) {
                starpu_data_release((starpu_data_handle_t)t->handles[j]);
            }
            return HX_ERR(HX_ERUNTIME, "starpu_data_acquire(%s tile %d) failed: %d", t->name, i,
                          ret);
        }
    }
    return HX_OK;
}

void hx_tensor_end_access(struct hx_tensor *t)
{
    for (int i = 0; i < t->ntiles; i++) {
        starpu_data_release((starpu_data_handle_t)t->handles[i]);
    }
}

int hx_tensor_read(struct hx_tensor *t, void *dst)
{
    int ret = hx_tensor_begin_access(t, 'r');
    if (ret == HX_OK) {
        memcpy(dst, t->data, hx_tensor_bytes(t));
        hx_tensor_end_access(t);
    }
    return ret;
}

int hx_tensor_write(struct hx_tensor *t, const void *src)
{
    int ret = hx_tensor_begin_access(t, 'w');
    if (ret == HX_OK) {
        memcpy(t->data, src, hx_tensor_bytes(t));
        hx_tensor_end_access(t);
    }
    return ret;
}
