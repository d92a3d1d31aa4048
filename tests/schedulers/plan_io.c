/* SPDX-License-Identifier: MIT */
/* tests/schedulers/plan_io.c: the planner's files.  A plan written by hx_plan_write_json
 * reads back identical (orders, steps, times to the last bit, op names), leaves no temporary
 * file, and a plan that is not JSON, names an unknown op, has a step that skips or repeats an
 * op, another schema or a mistyped field is refused; a loaded overlap table gives the costs
 * by key, and the costs refuse a table with more or fewer keys than the lists - each with a
 * message naming it.  (The JSON parser and the table reader's refusals:
 * tests/schedulers/overlap_table.c; a key whose op differs from the graph's and negative
 * times: tests/cli/plan_strands.sh.) */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helix/error.h"
#include "helix/plan.h"
#include "helix/overlap.h"
#include "runtime/json.h"
#include "tap.h"
#include "testutil.h"

static char dir[256];

/* A plan for two 4-op chains-with-branches and a random-looking table. */
static int make_plan(struct hx_plan *p)
{
    struct hx_strand_list F = { 0 }, B = { 0 };
    int n = 4;
    struct hx_strand_list *L[2] = { &F, &B };
    for (int s = 0; s < 2; s++) {
        struct hx_strand_list *l = L[s];
        l->side = s ? 'B' : 'F';
        l->n = n;
        l->node = calloc((size_t)n, sizeof(int));
        l->ndesc = calloc((size_t)n, sizeof(int));
        l->movable = calloc((size_t)n, sizeof(int));
        l->dag.n = n;
        l->dag.off = calloc((size_t)n + 1, sizeof(int));
        l->dag.pred = calloc(4, sizeof(int));
        /* 0 -> 1 -> 3, 0 -> 2: op 2 may move */
        int off[] = { 0, 0, 1, 2, 3 }, pred[] = { 0, 0, 1 };
        memcpy(l->dag.off, off, sizeof off);
        memcpy(l->dag.pred, pred, sizeof pred);
        l->movable[2] = 1;
    }
    struct hx_strand_costs c;
    hx_strand_costs_alloc(&c, n, n);
    for (int k = 0; k < n; k++) {
        c.f_solo[k] = 0.3 + 0.1 * k;
        c.b_solo[k] = 0.7 - 0.1 * k;
    }
    for (int k = 0; k < n * n; k++) {
        c.a_ms[k] = c.f_solo[k / n] * (1.1 + 0.01 * k);
        c.b_ms[k] = c.b_solo[k % n] * (1.3 - 0.01 * k);
        c.corun_ms[k] = fmax(c.a_ms[k], c.b_ms[k]);
    }
    struct hx_plan_options o;
    hx_plan_options_default(&o);
    o.barrier_ms = 0.001;
    int ret = hx_plan_search(NULL, &F, &B, &c, &o, p);
    hx_strand_costs_free(&c);
    hx_strand_list_free(&F), hx_strand_list_free(&B);
    return ret;
}

static int same_plan(const struct hx_plan *a, const struct hx_plan *b)
{
    int ok = a->layer == b->layer && a->nf == b->nf && a->nb == b->nb &&
             a->nsteps == b->nsteps && a->predicted_ms == b->predicted_ms &&
             a->sequential_ms == b->sequential_ms && a->f_orders == b->f_orders &&
             a->b_orders == b->b_orders && a->f_all == b->f_all && a->b_all == b->b_all &&
             a->max_segment == b->max_segment &&
             a->barrier_ms == b->barrier_ms;
    for (int k = 0; ok && k < a->nf; k++) {
        ok = a->f_order[k] == b->f_order[k] && strcmp(a->f_op[k], b->f_op[k]) == 0;
    }
    for (int k = 0; ok && k < a->nb; k++) {
        ok = a->b_order[k] == b->b_order[k] && strcmp(a->b_op[k], b->b_op[k]) == 0;
    }
    for (int k = 0; ok && k < a->nsteps; k++) {
        ok = memcmp(&a->steps[k], &b->steps[k], sizeof a->steps[k]) == 0;
    }
    return ok;
}

static int count_files(const char *d)
{
    DIR *x = opendir(d);
    int n = 0;
    for (struct dirent *e; x != NULL && (e = readdir(x)) != NULL;) {
        n += e->d_name[0] != '.';
    }
    if (x != NULL) {
        closedir(x);
    }
    return n;
}

/* Replace the first @p from in file @p path by @p to. */
static void edit(const char *path, const char *out, const char *from, const char *to)
{
    size_t len;
    char *text = hx_json_slurp(path, &len), *at = text ? strstr(text, from) : NULL;
    FILE *f = fopen(out, "w");
    if (at == NULL || f == NULL) {
        tap_diag("cannot edit %s (%s)", path, from);
    } else {
        fprintf(f, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    }
    if (f != NULL) {
        fclose(f);
    }
    free(text);
}

static void check_plan_json(void)
{
    struct hx_plan p, q;
    char path[300], bad[300], msg[512];
    snprintf(path, sizeof path, "%s/plan.json", dir);
    snprintf(bad, sizeof bad, "%s/bad.json", dir);
    int ok = make_plan(&p) == HX_OK && p.nsteps > 1;
    ok = ok && hx_plan_write_json(&p, path) == HX_OK;
    int files = count_files(dir);
    ok = ok && hx_plan_read_json(path, &q) == HX_OK;
    tap_ok(ok && same_plan(&p, &q) && files == 1,
           "plan JSON round trip: %d steps, orders, op names and times identical; %d file(s) "
           "in the directory", ok ? p.nsteps : -1, files);
    if (ok) {
        hx_plan_free(&q);
    }
    /* each edit of the good file is refused with HX_EFORMAT and a message naming it */
    const struct {
        const char *what, *from, *to, *want;
    } cases[] = {
        { "a step naming an unknown op", "\"steps\": [\n  {\"forward\": [",
          "\"steps\": [\n  {\"forward\": [\"F9\", ", "not a key" },
        { "a step out of order (an op twice)", "\"steps\": [", "\"steps\": [{\"forward\": [], "
          "\"backward\": [\"B0\"], \"predicted_ms\": 0, \"sequential_ms\": 0},",
          "follow the orders" },
        { "another schema", "helix-plan-1", "helix-plan-0", "helix-plan-0" },
        { "a plan that is not JSON", "\"layer\": ", "\"layer\": [", "not valid JSON: line " },
        { "a mistyped field", "\"max_segment\": ", "\"max_segment\": \"S\", \"x\": ",
          "\"max_segment\" (line 3) has type string, expected number" },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        edit(path, bad, cases[k].from, cases[k].to);
        int sv = capture_begin(dir);
        int r = hx_plan_read_json(bad, &q);
        capture_end(sv, msg, sizeof msg);
        tap_ok(r == HX_EFORMAT && strstr(msg, cases[k].want) != NULL, "%s is refused: %s",
               cases[k].what, msg);
    }
    int sv = capture_begin(dir);
    int r = hx_plan_read_json("/nonexistent-dir/plan.json", &q);
    capture_end(sv, msg, sizeof msg);
    tap_ok(r == HX_EIO && strstr(msg, "/nonexistent-dir/plan.json") != NULL,
           "a missing plan: HX_EIO naming it: %s", msg);
    sv = capture_begin(dir);
    r = hx_plan_write_json(&p, "/nonexistent-dir/plan.json");
    capture_end(sv, msg, sizeof msg);
    tap_ok(r == HX_EIO && strstr(msg, "/nonexistent-dir/plan.json") != NULL,
           "an unwritable path: HX_EIO naming it");
    unlink(bad);
    unlink(path);
    if (ok) {
        hx_plan_free(&p);
    }
}

/* A loaded table for lists of 1 forward and 2 backward ops (no graph: op names unchecked). */
static void tiny_table(struct hx_overlap_table *t, int nf, int nb)
{
    hx_overlap_table_init(t, nf, nb);
    for (int i = 0; i < t->nops; i++) {
        t->ops[i].solo_ms = 1 + i;
    }
    for (int k = 0; k < t->npairs; k++) {
        t->pairs[k].a_ms = 1.1 + k;
        t->pairs[k].b_ms = 2.1 + 2 * k;
        t->pairs[k].corun_ms = t->pairs[k].b_ms;
    }
}

static struct hx_strand_list tiny_list(char side, int n)
{
    struct hx_strand_list l = { 0 };
    l.side = side;
    l.n = n;
    l.node = calloc((size_t)n, sizeof(int));
    return l;
}

/* The costs of a table of nf x nb ops for lists of 1 and 2 ops, and the messages printed.
 * @p serial >= 0 marks that pair serialized, with the solo medians as its own times (what
 * profile-overlap wrote before 2026-11-27). */
static int costs(int nf, int nb, int serial, char *msg, size_t len, struct hx_strand_costs *c)
{
    struct hx_overlap_table t;
    struct hx_strand_list F = tiny_list('F', 1), B = tiny_list('B', 2);
    tiny_table(&t, nf, nb);
    if (serial >= 0) {
        struct hx_overlap_pair *p = &t.pairs[serial];
        p->serialized = 1;
        p->a_ms = t.ops[p->a].solo_ms;
        p->b_ms = t.ops[p->b].solo_ms;
    }
    int sv = capture_begin(dir);
    int r = hx_strand_costs_from_table(&t, NULL, &F, &B, c);
    capture_end(sv, msg, len);
    hx_overlap_table_free(&t);
    free(F.node), free(B.node);
    return r;
}

static void check_table(void)
{
    char msg[512];
    struct hx_strand_costs c;
    int r = costs(1, 2, -1, msg, sizeof msg, &c);
    tap_ok(r == HX_OK && c.f_solo[0] == 1 && c.b_solo[1] == 3 && c.a_ms[1] == 2.1 &&
               c.b_ms[0] == 2.1 && c.corun_ms[1] == 4.1,
           "a table: solo and pair times by key");
    if (r == HX_OK) {
        hx_strand_costs_free(&c);
    }
    r = costs(1, 3, -1, msg, sizeof msg, &c);
    tap_ok(r == HX_EFORMAT && strstr(msg, "3 backward ops (B0..B2)") != NULL &&
               strstr(msg, "has 2") != NULL,
           "a table with a key more than the list: HX_EFORMAT naming it: %s", msg);
    r = costs(1, 1, -1, msg, sizeof msg, &c);
    tap_ok(r == HX_EFORMAT && strstr(msg, "1 backward ops (B0..B0)") != NULL,
           "a table with a key fewer than the list: HX_EFORMAT naming it: %s", msg);
    /* F0 (solo 1) and B1 (solo 3) on one channel: back to back, 4 ms, whatever the table's
     * own times say (read as given, they were a perfect overlap: 3 ms) */
    r = costs(1, 2, 1, msg, sizeof msg, &c);
    int f0 = 0, b1 = 1;
    double t = r == HX_OK ? hx_strand_step_time(&c, &f0, 1, &b1, 1) : -1;
    tap_ok(r == HX_OK && t == 4 && c.b_ms[1] == 4,
           "a serialized pair costs the sum of its solos (step %g ms, want 4)", t);
    if (r == HX_OK) {
        hx_strand_costs_free(&c);
    }
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s/hx-plan-io.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR")
                                                                          : "/tmp");
    if (mkdtemp(dir) == NULL) {
        tap_skip_all("cannot make a temporary directory");
    }
    tap_plan(8 + 4);
    check_plan_json();
    check_table();
    rmdir(dir);
    return tap_exit();
}
