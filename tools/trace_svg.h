/* SPDX-License-Identifier: MIT */
/* tools/trace_svg.h: a trace as an SVG timeline (tools/trace_svg.c). */
#ifndef HX_TRACE_SVG_H
#define HX_TRACE_SVG_H

#include <stdio.h>

#include "tools/trace_file.h"

#define TRACE_SVG_ALL (-2)  /* draw every event, not one step */
#define TRACE_SVG_LAST (-1) /* trace_svg_stack: each trace's last step (all: no step marks) */

/* Draw training step @p step (or TRACE_SVG_ALL) of @p t into @p f under @p title.
 * @return 0, 1 when the window holds no event, -1 on a write or memory failure. */
int trace_svg(const struct trace *t, int step, const char *title, FILE *f);

/* Draw @p n >= 1 traces (runs of one job under different policies, say) into one SVG, one
 * band above the other, each under its title line ("TITLE: step 12.3 ms (training step 2)";
 * @p titles or one of them NULL: "trace 1", ...), on one time scale (the same ms per pixel
 * in every band: the longest window spans the width, so lengths compare), one legend below.
 * @p step: that training step of each, TRACE_SVG_LAST (each trace's last step) or
 * TRACE_SVG_ALL.  The bands are trace_svg's drawing.  @return 0, 1 + i when trace i has no
 * event in its window (1: n < 1), -1 on a write or memory failure. */
int trace_svg_stack(const struct trace *const *t, const char *const *titles, int n, int step,
                    FILE *f);

#endif /* HX_TRACE_SVG_H */
