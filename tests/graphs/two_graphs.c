/* SPDX-License-Identifier: MIT */
/* tests/graphs/two_graphs.c: two graphs in flight at once, both with barriers, never share a
 * StarPU tag (graphs/submit.c: each graph has its own range of tag ids).  Each graph is one
 * strand-plan block of matrix products that share no data: segment 0, then segment 1, a
 * barrier between them (hx_graph_barrier_preds), so every task of segment 1 carries a tag
 * dependency on every task of segment 0.  Segment 1's tasks have the higher priority, so
 * without the barrier hx-prio would start them first.  The two graphs cut their nodes into
 * segments at different places (node ids shared, roles not), and both are submitted before
 * either is waited for, twice over (a graph's tags are declared again after its wait).
 * Checked: every product exact (multiples of 1/8: any summation order gives the same bits),
 * and in each graph no task of segment 1 started before every task of segment 0 ended
 * (StarPU's profiling times: the order, never a duration). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/error.h"
#include "helix/graph.h"
#include "helix/runtime.h"
#include "tap.h"

#define NODES 8  /* products per graph */
#define ROWS 32  /* rows of A and C */
#define INNER 192
#define COLS 64

struct bed {
    const char *name;
    int seg0;     /* nodes [0, seg0) are segment 0, the rest segment 1 */
    hx_graph_t g;
    struct hx_tensor *a[NODES], *b, *c[NODES];
    struct hx_task_time t[NODES];
};

static void fill(struct hx_tensor *t, int salt)
{
    float *x = hx_f32(t);
    for (int i = 0; i < t->rows * t->cols; i++) {
        x[i] = (float)((i * 7 + salt * 5) % 13 - 6) / 8.0f;
    }
}

/* One block of NODES products C_p = A_p B, each its own A_p and C_p (B only read). */
static int build(struct bed *s, int salt)
{
    char name[32];
    s->g = hx_graph_create();
    if (s->g == NULL) {
        return HX_ENOMEM;
    }
    s->b = hx_graph_tensor(s->g, "b", HX_F32, HX_ROLE_INPUT, INNER, COLS, 0);
    for (int p = 0; p < NODES; p++) {
        snprintf(name, sizeof name, "a%d", p);
        s->a[p] = hx_graph_tensor(s->g, name, HX_F32, HX_ROLE_INPUT, ROWS, INNER, 0);
        snprintf(name, sizeof name, "c%d", p);
        s->c[p] = hx_graph_tensor(s->g, name, HX_F32, HX_ROLE_ACTIVATION, ROWS, COLS, 0);
        union hx_op_args args = { .mm = { .m = ROWS, .n = COLS, .k = INNER, .alpha = 1.0f,
                                          .beta = 0.0f } };
        struct hx_ref refs[3] = { hx_ref_of(s->a[p], 0, HX_R), hx_ref_of(s->b, 0, HX_R),
                                  hx_ref_of(s->c[p], 0, HX_W) };
        struct hx_node *n = hx_graph_add(s->g, HX_OP_MATMUL, &args, 3, refs,
                                         2.0 * ROWS * COLS * INNER, 0);
        n->block = 0;
        n->segment = p < s->seg0 ? 0 : 1;
        n->priority = p < s->seg0 ? 0 : 10;
    }
    int ret = hx_graph_realize(s->g);
    if (ret != HX_OK) {
        return ret;
    }
    fill(s->b, salt);
    for (int p = 0; p < NODES; p++) {
        fill(s->a[p], salt + p + 1);
    }
    return HX_OK;
}

/* Largest |C_p - A_p B| over every product, against a plain triple loop. */
static double max_error(struct bed *s)
{
    double worst = 0;
    const float *b = hx_f32(s->b);
    for (int p = 0; p < NODES; p++) {
        if (hx_tensor_begin_access(s->c[p], 'r') != HX_OK) {
            return INFINITY;
        }
        const float *a = hx_f32(s->a[p]), *c = hx_f32(s->c[p]);
        for (int i = 0; i < ROWS; i++) {
            for (int j = 0; j < COLS; j++) {
                double ref = 0;
                for (int k = 0; k < INNER; k++) {
                    ref += (double)a[i * INNER + k] * b[k * COLS + j];
                }
                worst = fmax(worst, fabs(c[i * COLS + j] - ref));
            }
        }
        hx_tensor_end_access(s->c[p]);
    }
    return worst;
}

/* Tasks of segment 1 that started before some task of segment 0 ended (0: the barrier held) */
static int barrier_violations(const struct bed *s)
{
    int bad = 0;
    for (int i = s->seg0; i < NODES; i++) {
        for (int k = 0; k < s->seg0; k++) {
            bad += s->t[i].start_us < s->t[k].end_us;
        }
    }
    return bad;
}

int main(void)
{
    struct hx_runtime_opts ro;
    hx_runtime_opts_init(&ro);
    ro.workers = 2;
    ro.sched = "hx-prio";
    ro.profiling = 1;
    if (hx_runtime_init(&ro) != HX_OK) {
        tap_skip_all("StarPU did not start");
    }
    tap_plan(6);
    /* the same node ids, cut at different places: g1's node 3 is in segment 1, g2's in 0 */
    struct bed s[2] = { { .name = "g1", .seg0 = 3 }, { .name = "g2", .seg0 = 5 } };
    int ret = build(&s[0], 1);
    ret = ret == HX_OK ? build(&s[1], 2) : ret;
    tap_ok(ret == HX_OK, "two graphs of %d products built and realized", NODES);

    for (int round = 1; round <= 2 && ret == HX_OK; round++) {
        /* both in flight: g2 submitted while g1's tasks are queued or running */
        int r1 = hx_graph_submit_timed(s[0].g, 0, -1, s[0].t);
        int r2 = hx_graph_submit_timed(s[1].g, 0, -1, s[1].t);
        int w1 = hx_graph_wait(s[0].g), w2 = hx_graph_wait(s[1].g);
        double e1 = max_error(&s[0]), e2 = max_error(&s[1]);
        tap_ok(r1 == HX_OK && r2 == HX_OK && w1 == HX_OK && w2 == HX_OK && e1 == 0 && e2 == 0,
               "round %d: both graphs ran, every product exact (max error %g, %g)", round, e1,
               e2);
        int v1 = barrier_violations(&s[0]), v2 = barrier_violations(&s[1]);
        tap_ok(v1 == 0 && v2 == 0,
               "round %d: each graph's barrier held: segment 1 started after all of segment 0 "
               "(violations: g1 %d of %d pairs, g2 %d of %d)", round, v1,
               s[0].seg0 * (NODES - s[0].seg0), v2, s[1].seg0 * (NODES - s[1].seg0));
    }
    for (int k = 0; k < 2; k++) {
        hx_graph_destroy(s[k].g);
    }
    hx_runtime_shutdown();
    tap_ok(ret == HX_OK, "runtime stopped with both graphs done");
    return tap_exit();
}
