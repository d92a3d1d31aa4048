/* SPDX-License-Identifier: MIT */
/* schedulers/overlap_table.c: the overlap table of include/helix/overlap.h in memory and as
 * JSON ("helix-overlap-1").  The reader checks everything the planner relies on (every
 * field typed, times >= 0, keys F0..F(n-1) and B0..B(m-1), each (F, B) pair exactly once)
 * and names the file, the field and its line on failure.  Times are written with 17
 * significant digits, so a table reads back bit for bit and the OEF recomputed from its
 * fields is exact.  Test: tests/schedulers/overlap_table.c, tests/schedulers/plan_io.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helix/error.h"
#include "helix/graph.h"
#include "helix/overlap.h"
#include "runtime/json.h"

double hx_oef(double ta, double tb, double tab)
{
    double m = ta < tb ? ta : tb;
    return m > 0 ? (ta + tb - tab) / m : 0.0;
}

static const char *lane_names[] = { "compute", "comm_intra", "comm_inter" };

const char *hx_overlap_lane_name(int lane)
{
    return lane >= 0 && lane < 3 ? lane_names[lane] : "?";
}

int hx_overlap_table_init(struct hx_overlap_table *t, int nfwd, int nbwd)
{
    memset(t, 0, sizeof *t);
    if (nfwd < 0 || nbwd < 0) {
        return HX_ERR(HX_EINVAL, "overlap table of %d forward and %d backward ops", nfwd, nbwd);
    }
    t->nfwd = nfwd;
    t->nbwd = nbwd;
    t->nops = nfwd + nbwd;
    t->npairs = nfwd * nbwd;
    t->ops = calloc((size_t)(t->nops ? t->nops : 1), sizeof *t->ops);
    t->pairs = calloc((size_t)(t->npairs ? t->npairs : 1), sizeof *t->pairs);
    if (t->ops == NULL || t->pairs == NULL) {
        hx_overlap_table_free(t);
        return HX_ERR(HX_ENOMEM, "overlap table of %d x %d ops", nfwd, nbwd);
    }
    for (int i = 0; i < t->nops; i++) {
        snprintf(t->ops[i].key, sizeof t->ops[i].key, "%c%d", i < nfwd ? 'F' : 'B',
                 i < nfwd ? i : i - nfwd);
        t->ops[i].cls = i;
    }
    for (int i = 0; i < nfwd; i++) {
        for (int j = 0; j < nbwd; j++) {
            t->pairs[i * nbwd + j].a = i;
            t->pairs[i * nbwd + j].b = nfwd + j;
        }
    }
    return HX_OK;
}

void hx_overlap_table_free(struct hx_overlap_table *t)
{
    free(t->ops);
    free(t->pairs);
    memset(t, 0, sizeof *t);
}

/* Index of key "F<k>" / "B<k>" in t->ops, or -1. */
static int key_index(const struct hx_overlap_table *t, const char *key)
{
    char side = key[0], *end;
    if (side != 'F' && side != 'B') {
        return -1;
    }
    if (key[1] < '0' || key[1] > '9' || (key[1] == '0' && key[2] != '\0')) {
        return -1;
    }
    errno = 0;
    long k = strtol(key + 1, &end, 10);
    if (*end != '\0' || errno != 0) {
        return -1;
    }
    if (side == 'F') {
        return k < t->nfwd ? (int)k : -1;
    }
    return k < t->nbwd ? t->nfwd + (int)k : -1;
}

const struct hx_overlap_op *hx_overlap_solo(const struct hx_overlap_table *t, const char *key)
{
    int i = key_index(t, key);
    return i < 0 ? NULL : &t->ops[i];
}

const struct hx_overlap_pair *hx_overlap_pair(const struct hx_overlap_table *t,
                                              const char *fkey, const char *bkey)
{
    int i = key_index(t, fkey), j = key_index(t, bkey);
    if (i < 0 || i >= t->nfwd || j < t->nfwd) {
        return NULL;
    }
    return &t->pairs[i * t->nbwd + (j - t->nfwd)];
}

/* ---- writing ---- */

static void write_table(FILE *f, const struct hx_overlap_table *t)
{
    const struct hx_overlap_model *m = &t->model;
    fprintf(f, "{\"schema\": \"%s\",\n \"model\": {\"num_layers\": %d, \"hidden_size\": %d, "
            "\"num_heads\": %d, \"seq_length\": %d, \"micro_batch_size\": %d, "
            "\"vocab_size\": %d, \"tp\": %d, \"sequence_parallel\": %d, \"dp\": %d, "
            "\"num_micro_batches\": %d,\n  \"normalization\": %d, \"swiglu\": %d, "
            "\"ffn_hidden_size\": %d, \"position_embedding\": %d, \"rotary_base\": %.9g, "
            "\"num_query_groups\": %d, \"untie_embeddings\": %d, \"disable_bias\": %d},\n",
            HX_OVERLAP_SCHEMA, m->num_layers, m->hidden_size, m->num_heads, m->seq_length,
            m->micro_batch_size, m->vocab_size, m->tp, m->sequence_parallel, m->dp,
            m->num_micro_batches, m->normalization, m->swiglu, m->ffn_hidden_size,
            m->position_embedding, (double)m->rotary_base, m->num_query_groups,
            m->untie_embeddings, m->disable_bias);
    fprintf(f, " \"layer\": %d, \"workers\": %d, \"ranks\": %d, \"repeats\": %d, \"host\": ",
            t->layer, t->workers, t->ranks, t->repeats);
    hx_json_write_string(f, t->host);
    fprintf(f, ", \"date\": ");
    hx_json_write_string(f, t->date);
    fprintf(f, ",\n \"ops\": [");
    for (int i = 0; i < t->nops; i++) {
        const struct hx_overlap_op *o = &t->ops[i];
        fprintf(f, "%s\n  {\"key\": \"%s\", ", i ? "," : "", o->key);
        if (t->classes) {
            fprintf(f, "\"class\": \"%s\", ", t->ops[o->cls].key);
        }
        fprintf(f, "\"op\": ");
        hx_json_write_string(f, o->op);
        fprintf(f, ", \"kind\": \"%s\", \"lane\": \"%s\", \"flops\": %.17g, \"bytes\": %.17g, "
                "\"solo_ms\": %.17g, \"solo_ms_min\": %.17g}", o->comm ? "comm" : "comp",
                hx_overlap_lane_name(o->lane), o->flops, o->bytes, o->solo_ms, o->solo_ms_min);
    }
    fprintf(f, "],\n \"pairs\": [");
    for (int k = 0; k < t->npairs; k++) {
        const struct hx_overlap_pair *p = &t->pairs[k];
        fprintf(f, "%s\n  {\"a\": \"%s\", \"b\": \"%s\", \"corun_ms\": %.17g, \"a_ms\": %.17g, "
                "\"b_ms\": %.17g, \"oef\": %.17g, \"serialized\": %s}", k ? "," : "",
                t->ops[p->a].key, t->ops[p->b].key, p->corun_ms, p->a_ms, p->b_ms, p->oef,
                p->serialized ? "true" : "false");
    }
    fprintf(f, "]}\n");
}

int hx_overlap_table_write(const struct hx_overlap_table *t, const char *path)
{
    if (path == NULL || strcmp(path, "-") == 0) {
        write_table(stdout, t);
        return fflush(stdout) == 0 ? HX_OK : HX_ERR(HX_EIO, "writing the overlap table to "
                                                            "stdout failed");
    }
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp) {
        return HX_ERR(HX_EIO, "overlap table path '%.64s...' is too long", path);
    }
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        return HX_ERR(HX_EIO, "cannot create %s: %s; check that the directory of --out exists "
                      "and is writable", tmp, strerror(errno));
    }
    write_table(f, t);
    int bad = fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0;
    bad = fclose(f) != 0 || bad;
    if (bad || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return HX_ERR(HX_EIO, "writing the overlap table %s failed: %s", path, strerror(e));
    }
    return HX_OK;
}

/* ---- reading ---- */

struct reader {
    const char *path;
};

/* Field @p key of @p obj with type @p type, or NULL after reporting (where: "ops[3]"). */
static const struct hx_json *field(const struct reader *r, const struct hx_json *obj,
                                   const char *where, const char *key, enum hx_json_type type)
{
    const struct hx_json *v = hx_json_get(obj, key);
    if (v == NULL) {
        HX_ERR(HX_EFORMAT, "overlap table %s: %s (line %d) has no field \"%s\"; regenerate it "
               "with helix profile-overlap", r->path, where, obj->line, key);
        return NULL;
    }
    if (v->type != type) {
        HX_ERR(HX_EFORMAT, "overlap table %s: field %s.%s (line %d) has type %s, expected %s",
               r->path, where, key, v->line, hx_json_type_name(v->type),
               hx_json_type_name(type));
        return NULL;
    }
    return v;
}

static int get_num(const struct reader *r, const struct hx_json *obj, const char *where,
                   const char *key, double *out)
{
    const struct hx_json *v = field(r, obj, where, key, HX_JSON_NUMBER);
    if (v == NULL) {
        return HX_EFORMAT;
    }
    *out = v->num;
    return HX_OK;
}

static int get_int(const struct reader *r, const struct hx_json *obj, const char *where,
                   const char *key, int *out)
{
    double x;
    if (get_num(r, obj, where, key, &x) != HX_OK) {
        return HX_EFORMAT;
    }
    if (x != floor(x) || x < -2147483648.0 || x > 2147483647.0) {
        return HX_ERR(HX_EFORMAT, "overlap table %s: field %s.%s is %g, expected an integer",
                      r->path, where, key, x);
    }
    *out = (int)x;
    return HX_OK;
}

static int get_str(const struct reader *r, const struct hx_json *obj, const char *where,
                   const char *key, char *out, size_t n)
{
    const struct hx_json *v = field(r, obj, where, key, HX_JSON_STRING);
    if (v == NULL) {
        return HX_EFORMAT;
    }
    if (strlen(v->str) >= n) {
        return HX_ERR(HX_EFORMAT, "overlap table %s: field %s.%s (line %d) is longer than %zu "
                      "characters", r->path, where, key, v->line, n - 1);
    }
    snprintf(out, n, "%s", v->str);
    return HX_OK;
}

static int read_model(const struct reader *r, const struct hx_json *root,
                      struct hx_overlap_model *m)
{
    const struct hx_json *mo = field(r, root, "the top-level object", "model", HX_JSON_OBJECT);
    if (mo == NULL) {
        return HX_EFORMAT;
    }
    struct { const char *key; int *dst; } f[] = {
        { "num_layers", &m->num_layers }, { "hidden_size", &m->hidden_size },
        { "num_heads", &m->num_heads }, { "seq_length", &m->seq_length },
        { "micro_batch_size", &m->micro_batch_size }, { "vocab_size", &m->vocab_size },
        { "tp", &m->tp }, { "sequence_parallel", &m->sequence_parallel }, { "dp", &m->dp },
        { "num_micro_batches", &m->num_micro_batches },
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (get_int(r, mo, "model", f[i].key, f[i].dst) != HX_OK) {
            return HX_EFORMAT;
        }
    }
    /* the Llama settings: optional (a table written before them is GPT-2's) */
    struct { const char *key; int *dst; } opt[] = {
        { "normalization", &m->normalization }, { "swiglu", &m->swiglu },
        { "ffn_hidden_size", &m->ffn_hidden_size },
        { "position_embedding", &m->position_embedding },
        { "num_query_groups", &m->num_query_groups },
        { "untie_embeddings", &m->untie_embeddings }, { "disable_bias", &m->disable_bias },
    };
    for (size_t i = 0; i < sizeof opt / sizeof opt[0]; i++) {
        if (hx_json_get(mo, opt[i].key) != NULL &&
            get_int(r, mo, "model", opt[i].key, opt[i].dst) != HX_OK) {
            return HX_EFORMAT;
        }
    }
    double base = 0;
    if (hx_json_get(mo, "rotary_base") != NULL &&
        get_num(r, mo, "model", "rotary_base", &base) != HX_OK) {
        return HX_EFORMAT;
    }
    m->rotary_base = (float)base;
    return HX_OK;
}

/* The "ops" array: counts F and B keys, checks they are F0.. then B0.., fills t->ops. */
static int read_ops(const struct reader *r, const struct hx_json *root,
                    struct hx_overlap_table *t)
{
    const struct hx_json *ops = field(r, root, "the top-level object", "ops", HX_JSON_ARRAY);
    if (ops == NULL) {
        return HX_EFORMAT;
    }
    int nf = 0, nb = 0;
    for (int i = 0; i < ops->n; i++) {
        const struct hx_json *k = hx_json_get(&ops->items[i], "key");
        if (k != NULL && k->type == HX_JSON_STRING) {
            nf += k->str[0] == 'F';
            nb += k->str[0] == 'B';
        }
    }
    if (hx_overlap_table_init(t, nf, nb) != HX_OK) {
        return HX_ENOMEM;
    }
    int seen_f = 0, seen_b = 0;
    for (int i = 0; i < ops->n; i++) {
        const struct hx_json *o = &ops->items[i];
        char where[32], key[16], kind[8], lane[16];
        snprintf(where, sizeof where, "ops[%d]", i);
        if (o->type != HX_JSON_OBJECT) {
            return HX_ERR(HX_EFORMAT, "overlap table %s: %s (line %d) has type %s, expected "
                          "object", r->path, where, o->line, hx_json_type_name(o->type));
        }
        if (get_str(r, o, where, "key", key, sizeof key) != HX_OK) {
            return HX_EFORMAT;
        }
        /* forward keys first, each side numbered from 0 in order */
        char want[16];
        if (key[0] == 'F' && seen_b == 0) {
            snprintf(want, sizeof want, "F%d", seen_f);
        } else {
            snprintf(want, sizeof want, "B%d", seen_b);
        }
        if (strcmp(key, want) != 0) {
            return HX_ERR(HX_EFORMAT, "overlap table %s: %s.key is \"%s\" (line %d), expected "
                          "\"%s\": ops list F0, F1, ... then B0, B1, ..., each once", r->path,
                          where, key, o->line, want);
        }
        struct hx_overlap_op *d = &t->ops[key[0] == 'F' ? seen_f++ : nf + seen_b++];
        if (get_str(r, o, where, "op", d->op, sizeof d->op) != HX_OK ||
            get_str(r, o, where, "kind", kind, sizeof kind) != HX_OK ||
            get_str(r, o, where, "lane", lane, sizeof lane) != HX_OK ||
            get_num(r, o, where, "flops", &d->flops) != HX_OK ||
            get_num(r, o, where, "bytes", &d->bytes) != HX_OK ||
            get_num(r, o, where, "solo_ms", &d->solo_ms) != HX_OK ||
            get_num(r, o, where, "solo_ms_min", &d->solo_ms_min) != HX_OK) {
            return HX_EFORMAT;
        }
        if (strcmp(kind, "comp") != 0 && strcmp(kind, "comm") != 0) {
            return HX_ERR(HX_EFORMAT, "overlap table %s: %s.kind is \"%s\", expected \"comp\" "
                          "or \"comm\"", r->path, where, kind);
        }
        d->comm = strcmp(kind, "comm") == 0;
        d->lane = -1;
        for (int l = 0; l < 3; l++) {
            d->lane = strcmp(lane, lane_names[l]) == 0 ? l : d->lane;
        }
        if (d->lane < 0) {
            return HX_ERR(HX_EFORMAT, "overlap table %s: %s.lane is \"%s\", expected "
                          "\"compute\", \"comm_intra\" or \"comm_inter\"", r->path, where, lane);
        }
        const struct hx_json *cls = hx_json_get(o, "class");
        if (cls != NULL) { /* optional: present when measured by class */
            char ck[16];
            if (get_str(r, o, where, "class", ck, sizeof ck) != HX_OK) {
                return HX_EFORMAT;
            }
            int c = key_index(t, ck), self = (int)(d - t->ops);
            if (c < 0 || c > self || (c < nf) != (self < nf)) {
                return HX_ERR(HX_EFORMAT, "overlap table %s: %s.class is \"%s\" (line %d); "
                              "it must name this op or an earlier one of the same side",
                              r->path, where, ck, cls->line);
            }
            d->cls = c;
            t->classes = 1;
        }
        if (!(d->solo_ms >= 0) || !(d->solo_ms_min >= 0)) {
            return HX_ERR(HX_EFORMAT, "overlap table %s: %s has a negative solo time", r->path,
                          where);
        }
    }
    return HX_OK;
}

static int read_pairs(const struct reader *r, const struct hx_json *root,
                      struct hx_overlap_table *t)
{
    const struct hx_json *pairs = field(r, root, "the top-level object", "pairs",
                                        HX_JSON_ARRAY);
    if (pairs == NULL) {
        return HX_EFORMAT;
    }
    char *filled = calloc((size_t)(t->npairs ? t->npairs : 1), 1);
    if (filled == NULL) {
        return HX_ERR(HX_ENOMEM, "overlap table %s: %d pairs", r->path, t->npairs);
    }
    int ret = HX_OK;
    for (int k = 0; k < pairs->n && ret == HX_OK; k++) {
        const struct hx_json *p = &pairs->items[k];
        const struct hx_json *ser;
        char where[32], a[16], b[16];
        snprintf(where, sizeof where, "pairs[%d]", k);
        if (p->type != HX_JSON_OBJECT) {
            ret = HX_ERR(HX_EFORMAT, "overlap table %s: %s (line %d) has type %s, expected "
                         "object", r->path, where, p->line, hx_json_type_name(p->type));
            break;
        }
        if (get_str(r, p, where, "a", a, sizeof a) != HX_OK ||
            get_str(r, p, where, "b", b, sizeof b) != HX_OK) {
            ret = HX_EFORMAT;
            break;
        }
        int i = key_index(t, a), j = key_index(t, b);
        if (i < 0 || i >= t->nfwd || j < t->nfwd) {
            ret = HX_ERR(HX_EFORMAT, "overlap table %s: %s (line %d) pairs \"%s\" with \"%s\"; "
                         "\"a\" must be a forward key F0..F%d and \"b\" a backward key "
                         "B0..B%d", r->path, where, p->line, a, b, t->nfwd - 1, t->nbwd - 1);
            break;
        }
        int idx = i * t->nbwd + (j - t->nfwd);
        struct hx_overlap_pair *d = &t->pairs[idx];
        if (filled[idx]) {
            ret = HX_ERR(HX_EFORMAT, "overlap table %s: %s (line %d) repeats the pair (%s, %s)",
                         r->path, where, p->line, a, b);
            break;
        }
        filled[idx] = 1;
        if (get_num(r, p, where, "corun_ms", &d->corun_ms) != HX_OK ||
            get_num(r, p, where, "a_ms", &d->a_ms) != HX_OK ||
            get_num(r, p, where, "b_ms", &d->b_ms) != HX_OK ||
            get_num(r, p, where, "oef", &d->oef) != HX_OK ||
            (ser = field(r, p, where, "serialized", HX_JSON_BOOL)) == NULL) {
            ret = HX_EFORMAT;
            break;
        }
        d->serialized = ser->num != 0;
        if (!(d->corun_ms >= 0) || !(d->a_ms >= 0) || !(d->b_ms >= 0)) {
            ret = HX_ERR(HX_EFORMAT, "overlap table %s: %s (line %d) has a negative time",
                         r->path, where, p->line);
        }
    }
    for (int idx = 0; idx < t->npairs && ret == HX_OK; idx++) {
        if (!filled[idx]) {
            const struct hx_overlap_pair *d = &t->pairs[idx];
            ret = HX_ERR(HX_EFORMAT, "overlap table %s: \"pairs\" has no entry for (%s, %s); "
                         "every forward op must be paired with every backward op, regenerate "
                         "the table with helix profile-overlap", r->path, t->ops[d->a].key,
                         t->ops[d->b].key);
        }
    }
    free(filled);
    return ret;
}

int hx_overlap_table_load(const char *path, struct hx_overlap_table *t)
{
    memset(t, 0, sizeof *t);
    size_t n = 0;
    char *text = hx_json_slurp(path, &n);
    if (text == NULL) {
        return errno == ENOMEM ? HX_ERR(HX_ENOMEM, "reading overlap table %s", path)
                               : HX_ERR(HX_EIO, "cannot open overlap table %s: %s; create it "
                                        "with helix profile-overlap --out %s", path,
                                        strerror(errno), path);
    }
    if (memchr(text, '\0', n) != NULL) {
        free(text);
        return HX_ERR(HX_EFORMAT, "overlap table %s holds a NUL byte: not a JSON text", path);
    }
    struct hx_json root;
    char msg[256];
    int ret = hx_json_parse(text, n, &root, msg, sizeof msg);
    free(text);
    if (ret != 0) {
        hx_json_free(&root);
        return HX_ERR(HX_EFORMAT, "overlap table %s is not valid JSON: %s", path, msg);
    }
    struct reader r = { path };
    const struct hx_json *schema;
    ret = HX_OK;
    if (root.type != HX_JSON_OBJECT) {
        ret = HX_ERR(HX_EFORMAT, "overlap table %s: the top-level value has type %s, expected "
                     "object",
                     path, hx_json_type_name(root.type));
    } else if ((schema = field(&r, &root, "the top-level object", "schema",
                               HX_JSON_STRING)) == NULL) {
        ret = HX_EFORMAT;
    } else if (strcmp(schema->str, HX_OVERLAP_SCHEMA) != 0) {
        ret = HX_ERR(HX_EFORMAT, "overlap table %s has schema \"%s\", this helix reads \"%s\"; "
                     "regenerate it with this version's helix profile-overlap", path,
                     schema->str, HX_OVERLAP_SCHEMA);
    }
    struct hx_overlap_model model = { 0 };
    int layer = 0, workers = 0, ranks = 0, repeats = 0;
    char host[128] = "", date[64] = "";
    const char *top = "the top-level object";
    if (ret == HX_OK) {
        ret = read_model(&r, &root, &model);
    }
    if (ret == HX_OK) {
        ret = get_int(&r, &root, top, "layer", &layer);
    }
    ret = ret == HX_OK ? get_int(&r, &root, top, "workers", &workers) : ret;
    ret = ret == HX_OK ? get_int(&r, &root, top, "ranks", &ranks) : ret;
    ret = ret == HX_OK ? get_int(&r, &root, top, "repeats", &repeats) : ret;
    ret = ret == HX_OK ? get_str(&r, &root, top, "host", host, sizeof host) : ret;
    ret = ret == HX_OK ? get_str(&r, &root, top, "date", date, sizeof date) : ret;
    ret = ret == HX_OK ? read_ops(&r, &root, t) : ret;
    ret = ret == HX_OK ? read_pairs(&r, &root, t) : ret;
    hx_json_free(&root);
    if (ret != HX_OK) {
        hx_overlap_table_free(t);
        return ret;
    }
    t->model = model;
    t->layer = layer;
    t->workers = workers;
    t->ranks = ranks;
    t->repeats = repeats;
    snprintf(t->host, sizeof t->host, "%s", host);
    snprintf(t->date, sizeof t->date, "%s", date);
    return HX_OK;
}
