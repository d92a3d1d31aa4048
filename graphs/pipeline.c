/* SPDX-License-Identifier: MIT */
/* graphs/pipeline.c: pipeline schedules (include/helix/pipeline.h).
 *   GPipe: F(0..m-1), then B(0..m-1).
 *   1F1B (PipeDream-flush, Megatron's non-interleaved schedule): stage s of p first runs
 *     w = min(p-s-1, m) forwards, then alternates F(w+i), B(i) while forwards remain, then
 *     runs the last w backwards.  At most w+1 micro-batches are in flight.
 *   Folded (DHelix's W, papers.md §2.6): the order a list schedule of unit-cost virtual
 *     stages produces (backward first, oldest first, at most 2p micro-batches in flight).  Any timing of the real run can follow it: the simulated schedule is
 *     a witness that the stage orders, the data dependencies and each channel's
 *     first-in-first-out order (micro-batches in order on both ends) form no cycle.
 * Test: tests/graphs/pipeline.c (orders, in-flight counts, bubbles), tests/mpi/parity_pp*.sh. */
#include <stdlib.h>
#include <string.h>

#include "helix/error.h"
#include "helix/pipeline.h"

int hx_pipeline_virtual_stages(int schedule, int p)
{
    return schedule == HX_PIPE_FOLD ? 2 * p : p;
}

int hx_pipeline_stage_of(int schedule, int p, int v)
{
    return schedule == HX_PIPE_FOLD && v >= p ? 2 * p - 1 - v : v;
}

int hx_pipeline_chunks(int schedule, int p, int s, int first[2], int len[2])
{
    if (schedule != HX_PIPE_FOLD) {
        first[0] = s, len[0] = 1;
        return 1;
    }
    if (s == p - 1) { /* the turn: p-1 and p are consecutive layers on one stage */
        first[0] = p - 1, len[0] = 2;
        return 1;
    }
    first[0] = s, len[0] = 1;
    first[1] = 2 * p - 1 - s, len[1] = 1;
    return 2;
}

/* Non-folded schedules as a plain sequence: micro-batch j's forward is j, its backward
 * -1 - j (2 m entries). */
static void plain_order(int schedule, int p, int s, int m, int *order)
{
    int k = 0;
    if (schedule == HX_PIPE_GPIPE) {
        for (int j = 0; j < m; j++) {
            order[k++] = j;
        }
        for (int j = 0; j < m; j++) {
            order[k++] = -1 - j;
        }
        return;
    }
    int w = p - s - 1 < m ? p - s - 1 : m;
    for (int j = 0; j < w; j++) {
        order[k++] = j;
    }
    for (int i = 0; w + i < m; i++) {
        order[k++] = w + i;
        order[k++] = -1 - i;
    }
    for (int j = m - w; j < m; j++) {
        order[k++] = -1 - j;
    }
}

/* ---- a list-schedule simulator over virtual stages ---- */

struct sim {
    int schedule, p, m, V;
    double tf, tb;
    double *ff, *fb;          /* [mb * V + v]: finish of F / B of virtual stage v, -1 unset */
    int nch[64], first[64][2], len[64][2];
};

static int sim_init(struct sim *S, int schedule, int p, int m, double tf, double tb)
{
    if (p < 1 || p > 64 || m < 1) {
        return 0;
    }
    S->schedule = schedule, S->p = p, S->m = m, S->tf = tf, S->tb = tb;
    S->V = hx_pipeline_virtual_stages(schedule, p);
    S->ff = malloc(sizeof(double) * (size_t)m * S->V);
    S->fb = malloc(sizeof(double) * (size_t)m * S->V);
    HX_ASSERT(S->ff && S->fb, "out of memory");
    for (int i = 0; i < m * S->V; i++) {
        S->ff[i] = S->fb[i] = -1;
    }
    for (int s = 0; s < p; s++) {
        S->nch[s] = hx_pipeline_chunks(schedule, p, s, S->first[s], S->len[s]);
    }
    return 1;
}

static void sim_free(struct sim *S)
{
    free(S->ff);
    free(S->fb);
}

/* When task @p t of stage @p s can start (its inputs' finish), or -1 if not known yet */
static double sim_ready(const struct sim *S, int s, const struct hx_pipe_task *t)
{
    int a = S->first[s][t->chunk], b = a + S->len[s][t->chunk] - 1, V = S->V;
    const double *ff = S->ff + (size_t)t->mb * V, *fb = S->fb + (size_t)t->mb * V;
    if (t->fwd) {
        return a == 0 ? 0.0 : ff[a - 1];
    }
    double own = ff[b], next = b + 1 < V ? fb[b + 1] : ff[V - 1];
    return own < 0 || next < 0 ? -1 : own > next ? own : next;
}

static double sim_run(struct sim *S, int s, const struct hx_pipe_task *t, double start)
{
    int a = S->first[s][t->chunk], n = S->len[s][t->chunk];
    double end = start + n * (t->fwd ? S->tf : S->tb);
    for (int v = a; v < a + n; v++) {
        (t->fwd ? S->ff : S->fb)[(size_t)t->mb * S->V + v] = end;
    }
    return end;
}

/* The folded order: a greedy list schedule (B first, oldest first; a new micro-batch only
 * while fewer than 2p are in flight on the stage), simulated stage by stage. */
static void fold_orders(struct sim *S, struct hx_pipe_task **orders, int *counts)
{
    int p = S->p, m = S->m;
    double *free_at = calloc((size_t)p, sizeof(double));
    char *done = calloc((size_t)p * 4 * m, 1); /* [s][fwd][chunk][mb] */
    HX_ASSERT(free_at && done, "out of memory");
    int total = 0, want = 0;
    for (int s = 0; s < p; s++) {
        counts[s] = 0;
        want += 2 * m * S->nch[s];
    }
    for (double t = 0; total < want; t += 1.0) {
        for (int s = 0; s < p; s++) {
            if (free_at[s] > t) {
                continue;
            }
            int live = 0;
            for (int j = 0; j < m; j++) { /* first chunk's F started, its B not finished */
                double b = S->fb[(size_t)j * S->V + S->first[s][0]];
                live += done[((size_t)s * 4 + 2) * m + j] && !(b >= 0 && b <= t);
            }
            /* backwards first, then forwards; oldest micro-batch first; a stage injects a
             * new micro-batch only while it keeps fewer than 2p in flight (measured with
             * hx_pipeline_makespan: the bubble is then at most 1F1B's for p 2 and 4,
             * m 2..16; a cap of 2(p-s) leaves stage 0 idle while the W drains) */
            struct hx_pipe_task best = { -1, -1, -1 };
            for (int fwd = 0; fwd <= 1 && best.fwd < 0; fwd++) {
                for (int j = 0; j < m && best.fwd < 0; j++) {
                    for (int c = S->nch[s] - 1; c >= 0 && best.fwd < 0; c--) {
                        struct hx_pipe_task cand = { fwd, j, c };
                        char *d = &done[((size_t)s * 4 + fwd * 2 + c) * m + j];
                        double r = *d ? -1 : sim_ready(S, s, &cand);
                        int inject = fwd && c == 0;
                        if (r >= 0 && r <= t && (!inject || live < 2 * p)) {
                            best = cand;
                        }
                    }
                }
            }
            if (best.fwd < 0) {
                continue;
            }
            done[((size_t)s * 4 + best.fwd * 2 + best.chunk) * m + best.mb] = 1;
            orders[s][counts[s]++] = best;
            free_at[s] = sim_run(S, s, &best, t);
            total++;
        }
        HX_ASSERT(t < 1e7, "folded schedule of p %d m %d does not finish", p, m);
    }
    free(free_at);
    free(done);
}

int hx_pipeline_tasks(int schedule, int p, int s, int m, struct hx_pipe_task *out)
{
    if (schedule != HX_PIPE_FOLD) {
        int *order = malloc(sizeof(int) * 2 * (size_t)m);
        HX_ASSERT(order != NULL, "out of memory");
        plain_order(schedule, p, s, m, order);
        for (int k = 0; k < 2 * m; k++) {
            out[k].fwd = order[k] >= 0;
            out[k].mb = order[k] >= 0 ? order[k] : -1 - order[k];
            out[k].chunk = 0;
        }
        free(order);
        return 2 * m;
    }
    struct sim S;
    HX_ASSERT(sim_init(&S, schedule, p, m, 1.0, 2.0), "pipeline of %d stages, %d micro-batches",
              p, m);
    struct hx_pipe_task **orders = malloc(sizeof *orders * (size_t)p);
    int *counts = malloc(sizeof(int) * (size_t)p);
    HX_ASSERT(orders && counts, "out of memory");
    for (int k = 0; k < p; k++) {
        orders[k] = malloc(sizeof(struct hx_pipe_task) * 4 * (size_t)m);
        HX_ASSERT(orders[k] != NULL, "out of memory");
    }
    fold_orders(&S, orders, counts);
    int n = counts[s];
    memcpy(out, orders[s], sizeof(struct hx_pipe_task) * (size_t)n);
    for (int k = 0; k < p; k++) {
        free(orders[k]);
    }
    free(orders);
    free(counts);
    sim_free(&S);
    return n;
}

int hx_pipeline_in_flight(int schedule, int p, int s, int m)
{
    struct hx_pipe_task *t = malloc(sizeof *t * 4 * (size_t)m);
    HX_ASSERT(t != NULL, "out of memory");
    int n = hx_pipeline_tasks(schedule, p, s, m, t), live = 0, most = 0;
    for (int k = 0; k < n; k++) {
        if (t[k].chunk == 0) {
            live += t[k].fwd ? 1 : -1;
            most = live > most ? live : most;
        }
    }
    free(t);
    return most;
}

double hx_pipeline_makespan(int schedule, int p, int m, double tf, double tb)
{
    struct sim S;
    HX_ASSERT(sim_init(&S, schedule, p, m, tf, tb), "pipeline of %d stages, %d micro-batches",
              p, m);
    struct hx_pipe_task *t = malloc(sizeof *t * 4 * (size_t)m * p);
    int *n = calloc((size_t)p, sizeof(int)), *pos = calloc((size_t)p, sizeof(int));
    double *free_at = calloc((size_t)p, sizeof(double));
    HX_ASSERT(t && n && pos && free_at, "out of memory");
    int left = 0;
    for (int s = 0; s < p; s++) {
        n[s] = hx_pipeline_tasks(schedule, p, s, m, t + (size_t)s * 4 * m);
        left += n[s];
    }
    while (left > 0) { /* each sweep places every task whose inputs are known */
        int moved = 0;
        for (int s = 0; s < p; s++) {
            while (pos[s] < n[s]) {
                const struct hx_pipe_task *k = &t[(size_t)s * 4 * m + pos[s]];
                double r = sim_ready(&S, s, k);
                if (r < 0) {
                    break;
                }
                free_at[s] = sim_run(&S, s, k, r > free_at[s] ? r : free_at[s]);
                pos[s]++, left--, moved = 1;
            }
        }
        HX_ASSERT(moved, "pipeline schedule %d with p %d m %d deadlocks", schedule, p, m);
    }
    double end = 0;
    for (int s = 0; s < p; s++) {
        end = free_at[s] > end ? free_at[s] : end;
    }
    free(t), free(n), free(pos), free(free_at);
    sim_free(&S);
    return end;
}

const char *hx_pipeline_schedule_name(int schedule)
{
    switch (schedule) {
    case HX_PIPE_1F1B: return "1f1b";
    case HX_PIPE_GPIPE: return "gpipe";
    case HX_PIPE_FOLD: return "fold";
    default: return "unknown";
    }
}

int hx_pipeline_schedule_parse(const char *name)
{
    for (int k = HX_PIPE_1F1B; k <= HX_PIPE_FOLD; k++) {
        if (strcmp(name, hx_pipeline_schedule_name(k)) == 0) {
            return k;
        }
    }
    return -1;
}
