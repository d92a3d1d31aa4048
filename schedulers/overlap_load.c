/* SPDX-License-Identifier: MIT */
/* schedulers/overlap_load.c: the planner's reader of the profiler's table (schema
 * "helix-overlap-1", written by `helix profile-overlap`), and its reduction to the solo and
 * pair times of two lists.  Deliberately minimal and separate from the profiler's own
 * reader: the planner only needs hx_strand_profile_read and hx_strand_costs_from_profile.
 * Every error names the file, the field or key, and what to do.
 * Test: tests/schedulers/plan_io.c, tests/cli/plan_strands.sh */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/error.h"
#include "helix/plan.h"
#include "schedulers/json.h"

#define SCHEMA "helix-overlap-1"

/* A number field of @p obj; @p where names the object in messages. */
static int get_num(const char *path, const struct hx_pjson *obj, const char *where,
                   const char *name, double *out)
{
    const struct hx_pjson *v = hx_pjson_get(obj, name);
    if (v == NULL || (v->type != HX_PJSON_NUMBER && v->type != HX_PJSON_BOOL)) {
        return HX_ERR(HX_EFORMAT, "%s: %s has no number \"%s\"", path, where, name);
    }
    *out = v->num;
    return HX_OK;
}

static int get_int(const char *path, const struct hx_pjson *obj, const char *where,
                   const char *name, int *out)
{
    double x = 0;
    int ret = get_num(path, obj, where, name, &x);
    if (ret == HX_OK && (x != floor(x) || x < 0 || x > 1e9)) {
        return HX_ERR(HX_EFORMAT, "%s: %s \"%s\" is %g, not a count", path, where, name, x);
    }
    *out = (int)x;
    return ret;
}

static int get_time(const char *path, const struct hx_pjson *obj, const char *where,
                    const char *name, double *out)
{
    int ret = get_num(path, obj, where, name, out);
    if (ret == HX_OK && !(*out >= 0)) {
        return HX_ERR(HX_EFORMAT, "%s: %s \"%s\" is %g ms; times are >= 0", path, where, name,
                      *out);
    }
    return ret;
}

static int get_str(const char *path, const struct hx_pjson *obj, const char *where,
                   const char *name, char *out, size_t len)
{
    const struct hx_pjson *v = hx_pjson_get(obj, name);
    if (v == NULL || v->type != HX_PJSON_STRING) {
        return HX_ERR(HX_EFORMAT, "%s: %s has no string \"%s\"", path, where, name);
    }
    if (strlen(v->str) >= len) {
        return HX_ERR(HX_EFORMAT, "%s: %s \"%s\" is longer than %zu characters", path, where,
                      name, len - 1);
    }
    snprintf(out, len, "%s", v->str);
    return HX_OK;
}

static int read_model(const char *path, const struct hx_pjson *root, struct hx_strand_model *m)
{
    const struct hx_pjson *o = hx_pjson_get(root, "model");
    if (o == NULL || o->type != HX_PJSON_OBJECT) {
        return HX_ERR(HX_EFORMAT, "%s: no \"model\" object", path);
    }
    const struct {
        const char *name;
        int *dst;
    } f[] = { { "num_layers", &m->num_layers },
              { "hidden_size", &m->hidden_size },
              { "num_heads", &m->num_heads },
              { "seq_length", &m->seq_length },
              { "micro_batch_size", &m->micro_batch_size },
              { "vocab_size", &m->vocab_size },
              { "tp", &m->tp },
              { "sequence_parallel", &m->sequence_parallel },
              { "dp", &m->dp },
              { "num_micro_batches", &m->num_micro_batches } };
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
        int ret = get_int(path, o, "\"model\"", f[k].name, f[k].dst);
        if (ret != HX_OK) {
            return ret;
        }
    }
    return HX_OK;
}

static int read_lists(const char *path, const struct hx_pjson *root, struct hx_strand_profile *t)
{
    const struct hx_pjson *ops = hx_pjson_get(root, "ops"), *pairs = hx_pjson_get(root, "pairs");
    if (ops == NULL || ops->type != HX_PJSON_ARRAY || pairs == NULL ||
        pairs->type != HX_PJSON_ARRAY) {
        return HX_ERR(HX_EFORMAT, "%s: needs the arrays \"ops\" and \"pairs\"", path);
    }
    t->ops = calloc((size_t)ops->n + 1, sizeof *t->ops);
    t->pairs = calloc((size_t)pairs->n + 1, sizeof *t->pairs);
    if (t->ops == NULL || t->pairs == NULL) {
        return HX_ERR(HX_ENOMEM, "%s: %d ops and %d pairs", path, ops->n, pairs->n);
    }
    int ret = HX_OK;
    char where[64];
    for (int k = 0; k < ops->n && ret == HX_OK; k++) {
        const struct hx_pjson *x = &ops->items[k];
        struct hx_strand_profile_op *op = &t->ops[k];
        snprintf(where, sizeof where, "ops[%d]", k);
        if ((ret = get_str(path, x, where, "key", op->key, sizeof op->key)) == HX_OK &&
            (ret = get_str(path, x, where, "op", op->op, sizeof op->op)) == HX_OK) {
            ret = get_time(path, x, where, "solo_ms", &op->solo_ms);
        }
        t->nops = k + 1;
    }
    for (int k = 0; k < pairs->n && ret == HX_OK; k++) {
        const struct hx_pjson *x = &pairs->items[k];
        struct hx_strand_profile_pair *pr = &t->pairs[k];
        snprintf(where, sizeof where, "pairs[%d]", k);
        if ((ret = get_str(path, x, where, "a", pr->a, sizeof pr->a)) == HX_OK &&
            (ret = get_str(path, x, where, "b", pr->b, sizeof pr->b)) == HX_OK &&
            (ret = get_time(path, x, where, "corun_ms", &pr->corun_ms)) == HX_OK &&
            (ret = get_time(path, x, where, "a_ms", &pr->a_ms)) == HX_OK) {
            ret = get_time(path, x, where, "b_ms", &pr->b_ms);
        }
        t->npairs = k + 1;
    }
    return ret;
}

int hx_strand_profile_read(const char *path, struct hx_strand_profile *t)
{
    memset(t, 0, sizeof *t);
    char *text = hx_pjson_slurp(path);
    if (text == NULL) {
        return HX_ERR(HX_EIO, "cannot read the overlap table %s: %s (write one with `helix "
                      "profile-overlap`, or fix the path)", path, strerror(errno));
    }
    struct hx_pjson root;
    char err[160];
    int ret = hx_pjson_parse(text, &root, err, sizeof err);
    free(text);
    if (ret != HX_OK) {
        return HX_ERR(HX_EFORMAT, "%s is not valid JSON: %s", path, err);
    }
    const struct hx_pjson *schema = hx_pjson_get(&root, "schema");
    if (schema == NULL || schema->type != HX_PJSON_STRING || strcmp(schema->str, SCHEMA) != 0) {
        ret = HX_ERR(HX_EFORMAT, "%s: schema is %s%s%s, expected \"" SCHEMA "\" (a table of "
                     "`helix profile-overlap`)", path,
                     schema && schema->type == HX_PJSON_STRING ? "\"" : "",
                     schema == NULL ? "missing"
                     : schema->type == HX_PJSON_STRING ? schema->str : "not a string",
                     schema && schema->type == HX_PJSON_STRING ? "\"" : "");
    }
    if (ret == HX_OK && (ret = read_model(path, &root, &t->model)) == HX_OK &&
        (ret = get_int(path, &root, "the table", "layer", &t->layer)) == HX_OK) {
        ret = read_lists(path, &root, t);
    }
    hx_pjson_free(&root);
    if (ret != HX_OK) {
        hx_strand_profile_free(t);
    }
    return ret;
}

void hx_strand_profile_free(struct hx_strand_profile *t)
{
    free(t->ops);
    free(t->pairs);
    memset(t, 0, sizeof *t);
}

/* "F12" -> side 'F', index 12; -1 if the key is not of that form */
static int key_index(const char *key, char side)
{
    if (key[0] != side || key[1] < '0' || key[1] > '9') {
        return -1;
    }
    char *end;
    long k = strtol(key + 1, &end, 10);
    return *end == '\0' && k < 1000000 ? (int)k : -1;
}

static const char *op_of(const struct hx_graph *g, const struct hx_strand_list *s, int k)
{
    return g != NULL ? hx_op_name(g->nodes[s->node[k]].op) : NULL;
}

/* Why a key does not fit, for the messages: another layer, or another model or build. */
static const char *cause(const struct hx_strand_profile *t, int layer, char *buf, size_t len)
{
    if (layer != t->layer) {
        snprintf(buf, len, "the table was profiled on layer %d, whose ops differ from layer "
                 "%d's: plan layer %d, or profile layer %d", t->layer, layer, t->layer, layer);
    } else {
        snprintf(buf, len, "the table was profiled for another model or build; re-profile");
    }
    return buf;
}

/* Solo times of one list: each key present once, with the graph's op.  @p layer is the
 * planned layer (the table's when there is no graph). */
static int list_solo(const struct hx_strand_profile *t, const struct hx_graph *g, int layer,
                     const struct hx_strand_list *s, double *solo, int *seen)
{
    const char *what = s->side == 'F' ? "forward" : "backward";
    char why[160];
    for (int i = 0; i < t->nops; i++) {
        const struct hx_strand_profile_op *op = &t->ops[i];
        int k = key_index(op->key, s->side);
        if (k < 0 && key_index(op->key, s->side == 'F' ? 'B' : 'F') < 0) {
            return HX_ERR(HX_EFORMAT, "overlap table: key \"%s\" is neither F<k> nor B<k>",
                          op->key);
        }
        if (k < 0) {
            continue;
        }
        if (k >= s->n) {
            return HX_ERR(HX_EFORMAT, "overlap table has %s but layer %d of this model has %d "
                          "%s ops (%c0..%c%d): %s", op->key, layer, s->n, what, s->side,
                          s->side, s->n - 1, cause(t, layer, why, sizeof why));
        }
        if (seen[k]) {
            return HX_ERR(HX_EFORMAT, "overlap table lists key %s twice", op->key);
        }
        const char *want = op_of(g, s, k);
        if (want != NULL && strcmp(want, op->op) != 0) {
            return HX_ERR(HX_EFORMAT, "overlap table: %s is %s, but %s op %d of layer %d is "
                          "%s: %s", op->key, op->op, what, k, layer, want,
                          cause(t, layer, why, sizeof why));
        }
        seen[k] = 1;
        solo[k] = op->solo_ms;
    }
    for (int k = 0; k < s->n; k++) {
        if (!seen[k]) {
            const char *want = op_of(g, s, k);
            return HX_ERR(HX_EFORMAT, "overlap table lacks key %c%d (%s), one of the %d %s ops "
                          "of layer %d: the table is incomplete, or %s", s->side, k,
                          want ? want : "?", s->n, what, layer,
                          cause(t, layer, why, sizeof why));
        }
    }
    return HX_OK;
}

int hx_strand_costs_from_profile(const struct hx_strand_profile *t, const struct hx_graph *g,
                                 const struct hx_strand_list *F,
                                 const struct hx_strand_list *B, struct hx_strand_costs *c)
{
    int ret = hx_strand_costs_alloc(c, F->n, B->n);
    if (ret != HX_OK) {
        return ret;
    }
    int *seen = calloc((size_t)(F->n + B->n) + (size_t)F->n * (size_t)B->n + 1, sizeof(int));
    if (seen == NULL) {
        hx_strand_costs_free(c);
        return HX_ERR(HX_ENOMEM, "overlap table of %d x %d pairs", F->n, B->n);
    }
    int *fseen = seen, *bseen = seen + F->n, *pseen = seen + F->n + B->n;
    int layer = g != NULL ? g->nodes[F->node[0]].layer : t->layer;
    if ((ret = list_solo(t, g, layer, F, c->f_solo, fseen)) == HX_OK) {
        ret = list_solo(t, g, layer, B, c->b_solo, bseen);
    }
    for (int i = 0; i < t->npairs && ret == HX_OK; i++) {
        const struct hx_strand_profile_pair *pr = &t->pairs[i];
        int a = key_index(pr->a, 'F'), b = key_index(pr->b, 'B');
        if (a < 0 || b < 0 || a >= F->n || b >= B->n) {
            ret = HX_ERR(HX_EFORMAT, "overlap table: pair (%s, %s) is not (forward key, "
                         "backward key) of this model (F0..F%d, B0..B%d)", pr->a, pr->b,
                         F->n - 1, B->n - 1);
            break;
        }
        size_t at = (size_t)a * B->n + b;
        if (pseen[at]) {
            ret = HX_ERR(HX_EFORMAT, "overlap table lists pair (%s, %s) twice", pr->a, pr->b);
            break;
        }
        pseen[at] = 1;
        c->corun_ms[at] = pr->corun_ms;
        c->a_ms[at] = pr->a_ms;
        c->b_ms[at] = pr->b_ms;
    }
    for (int a = 0; a < F->n && ret == HX_OK; a++) {
        for (int b = 0; b < B->n; b++) {
            if (!pseen[(size_t)a * B->n + b]) {
                ret = HX_ERR(HX_EFORMAT, "overlap table lacks pair (F%d, B%d): every forward x "
                             "backward pair must be profiled (%d x %d); re-profile", a, b,
                             F->n, B->n);
                break;
            }
        }
    }
    free(seen);
    if (ret != HX_OK) {
        hx_strand_costs_free(c);
    }
    return ret;
}
