/* SPDX-License-Identifier: MIT */
/* tools/trace_svg.c: `helix trace svg`: one training step (or the whole trace) as an SVG
 * timeline.  A band per rank, a row per thread (compute workers, then one per channel on
 * its lane, the intra-node lane's rows before the inter-node lane's: runtime/trace.c numbers
 * them so), time left to right with a ms axis; each task a rectangle colored by op class
 * (GEMM, attention, norm and element-wise, optimizer, and each collective kind), strand
 * beta's tasks hatched, a legend below.  Hovering a task shows its op, micro-batch, layer
 * and duration.  trace_svg_stack draws several traces (one job under several scheduling
 * policies, for helix compare) one band above the other on one time scale, each band the
 * same drawing under its own title line, one legend below.  Test: tests/mpi/trace.sh
 * (renders it to PNG and checks it is not blank; a stack of two is valid XML with both
 * titles). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/trace_file.h"
#include "tools/trace_svg.h"

#define WIDTH 1600.0
#define LEFT 170.0  /* row labels */
#define RIGHT 20.0
#define ROW 16.0
#define TOP 64.0    /* title and axis */

struct op_class {
    const char *label, *color;
};

static const struct op_class classes[] = {
    { "GEMM", "#4e79a7" },           { "attention", "#b07aa1" },
    { "norm, element-wise", "#59a14f" }, { "optimizer", "#f28e2b" },
    { "all-reduce", "#e15759" },     { "all-gather", "#9c755f" },
    { "reduce-scatter", "#ff9da7" }, { "broadcast", "#edc948" },
    { "send / recv", "#76b7b2" },    { "fence", "#bab0ac" },
};

static int class_of(const struct trace_event *e)
{
    if (e->comm) {
        return !e->collective                          ? 9
               : strcmp(e->name, "allreduce") == 0      ? 4
               : strcmp(e->name, "allgather") == 0      ? 5
               : strcmp(e->name, "reduce_scatter") == 0 ? 6
               : strcmp(e->name, "broadcast") == 0      ? 7
                                                        : 8;
    }
    if (strcmp(e->phase, "optimizer") == 0) {
        return 3;
    }
    return strncmp(e->name, "matmul", 6) == 0     ? 0
           : strncmp(e->name, "attention", 9) == 0 ? 1
                                                   : 2;
}

static const char *thread_name(const struct trace *t, int rank, int tid, char *buf, size_t len)
{
    for (int i = 0; i < t->nth; i++) {
        if (t->th[i].rank == rank && t->th[i].tid == tid) {
            return t->th[i].name;
        }
    }
    snprintf(buf, len, "thread %d", tid);
    return buf;
}

static int cmp_int(const void *a, const void *b)
{
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* A tick spacing of 1, 2 or 5 x 10^k ms giving about 10 ticks over @p span ms */
static double tick_step(double span)
{
    double raw = span / 10, p = pow(10, floor(log10(raw > 0 ? raw : 1)));
    return raw <= p ? p : raw <= 2 * p ? 2 * p : raw <= 5 * p ? 5 * p : 10 * p;
}

static int in_window(const struct trace_event *e, int step)
{
    return step == TRACE_SVG_ALL || e->step == step;
}

/* Rank @p r's rows: the threads with an event in the window, by tid, into @p tids (room for
 * t->n); @return their number. */
static int rank_rows(const struct trace *t, int r, int step, int *tids)
{
    int n = 0, k = 0;
    for (int i = 0; i < t->n; i++) {
        if (t->ev[i].rank == r && in_window(&t->ev[i], step)) {
            tids[n++] = t->ev[i].tid;
        }
    }
    qsort(tids, (size_t)n, sizeof *tids, cmp_int);
    for (int i = 0; i < n; i++) {
        if (i == 0 || tids[i] != tids[i - 1]) {
            tids[k++] = tids[i];
        }
    }
    return k;
}

/* The window's first task start and last task end into @p t0, @p t1; @return 0, 1 when the
 * window holds no event. */
static int window(const struct trace *t, int step, double *t0, double *t1)
{
    *t0 = INFINITY, *t1 = -INFINITY;
    for (int i = 0; i < t->n; i++) {
        if (in_window(&t->ev[i], step)) {
            *t0 = fmin(*t0, t->ev[i].t0), *t1 = fmax(*t1, t->ev[i].t1);
        }
    }
    return !(*t1 > *t0);
}

/* The rows of @p t's band: every rank's header and threads */
static int band_rows(const struct trace *t, int step, int *tids)
{
    int rows = 0;
    for (int r = 0; r < t->nranks; r++) {
        rows += rank_rows(t, r, step, tids) + 1; /* + the rank's header */
    }
    return rows;
}

static double band_height(const struct trace *t, int rows)
{
    return rows * ROW + t->nranks * 8;
}

static void put_escaped(FILE *f, const char *s)
{
    for (const char *c = s; *c; c++) { /* titles are paths or names: escape XML */
        fputs(*c == '<' ? "&lt;" : *c == '>' ? "&gt;" : *c == '&' ? "&amp;" : (char[]){ *c, 0 },
              f);
    }
}

static void svg_open(FILE *f, double height)
{
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"11\">\n"
            "<defs><pattern id=\"beta\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
            "patternTransform=\"rotate(45)\"><rect width=\"3\" height=\"6\" fill=\"white\" "
            "fill-opacity=\"0.55\"/></pattern></defs>\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", WIDTH, height, WIDTH,
            height);
}

/* One band: the ms axis (ticks every @p dt ms over the window's @p span) and a block of rows
 * per rank from @p y, the window starting at @p t0 and @p full ms spanning the plot's width
 * (the same for every band of a stack: lengths compare).  @return the y below the band. */
static double band(FILE *f, const struct trace *t, int step, double t0, double span,
                   double full, double dt, double y, int rows, int *tids)
{
    double plotw = WIDTH - LEFT - RIGHT;
#define X(ms) (LEFT + ((ms) - t0) / full * plotw)
    for (double x = 0; x <= span + 1e-9; x += dt) {
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#ddd\"/>"
                "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\" fill=\"#555\">%g</text>\n",
                X(t0 + x), y - 8, X(t0 + x), y + band_height(t, rows), X(t0 + x), y - 12, x);
    }
    for (int r = 0; r < t->nranks; r++) {
        int nrows = rank_rows(t, r, step, tids);
        fprintf(f, "<rect x=\"0\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"#f4f4f4\"/>"
                "<text x=\"6\" y=\"%.0f\" font-weight=\"bold\">rank %d%s%s%s</text>\n", y, WIDTH,
                ROW, y + 12, r, t->host[r][0] ? " (" : "", t->host[r], t->host[r][0] ? ")" : "");
        y += ROW;
        for (int k = 0; k < nrows; k++) {
            char buf[32];
            fprintf(f, "<text x=\"14\" y=\"%.0f\">%s</text>\n", y + 12,
                    thread_name(t, r, tids[k], buf, sizeof buf));
            for (int i = 0; i < t->n; i++) {
                const struct trace_event *e = &t->ev[i];
                if (e->rank != r || e->tid != tids[k] || !in_window(e, step)) {
                    continue;
                }
                double x0 = X(e->t0), w = fmax(0.6, X(e->t1) - x0);
                fprintf(f, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%.0f\" "
                        "fill=\"%s\"><title>%s%s%s, %s, %.3f ms</title></rect>", x0, y + 2, w,
                        ROW - 4, classes[class_of(e)].color, e->name, e->channel[0] ? " on " : "",
                        e->channel, e->phase, e->t1 - e->t0);
                if (e->strand == 1) {
                    fprintf(f, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%.0f\" "
                            "fill=\"url(#beta)\"/>", x0, y + 2, w, ROW - 4);
                }
                fputc('\n', f);
            }
            y += ROW;
        }
        y += 8;
    }
#undef X
    return y;
}

/* The legend from @p y (the bottom of the last band; it takes up to 90 px) and the end */
static void legend_close(FILE *f, double y)
{
    double lx = LEFT, ly = y + 24;
    fprintf(f, "<text x=\"6\" y=\"%.0f\" font-weight=\"bold\">legend</text>\n", ly + 10);
    for (size_t c = 0; c < sizeof classes / sizeof classes[0]; c++) {
        fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"12\" fill=\"%s\"/>"
                "<text x=\"%.0f\" y=\"%.0f\">%s</text>\n", lx, ly, classes[c].color, lx + 18,
                ly + 10, classes[c].label);
        lx += 135;
        if (lx > WIDTH - 140) {
            lx = LEFT, ly += 18;
        }
    }
    fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"12\" fill=\"#888\"/>"
            "<rect x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"12\" fill=\"url(#beta)\"/>"
            "<text x=\"%.0f\" y=\"%.0f\">strand beta (hatched)</text>\n</svg>\n", lx, ly, lx, ly,
            lx + 18, ly + 10);
}

int trace_svg(const struct trace *t, int step, const char *title, FILE *f)
{
    double t0, t1;
    int *tids = malloc(sizeof(int) * ((size_t)t->n + 1));
    if (tids == NULL) {
        return -1;
    }
    if (window(t, step, &t0, &t1) != 0) {
        free(tids);
        return 1; /* nothing in the window */
    }
    int rows = band_rows(t, step, tids);
    double span = t1 - t0;
    svg_open(f, TOP + band_height(t, rows) + 90);
    fprintf(f, "<text x=\"%.0f\" y=\"20\" font-size=\"15\" font-weight=\"bold\">", LEFT);
    put_escaped(f, title);
    fprintf(f, " — %s, %.1f ms</text>\n", step == TRACE_SVG_ALL ? "whole trace" : "one step",
            span);
    if (step != TRACE_SVG_ALL) {
        fprintf(f, "<text x=\"%.0f\" y=\"36\" fill=\"#555\">training step %d; time from the "
                "step's first task (ms)</text>\n", LEFT, step);
    }
    legend_close(f, band(f, t, step, t0, span, span, tick_step(span), TOP, rows, tids));
    free(tids);
    return ferror(f) ? -1 : 0;
}

#define STACK_TOP 44.0  /* the stack's caption */
#define BAND_TOP 40.0   /* a band's title and axis, above its rows */
#define BAND_GAP 16.0

int trace_svg_stack(const struct trace *const *t, const char *const *titles, int n, int step,
                    FILE *f)
{
    if (n < 1) {
        return 1; /* no trace: nothing to draw */
    }
    size_t most = 1;
    for (int i = 0; i < n; i++) {
        most = (size_t)t[i]->n + 1 > most ? (size_t)t[i]->n + 1 : most;
    }
    int *tids = malloc(sizeof(int) * most), *steps = malloc(sizeof(int) * most);
    int *win = malloc(sizeof(int) * (size_t)n), *rows = malloc(sizeof(int) * (size_t)n);
    double *t0 = malloc(sizeof(double) * (size_t)n), *span = malloc(sizeof(double) * (size_t)n);
    int ret = 0;
    if (tids == NULL || steps == NULL || win == NULL || rows == NULL || t0 == NULL ||
        span == NULL) {
        ret = -1;
        goto out;
    }
    double full = 0, height = STACK_TOP;
    for (int i = 0; i < n; i++) {
        int ns = step == TRACE_SVG_LAST ? trace_steps(t[i], steps) : 0;
        win[i] = step != TRACE_SVG_LAST ? step : ns > 0 ? steps[ns - 1] : TRACE_SVG_ALL;
        double t1;
        if (window(t[i], win[i], &t0[i], &t1) != 0) {
            ret = 1 + i; /* nothing in trace i's window */
            goto out;
        }
        span[i] = t1 - t0[i];
        full = fmax(full, span[i]);
        rows[i] = band_rows(t[i], win[i], tids);
        height += BAND_TOP + band_height(t[i], rows[i]) + BAND_GAP;
    }
    double dt = tick_step(full), y = STACK_TOP;
    svg_open(f, height + 90);
    fprintf(f, "<text x=\"%.0f\" y=\"20\" font-size=\"15\" font-weight=\"bold\">%d runs, one "
            "step each</text>\n<text x=\"%.0f\" y=\"36\" fill=\"#555\">time from each step's "
            "first task (ms), one scale for all: %.1f ms spans the width</text>\n", LEFT, n,
            LEFT, full);
    for (int i = 0; i < n; i++) {
        char name[32] = "";
        if (titles == NULL || titles[i] == NULL) {
            snprintf(name, sizeof name, "trace %d", i + 1);
        }
        fprintf(f, "<text x=\"6\" y=\"%.0f\" font-size=\"13\" font-weight=\"bold\">", y + 14);
        put_escaped(f, titles == NULL || titles[i] == NULL ? name : titles[i]);
        fprintf(f, ": %s %.1f ms", win[i] == TRACE_SVG_ALL ? "whole trace" : "step", span[i]);
        if (win[i] != TRACE_SVG_ALL) {
            fprintf(f, " <tspan fill=\"#555\" font-weight=\"normal\">(training step %d)</tspan>",
                    win[i]);
        }
        fprintf(f, "</text>\n");
        y = band(f, t[i], win[i], t0[i], span[i], full, dt, y + BAND_TOP, rows[i], tids);
        y += BAND_GAP;
    }
    legend_close(f, y - BAND_GAP);
    ret = ferror(f) ? -1 : 0;
out:
    free(tids), free(steps), free(win), free(rows), free(t0), free(span);
    return ret;
}
