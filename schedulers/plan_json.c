/* SPDX-License-Identifier: MIT */
/* schedulers/plan_json.c: a pairing plan on disk, schema "helix-plan-1" (below), for the
 * scheduler that will execute it.  Each step's keys are the next ones of the two orders, so
 * the steps cover every op once; the reader checks it.  Times are printed with 17 digits,
 * so they read back exactly; the JSON reader is runtime/json.h.
 * Test: tests/schedulers/plan_io.c */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helix/error.h"
#include "helix/plan.h"
#include "runtime/json.h"

#define SCHEMA "helix-plan-1"

/*   {"schema": "helix-plan-1", "layer": l, "predicted_ms": .., "sequential_ms": ..,
 *    "max_segment": S, "barrier_ms": .., "orders_considered": {"forward": n, "backward": m,
 *    "forward_all": true if n is every candidate, "backward_all": ..},
 *    "forward_ops": [op of F0, F1, ...], "backward_ops": [op of B0, ...],
 *    "forward_order": ["F0", "F2", ...], "backward_order": ["B0", ...],
 *    "steps": [{"forward": ["F0", "F2"], "backward": ["B4"], "predicted_ms": ..,
 *               "sequential_ms": ..}, ...]} */

static void put_keys(FILE *f, char side, const int *order, int from, int to)
{
    fputc('[', f);
    for (int k = from; k < to; k++) {
        fprintf(f, "%s\"%c%d\"", k > from ? ", " : "", side, order[k]);
    }
    fputc(']', f);
}

static void put_ops(FILE *f, char (*ops)[HX_PLAN_OPNAME], int n)
{
    fputc('[', f);
    for (int k = 0; k < n; k++) {
        fputs(k ? ", " : "", f);
        hx_json_write_string(f, ops[k]);
    }
    fputc(']', f);
}

int hx_plan_write_json(const struct hx_plan *p, const char *path)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp) {
        return HX_ERR(HX_EIO, "plan path too long: %s", path);
    }
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        return HX_ERR(HX_EIO, "cannot write the plan %s: %s", tmp, strerror(errno));
    }
    fprintf(f, "{\"schema\": \"" SCHEMA "\", \"layer\": %d,\n", p->layer);
    fprintf(f, " \"predicted_ms\": %.17g, \"sequential_ms\": %.17g,\n", p->predicted_ms,
            p->sequential_ms);
    fprintf(f, " \"max_segment\": %d, \"barrier_ms\": %.17g,\n", p->max_segment, p->barrier_ms);
    fprintf(f, " \"orders_considered\": {\"forward\": %d, \"backward\": %d, \"forward_all\": %s, "
            "\"backward_all\": %s},\n", p->f_orders, p->b_orders, p->f_all ? "true" : "false",
            p->b_all ? "true" : "false");
    fputs(" \"forward_ops\": ", f);
    put_ops(f, p->f_op, p->nf);
    fputs(",\n \"backward_ops\": ", f);
    put_ops(f, p->b_op, p->nb);
    fputs(",\n \"forward_order\": ", f);
    put_keys(f, 'F', p->f_order, 0, p->nf);
    fputs(",\n \"backward_order\": ", f);
    put_keys(f, 'B', p->b_order, 0, p->nb);
    fputs(",\n \"steps\": [", f);
    for (int k = 0; k < p->nsteps; k++) {
        const struct hx_plan_step *s = &p->steps[k];
        fputs(k ? ",\n  {\"forward\": " : "\n  {\"forward\": ", f);
        put_keys(f, 'F', p->f_order, s->f0, s->f1);
        fputs(", \"backward\": ", f);
        put_keys(f, 'B', p->b_order, s->b0, s->b1);
        fprintf(f, ", \"predicted_ms\": %.17g, \"sequential_ms\": %.17g}", s->predicted_ms,
                s->sequential_ms);
    }
    fputs("]}\n", f);
    int bad = fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0;
    int saved = errno;
    if (fclose(f) != 0 || bad) {
        unlink(tmp);
        return HX_ERR(HX_EIO, "cannot write the plan %s: %s", tmp,
                      strerror(bad ? saved : errno));
    }
    if (rename(tmp, path) != 0) {
        saved = errno;
        unlink(tmp);
        return HX_ERR(HX_EIO, "cannot rename %s to %s: %s", tmp, path, strerror(saved));
    }
    return HX_OK;
}

/* ---- reading ---- */

/* Field @p name of @p o with type @p type; after a failure (in *ret) NULL and no message. */
static const struct hx_json *member(const char *path, const struct hx_json *o, const char *name,
                                    enum hx_json_type type, int *ret)
{
    const struct hx_json *v = hx_json_get(o, name);
    if (*ret == HX_OK && v == NULL) {
        *ret = HX_ERR(HX_EFORMAT, "plan %s: the object at line %d has no field \"%s\"; "
                      "rewrite the plan with helix plan-strands --out", path, o ? o->line : 0,
                      name);
    } else if (*ret == HX_OK && v->type != type) {
        *ret = HX_ERR(HX_EFORMAT, "plan %s: field \"%s\" (line %d) has type %s, expected %s",
                      path, name, v->line, hx_json_type_name(v->type), hx_json_type_name(type));
    }
    return *ret == HX_OK ? v : NULL;
}

/* Keys of an array ("F3", ...) into list indices, each < n. */
static int keys_of(const char *path, const struct hx_json *a, char side, int n, int *out)
{
    for (int k = 0; k < a->n; k++) {
        const struct hx_json *v = &a->items[k];
        char *end = NULL;
        long x = -1;
        if (v->type == HX_JSON_STRING && v->str[0] == side) {
            x = strtol(v->str + 1, &end, 10);
        }
        if (end == NULL || end == v->str + 1 || *end != '\0' || x < 0 || x >= n) {
            return HX_ERR(HX_EFORMAT, "plan %s: \"%s\" is not a key %c0..%c%d",
                          path, v->type == HX_JSON_STRING ? v->str : "(not a string)", side,
                          side, n - 1);
        }
        out[k] = (int)x;
    }
    return HX_OK;
}

static int read_side(const char *path, const struct hx_json *root, char side, int *n,
                     int **order, char (**ops)[HX_PLAN_OPNAME])
{
    int ret = HX_OK;
    const char *on = side == 'F' ? "forward_ops" : "backward_ops";
    const struct hx_json *names = member(path, root, on, HX_JSON_ARRAY, &ret);
    const struct hx_json *ord = member(path, root, side == 'F' ? "forward_order"
                                                               : "backward_order",
                                       HX_JSON_ARRAY, &ret);
    if (ret != HX_OK) {
        return ret;
    }
    if (ord->n != names->n) {
        return HX_ERR(HX_EFORMAT, "plan %s: %d %s for %d ops in the order", path, names->n, on,
                      ord->n);
    }
    *n = ord->n;
    *order = malloc(sizeof(int) * ((size_t)*n + 1));
    *ops = malloc(sizeof **ops * ((size_t)*n + 1));
    int *seen = calloc((size_t)*n + 1, sizeof(int));
    if (*order == NULL || *ops == NULL || seen == NULL) {
        free(seen);
        return HX_ERR(HX_ENOMEM, "plan of %d ops", *n);
    }
    ret = keys_of(path, ord, side, *n, *order);
    for (int k = 0; k < *n && ret == HX_OK; k++) {
        if (seen[(*order)[k]]++) {
            ret = HX_ERR(HX_EFORMAT, "plan %s: %c%d appears twice in the order", path, side,
                         (*order)[k]);
        }
        if (names->items[k].type != HX_JSON_STRING ||
            strlen(names->items[k].str) >= HX_PLAN_OPNAME) {
            ret = HX_ERR(HX_EFORMAT, "plan %s: %s[%d] is not an op name", path, on, k);
        } else {
            snprintf((*ops)[k], HX_PLAN_OPNAME, "%s", names->items[k].str);
        }
    }
    free(seen);
    return ret;
}

/* One step's keys must be the next ones of the order, from position *at. */
static int step_side(const char *path, int k, const struct hx_json *keys, char side,
                     const int *order, int n, int *at, int *lo, int *hi)
{
    int *idx = malloc(sizeof(int) * ((size_t)keys->n + 1)), ret;
    if (idx == NULL) {
        return HX_ERR(HX_ENOMEM, "plan step of %d keys", keys->n);
    }
    ret = keys_of(path, keys, side, n, idx);
    *lo = *at;
    for (int q = 0; q < keys->n && ret == HX_OK; q++, (*at)++) {
        if (*at >= n) {
            ret = HX_ERR(HX_EFORMAT, "plan %s: step %d runs %c%d after the order's last op; "
                         "steps must follow the orders", path, k, side, idx[q]);
        } else if (idx[q] != order[*at]) {
            ret = HX_ERR(HX_EFORMAT, "plan %s: step %d runs %c%d where the order's next op is "
                         "%c%d; steps must follow the orders", path, k, side, idx[q], side,
                         order[*at]);
        }
    }
    *hi = *at;
    free(idx);
    return ret;
}

static int read_steps(const char *path, const struct hx_json *root, struct hx_plan *p)
{
    int ret = HX_OK;
    const struct hx_json *steps = member(path, root, "steps", HX_JSON_ARRAY, &ret);
    if (ret != HX_OK) {
        return ret;
    }
    p->steps = calloc((size_t)steps->n + 1, sizeof *p->steps);
    if (p->steps == NULL) {
        return HX_ERR(HX_ENOMEM, "%d plan steps", steps->n);
    }
    int fa = 0, ba = 0;
    for (int k = 0; k < steps->n && ret == HX_OK; k++) {
        const struct hx_json *s = &steps->items[k];
        struct hx_plan_step *st = &p->steps[k];
        const struct hx_json *f = member(path, s, "forward", HX_JSON_ARRAY, &ret);
        const struct hx_json *b = member(path, s, "backward", HX_JSON_ARRAY, &ret);
        const struct hx_json *pm = member(path, s, "predicted_ms", HX_JSON_NUMBER, &ret);
        const struct hx_json *sm = member(path, s, "sequential_ms", HX_JSON_NUMBER, &ret);
        if (ret == HX_OK && f->n + b->n == 0) {
            ret = HX_ERR(HX_EFORMAT, "plan %s: step %d runs nothing", path, k);
        }
        if (ret == HX_OK &&
            (ret = step_side(path, k, f, 'F', p->f_order, p->nf, &fa, &st->f0, &st->f1)) ==
                HX_OK) {
            ret = step_side(path, k, b, 'B', p->b_order, p->nb, &ba, &st->b0, &st->b1);
        }
        if (ret == HX_OK) {
            st->predicted_ms = pm->num;
            st->sequential_ms = sm->num;
            p->nsteps = k + 1;
        }
    }
    if (ret == HX_OK && (fa != p->nf || ba != p->nb)) {
        ret = HX_ERR(HX_EFORMAT, "plan %s: the steps run %d of %d forward and %d of %d "
                     "backward ops", path, fa, p->nf, ba, p->nb);
    }
    return ret;
}

int hx_plan_read_json(const char *path, struct hx_plan *p)
{
    memset(p, 0, sizeof *p);
    size_t len = 0;
    char *text = hx_json_slurp(path, &len);
    if (text == NULL) {
        return HX_ERR(errno == ENOMEM ? HX_ENOMEM : HX_EIO, "cannot read the plan %s: %s; "
                      "write one with helix plan-strands --out", path, strerror(errno));
    }
    struct hx_json root;
    char err[256];
    int ret = hx_json_parse(text, len, &root, err, sizeof err) == 0 ? HX_OK : HX_EFORMAT;
    free(text);
    if (ret != HX_OK) {
        hx_json_free(&root);
        return HX_ERR(HX_EFORMAT, "plan %s is not valid JSON: %s", path, err);
    }
    const struct hx_json *schema = member(path, &root, "schema", HX_JSON_STRING, &ret);
    if (ret == HX_OK && strcmp(schema->str, SCHEMA) != 0) {
        ret = HX_ERR(HX_EFORMAT, "plan %s: schema \"%s\", expected \"" SCHEMA "\"", path,
                     schema->str);
    }
    const struct hx_json *layer = member(path, &root, "layer", HX_JSON_NUMBER, &ret);
    const struct hx_json *pm = member(path, &root, "predicted_ms", HX_JSON_NUMBER, &ret);
    const struct hx_json *sm = member(path, &root, "sequential_ms", HX_JSON_NUMBER, &ret);
    const struct hx_json *ms = member(path, &root, "max_segment", HX_JSON_NUMBER, &ret);
    const struct hx_json *bm = member(path, &root, "barrier_ms", HX_JSON_NUMBER, &ret);
    const struct hx_json *oc = member(path, &root, "orders_considered", HX_JSON_OBJECT, &ret);
    const struct hx_json *of = member(path, oc, "forward", HX_JSON_NUMBER, &ret);
    const struct hx_json *ob = member(path, oc, "backward", HX_JSON_NUMBER, &ret);
    const struct hx_json *fa = member(path, oc, "forward_all", HX_JSON_BOOL, &ret);
    const struct hx_json *ba = member(path, oc, "backward_all", HX_JSON_BOOL, &ret);
    if (ret == HX_OK) {
        p->layer = (int)layer->num;
        p->predicted_ms = pm->num, p->sequential_ms = sm->num;
        p->max_segment = (int)ms->num, p->barrier_ms = bm->num;
        p->f_orders = (int)of->num, p->b_orders = (int)ob->num;
        p->f_all = (int)fa->num, p->b_all = (int)ba->num;
    }
    if (ret == HX_OK && (ret = read_side(path, &root, 'F', &p->nf, &p->f_order, &p->f_op)) ==
                            HX_OK &&
        (ret = read_side(path, &root, 'B', &p->nb, &p->b_order, &p->b_op)) == HX_OK) {
        ret = read_steps(path, &root, p);
    }
    hx_json_free(&root);
    if (ret != HX_OK) {
        hx_plan_free(p);
    }
    return ret;
}
