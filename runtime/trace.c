/* SPDX-License-Identifier: MIT */
/* runtime/trace.c: the task recorder behind --trace.  hx_graph_submit gives every task a
 * callback that copies StarPU's profiling record (worker, start, end; µs since starpu_init)
 * and the task's IR node into a growing array; hx_trace_write emits Chrome trace-event JSON,
 * one "X" event per task, pid 0 (the rank), tid = worker.  Test: tests/cli/trace.sh. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "helix/error.h"
#include "helix/graph.h"
#include "helix/trace.h"

struct event {
    const struct hx_node *node;
    int worker;
    double start_us, end_us;
};

static struct {
    int active;
    pthread_mutex_t lock;
    struct event *ev;
    long n, cap;
} tr = { .lock = PTHREAD_MUTEX_INITIALIZER };

int hx_trace_start(void)
{
    pthread_mutex_lock(&tr.lock);
    tr.active = 1;
    pthread_mutex_unlock(&tr.lock);
    starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
    return HX_OK;
}

int hx_trace_active(void)
{
    return __atomic_load_n(&tr.active, __ATOMIC_RELAXED);
}

long hx_trace_count(void)
{
    pthread_mutex_lock(&tr.lock);
    long n = tr.n;
    pthread_mutex_unlock(&tr.lock);
    return n;
}

void hx_trace_record(void *arg)
{
    struct starpu_task *task = starpu_task_get_current();
    struct starpu_profiling_task_info *pi = task ? task->profiling_info : NULL;
    if (pi == NULL) {
        return;
    }
    struct event e = { arg, pi->workerid, starpu_timing_timespec_to_us(&pi->start_time),
                       starpu_timing_timespec_to_us(&pi->end_time) };
    pthread_mutex_lock(&tr.lock);
    if (tr.active) {
        if (tr.n == tr.cap) {
            long cap = tr.cap ? tr.cap * 2 : 4096;
            struct event *nv = realloc(tr.ev, sizeof *nv * (size_t)cap);
            if (nv == NULL) {
                pthread_mutex_unlock(&tr.lock);
                return; /* the trace loses events, training goes on */
            }
            tr.ev = nv;
            tr.cap = cap;
        }
        tr.ev[tr.n++] = e;
    }
    pthread_mutex_unlock(&tr.lock);
}

int hx_trace_write(const char *path)
{
    static const char *phases[] = { "forward", "backward-data", "backward-weight", "optimizer" };
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        return HX_ERR(HX_EIO, "cannot write trace '%s': %s; check --trace", path,
                      strerror(errno));
    }
    pthread_mutex_lock(&tr.lock);
    fprintf(f, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
    for (int w = 0; w < (int)starpu_worker_get_count(); w++) {
        char name[64];
        starpu_worker_get_name(w, name, sizeof name);
        fprintf(f, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": %d, "
                "\"args\": {\"name\": \"%s\"}},\n", w, name);
    }
    for (long i = 0; i < tr.n; i++) {
        const struct event *e = &tr.ev[i];
        const struct hx_node *n = e->node;
        fprintf(f, "{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, "
                "\"dur\": %.3f, \"pid\": 0, \"tid\": %d, \"args\": {\"node\": %d, "
                "\"layer\": %d, \"microbatch\": %d, \"phase\": \"%s\", \"flops\": %.0f, "
                "\"strand\": %d, \"block\": %d, \"segment\": %d}}%s\n",
                hx_op_name(n->op), n->kind == HX_KIND_COMM ? "comm" : "compute", e->start_us,
                e->end_us - e->start_us, e->worker, n->id, n->layer, n->microbatch,
                phases[n->phase], n->flops, n->strand, n->block, n->segment,
                i + 1 < tr.n ? "," : "");
    }
    fprintf(f, "]}\n");
    pthread_mutex_unlock(&tr.lock);
    int bad = ferror(f);
    bad = fclose(f) != 0 || bad;
    return bad ? HX_ERR(HX_EIO, "writing trace '%s' failed", path) : HX_OK;
}

void hx_trace_stop(void)
{
    pthread_mutex_lock(&tr.lock);
    tr.active = 0;
    free(tr.ev);
    tr.ev = NULL;
    tr.n = tr.cap = 0;
    pthread_mutex_unlock(&tr.lock);
}
