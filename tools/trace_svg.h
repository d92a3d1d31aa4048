/* SPDX-License-Identifier: MIT */
/* tools/trace_svg.h: a trace as an SVG timeline (tools/trace_svg.c). */
#ifndef HX_TRACE_SVG_H
#define HX_TRACE_SVG_H

#include <stdio.h>

#include "tools/trace_file.h"

#define TRACE_SVG_ALL (-2) /* draw every event, not one step */

/* Draw training step @p step (or TRACE_SVG_ALL) of @p t into @p f under @p title.
 * @return 0, 1 when the window holds no event, -1 on a write or memory failure. */
int trace_svg(const struct trace *t, int step, const char *title, FILE *f);

#endif /* HX_TRACE_SVG_H */
