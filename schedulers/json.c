/* SPDX-License-Identifier: MIT */
/* schedulers/json.c: a recursive-descent JSON reader (RFC 8259 values) building a tree, for
 * the planners' input files.  Depth is bounded (64) so a hostile file cannot exhaust the
 * stack; numbers go through strtod and must be finite.  Test: tests/schedulers/plan_io.c */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/error.h"
#include "schedulers/json.h"

#define MAX_DEPTH 64

struct parser {
    const char *s, *p;
    char *err;
    size_t errlen;
    int failed;
};

static void fail(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct parser *ps, const char *fmt, ...)
{
    if (ps->failed) {
        return;
    }
    ps->failed = 1;
    int line = 1, col = 1;
    for (const char *q = ps->s; q < ps->p; q++) {
        if (*q == '\n') {
            line++, col = 1;
        } else {
            col++;
        }
    }
    int k = snprintf(ps->err, ps->errlen, "line %d, column %d: ", line, col);
    va_list ap;
    va_start(ap, fmt);
    if (k >= 0 && (size_t)k < ps->errlen) {
        vsnprintf(ps->err + k, ps->errlen - (size_t)k, fmt, ap);
    }
    va_end(ap);
}

static void skip_ws(struct parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r') {
        ps->p++;
    }
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* A string literal at ps->p (the opening quote), decoded into a new buffer. */
static char *parse_string(struct parser *ps)
{
    ps->p++; /* opening quote */
    size_t cap = 32, n = 0;
    char *out = malloc(cap);
    if (out == NULL) {
        fail(ps, "out of memory");
        return NULL;
    }
    for (;;) {
        unsigned char c = (unsigned char)*ps->p;
        if (c == '\0') {
            fail(ps, "unterminated string");
            break;
        }
        if (c < 0x20) {
            fail(ps, "control character in a string");
            break;
        }
        if (n + 4 >= cap) {
            cap *= 2;
            char *grown = realloc(out, cap);
            if (grown == NULL) {
                fail(ps, "out of memory");
                break;
            }
            out = grown;
        }
        if (c == '"') {
            ps->p++;
            out[n] = '\0';
            return out;
        }
        if (c != '\\') {
            out[n++] = (char)c;
            ps->p++;
            continue;
        }
        char e = ps->p[1];
        ps->p += 2;
        switch (e) {
        case '"': out[n++] = '"'; break;
        case '\\': out[n++] = '\\'; break;
        case '/': out[n++] = '/'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
            unsigned cp = 0;
            for (int k = 0; k < 4; k++) {
                int h = hexval(ps->p[k]);
                if (h < 0) {
                    fail(ps, "bad \\u escape");
                    free(out);
                    return NULL;
                }
                cp = cp * 16 + (unsigned)h;
            }
            ps->p += 4;
            if (cp < 0x80) { /* UTF-8 of a code point of the basic plane */
                out[n++] = (char)cp;
            } else if (cp < 0x800) {
                out[n++] = (char)(0xC0 | (cp >> 6));
                out[n++] = (char)(0x80 | (cp & 0x3F));
            } else {
                out[n++] = (char)(0xE0 | (cp >> 12));
                out[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                out[n++] = (char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default:
            ps->p -= 1;
            fail(ps, "bad escape '\\%c' in a string", e ? e : '0');
            free(out);
            return NULL;
        }
    }
    free(out);
    return NULL;
}

static int parse_value(struct parser *ps, struct hx_pjson *v, int depth);

/* Append one item (and its key for objects) to a container. */
static int push_item(struct parser *ps, struct hx_pjson *v, char *key, int *cap)
{
    if (v->n == *cap) {
        int nc = *cap ? *cap * 2 : 8;
        struct hx_pjson *items = realloc(v->items, sizeof *items * (size_t)nc);
        if (items == NULL) {
            fail(ps, "out of memory");
            return -1;
        }
        v->items = items;
        if (v->type == HX_PJSON_OBJECT) {
            char **keys = realloc(v->keys, sizeof *keys * (size_t)nc);
            if (keys == NULL) {
                fail(ps, "out of memory");
                return -1;
            }
            v->keys = keys;
        }
        *cap = nc;
    }
    memset(&v->items[v->n], 0, sizeof v->items[v->n]);
    if (v->type == HX_PJSON_OBJECT) {
        v->keys[v->n] = key;
    }
    v->n++;
    return 0;
}

static int parse_container(struct parser *ps, struct hx_pjson *v, int depth)
{
    int is_obj = *ps->p == '{', cap = 0;
    char close = is_obj ? '}' : ']';
    v->type = is_obj ? HX_PJSON_OBJECT : HX_PJSON_ARRAY;
    ps->p++;
    skip_ws(ps);
    if (*ps->p == close) {
        ps->p++;
        return 0;
    }
    for (;;) {
        char *key = NULL;
        skip_ws(ps);
        if (is_obj) {
            if (*ps->p != '"') {
                fail(ps, "expected a member name in quotes");
                return -1;
            }
            if ((key = parse_string(ps)) == NULL) {
                return -1;
            }
            skip_ws(ps);
            if (*ps->p != ':') {
                fail(ps, "expected ':' after member \"%s\"", key);
                free(key);
                return -1;
            }
            ps->p++;
        }
        if (push_item(ps, v, key, &cap) != 0) {
            free(key);
            return -1;
        }
        if (parse_value(ps, &v->items[v->n - 1], depth + 1) != 0) {
            return -1;
        }
        skip_ws(ps);
        if (*ps->p == ',') {
            ps->p++;
            continue;
        }
        if (*ps->p == close) {
            ps->p++;
            return 0;
        }
        fail(ps, "expected ',' or '%c'", close);
        return -1;
    }
}

static int parse_value(struct parser *ps, struct hx_pjson *v, int depth)
{
    if (depth > MAX_DEPTH) {
        fail(ps, "nested deeper than %d levels", MAX_DEPTH);
        return -1;
    }
    skip_ws(ps);
    char c = *ps->p;
    if (c == '{' || c == '[') {
        return parse_container(ps, v, depth);
    }
    if (c == '"') {
        v->type = HX_PJSON_STRING;
        v->str = parse_string(ps);
        return v->str ? 0 : -1;
    }
    static const struct {
        const char *word;
        enum hx_pjson_type type;
        double num;
    } words[] = { { "true", HX_PJSON_BOOL, 1 }, { "false", HX_PJSON_BOOL, 0 },
                  { "null", HX_PJSON_NULL, 0 } };
    for (size_t k = 0; k < sizeof words / sizeof words[0]; k++) {
        size_t len = strlen(words[k].word);
        if (strncmp(ps->p, words[k].word, len) == 0) {
            v->type = words[k].type;
            v->num = words[k].num;
            ps->p += len;
            return 0;
        }
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        char *end;
        errno = 0;
        double x = strtod(ps->p, &end);
        if (end == ps->p || !isfinite(x)) {
            fail(ps, "bad number");
            return -1;
        }
        v->type = HX_PJSON_NUMBER;
        v->num = x;
        ps->p = end;
        return 0;
    }
    if (c == '\0') {
        fail(ps, "unexpected end of the text");
    } else {
        fail(ps, "unexpected character '%c'", c);
    }
    return -1;
}

int hx_pjson_parse(const char *text, struct hx_pjson *root, char *err, size_t errlen)
{
    struct parser ps = { text, text, err, errlen, 0 };
    memset(root, 0, sizeof *root);
    if (parse_value(&ps, root, 0) == 0) {
        skip_ws(&ps);
        if (*ps.p == '\0') {
            return HX_OK;
        }
        fail(&ps, "text after the end of the value");
    }
    hx_pjson_free(root);
    return HX_EFORMAT;
}

void hx_pjson_free(struct hx_pjson *v)
{
    if (v == NULL) {
        return;
    }
    for (int i = 0; i < v->n; i++) {
        hx_pjson_free(&v->items[i]);
        if (v->type == HX_PJSON_OBJECT) {
            free(v->keys[i]);
        }
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    memset(v, 0, sizeof *v);
}

const struct hx_pjson *hx_pjson_get(const struct hx_pjson *v, const char *key)
{
    if (v == NULL || v->type != HX_PJSON_OBJECT) {
        return NULL;
    }
    for (int i = 0; i < v->n; i++) {
        if (strcmp(v->keys[i], key) == 0) {
            return &v->items[i];
        }
    }
    return NULL;
}

char *hx_pjson_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf != NULL) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1) { /* end of file (or an error, checked below) */
            break;
        }
        cap *= 2;
        char *grown = realloc(buf, cap);
        if (grown == NULL) {
            free(buf);
            errno = ENOMEM;
        }
        buf = grown;
    }
    int bad = ferror(f);
    fclose(f);
    if (buf != NULL && bad) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    if (buf != NULL) {
        buf[n] = '\0';
        if (strlen(buf) != n) {
            free(buf);
            errno = EILSEQ; /* a NUL byte: not a text file */
            return NULL;
        }
    }
    return buf;
}

void hx_pjson_put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            fprintf(f, "\\%c", c);
        } else if (c < 0x20) {
            fprintf(f, "\\u%04x", c);
        } else {
            fputc(c, f);
        }
    }
    fputc('"', f);
}
