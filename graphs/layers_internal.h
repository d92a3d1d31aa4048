/* SPDX-License-Identifier: MIT */
/* graphs/layers_internal.h: the checks and sizes the layer builders share (graphs/layers.c,
 * graphs/layers_norm.c).  A failed check is a bug in the caller: it asserts with the shapes. */
#ifndef HX_LAYERS_INTERNAL_H
#define HX_LAYERS_INTERNAL_H

#include "helix/error.h"
#include "helix/layers.h"

#define F4 4.0 /* bytes per float */

static inline void same_tiling(const struct hx_tensor *a, const struct hx_tensor *b)
{
    HX_ASSERT(a->rows == b->rows && a->tile_rows == b->tile_rows,
              "%s (%d rows, tiles of %d) and %s (%d rows, tiles of %d) must share row tiles",
              a->name, a->rows, a->tile_rows, b->name, b->rows, b->tile_rows);
}

static inline void single_tile(const struct hx_tensor *t)
{
    HX_ASSERT(t->ntiles == 1, "%s (%d x %d) must be one tile, has %d", t->name, t->rows,
              t->cols, t->ntiles);
}

static inline void shape(const struct hx_tensor *t, int rows, int cols)
{
    HX_ASSERT(t->rows == rows && t->cols == cols, "%s is (%d x %d), expected (%d x %d)", t->name,
              t->rows, t->cols, rows, cols);
}

#endif /* HX_LAYERS_INTERNAL_H */
