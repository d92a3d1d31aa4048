/* SPDX-License-Identifier: MIT */
/* runtime/kv_lines.h: helix's `key = value` files (machines/NAME.machine, read by
 * tools/sim_machine.c; devices/NAME.device, runtime/sim_device.c): '#' starts a comment,
 * blank lines are skipped, spaces around key and value are not part of them. */
#ifndef HX_RUNTIME_KV_LINES_H
#define HX_RUNTIME_KV_LINES_H

#include <stddef.h>
#include <stdio.h>

/* The next pair of @p f, read into @p buf (@p cap bytes): 1 with @p key and @p value pointing
 * into buf and *line its line number, 0 at the end of the file, or HX_EINVAL, reported as
 * PATH:LINE, for a line longer than buf or one without '=' (@p example: a valid line). */
int hx_kv_next(FILE *f, const char *path, char *buf, size_t cap, int *line, const char *example,
               char **key, char **value);

#endif /* HX_RUNTIME_KV_LINES_H */
