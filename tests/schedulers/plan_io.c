/* SPDX-License-Identifier: MIT */
/* tests/schedulers/plan_io.c: the planner's files.  The JSON reader parses nested values and
 * reports line and column of malformed text; a plan written by hx_plan_write_json reads back
 * identical (orders, steps, times to the last bit, op names), leaves no temporary file, and
 * a plan whose steps skip or repeat an op is refused; the overlap-table reader refuses a
 * missing file, bad JSON, a wrong schema, a missing model field and a negative time, and the
 * costs refuse a table lacking a key or a pair - each with a message naming it.  (A key
 * whose op differs from the graph's: tests/cli/plan_strands.sh.) */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helix/error.h"
#include "helix/plan.h"
#include "schedulers/json.h"
#include "tap.h"
#include "testutil.h"

static char dir[256];

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static void check_json(void)
{
    struct hx_pjson v;
    char err[160] = "";
    int ok = hx_pjson_parse(" {\"a\": [1, -2.5e3, true, null, \"x\\n\\u00e9\"], \"b\": {}} ",
                           &v, err, sizeof err) == HX_OK;
    const struct hx_pjson *a = ok ? hx_pjson_get(&v, "a") : NULL;
    ok = ok && a != NULL && a->type == HX_PJSON_ARRAY && a->n == 5 && a->items[1].num == -2500 &&
         a->items[2].type == HX_PJSON_BOOL && a->items[3].type == HX_PJSON_NULL &&
         strcmp(a->items[4].str, "x\n\xc3\xa9") == 0 && hx_pjson_get(&v, "b")->n == 0 &&
         hx_pjson_get(&v, "c") == NULL;
    if (ok || a != NULL) {
        hx_pjson_free(&v);
    }
    tap_ok(ok, "nested objects, arrays, numbers, literals and escapes parse");
    const char *bad[] = { "{\"a\": [1, 2}", "{\"a\": 1,\n \"b\": }", "[1, 2] 3", "\"\\q\"",
                          "{\"a\" 1}", "" };
    const char *where[] = { "column 12", "line 2, column 7", "line 1, column 8", "escape",
                            "expected ':'", "end of the text" };
    int nbad = 0;
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        if (hx_pjson_parse(bad[k], &v, err, sizeof err) != HX_EFORMAT ||
            strstr(err, where[k]) == NULL) {
            nbad++;
            tap_diag("'%s': '%s' (wanted '%s')", bad[k], err, where[k]);
        }
    }
    tap_ok(nbad == 0, "malformed JSON: HX_EFORMAT with line, column and what was expected");
}

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
    char *text = hx_pjson_slurp(path), *at = text ? strstr(text, from) : NULL;
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
    edit(path, bad, "\"steps\": [\n  {\"forward\": [", "\"steps\": [\n  {\"forward\": [\"F9\", ");
    int sv = capture_begin(dir);
    int r = hx_plan_read_json(bad, &q);
    capture_end(sv, msg, sizeof msg);
    tap_ok(r == HX_EFORMAT && strstr(msg, "not a key") != NULL, "a step naming an unknown op "
           "is refused: %s", msg);
    edit(path, bad, "\"steps\": [", "\"steps\": [{\"forward\": [], \"backward\": [\"B0\"], "
         "\"predicted_ms\": 0, \"sequential_ms\": 0},");
    sv = capture_begin(dir);
    r = hx_plan_read_json(bad, &q);
    capture_end(sv, msg, sizeof msg);
    tap_ok(r == HX_EFORMAT && strstr(msg, "follow the orders") != NULL,
           "a step out of order (an op twice) is refused: %s", msg);
    edit(path, bad, "helix-plan-1", "helix-plan-0");
    sv = capture_begin(dir);
    r = hx_plan_read_json(bad, &q);
    capture_end(sv, msg, sizeof msg);
    tap_ok(r == HX_EFORMAT && strstr(msg, "helix-plan-0") != NULL, "another schema is refused: "
           "%s", msg);
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

#define MODEL "\"model\": {\"num_layers\": 1, \"hidden_size\": 8, \"num_heads\": 1, " \
              "\"seq_length\": 4, \"micro_batch_size\": 1, \"vocab_size\": 16, \"tp\": 1, " \
              "\"sequence_parallel\": 0, \"dp\": 1, \"num_micro_batches\": 1}"

/* A table for lists of 1 forward and 2 backward ops (no graph: op names unchecked). */
static const char *good_table =
    "{\"schema\": \"helix-overlap-1\", " MODEL ", \"layer\": 0, \"ops\": ["
    "{\"key\": \"F0\", \"op\": \"matmul\", \"solo_ms\": 1},"
    "{\"key\": \"B0\", \"op\": \"allgather\", \"solo_ms\": 2},"
    "{\"key\": \"B1\", \"op\": \"matmul\", \"solo_ms\": 3}], \"pairs\": ["
    "{\"a\": \"F0\", \"b\": \"B0\", \"corun_ms\": 2.1, \"a_ms\": 1.1, \"b_ms\": 2.1},"
    "{\"a\": \"F0\", \"b\": \"B1\", \"corun_ms\": 4, \"a_ms\": 2, \"b_ms\": 4}]}";

static struct hx_strand_list tiny_list(char side, int n)
{
    struct hx_strand_list l = { 0 };
    l.side = side;
    l.n = n;
    l.node = calloc((size_t)n, sizeof(int));
    return l;
}

/* Loads @p text as a table and its costs for lists of 1 and 2 ops; returns the status and
 * the messages printed. */
static int load(const char *text, char *msg, size_t len, struct hx_strand_costs *c)
{
    char path[300];
    snprintf(path, sizeof path, "%s/table.json", dir);
    write_text(path, text);
    struct hx_strand_profile t;
    struct hx_strand_list F = tiny_list('F', 1), B = tiny_list('B', 2);
    int sv = capture_begin(dir);
    int r = hx_strand_profile_read(path, &t);
    if (r == HX_OK) {
        r = hx_strand_costs_from_profile(&t, NULL, &F, &B, c);
        hx_strand_profile_free(&t);
    }
    capture_end(sv, msg, len);
    free(F.node), free(B.node);
    unlink(path);
    return r;
}

static char *replaced(const char *text, const char *from, const char *to)
{
    static char buf[4096];
    const char *at = strstr(text, from);
    snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return buf;
}

static void check_table(void)
{
    char msg[512];
    struct hx_strand_costs c;
    int r = load(good_table, msg, sizeof msg, &c);
    tap_ok(r == HX_OK && c.f_solo[0] == 1 && c.b_solo[1] == 3 && c.a_ms[1] == 2 &&
               c.b_ms[0] == 2.1 && c.corun_ms[1] == 4,
           "a good table: solo and pair times by key");
    if (r == HX_OK) {
        hx_strand_costs_free(&c);
    }
    struct hx_strand_profile t;
    int sv = capture_begin(dir);
    r = hx_strand_profile_read("/nonexistent/table.json", &t);
    capture_end(sv, msg, sizeof msg);
    tap_ok(r == HX_EIO && strstr(msg, "/nonexistent/table.json") && strstr(msg, "profile-overlap"),
           "missing file: HX_EIO naming it and the fix: %s", msg);
    const struct {
        const char *what, *from, *to, *want;
    } cases[] = {
        { "bad JSON", "\"pairs\": [", "\"pairs\": [,", "not valid JSON" },
        { "wrong schema", "helix-overlap-1", "helix-overlap-9", "\"helix-overlap-9\"" },
        { "missing model field", "\"dp\": 1, ", "", "\"dp\"" },
        { "negative time", "\"solo_ms\": 3", "\"solo_ms\": -3", "-3 ms" },
        { "missing key", "{\"key\": \"B1\", \"op\": \"matmul\", \"solo_ms\": 3}",
          "{\"key\": \"B7\", \"op\": \"matmul\", \"solo_ms\": 3}", "B7" },
        { "missing key", ",{\"key\": \"B1\", \"op\": \"matmul\", \"solo_ms\": 3}", "",
          "lacks key B1" },
        { "missing pair", ",{\"a\": \"F0\", \"b\": \"B1\", \"corun_ms\": 4, \"a_ms\": 2, "
          "\"b_ms\": 4}", "", "lacks pair (F0, B1)" },
        { "pair twice", "\"b\": \"B1\"", "\"b\": \"B0\"", "twice" },
    };
    int n = (int)(sizeof cases / sizeof cases[0]);
    for (int k = 0; k < n; k++) {
        r = load(replaced(good_table, cases[k].from, cases[k].to), msg, sizeof msg, &c);
        tap_ok(r == HX_EFORMAT && strstr(msg, cases[k].want) != NULL, "%s: HX_EFORMAT naming "
               "'%s': %s", cases[k].what, cases[k].want, msg);
        if (r == HX_OK) {
            hx_strand_costs_free(&c);
        }
    }
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s/hx-plan-io.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR")
                                                                          : "/tmp");
    if (mkdtemp(dir) == NULL) {
        tap_skip_all("cannot make a temporary directory");
    }
    tap_plan(2 + 5 + 2 + 8);
    check_json();
    check_plan_json();
    check_table();
    rmdir(dir);
    return tap_exit();
}
