/* SPDX-License-Identifier: MIT */
/* tools/trace_file.c: load a helix trace (Chrome trace-event JSON, include/helix/trace.h)
 * into flat events.  Only "X" events with helix's args are tasks; "M" events name the
 * processes (ranks) and threads (workers, channels).  Test: tests/mpi/trace.sh. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/json.h"
#include "tools/trace_file.h"

static double num(const struct hx_json *o, const char *key, double dflt)
{
    const struct hx_json *v = hx_json_get(o, key);
    return v != NULL && v->type == HX_JSON_NUMBER ? v->num : dflt;
}

static void str(const struct hx_json *o, const char *key, char *dst, size_t len)
{
    const struct hx_json *v = hx_json_get(o, key);
    snprintf(dst, len, "%s", v != NULL && v->type == HX_JSON_STRING ? v->str : "");
}

static int cmp_int(const void *a, const void *b)
{
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

int trace_steps(const struct trace *t, int *steps)
{
    int n = 0;
    for (int i = 0; i < t->n; i++) {
        if (t->ev[i].step >= 0) {
            steps[n++] = t->ev[i].step;
        }
    }
    qsort(steps, (size_t)n, sizeof *steps, cmp_int);
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (k == 0 || steps[k - 1] != steps[i]) {
            steps[k++] = steps[i];
        }
    }
    return k;
}

/* An event object into @p e; 0 if it is no helix task event (skipped). */
static int task_event(const struct hx_json *o, struct trace_event *e)
{
    const struct hx_json *ph = hx_json_get(o, "ph"), *args = hx_json_get(o, "args");
    if (ph == NULL || ph->type != HX_JSON_STRING || strcmp(ph->str, "X") != 0 || args == NULL ||
        args->type != HX_JSON_OBJECT || hx_json_get(args, "lane") == NULL) {
        return 0;
    }
    memset(e, 0, sizeof *e);
    e->rank = (int)num(o, "pid", 0);
    e->tid = (int)num(o, "tid", 0);
    e->t0 = num(o, "ts", 0) / 1e3;
    e->t1 = e->t0 + num(o, "dur", 0) / 1e3;
    str(o, "name", e->name, sizeof e->name);
    char cat[16];
    str(o, "cat", cat, sizeof cat);
    e->comm = strcmp(cat, "comm") == 0;
    e->collective = (int)num(args, "collective", e->comm);
    e->step = (int)num(args, "step", -1);
    e->strand = (int)num(args, "strand", -1);
    e->bytes = num(args, "bytes", 0);
    e->flops = num(args, "flops", 0);
    str(args, "lane", e->lane, sizeof e->lane);
    str(args, "channel", e->channel, sizeof e->channel);
    str(args, "phase", e->phase, sizeof e->phase);
    return 1;
}

/* A "process_name" or "thread_name" metadata event into the trace. */
static void meta_event(const struct hx_json *o, struct trace *t)
{
    const struct hx_json *ph = hx_json_get(o, "ph"), *name = hx_json_get(o, "name");
    const struct hx_json *args = hx_json_get(o, "args");
    if (ph == NULL || ph->type != HX_JSON_STRING || strcmp(ph->str, "M") != 0 || name == NULL ||
        name->type != HX_JSON_STRING || args == NULL) {
        return;
    }
    int rank = (int)num(o, "pid", 0);
    char value[64];
    str(args, "name", value, sizeof value);
    if (strcmp(name->str, "thread_name") == 0) {
        struct trace_thread *th = &t->th[t->nth++];
        th->rank = rank;
        th->tid = (int)num(o, "tid", 0);
        snprintf(th->name, sizeof th->name, "%s", value);
    } else if (strcmp(name->str, "process_name") == 0 && rank >= 0 && rank < t->nranks) {
        const char *open = strchr(value, '('), *close = strrchr(value, ')');
        if (open != NULL && close != NULL && close > open) {
            snprintf(t->host[rank], sizeof t->host[rank], "%.*s", (int)(close - open - 1),
                     open + 1);
        }
    }
}

int trace_load(const char *path, struct trace *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    size_t len;
    char *text = hx_json_slurp(path, &len);
    if (text == NULL) {
        snprintf(err, errlen, "cannot read trace '%s': %s; give a file written by helix train "
                 "--trace", path, strerror(errno));
        return -1;
    }
    struct hx_json root;
    char why[256];
    int bad = hx_json_parse(text, len, &root, why, sizeof why);
    free(text);
    if (bad) {
        snprintf(err, errlen, "'%s' is not JSON (%s); give a file written by helix train "
                 "--trace", path, why);
        hx_json_free(&root);
        return -1;
    }
    const struct hx_json *evs = hx_json_get(&root, "traceEvents");
    if (evs == NULL || evs->type != HX_JSON_ARRAY) {
        snprintf(err, errlen, "'%s' has no traceEvents array: not a Chrome trace; give a file "
                 "written by helix train --trace", path);
        hx_json_free(&root);
        return -1;
    }
    t->ev = calloc((size_t)evs->n + 1, sizeof *t->ev);
    t->th = calloc((size_t)evs->n + 1, sizeof *t->th);
    for (int i = 0; t->ev != NULL && i < evs->n; i++) {
        if (task_event(&evs->items[i], &t->ev[t->n])) {
            t->nranks = t->ev[t->n].rank + 1 > t->nranks ? t->ev[t->n].rank + 1 : t->nranks;
            t->n++;
        }
    }
    t->host = calloc((size_t)t->nranks + 1, sizeof *t->host);
    if (t->ev == NULL || t->th == NULL || t->host == NULL) {
        snprintf(err, errlen, "out of memory reading trace '%s' (%d events)", path, evs->n);
        hx_json_free(&root);
        trace_free(t);
        return -1;
    }
    for (int i = 0; i < evs->n; i++) {
        meta_event(&evs->items[i], t);
    }
    hx_json_free(&root);
    if (t->n == 0) {
        snprintf(err, errlen, "'%s' holds no helix task events (a trace of another tool, or a "
                 "run that ran no task); give a file written by helix train --trace", path);
        trace_free(t);
        return -1;
    }
    return 0;
}

void trace_free(struct trace *t)
{
    free(t->ev);
    free(t->th);
    free(t->host);
    memset(t, 0, sizeof *t);
}
