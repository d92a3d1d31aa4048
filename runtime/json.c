/* SPDX-License-Identifier: MIT */
/* runtime/json.c: the strict JSON reader of runtime/json.h, recursive descent over the text
 * in memory.  Grammar as RFC 8259: value = object | array | string | number | true | false |
 * null; numbers -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? converted by strtod; strings
 * with the seven escapes and \uXXXX (surrogate pairs joined, lone surrogates refused),
 * no raw control characters; hx_json_slurp reads a file for it.
 * Test: tests/schedulers/overlap_table.c, tests/schedulers/plan_io.c. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/json.h"

#define MAX_DEPTH 64

struct parser {
    const char *s, *end, *p;
    int line;
    const char *line_start;
    char *err;
    size_t errlen;
    int failed;
};

static int fail(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct parser *ps, const char *fmt, ...)
{
    if (!ps->failed) {
        int n = snprintf(ps->err, ps->errlen, "line %d, column %d: ", ps->line,
                         (int)(ps->p - ps->line_start) + 1);
        va_list ap;
        va_start(ap, fmt);
        if (n >= 0 && (size_t)n < ps->errlen) {
            vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
        }
        va_end(ap);
        ps->failed = 1;
    }
    return -1;
}

static void skip_ws(struct parser *ps)
{
    while (ps->p < ps->end) {
        char c = *ps->p;
        if (c == '\n') {
            ps->line++;
            ps->line_start = ps->p + 1;
        } else if (c != ' ' && c != '\t' && c != '\r') {
            return;
        }
        ps->p++;
    }
}

/* What the parser sees at p, for messages: "'x'" or "the end of the file". */
static const char *seen(const struct parser *ps, char *buf, size_t n)
{
    if (ps->p >= ps->end) {
        return "the end of the file";
    }
    unsigned char c = (unsigned char)*ps->p;
    if (isprint(c)) {
        snprintf(buf, n, "'%c'", c);
    } else {
        snprintf(buf, n, "byte 0x%02x", c);
    }
    return buf;
}

static int parse_value(struct parser *ps, struct hx_json *v, int depth);

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

static int read_u16(struct parser *ps, unsigned *u)
{
    *u = 0;
    for (int i = 0; i < 4; i++) {
        int h = ps->p < ps->end ? hexval(*ps->p) : -1;
        if (h < 0) {
            return fail(ps, "\\u needs four hexadecimal digits");
        }
        *u = *u * 16 + (unsigned)h;
        ps->p++;
    }
    return 0;
}

/* A string literal at p (on the opening quote) into a new NUL-terminated buffer. */
static int parse_string(struct parser *ps, char **out)
{
    ps->p++; /* the opening quote */
    size_t cap = 16, n = 0;
    char *buf = malloc(cap);
    if (buf == NULL) {
        return fail(ps, "out of memory");
    }
    for (;;) {
        if (ps->p >= ps->end) {
            free(buf);
            return fail(ps, "unterminated string");
        }
        unsigned char c = (unsigned char)*ps->p;
        unsigned cp = 0;
        int is_cp = 0;
        if (c == '"') {
            ps->p++;
            break;
        }
        if (c < 0x20) {
            free(buf);
            return fail(ps, "raw control character 0x%02x in a string; escape it", c);
        }
        if (c == '\\') {
            ps->p++;
            char e = ps->p < ps->end ? *ps->p++ : '\0';
            switch (e) {
            case '"': c = '"'; break;
            case '\\': c = '\\'; break;
            case '/': c = '/'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'u':
                if (read_u16(ps, &cp) != 0) {
                    free(buf);
                    return -1;
                }
                if (cp >= 0xdc00 && cp <= 0xdfff) {
                    free(buf);
                    return fail(ps, "lone low surrogate \\u%04x", cp);
                }
                if (cp >= 0xd800 && cp <= 0xdbff) {
                    unsigned lo;
                    if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u') {
                        free(buf);
                        return fail(ps, "high surrogate \\u%04x without its low half", cp);
                    }
                    ps->p += 2;
                    if (read_u16(ps, &lo) != 0 || lo < 0xdc00 || lo > 0xdfff) {
                        free(buf);
                        return fail(ps, "high surrogate \\u%04x without its low half", cp);
                    }
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                }
                if (cp == 0) {
                    free(buf);
                    return fail(ps, "\\u0000 in a string is not supported");
                }
                is_cp = 1;
                break;
            default:
                ps->p--;
                free(buf);
                return fail(ps, "unknown escape '\\%c'", e);
            }
        } else {
            ps->p++;
        }
        char enc[4];
        size_t k = 0;
        if (!is_cp) {
            enc[k++] = (char)c;
        } else if (cp < 0x80) {
            enc[k++] = (char)cp;
        } else if (cp < 0x800) {
            enc[k++] = (char)(0xc0 | (cp >> 6));
            enc[k++] = (char)(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
            enc[k++] = (char)(0xe0 | (cp >> 12));
            enc[k++] = (char)(0x80 | ((cp >> 6) & 0x3f));
            enc[k++] = (char)(0x80 | (cp & 0x3f));
        } else {
            enc[k++] = (char)(0xf0 | (cp >> 18));
            enc[k++] = (char)(0x80 | ((cp >> 12) & 0x3f));
            enc[k++] = (char)(0x80 | ((cp >> 6) & 0x3f));
            enc[k++] = (char)(0x80 | (cp & 0x3f));
        }
        if (n + k + 1 > cap) {
            cap *= 2;
            char *nb = realloc(buf, cap);
            if (nb == NULL) {
                free(buf);
                return fail(ps, "out of memory");
            }
            buf = nb;
        }
        memcpy(buf + n, enc, k);
        n += k;
    }
    buf[n] = '\0';
    *out = buf;
    return 0;
}

static int parse_number(struct parser *ps, struct hx_json *v)
{
    const char *q = ps->p;
    if (q < ps->end && *q == '-') {
        q++;
    }
    if (q >= ps->end || !isdigit((unsigned char)*q)) {
        return fail(ps, "a number needs digits");
    }
    if (*q == '0' && q + 1 < ps->end && isdigit((unsigned char)q[1])) {
        return fail(ps, "a number may not start with 0 followed by digits");
    }
    while (q < ps->end && isdigit((unsigned char)*q)) {
        q++;
    }
    if (q < ps->end && *q == '.') {
        q++;
        if (q >= ps->end || !isdigit((unsigned char)*q)) {
            ps->p = q;
            return fail(ps, "digits must follow the decimal point");
        }
        while (q < ps->end && isdigit((unsigned char)*q)) {
            q++;
        }
    }
    if (q < ps->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < ps->end && (*q == '+' || *q == '-')) {
            q++;
        }
        if (q >= ps->end || !isdigit((unsigned char)*q)) {
            ps->p = q;
            return fail(ps, "digits must follow the exponent");
        }
        while (q < ps->end && isdigit((unsigned char)*q)) {
            q++;
        }
    }
    char tmp[64];
    if ((size_t)(q - ps->p) >= sizeof tmp) {
        return fail(ps, "number longer than %zu characters", sizeof tmp - 1);
    }
    memcpy(tmp, ps->p, (size_t)(q - ps->p));
    tmp[q - ps->p] = '\0';
    errno = 0;
    v->num = strtod(tmp, NULL);
    if (!isfinite(v->num)) {
        return fail(ps, "number %s is out of range", tmp);
    }
    v->type = HX_JSON_NUMBER;
    ps->p = q;
    return 0;
}

/* Append an empty value to an array or object being built; returns it or NULL. */
static struct hx_json *push_item(struct parser *ps, struct hx_json *v, int *cap)
{
    if (v->n == *cap) {
        int nc = *cap ? *cap * 2 : 8;
        struct hx_json *ni = realloc(v->items, sizeof *ni * (size_t)nc);
        if (ni == NULL) {
            fail(ps, "out of memory");
            return NULL;
        }
        v->items = ni;
        if (v->type == HX_JSON_OBJECT) {
            char **nk = realloc(v->keys, sizeof *nk * (size_t)nc);
            if (nk == NULL) {
                fail(ps, "out of memory");
                return NULL;
            }
            v->keys = nk;
        }
        *cap = nc;
    }
    struct hx_json *it = &v->items[v->n];
    memset(it, 0, sizeof *it);
    if (v->type == HX_JSON_OBJECT) {
        v->keys[v->n] = NULL;
    }
    v->n++;
    return it;
}

/* object or array: p is on '{' or '['. */
static int parse_container(struct parser *ps, struct hx_json *v, int depth)
{
    int obj = *ps->p == '{', cap = 0;
    char close = obj ? '}' : ']', buf[16];
    v->type = obj ? HX_JSON_OBJECT : HX_JSON_ARRAY;
    if (depth >= MAX_DEPTH) {
        return fail(ps, "nesting deeper than %d levels", MAX_DEPTH);
    }
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return 0;
    }
    for (;;) {
        skip_ws(ps);
        char *key = NULL;
        if (obj) {
            if (ps->p >= ps->end || *ps->p != '"') {
                return fail(ps, "expected a key string, found %s", seen(ps, buf, sizeof buf));
            }
            if (parse_string(ps, &key) != 0) {
                return -1;
            }
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                fail(ps, "expected ':' after key \"%s\", found %s", key,
                     seen(ps, buf, sizeof buf));
                free(key);
                return -1;
            }
            ps->p++;
            skip_ws(ps);
        }
        struct hx_json *it = push_item(ps, v, &cap);
        if (it == NULL) {
            free(key);
            return -1;
        }
        if (obj) {
            v->keys[v->n - 1] = key;
        }
        if (parse_value(ps, it, depth + 1) != 0) {
            return -1;
        }
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            skip_ws(ps);
            if (ps->p < ps->end && *ps->p == close) {
                return fail(ps, "trailing comma before '%c'", close);
            }
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            return 0;
        }
        return fail(ps, "expected ',' or '%c' in %s, found %s", close, obj ? "object" : "array",
                    seen(ps, buf, sizeof buf));
    }
}

static int parse_value(struct parser *ps, struct hx_json *v, int depth)
{
    char buf[16];
    skip_ws(ps);
    v->line = ps->line;
    v->col = (int)(ps->p - ps->line_start) + 1;
    if (ps->p >= ps->end) {
        return fail(ps, "expected a value, found the end of the file");
    }
    char c = *ps->p;
    if (c == '{' || c == '[') {
        return parse_container(ps, v, depth);
    }
    if (c == '"') {
        v->type = HX_JSON_STRING;
        return parse_string(ps, &v->str);
    }
    if (c == '-' || isdigit((unsigned char)c)) {
        return parse_number(ps, v);
    }
    static const struct { const char *word; enum hx_json_type t; double num; } lit[] = {
        { "true", HX_JSON_BOOL, 1 }, { "false", HX_JSON_BOOL, 0 }, { "null", HX_JSON_NULL, 0 },
    };
    for (size_t i = 0; i < sizeof lit / sizeof lit[0]; i++) {
        size_t n = strlen(lit[i].word);
        if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, lit[i].word, n) == 0) {
            v->type = lit[i].t;
            v->num = lit[i].num;
            ps->p += n;
            return 0;
        }
    }
    return fail(ps, "expected a value, found %s", seen(ps, buf, sizeof buf));
}

int hx_json_parse(const char *text, size_t len, struct hx_json *out, char *err, size_t errlen)
{
    char scratch[8];
    struct parser ps = { .s = text, .end = text + len, .p = text, .line = 1,
                         .line_start = text, .err = err ? err : scratch,
                         .errlen = err ? errlen : sizeof scratch };
    memset(out, 0, sizeof *out);
    if (parse_value(&ps, out, 0) != 0) {
        return -1;
    }
    skip_ws(&ps);
    if (ps.p < ps.end) {
        char buf[16];
        return fail(&ps, "unexpected %s after the value", seen(&ps, buf, sizeof buf));
    }
    return 0;
}

void hx_json_free(struct hx_json *v)
{
    if (v == NULL) {
        return;
    }
    for (int i = 0; i < v->n; i++) {
        hx_json_free(&v->items[i]);
        if (v->keys != NULL) {
            free(v->keys[i]);
        }
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    memset(v, 0, sizeof *v);
}

const struct hx_json *hx_json_get(const struct hx_json *obj, const char *key)
{
    if (obj == NULL || obj->type != HX_JSON_OBJECT) {
        return NULL;
    }
    for (int i = 0; i < obj->n; i++) {
        if (obj->keys[i] != NULL && strcmp(obj->keys[i], key) == 0) {
            return &obj->items[i];
        }
    }
    return NULL;
}

const char *hx_json_type_name(enum hx_json_type t)
{
    static const char *names[] = { "null", "boolean", "number", "string", "array", "object" };
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

void hx_json_write_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            fprintf(f, "\\%c", *p);
        } else if (*p < 0x20) {
            fprintf(f, "\\u%04x", *p);
        } else {
            fputc(*p, f);
        }
    }
    fputc('"', f);
}

char *hx_json_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    char *text = NULL;
    size_t n = 0, cap = 0;
    for (;;) { /* the whole file: helix's JSON files are a few hundred kilobytes at most */
        if (cap - n < 2) {
            cap = cap ? cap * 2 : 65536;
            char *nt = realloc(text, cap);
            if (nt == NULL) {
                free(text);
                fclose(f);
                errno = ENOMEM;
                return NULL;
            }
            text = nt;
        }
        size_t got = fread(text + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) {
            break;
        }
    }
    if (ferror(f)) {
        int e = errno ? errno : EIO;
        free(text);
        fclose(f);
        errno = e;
        return NULL;
    }
    fclose(f);
    text[n] = '\0';
    *len = n;
    return text;
}
