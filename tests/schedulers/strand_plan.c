/* SPDX-License-Identifier: MIT */
/* tests/schedulers/strand_plan.c: the pairing planner (helix/plan.h) against independent
 * answers, with no timing:
 *  - the two-lane step simulation on hand-computed cases, one with own times below solo
 *    (the profile's noise), which must not run an op faster than alone;
 *  - on small random DAGs (3-6 ops a side, seeded) with random overlap tables, the search's
 *    makespan equals a brute force over every pair of topological orders and every way to
 *    cut both into steps (co-run segments bounded as the DP bounds them), and the candidate
 *    orders are exactly the linear extensions (those keeping unmovable ops in place);
 *  - tables with no overlap (co-run = a + b, in both readings of the own times) give the
 *    sequential time; perfect overlap reaches max(sum F, sum B) (+ one barrier);
 *  - on a tiny GPT's real lists (tp 2 + sp): list DAGs hold every graph edge between list
 *    nodes, every candidate order is topological, a capped enumeration is repeatable, the
 *    plan covers each op once, and its makespan lies between max(F, B) and sequential. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "helix/error.h"
#include "helix/gpt.h"
#include "helix/plan.h"
#include "tap.h"

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;

static double urand(void) /* xorshift64*, [0, 1) */
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static int close_to(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fmax(1.0, fabs(b));
}

/* ---- a hand-made list: a random DAG over n ops (edges a -> b with a < b) ---- */

static void make_list(struct hx_strand_list *s, char side, int n, double density, int nmov)
{
    memset(s, 0, sizeof *s);
    s->side = side;
    s->n = n;
    s->node = calloc((size_t)n, sizeof(int));
    s->ndesc = calloc((size_t)n, sizeof(int));
    s->movable = calloc((size_t)n, sizeof(int));
    s->dag.n = n;
    s->dag.off = calloc((size_t)n + 1, sizeof(int));
    s->dag.pred = calloc((size_t)n * n + 1, sizeof(int));
    int e = 0;
    for (int b = 0; b < n; b++) {
        s->node[b] = b;
        s->dag.off[b] = e;
        for (int a = 0; a < b; a++) {
            if (urand() < density) {
                s->dag.pred[e++] = a;
            }
        }
    }
    s->dag.off[n] = e;
    for (int k = 0; k < n; k++) {
        s->movable[k] = k >= n - nmov; /* the last nmov ops may move (nmov = n: all) */
    }
}

static void random_costs(struct hx_strand_costs *c, int nf, int nb)
{
    hx_strand_costs_alloc(c, nf, nb);
    for (int k = 0; k < nf; k++) {
        c->f_solo[k] = 0.1 + 2 * urand();
    }
    for (int k = 0; k < nb; k++) {
        c->b_solo[k] = 0.1 + 2 * urand();
    }
    for (int x = 0; x < nf; x++) {
        for (int y = 0; y < nb; y++) {
            size_t at = (size_t)x * nb + y;
            double sx = c->f_solo[x], sy = c->b_solo[y], u = urand();
            if (u < 0.2) { /* ran one after the other */
                c->a_ms[at] = sx, c->b_ms[at] = sx + sy;
            } else { /* each slowed down by up to 2.5x */
                c->a_ms[at] = sx * (1 + 1.5 * urand());
                c->b_ms[at] = sy * (1 + 1.5 * urand());
            }
            c->corun_ms[at] = fmax(c->a_ms[at], c->b_ms[at]);
        }
    }
}

/* ---- brute force ---- */

/* Every linear extension in which unmovable ops keep their relative order. */
struct extensions {
    int n, count, cap;
    int *orders;
};

static void extend(const struct hx_strand_list *s, int *cur, int depth, int *used,
                   struct extensions *x)
{
    int n = s->n;
    if (depth == n) {
        if (x->count < x->cap) {
            memcpy(x->orders + (size_t)x->count * n, cur, sizeof(int) * (size_t)n);
        }
        x->count++;
        return;
    }
    for (int v = 0; v < n; v++) {
        int ok = !used[v];
        for (int e = s->dag.off[v]; e < s->dag.off[v + 1] && ok; e++) {
            ok = used[s->dag.pred[e]];
        }
        for (int u = 0; u < v && ok && !s->movable[v]; u++) {
            ok = s->movable[u] || used[u]; /* unmovable ops in submission order */
        }
        if (ok) {
            used[v] = 1;
            cur[depth] = v;
            extend(s, cur, depth + 1, used, x);
            used[v] = 0;
        }
    }
}

static void all_extensions(const struct hx_strand_list *s, struct extensions *x)
{
    int cur[16] = { 0 }, used[16] = { 0 };
    x->n = s->n, x->count = 0, x->cap = 5000;
    x->orders = malloc(sizeof(int) * (size_t)x->cap * (size_t)s->n);
    extend(s, cur, 0, used, x);
}

/* Best time over every way to cut F[i..) and B[j..) into steps. */
static double best_cut(const struct hx_strand_costs *c, const int *F, int nf, const int *B,
                       int nb, int i, int j, int S, double barrier)
{
    if (i == nf && j == nb) {
        return 0;
    }
    double best = INFINITY;
    for (int a = 0; a <= nf - i; a++) {
        for (int b = 0; b <= nb - j; b++) {
            if ((a == 0 && b == 0) || (a > 0 && b > 0 && (a > S || b > S))) {
                continue;
            }
            double t = hx_strand_step_time(c, F + i, a, B + j, b) + (a && b ? barrier : 0);
            t += best_cut(c, F, nf, B, nb, i + a, j + b, S, barrier);
            best = t < best ? t : best;
        }
    }
    return best;
}

static void free_list(struct hx_strand_list *s)
{
    hx_strand_list_free(s);
}

/* ---- the checks ---- */

static void check_hand_cases(void)
{
    struct hx_strand_costs c;
    hx_strand_costs_alloc(&c, 2, 1);
    /* x (2 ms) with y (3 ms): co-run own times 2.5 and 4 -> x ends at 2.5 having run at 0.8,
     * y ran at (3 - 1.5) / 2.5 = 0.6, so 1.5 ms of y are left, alone: 4.0 = max(2.5, 4) */
    c.f_solo[0] = 2, c.b_solo[0] = 3, c.a_ms[0] = 2.5, c.b_ms[0] = 4;
    int f0[] = { 0 }, b0[] = { 0 };
    double t = hx_strand_step_time(&c, f0, 1, b0, 1);
    tap_ok(close_to(t, 4.0), "one pair: simulated %.6f ms = the longer own time 4", t);
    /* x1 (1), x2 (1) against y (4): (x1,y) own 2 and 5 -> rates 0.5 and 0.5, x1 ends at 2
     * with 3 of y left; (x2,y) own 1 and 4 (perfect) -> rates 1 and 1, x2 ends at 3 with 2
     * of y left; y alone: 5 */
    c.f_solo[1] = 1, c.f_solo[0] = 1, c.b_solo[0] = 4;
    c.a_ms[0] = 2, c.b_ms[0] = 5, c.a_ms[1] = 1, c.b_ms[1] = 4;
    int f01[] = { 0, 1 };
    t = hx_strand_step_time(&c, f01, 2, b0, 1);
    tap_ok(close_to(t, 5.0), "two forward ops against one: %.6f ms (by hand 5)", t);
    t = hx_strand_step_time(&c, f01, 2, b0, 0);
    tap_ok(close_to(t, 2.0), "one side empty: the other's solo sum %.6f (2)", t);
    /* noise: x (1 ms) with a 1 us y measured own 0.8 and 0.001, below x's solo median.  The
     * uncapped rate of x while y runs, (1 - 0.799) / 0.001 = 201, "did" 0.2 ms of x in 1 us
     * and ended the pair at 0.8; capped at solo speed, x still needs its 1 ms */
    c.f_solo[0] = 1, c.b_solo[0] = 0.001, c.a_ms[0] = 0.8, c.b_ms[0] = 0.001;
    t = hx_strand_step_time(&c, f0, 1, b0, 1);
    tap_ok(close_to(t, 1.0), "own times below solo (noise) never beat solo speed: %.6f ms (1)",
           t);
    hx_strand_costs_free(&c);
}

static void check_brute_force(void)
{
    int cases = 40, bad = 0, bad_orders = 0, bad_bounded = 0;
    double worst = 0;
    for (int k = 0; k < cases; k++) {
        int nf = 3 + (int)(urand() * 3), nb = 3 + (int)(urand() * 3);
        if (k == cases - 1) {
            nf = 6, nb = 6; /* one larger pair, nearly chains */
        }
        struct hx_strand_list F, B;
        make_list(&F, 'F', nf, k == cases - 1 ? 0.9 : 0.5, k % 3 == 0 ? nf / 2 : nf);
        make_list(&B, 'B', nb, k == cases - 1 ? 0.8 : 0.4, k % 3 == 0 ? nb / 2 : nb);
        struct hx_strand_costs c;
        random_costs(&c, nf, nb);
        double barrier = k % 4 == 1 ? 0.05 : 0.0;
        struct extensions xf, xb;
        all_extensions(&F, &xf);
        all_extensions(&B, &xb);
        double brute = INFINITY, brute2 = INFINITY;
        for (int a = 0; a < xf.count; a++) {
            for (int b = 0; b < xb.count; b++) {
                const int *fo = xf.orders + (size_t)a * nf, *bo = xb.orders + (size_t)b * nb;
                brute = fmin(brute, best_cut(&c, fo, nf, bo, nb, 0, 0, 1000, barrier));
                brute2 = fmin(brute2, best_cut(&c, fo, nf, bo, nb, 0, 0, 2, barrier));
            }
        }
        struct hx_plan_options o = { .max_orders = 100000, .max_segment = 1000,
                                     .barrier_ms = barrier };
        struct hx_plan p, p2;
        int ok = hx_plan_search(NULL, &F, &B, &c, &o, &p) == HX_OK;
        o.max_segment = 2;
        ok = ok && hx_plan_search(NULL, &F, &B, &c, &o, &p2) == HX_OK;
        if (!ok || !close_to(p.predicted_ms, brute)) {
            bad++;
            tap_diag("case %d (%d x %d ops): search %.9f, brute force %.9f", k, nf, nb,
                     ok ? p.predicted_ms : NAN, brute);
        }
        if (!ok || !close_to(p2.predicted_ms, brute2)) {
            bad_bounded++;
            tap_diag("case %d, segments <= 2: search %.9f, brute force %.9f", k,
                     ok ? p2.predicted_ms : NAN, brute2);
        }
        if (!ok || p.f_orders != xf.count || p.b_orders != xb.count || !p.f_all || !p.b_all) {
            bad_orders++;
            tap_diag("case %d: %d x %d candidate orders, %d x %d linear extensions", k,
                     ok ? p.f_orders : -1, ok ? p.b_orders : -1, xf.count, xb.count);
        }
        worst = fmax(worst, ok ? 1 - p.predicted_ms / p.sequential_ms : 0);
        if (ok) {
            hx_plan_free(&p);
            hx_plan_free(&p2);
        }
        free(xf.orders), free(xb.orders);
        hx_strand_costs_free(&c);
        free_list(&F), free_list(&B);
    }
    tap_ok(bad == 0, "DP over candidate orders = brute force over all orders and cuts (%d "
           "random cases, 3-6 ops a side, largest saving %.1f%%)", cases, 100 * worst);
    tap_ok(bad_bounded == 0, "with co-run segments of at most 2 ops: DP = brute force under "
           "the same bound");
    tap_ok(bad_orders == 0, "candidate orders = the linear extensions keeping unmovable ops in "
           "submission order");
}

/* Fills pair times from solo times: mode 0 serialized (a first), 1 time-shared, 2 perfect. */
static void shaped_costs(struct hx_strand_costs *c, int mode)
{
    for (int x = 0; x < c->nf; x++) {
        for (int y = 0; y < c->nb; y++) {
            size_t at = (size_t)x * c->nb + y;
            double sx = c->f_solo[x], sy = c->b_solo[y];
            c->a_ms[at] = mode == 0 ? sx : mode == 1 ? sx + sy : sx;
            c->b_ms[at] = mode == 2 ? sy : sx + sy;
            c->corun_ms[at] = mode == 2 ? fmax(sx, sy) : sx + sy;
        }
    }
}

static int corun_steps(const struct hx_plan *p)
{
    int n = 0;
    for (int k = 0; k < p->nsteps; k++) {
        n += p->steps[k].f1 > p->steps[k].f0 && p->steps[k].b1 > p->steps[k].b0;
    }
    return n;
}

static void check_bounds(void)
{
    int bad_zero = 0, bad_perfect = 0, bad_barrier = 0;
    for (int k = 0; k < 20; k++) {
        int nf = 3 + k % 4, nb = 4 + k % 3;
        struct hx_strand_list F, B;
        make_list(&F, 'F', nf, 0.5, nf);
        make_list(&B, 'B', nb, 0.4, nb);
        struct hx_strand_costs c;
        random_costs(&c, nf, nb);
        double sf = 0, sb = 0;
        for (int x = 0; x < nf; x++) {
            sf += c.f_solo[x];
        }
        for (int y = 0; y < nb; y++) {
            sb += c.b_solo[y];
        }
        struct hx_plan_options o;
        hx_plan_options_default(&o);
        o.max_segment = 16;
        struct hx_plan p;
        for (int mode = 0; mode < 2; mode++) { /* OEF = 0, both readings of own times */
            shaped_costs(&c, mode);
            if (hx_plan_search(NULL, &F, &B, &c, &o, &p) != HX_OK ||
                !close_to(p.predicted_ms, sf + sb) || !close_to(p.sequential_ms, sf + sb)) {
                bad_zero++;
                tap_diag("no overlap, case %d mode %d: %.9f against sequential %.9f", k, mode,
                         p.predicted_ms, sf + sb);
            }
            hx_plan_free(&p);
        }
        shaped_costs(&c, 2);
        if (hx_plan_search(NULL, &F, &B, &c, &o, &p) != HX_OK ||
            !close_to(p.predicted_ms, fmax(sf, sb)) || corun_steps(&p) != 1) {
            bad_perfect++;
            tap_diag("perfect overlap, case %d: %.9f in %d co-run steps, max(F, B) = %.9f", k,
                     p.predicted_ms, corun_steps(&p), fmax(sf, sb));
        }
        hx_plan_free(&p);
        o.barrier_ms = 0.01; /* less than any op: one co-run step still pays */
        if (hx_plan_search(NULL, &F, &B, &c, &o, &p) != HX_OK ||
            !close_to(p.predicted_ms, fmax(sf, sb) + 0.01)) {
            bad_barrier++;
        }
        hx_plan_free(&p);
        hx_strand_costs_free(&c);
        free_list(&F), free_list(&B);
    }
    tap_ok(bad_zero == 0, "no overlap (co-run = a + b): predicted = sequential, 20 cases");
    tap_ok(bad_perfect == 0, "perfect overlap: max(sum F, sum B) with one co-run step, 20 "
           "cases");
    tap_ok(bad_barrier == 0, "perfect overlap with a barrier of 10 us: max + one barrier");

    /* equal ops, perfect overlap, segments bounded by 2: 6 + 6 unit ops in 3 steps of 2 */
    struct hx_strand_list F, B;
    make_list(&F, 'F', 6, 1.1, 0); /* density > 1: complete DAG, a chain */
    make_list(&B, 'B', 6, 1.1, 0);
    struct hx_strand_costs c;
    hx_strand_costs_alloc(&c, 6, 6);
    for (int k = 0; k < 6; k++) {
        c.f_solo[k] = c.b_solo[k] = 1;
    }
    shaped_costs(&c, 2);
    struct hx_plan_options o = { .max_orders = 4, .max_segment = 2, .barrier_ms = 0 };
    struct hx_plan p;
    int ok = hx_plan_search(NULL, &F, &B, &c, &o, &p) == HX_OK;
    tap_ok(ok && close_to(p.predicted_ms, 6) && p.nsteps == 3,
           "6 + 6 unit ops, perfect overlap, segments <= 2: %g ms in %d steps (by hand 6 in 3)",
           ok ? p.predicted_ms : NAN, ok ? p.nsteps : -1);
    if (ok) {
        hx_plan_free(&p);
    }
    hx_strand_costs_free(&c);
    free_list(&F), free_list(&B);
}

/* A tiny GPT under tp 2 + sequence parallel, built for rank 0 without MPI. */
static hx_gpt_t tiny_gpt(void)
{
    struct hx_gpt_config c = { .vocab_size = 256, .num_layers = 2, .num_heads = 4,
                               .hidden_size = 64, .seq_len = 32, .micro_batch_size = 2,
                               .num_micro_batches = 2 };
    struct hx_optim_config o;
    hx_optim_config_default(&o, 1);
    struct hx_mesh_request q = { .world_size = 2, .world_rank = 0, .tp = 2,
                                 .sequence_parallel = 1 };
    static struct hx_mesh mesh;
    struct hx_parallel_config par = { .mesh = &mesh };
    hx_gpt_t m = NULL;
    if (hx_mesh_init(&mesh, &q, 0) != HX_OK || hx_gpt_build_parallel(&m, &c, &o, &par) != HX_OK) {
        return NULL;
    }
    return m;
}

static int dag_holds_graph_edges(const struct hx_graph *g, const struct hx_deps *d,
                                 const struct hx_strand_list *s)
{
    for (int k = 0; k < s->n; k++) {
        int v = s->node[k];
        for (int e = d->off[v]; e < d->off[v + 1]; e++) {
            for (int q = 0; q < k; q++) {
                if (s->node[q] != d->pred[e]) {
                    continue;
                }
                int found = 0;
                for (int f = s->dag.off[k]; f < s->dag.off[k + 1]; f++) {
                    found |= s->dag.pred[f] == q;
                }
                if (!found) {
                    return 0;
                }
            }
        }
    }
    (void)g;
    return 1;
}

static int all_topological(const struct hx_strand_list *s, int max_orders)
{
    struct hx_order_set o;
    if (hx_strand_orders(s, max_orders, &o) != HX_OK) {
        return 0;
    }
    int ok = o.n >= 1;
    for (int k = 0; k < s->n && ok; k++) {
        ok = o.orders[k] == k; /* the first is the submission order */
    }
    for (int q = 0; q < o.n && ok; q++) {
        ok = hx_deps_is_topological(&s->dag, o.orders + (size_t)q * s->n);
    }
    hx_order_set_free(&o);
    return ok;
}

/* Under a cap: exactly max_orders distinct orders, the same on a second call, marked cut. */
static int capped_and_repeatable(const struct hx_strand_list *s, int cap)
{
    struct hx_order_set a, b;
    if (hx_strand_orders(s, cap, &a) != HX_OK || hx_strand_orders(s, cap, &b) != HX_OK) {
        return 0;
    }
    size_t bytes = sizeof(int) * (size_t)a.n * (size_t)s->n;
    int ok = a.n == cap && b.n == cap && !a.complete && memcmp(a.orders, b.orders, bytes) == 0;
    for (int x = 0; x < a.n && ok; x++) {
        for (int y = 0; y < x && ok; y++) {
            ok = memcmp(a.orders + (size_t)x * s->n, a.orders + (size_t)y * s->n,
                        sizeof(int) * (size_t)s->n) != 0;
        }
    }
    hx_order_set_free(&a), hx_order_set_free(&b);
    return ok;
}

static int covers_once(const struct hx_plan *p)
{
    int fa = 0, ba = 0;
    for (int k = 0; k < p->nsteps; k++) {
        const struct hx_plan_step *s = &p->steps[k];
        if (s->f0 != fa || s->b0 != ba || (s->f1 == s->f0 && s->b1 == s->b0)) {
            return 0;
        }
        fa = s->f1, ba = s->b1;
    }
    return fa == p->nf && ba == p->nb;
}

static void check_gpt_lists(void)
{
    hx_gpt_t m = tiny_gpt();
    if (m == NULL) {
        tap_ok(0, "tiny GPT under tp 2 + sp builds");
        for (int k = 0; k < 5; k++) {
            tap_skip("no graph");
        }
        return;
    }
    hx_graph_t g = hx_gpt_graph(m);
    struct hx_deps d;
    hx_graph_deps(g, &d);
    struct hx_strand_list F, B;
    int ok = hx_strand_list_build(g, &d, 'F', 1, 0, 4, &F) == HX_OK &&
             hx_strand_list_build(g, &d, 'B', 1, 0, 4, &B) == HX_OK;
    int nmov = 0;
    for (int k = 0; ok && k < B.n; k++) {
        nmov += B.movable[k];
    }
    tap_ok(ok && F.n >= 14 && B.n >= 18 && nmov > 0 && dag_holds_graph_edges(g, &d, &F) &&
               dag_holds_graph_edges(g, &d, &B),
           "layer 1: %d forward and %d backward ops (%d movable), every graph edge between "
           "list nodes is in the list DAGs", F.n, B.n, nmov);
    tap_ok(ok && all_topological(&F, 64) && all_topological(&B, 64),
           "every candidate order (64 per side) is topological, the first is submission order");
    tap_ok(ok && capped_and_repeatable(&B, 16), "16 backward orders under a cap of 16: distinct, "
           "the same on every call, marked as cut");
    /* deterministic times: GEMM-like ops by flops, collectives by bytes; collectives overlap
     * compute well, compute overlaps compute poorly */
    struct hx_strand_costs c;
    hx_strand_costs_alloc(&c, F.n, B.n);
    for (int k = 0; ok && k < F.n; k++) {
        const struct hx_node *n = &g->nodes[F.node[k]];
        c.f_solo[k] = 0.01 + (n->kind == HX_KIND_COMM ? n->bytes / 2e5 : n->flops / 1e8);
    }
    for (int k = 0; ok && k < B.n; k++) {
        const struct hx_node *n = &g->nodes[B.node[k]];
        c.b_solo[k] = 0.01 + (n->kind == HX_KIND_COMM ? n->bytes / 2e5 : n->flops / 1e8);
    }
    for (int x = 0; ok && x < F.n; x++) {
        for (int y = 0; y < B.n; y++) {
            size_t at = (size_t)x * B.n + y;
            int mixed = g->nodes[F.node[x]].kind != g->nodes[B.node[y]].kind;
            double sx = c.f_solo[x], sy = c.b_solo[y];
            c.a_ms[at] = mixed ? 1.1 * sx : sx + 0.8 * sy;
            c.b_ms[at] = mixed ? 1.1 * sy : sy + 0.8 * sx;
            c.corun_ms[at] = fmax(c.a_ms[at], c.b_ms[at]);
        }
    }
    struct hx_plan_options o;
    hx_plan_options_default(&o);
    o.max_orders = 8;
    struct hx_plan p;
    int planned = ok && hx_plan_search(g, &F, &B, &c, &o, &p) == HX_OK;
    tap_ok(planned && covers_once(&p) && hx_deps_is_topological(&F.dag, p.f_order) &&
               hx_deps_is_topological(&B.dag, p.b_order),
           "the plan's %d steps cover each op once, in topological orders", planned ? p.nsteps
                                                                                 : -1);
    /* every rate is below 1 in this table, so neither lane beats its solo sum */
    double sf = 0, sb = 0;
    for (int k = 0; k < F.n; k++) {
        sf += c.f_solo[k];
    }
    for (int k = 0; k < B.n; k++) {
        sb += c.b_solo[k];
    }
    tap_ok(planned && p.predicted_ms < p.sequential_ms && p.predicted_ms >= fmax(sf, sb),
           "max(F %.4f, B %.4f) <= predicted %.4f ms < sequential %.4f ms when collectives "
           "overlap compute", sf, sb, planned ? p.predicted_ms : NAN,
           planned ? p.sequential_ms : NAN);
    int same = planned;
    for (int k = 0; planned && k < F.n; k++) {
        same &= strcmp(p.f_op[k], hx_op_name(g->nodes[F.node[k]].op)) == 0;
    }
    for (int k = 0; planned && k < B.n; k++) {
        same &= strcmp(p.b_op[k], hx_op_name(g->nodes[B.node[k]].op)) == 0;
    }
    tap_ok(same, "op names come from the graph (F0 is %s, B0 %s)", planned ? p.f_op[0] : "?",
           planned ? p.b_op[0] : "?");
    if (planned) {
        hx_plan_free(&p);
    }
    hx_strand_costs_free(&c);
    hx_strand_list_free(&F), hx_strand_list_free(&B);
    hx_deps_free(&d);
    hx_gpt_destroy(m);
}

int main(void)
{
    tap_plan(4 + 3 + 4 + 6);
    check_hand_cases();
    check_brute_force();
    check_bounds();
    check_gpt_lists();
    return tap_exit();
}
