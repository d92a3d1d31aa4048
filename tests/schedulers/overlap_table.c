/* SPDX-License-Identifier: MIT */
/* tests/schedulers/overlap_table.c: the overlap table (include/helix/overlap.h) survives a
 * write and a load bit for bit, with and without classes, the lookups find every op and
 * pair, and each kind of bad input is refused with HX_EIO or HX_EFORMAT and a message that
 * names the file and what is wrong: missing file, bad JSON, wrong schema, missing or
 * mistyped field, misordered keys, a class on the other side or later, missing, repeated or
 * swapped pairs.  No StarPU needed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helix/error.h"
#include "helix/graph.h"
#include "helix/overlap.h"
#include "tap.h"

static char dir[] = "/tmp/hx-overlap-XXXXXX";

/* A 2 x 3 table with recognisable values. */
static void fill(struct hx_overlap_table *t)
{
    hx_overlap_table_init(t, 2, 3);
    t->model = (struct hx_overlap_model){ 4, 128, 4, 128, 8, 256, 2, 1, 1, 1, /* a Llama layer: */
                                          1, 1, 352, 1, 500000.0f, 2, 1, 1 };
    t->layer = 2, t->workers = 2, t->ranks = 2, t->repeats = 5;
    snprintf(t->host, sizeof t->host, "host \"quoted\"\\");
    snprintf(t->date, sizeof t->date, "2026-01-01T00:00:00Z");
    for (int i = 0; i < t->nops; i++) {
        struct hx_overlap_op *o = &t->ops[i];
        snprintf(o->op, sizeof o->op, i % 2 ? "matmul" : "allreduce");
        o->comm = i % 2 == 0;
        o->lane = o->comm ? HX_LANE_COMM_INTRA : HX_LANE_COMPUTE;
        o->flops = 1e9 / (i + 3);
        o->bytes = 12345.0 * i;
        o->solo_ms = 0.1 + i / 7.0;
        o->solo_ms_min = 0.05 + i / 9.0;
    }
    for (int k = 0; k < t->npairs; k++) {
        struct hx_overlap_pair *p = &t->pairs[k];
        double a = t->ops[p->a].solo_ms, b = t->ops[p->b].solo_ms;
        p->serialized = t->ops[p->a].comm && t->ops[p->b].comm;
        p->corun_ms = p->serialized ? a + b : (a > b ? a : b) + k / 13.0;
        p->a_ms = a * 1.1;
        p->b_ms = b * 1.2;
        p->oef = hx_oef(a, b, p->corun_ms);
    }
}

static int same(const struct hx_overlap_table *a, const struct hx_overlap_table *b)
{
    if (memcmp(&a->model, &b->model, sizeof a->model) != 0 || a->layer != b->layer ||
        a->workers != b->workers || a->ranks != b->ranks || a->repeats != b->repeats ||
        a->classes != b->classes ||
        strcmp(a->host, b->host) != 0 || strcmp(a->date, b->date) != 0 || a->nfwd != b->nfwd ||
        a->nbwd != b->nbwd || a->npairs != b->npairs) {
        return 0;
    }
    for (int i = 0; i < a->nops; i++) {
        const struct hx_overlap_op *x = &a->ops[i], *y = &b->ops[i];
        if (strcmp(x->key, y->key) || strcmp(x->op, y->op) || x->comm != y->comm ||
            x->lane != y->lane || x->flops != y->flops || x->bytes != y->bytes ||
            x->solo_ms != y->solo_ms || x->solo_ms_min != y->solo_ms_min || x->cls != y->cls) {
            return 0;
        }
    }
    for (int k = 0; k < a->npairs; k++) {
        const struct hx_overlap_pair *x = &a->pairs[k], *y = &b->pairs[k];
        if (x->a != y->a || x->b != y->b || x->corun_ms != y->corun_ms || x->a_ms != y->a_ms ||
            x->b_ms != y->b_ms || x->oef != y->oef || x->serialized != y->serialized) {
            return 0;
        }
    }
    return 1;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    size_t cap = 0;
    if (f != NULL && getdelim(&text, &cap, '\0', f) < 0) {
        free(text);
        text = NULL;
    }
    if (f != NULL) {
        fclose(f);
    }
    return text;
}

static void spit(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (f != NULL) {
        fputs(text, f);
        fclose(f);
    }
}

/* Load @p text (written to a file) and expect @p status and @p want in stderr. */
static void expect_bad(const char *name, const char *text, int status, const char *want)
{
    char path[256], errpath[256];
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    snprintf(errpath, sizeof errpath, "%s/%s.err", dir, name);
    if (text != NULL) {
        spit(path, text);
    }
    fflush(stderr);
    int saved = dup(2);
    FILE *e = freopen(errpath, "w", stderr);
    struct hx_overlap_table t;
    int ret = hx_overlap_table_load(path, &t);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    (void)e;
    char *msg = slurp(errpath);
    int named = msg != NULL && strstr(msg, path) != NULL;
    int has = msg != NULL && strstr(msg, want) != NULL;
    tap_ok(ret == status && named && has && t.ops == NULL && t.pairs == NULL,
           "%s: status %d (want %d), message names the file: %s, says \"%s\": %s", name, ret,
           status, named ? "yes" : "no", want, has ? "yes" : "no");
    if (!(ret == status && named && has)) {
        tap_diag("message: %s", msg ? msg : "(none)");
    }
    free(msg);
    hx_overlap_table_free(&t);
    hx_run_status_reset();
}

/* The written text of the good table with the first @p from replaced by @p to. */
static char *edited(const char *good, const char *from, const char *to)
{
    const char *at = strstr(good, from);
    if (at == NULL) {
        return NULL;
    }
    size_t n = strlen(good) + strlen(to) + 1;
    char *s = malloc(n);
    snprintf(s, n, "%.*s%s%s", (int)(at - good), good, to, at + strlen(from));
    return s;
}

int main(void)
{
    if (mkdtemp(dir) == NULL) {
        tap_skip_all("cannot create a temporary directory");
    }
    tap_plan(23);
    struct hx_overlap_table t, u;
    char path[256];
    snprintf(path, sizeof path, "%s/table.json", dir);
    fill(&t);
    int wret = hx_overlap_table_write(&t, path);
    int lret = hx_overlap_table_load(path, &u);
    tap_ok(wret == HX_OK && lret == HX_OK && same(&t, &u),
           "round trip of a 2 x 3 table: write %d, load %d, every field equal", wret, lret);
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    tap_ok(access(tmp, F_OK) != 0, "the temporary file was renamed away");

    const struct hx_overlap_op *o = hx_overlap_solo(&u, "B2");
    const struct hx_overlap_pair *p = hx_overlap_pair(&u, "F1", "B2");
    tap_ok(o == &u.ops[4] && p == &u.pairs[1 * 3 + 2] && p->a == 1 && p->b == 4,
           "lookups: B2 is op 4, (F1, B2) is pair 5");
    tap_ok(hx_overlap_solo(&u, "F2") == NULL && hx_overlap_solo(&u, "B01") == NULL &&
               hx_overlap_solo(&u, "X0") == NULL && hx_overlap_pair(&u, "B0", "F0") == NULL &&
               hx_overlap_pair(&u, "F0", "F1") == NULL,
           "lookups: unknown, padded or swapped keys give NULL");

    char *good = slurp(path);
    /* with classes: F1 does F0's work, B2 B1's; "class" is written and read back */
    struct hx_overlap_table c, cu;
    fill(&c);
    c.classes = 1;
    c.ops[1].cls = 0;
    c.ops[4].cls = 3;
    char cpath[256];
    snprintf(cpath, sizeof cpath, "%s/classes.json", dir);
    wret = hx_overlap_table_write(&c, cpath);
    lret = hx_overlap_table_load(cpath, &cu);
    char *ctext = slurp(cpath);
    tap_ok(wret == HX_OK && lret == HX_OK && same(&c, &cu) && ctext != NULL &&
               strstr(ctext, "{\"key\": \"B2\", \"class\": \"B1\", ") != NULL &&
               good != NULL && strstr(good, "\"class\"") == NULL,
           "round trip with classes: \"class\" written (B2 -> B1) and read back; a table "
           "without classes has no \"class\"");
    hx_overlap_table_free(&c);
    hx_overlap_table_free(&cu);
    free(ctext);

    /* a table written before the Llama settings (their fields cut out) is GPT-2's */
    struct hx_overlap_table old = { 0 };
    char *text = good != NULL ? strdup(good) : NULL;
    char *from = text != NULL ? strstr(text, ",\n  \"normalization\"") : NULL;
    char *to = from != NULL ? strchr(from, '}') : NULL; /* the model's closing brace */
    lret = -1;
    if (to != NULL) {
        char opath[256];
        memmove(from, to, strlen(to) + 1);
        snprintf(opath, sizeof opath, "%s/old.json", dir);
        spit(opath, text);
        lret = hx_overlap_table_load(opath, &old);
    }
    free(text);
    tap_ok(lret == HX_OK && old.model.num_heads == 4 && old.model.swiglu == 0 &&
               old.model.num_query_groups == 0 && old.model.rotary_base == 0,
           "a table without the Llama settings loads as GPT-2's (status %d)", lret);
    if (lret == HX_OK) {
        hx_overlap_table_free(&old);
    }

    expect_bad("missing", NULL, HX_EIO, "cannot open overlap table");
    expect_bad("empty", "", HX_EFORMAT, "not valid JSON: line 1, column 1: expected a value");
    expect_bad("trailing-comma", "{\"schema\": \"helix-overlap-1\",}", HX_EFORMAT,
               "trailing comma");
    expect_bad("garbage-after", "{} x", HX_EFORMAT, "unexpected 'x' after the value");
    expect_bad("bad-number", "{\"a\": 01}", HX_EFORMAT, "may not start with 0");
    expect_bad("nan", "{\"a\": NaN}", HX_EFORMAT, "expected a value, found 'N'");
    expect_bad("top-array", "[]", HX_EFORMAT,
               "the top-level value has type array, expected object");
    char *s = edited(good, "helix-overlap-1", "helix-overlap-0");
    expect_bad("schema", s, HX_EFORMAT, "has schema \"helix-overlap-0\"");
    free(s);
    s = edited(good, "\"vocab_size\": 256, ", "");
    expect_bad("no-field", s, HX_EFORMAT, "has no field \"vocab_size\"");
    free(s);
    s = edited(good, "\"solo_ms\": ", "\"solo_ms\": \"fast\", \"x\": ");
    expect_bad("mistyped", s, HX_EFORMAT,
               "field ops[0].solo_ms (line 6) has type string, expected number");
    free(s);
    s = edited(good, "\"layer\": 2", "\"layer\": 2.5");
    expect_bad("not-int", s, HX_EFORMAT, "layer is 2.5, expected an integer");
    free(s);
    s = edited(good, "\"key\": \"F1\"", "\"key\": \"F7\"");
    expect_bad("key-order", s, HX_EFORMAT, "ops[1].key is \"F7\"");
    free(s);
    s = edited(good, "{\"a\": \"F1\", \"b\": \"B2\"", "{\"a\": \"F1\", \"b\": \"B1\"");
    expect_bad("repeated-pair", s, HX_EFORMAT, "repeats the pair (F1, B1)");
    free(s);
    /* drop the last pair: the reader says which one is missing */
    s = edited(good, ",\n  {\"a\": \"F1\", \"b\": \"B2\"", "]}\n");
    if (s != NULL) {
        s[strstr(s, "]}\n") - s + 3] = '\0';
    }
    expect_bad("missing-pair", s, HX_EFORMAT, "\"pairs\" has no entry for (F1, B2)");
    free(s);
    s = edited(good, "{\"key\": \"F1\", ", "{\"key\": \"F1\", \"class\": \"B0\", ");
    expect_bad("class-other-side", s, HX_EFORMAT, "ops[1].class is \"B0\"");
    free(s);
    s = edited(good, "{\"key\": \"F0\", ", "{\"key\": \"F0\", \"class\": \"F1\", ");
    expect_bad("class-later", s, HX_EFORMAT, "must name this op or an earlier one");
    free(s);
    s = edited(good, "{\"a\": \"F0\", \"b\": \"B0\"", "{\"a\": \"B0\", \"b\": \"F0\"");
    expect_bad("swapped-pair", s, HX_EFORMAT, "\"a\" must be a forward key");
    free(s);
    free(good);
    hx_overlap_table_free(&t);
    hx_overlap_table_free(&u);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) {
        tap_diag("could not remove %s", dir);
    }
    return tap_exit();
}
