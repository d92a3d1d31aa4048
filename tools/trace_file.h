/* SPDX-License-Identifier: MIT */
/* tools/trace_file.h: a trace written by `helix train --trace` (runtime/trace.c), read back
 * for `helix trace summarize` and `helix trace svg`: its task events (times in ms on rank
 * 0's clock) and its thread names. */
#ifndef HX_TRACE_FILE_H
#define HX_TRACE_FILE_H

#include <stddef.h>

struct trace_event {
    int rank, tid, step, strand;
    int comm;        /* cat "comm": a collective or a channel fence */
    int collective;  /* moves data (not a fence) */
    double t0, t1;   /* ms */
    double bytes, flops;
    char name[32];   /* op */
    char lane[24];   /* "compute", "comm intra-node", "comm inter-node" */
    char channel[16];
    char phase[24];
};

struct trace_thread {
    int rank, tid;
    char name[64];
};

struct trace {
    struct trace_event *ev;
    int n;
    struct trace_thread *th;
    int nth;
    int nranks;          /* highest rank + 1 */
    char (*host)[64];    /* per rank, from the process names ("" if absent) */
};

/* Read @p path.  @return 0, or -1 with a message naming the file and the problem in @p err
 * (not a file, not JSON, not a helix trace). */
int trace_load(const char *path, struct trace *t, char *err, size_t errlen);
void trace_free(struct trace *t);

/* The training steps present (step >= 0), sorted: their number, into @p steps (room for
 * t->n); 0 when the trace has no step marks (all events then count as one step, -1). */
int trace_steps(const struct trace *t, int *steps);

#endif /* HX_TRACE_FILE_H */
