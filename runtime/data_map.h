/* SPDX-License-Identifier: MIT */
/* runtime/data_map.h: a data file's bytes, read-only and never copied when the file is
 * regular: it is mapped (mmap), so a 10 GB text file costs address space, not memory.  A
 * pipe, FIFO or device cannot be mapped: it is read once into memory, up to HX_DATA_PIPE_MAX
 * bytes (default 1G), and refused beyond.  The dataset's ids are views into these bytes.  As
 * with any mapping, a file truncated while a run reads it faults (SIGBUS): replace data files
 * by renaming a new one into place, not by rewriting them.
 * Test: tests/graphs/data_formats.c, tests/cli/data_input.sh. */
#ifndef HX_DATA_MAP_H
#define HX_DATA_MAP_H

#include <stddef.h>
#include <stdint.h>

/* The read limit for a file that cannot be mapped, unless HX_DATA_PIPE_MAX says otherwise. */
#define HX_DATA_PIPE_MAX_DEFAULT ((size_t)1 << 30)

struct hx_data_map {
    const uint8_t *bytes; /* size bytes of the file; NULL when size is 0 */
    size_t size;
    int mapped;           /* 1: munmap on close; 0: a malloc'd buffer, freed on close */
};

/* Map @p path (a regular file) or read it (anything else, up to the limit).  @return HX_OK,
 * HX_EIO (cannot open or read; a directory), HX_EINVAL (a stream over the limit, a malformed
 * HX_DATA_PIPE_MAX) or HX_ENOMEM, each reported naming the file and the fix. */
int hx_data_map_open(struct hx_data_map **m, const char *path);
/* A map owning @p buf (malloc'd, @p size bytes; freed on close), or NULL (reported). */
struct hx_data_map *hx_data_map_adopt(uint8_t *buf, size_t size);
void hx_data_map_close(struct hx_data_map *m);

#endif /* HX_DATA_MAP_H */
