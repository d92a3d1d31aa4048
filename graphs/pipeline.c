/* SPDX-License-Identifier: MIT */
/* graphs/pipeline.c: pipeline schedules (include/helix/pipeline.h).
 *   GPipe: F(0..m-1), then B(0..m-1).
 *   1F1B (PipeDream-flush, Megatron's non-interleaved schedule): stage s of p first runs
 *     w = min(p-s-1, m) forwards, then alternates F(w+i), B(i) while forwards remain, then
 *     runs the last w backwards.  At most w+1 micro-batches are in flight.
 *   Folded (DHelix's W, papers.md §2.6), by DHelix's injection rule: wave w starts at hop
 *     2w and carries F(w) (w < m) together with B(w - p) (w >= p); at hop 2w + h its
 *     forward is at virtual stage h and its backward at the mirror 2p-1-h, which is on the
 *     same stage.  So the first p waves are forwards only (warm-up), then every stage runs
 *     one (B, F) pair per hop, a chunk's backward and its mirror's forward, whose inputs
 *     come from one stage and outputs go to one stage (steady), and the last p waves are
 *     backwards only (cool-down).  A stage is at hops s and 2p-1-s of a wave (one even, one
 *     odd; the turn's two at once), so waves 2 hops apart never meet on a stage, and the
 *     hops are a timing every stage's order follows: a witness that the stage orders, the
 *     data dependencies and each channel's first-in-first-out order (micro-batches in order
 *     on both ends) form no cycle.  B(k) runs 2p hops after F(k) started, when its forward
 *     is done; at most 2p micro-batches are in flight.  With two strands each (B, F) pair
 *     becomes an SI block (graphs/schedule.c): F(w) and B(w - p) must be of different
 *     strands, so micro-batches alternate in groups of p (hx_pipeline_strand).
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

/* ---- replaying stage orders over virtual stages (hx_pipeline_makespan) ---- */

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

int hx_pipeline_strand(int schedule, int p, int mb)
{
    return (schedule == HX_PIPE_FOLD ? mb / p : mb) % 2;
}

/* The folded W by waves (top of the file): stage @p s's tasks by hop, a hop's B before its
 * F (with strands the pair becomes an SI block, graphs/schedule.c). */
static int wave_order(int p, int s, int m, struct hx_pipe_task *out)
{
    int first[2], len[2], nch = hx_pipeline_chunks(HX_PIPE_FOLD, p, s, first, len), n = 0;
    for (int hop = 0; hop < 2 * (m + p) + 2 * p; hop++) {
        for (int bwd = 1; bwd >= 0; bwd--) {
            for (int c = 0; c < nch; c++) {
                /* the wave's hop at the chunk's entry: F enters at its first virtual
                 * stage v (hop v), B at its last v (hop 2p-1-v) */
                int h = bwd ? 2 * p - 1 - (first[c] + len[c] - 1) : first[c];
                int w = (hop - h) / 2, mb = bwd ? w - p : w;
                if (hop >= h && (hop - h) % 2 == 0 && mb >= 0 && mb < m) {
                    out[n++] = (struct hx_pipe_task){ !bwd, mb, c };
                }
            }
        }
    }
    return n;
}

int hx_pipeline_tasks(int schedule, int p, int s, int m, struct hx_pipe_task *out)
{
    if (schedule == HX_PIPE_FOLD) {
        return wave_order(p, s, m, out);
    }
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
