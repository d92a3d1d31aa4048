/* SPDX-License-Identifier: MIT */
/* graphs/pipeline.c: pipeline schedules (include/helix/pipeline.h).
 *   GPipe: F(0..m-1), then B(0..m-1).
 *   1F1B (PipeDream-flush, Megatron's non-interleaved schedule): stage s of p first runs
 *     w = min(p-s-1, m) forwards, then alternates F(w+i), B(i) while forwards remain, then
 *     runs the last w backwards.  At most w+1 micro-batches are in flight.
 * Test: tests/graphs/pipeline.c (orders, in-flight counts, bubble (p-1)/(m+p-1)), and the
 * parity tests tests/mpi/parity_pp.sh. */
#include <stdlib.h>
#include <string.h>

#include "helix/error.h"
#include "helix/pipeline.h"

void hx_pipeline_order(int schedule, int p, int s, int m, int *order)
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

int hx_pipeline_in_flight(int schedule, int p, int s, int m)
{
    int *order = malloc(sizeof(int) * 2 * (size_t)m);
    HX_ASSERT(order != NULL, "out of memory");
    hx_pipeline_order(schedule, p, s, m, order);
    int live = 0, most = 0;
    for (int k = 0; k < 2 * m; k++) {
        live += order[k] >= 0 ? 1 : -1;
        most = live > most ? live : most;
    }
    free(order);
    return most;
}

double hx_pipeline_makespan(int schedule, int p, int m, double tf, double tb)
{
    /* done_f[s][j], done_b[s][j]: finish times; each stage walks its order, a task starting
     * when the stage is free and its input has arrived.  Stages are visited round-robin until
     * every order is consumed (the orders are deadlock-free, so each sweep makes progress). */
    double *df = calloc((size_t)p * m, sizeof(double)), *db = calloc((size_t)p * m, sizeof(double));
    double *free_at = calloc((size_t)p, sizeof(double));
    int *order = malloc(sizeof(int) * 2 * (size_t)m * p), *pos = calloc((size_t)p, sizeof(int));
    char *has_f = calloc((size_t)p * m, 1), *has_b = calloc((size_t)p * m, 1);
    HX_ASSERT(df && db && free_at && order && pos && has_f && has_b, "out of memory");
    for (int s = 0; s < p; s++) {
        hx_pipeline_order(schedule, p, s, m, order + (size_t)s * 2 * m);
    }
    int left = 2 * m * p;
    while (left > 0) {
        int moved = 0;
        for (int s = 0; s < p; s++) {
            while (pos[s] < 2 * m) {
                int e = order[(size_t)s * 2 * m + pos[s]];
                int j = e >= 0 ? e : -1 - e;
                double ready;
                if (e >= 0) {
                    if (s > 0 && !has_f[(s - 1) * m + j]) {
                        break;
                    }
                    ready = s > 0 ? df[(s - 1) * m + j] : 0.0;
                } else {
                    if ((s + 1 < p && !has_b[(s + 1) * m + j]) || !has_f[s * m + j]) {
                        break;
                    }
                    ready = s + 1 < p ? db[(s + 1) * m + j] : df[s * m + j];
                }
                double start = ready > free_at[s] ? ready : free_at[s];
                free_at[s] = start + (e >= 0 ? tf : tb);
                if (e >= 0) {
                    df[s * m + j] = free_at[s], has_f[s * m + j] = 1;
                } else {
                    db[s * m + j] = free_at[s], has_b[s * m + j] = 1;
                }
                pos[s]++, left--, moved = 1;
            }
        }
        HX_ASSERT(moved, "pipeline schedule %d with p %d m %d deadlocks", schedule, p, m);
    }
    double end = 0;
    for (int s = 0; s < p; s++) {
        end = free_at[s] > end ? free_at[s] : end;
    }
    free(df), free(db), free(free_at), free(order), free(pos), free(has_f), free(has_b);
    return end;
}

const char *hx_pipeline_schedule_name(int schedule)
{
    return schedule == HX_PIPE_GPIPE ? "gpipe" : schedule == HX_PIPE_1F1B ? "1f1b" : "unknown";
}

int hx_pipeline_schedule_parse(const char *name)
{
    if (strcmp(name, "1f1b") == 0) {
        return HX_PIPE_1F1B;
    }
    return strcmp(name, "gpipe") == 0 ? HX_PIPE_GPIPE : -1;
}
