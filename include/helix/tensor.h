/* SPDX-License-Identifier: MIT */
/**
 * @file helix/tensor.h
 * @brief Tensors of the IR: a named row-major matrix split into row tiles.
 *
 * A tensor (rows, cols) is one contiguous row-major buffer.  It is cut into ntiles row tiles
 * of tile_rows rows (the last may be shorter); each tile is one StarPU matrix handle with
 * ld = cols, so tasks that write different tiles run in parallel while a task that reads a
 * tile waits only for that tile's writer.  The tiling is a property of the model
 * configuration, never of the worker count, so every reduction order is fixed by the graph.
 *
 * A tensor is plain data while a graph is being built (no memory, no handles); the runtime
 * allocates and registers it (hx_tensor_realize) before the graph is submitted.
 */
#ifndef HELIX_TENSOR_H
#define HELIX_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum hx_dtype { HX_F32, HX_I32, HX_F64 };

/** What a tensor holds; used by memory accounting, checkpoints and the planner. */
enum hx_tensor_role {
    HX_ROLE_ACTIVATION, /**< forward activation or backward temporary */
    HX_ROLE_PARAM,      /**< trainable parameter */
    HX_ROLE_GRAD,       /**< gradient of a parameter */
    HX_ROLE_OPTIM,      /**< optimizer state (Adam moments) */
    HX_ROLE_INPUT,      /**< tokens and targets, written by the host before a step */
    HX_ROLE_SCALAR,     /**< small reduction results (loss sum, gradient norm) */
    HX_ROLE_COMM,       /**< communication buffers: gathered parameters, a micro-batch's
                         *   gradients before their reduction, gathered activations */
};

#define HX_NAME_MAX 48

struct hx_tensor {
    int id;                   /**< index in its graph */
    char name[HX_NAME_MAX];   /**< e.g. "h3.attn.qkv_w" */
    enum hx_dtype dtype;
    enum hx_tensor_role role;
    int rows, cols;           /**< logical shape, row-major */
    int tile_rows;            /**< rows per row tile */
    int ntiles;               /**< ceil(rows / tile_rows) */
    int weight_decay;         /**< params only: AdamW applies decoupled weight decay */
    int grad_of;              /**< grads and moments: id of their parameter, else -1 */
    void *data;               /**< rows*cols elements (64-byte aligned), NULL until realized */
    void **handles;           /**< ntiles starpu_data_handle_t, NULL until realized */
    int pinned;               /**< flags of starpu_malloc_flags (page-locked, for devices); 0: the
                                   C library allocated data */
};

typedef struct hx_tensor *hx_tensor_t;

size_t hx_dtype_size(enum hx_dtype dt);
/** Bytes of the whole tensor. */
size_t hx_tensor_bytes(const struct hx_tensor *t);
/** Number of elements of the whole tensor. */
size_t hx_tensor_numel(const struct hx_tensor *t);
/** First row of tile @p i and its row count. */
int hx_tile_row0(const struct hx_tensor *t, int i);
int hx_tile_nrows(const struct hx_tensor *t, int i);

/** Typed views of realized data. */
static inline float *hx_f32(const struct hx_tensor *t) { return (float *)t->data; }
static inline int32_t *hx_i32(const struct hx_tensor *t) { return (int32_t *)t->data; }
static inline double *hx_f64(const struct hx_tensor *t) { return (double *)t->data; }

/**
 * Allocate the buffer (zeroed) and register one StarPU matrix handle per tile.
 * @return HX_OK or HX_ENOMEM (reported).  @note between hx_runtime_init and shutdown.
 */
int hx_tensor_realize(struct hx_tensor *t);
/** Unregister the handles (waits for pending tasks) and free the buffer. */
void hx_tensor_release(struct hx_tensor *t);
/**
 * Make the host buffer valid for reading (mode 'r') or writing ('w'): acquires every tile,
 * waiting for pending tasks.  Pair with hx_tensor_end_access.
 */
int hx_tensor_begin_access(struct hx_tensor *t, char mode);
void hx_tensor_end_access(struct hx_tensor *t);

/** Copy the whole tensor to @p dst (hx_tensor_bytes bytes), waiting for its writers. */
int hx_tensor_read(struct hx_tensor *t, void *dst);
/** Overwrite the whole tensor from @p src, after its pending readers and writers. */
int hx_tensor_write(struct hx_tensor *t, const void *src);

#ifdef __cplusplus
}
#endif

#endif /* HELIX_TENSOR_H */
