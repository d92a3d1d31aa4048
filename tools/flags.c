/* SPDX-License-Identifier: MIT */
/* tools/flags.c: one table-driven parser for argv, config files and checkpoint settings.
 * Accepts "--name value" and "--name=value"; numbers must parse completely and lie in the
 * flag's range; an unknown name is answered with the nearest valid one (edit distance), and
 * only when one is near.  An empty value is refused (it would silently switch a path or a
 * mode off) except for FLAG_TEXT and in a checkpoint's settings, where flags_write wrote an
 * unset string as "", and a control byte in a FLAG_STRING is refused (it could reach a later
 * message raw).  A value that would not survive a `key = value` line (empty text, a
 * '#', a quote, edge blanks, control bytes) is written double-quoted with C escapes, and read
 * back the same.  Every message that echoes input escapes it (flags_esc).
 * Every value remembers its origin, so a later source (argv > config > checkpoint > preset
 * > default) wins regardless of the order in which sources are read.
 * Tests: tests/cli/bad_input.sh, tests/cli/hostile.sh, tests/fuzz/config.c. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/error.h"
#include "tools/tools.h"

static int distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    int row[128];
    if (lb >= sizeof row / sizeof row[0]) {
        return 1000;
    }
    for (size_t j = 0; j <= lb; j++) {
        row[j] = (int)j;
    }
    for (size_t i = 1; i <= la; i++) {
        int prev = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int cur = row[j];
            int sub = prev + (a[i - 1] != b[j - 1]);
            int del = row[j] + 1, ins = row[j - 1] + 1;
            row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
            prev = cur;
        }
    }
    return row[lb];
}

void flags_init(struct flag_set *s, const struct flag *flags, int n)
{
    memset(s, 0, sizeof *s);
    s->flags = flags;
    s->n = n < FLAGS_MAX ? n : FLAGS_MAX;
}

void flags_free(struct flag_set *s)
{
    for (int i = 0; i < s->npool; i++) {
        free(s->pool[i]);
    }
    free(s->pool);
    s->pool = NULL;
    s->npool = s->cap = 0;
}

const struct flag *flags_find(const struct flag_set *s, const char *name)
{
    for (int k = 0; k < s->n; k++) {
        if (strcmp(s->flags[k].name, name) == 0) {
            return &s->flags[k];
        }
    }
    return NULL;
}

/* Length of the UTF-8 sequence at p (2..4) and its code point, or 0 if it is not one. */
static int utf8_seq(const unsigned char *p, unsigned *cp)
{
    int n = p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;
    if (n == 0 || p[0] > 0xf4) {
        return 0;
    }
    unsigned c = p[0] & (0x7f >> n);
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            return 0;
        }
        c = c << 6 | (p[i] & 0x3f);
    }
    static const unsigned least[5] = { 0, 0, 0x80, 0x800, 0x10000 };
    if (c < least[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
        return 0; /* overlong, beyond Unicode, or a surrogate */
    }
    *cp = c;
    return n;
}

/* Code points that print as nothing, as a plain blank, or reorder the text around them: C1
 * controls, the soft hyphen, Unicode spaces, the byte-order mark, zero-width and bidirectional
 * marks (a name holding one looks like another) */
static int invisible(unsigned c)
{
    return (c >= 0x80 && c <= 0xa0) || c == 0xad || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200f) || (c >= 0x2028 && c <= 0x202f) ||
           (c >= 0x205f && c <= 0x206f) || c == 0x3000 || c == 0xfeff;
}

const char *flags_esc(const char *s)
{
    static char ring[8][1024]; /* messages use a few at once; main thread only */
    static int next;
    char *out = ring[next++ % 8];
    size_t o = 0, cap = sizeof ring[0] - 4; /* room for "..." and the NUL */
    const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");
    while (*p != '\0') {
        char piece[16];
        unsigned cp;
        int n = *p >= 0x80 ? utf8_seq(p, &cp) : 0;
        if (*p >= 0x20 && *p < 0x7f) {
            piece[0] = (char)*p, piece[1] = '\0', n = 1;
        } else if (n > 0 && !invisible(cp)) {
            memcpy(piece, p, (size_t)n), piece[n] = '\0';
        } else if (n > 0) {
            snprintf(piece, sizeof piece, "\\u%04x", cp);
        } else {
            snprintf(piece, sizeof piece, "\\x%02x", *p), n = 1;
        }
        size_t len = strlen(piece);
        if (o + len > cap) {
            memcpy(out + o, "...", 3), o += 3;
            break;
        }
        memcpy(out + o, piece, len), o += len;
        p += n;
    }
    out[o] = '\0';
    return out;
}

/* The flag a mistyped name most likely meant, or NULL when none is close: at most a third
 * of the longer name's letters differ (and at least 2 may). */
static const char *nearest(const struct flag_set *s, const char *name)
{
    int best = -1, bestd = INT_MAX;
    for (int k = 0; k < s->n; k++) {
        int d = distance(name, s->flags[k].name);
        if (d < bestd) {
            bestd = d;
            best = k;
        }
    }
    if (best < 0) {
        return NULL;
    }
    size_t la = strlen(name), lb = strlen(s->flags[best].name), l = la > lb ? la : lb;
    return bestd <= 2 || (size_t)bestd * 3 <= l ? s->flags[best].name : NULL;
}

/* "unknown flag" with the hint that helps: a known name with stray bytes around or inside
 * it (a byte-order mark, a blank, a control byte) is named as such, never "did you mean"
 * the same text; else the nearest name, if one is near. */
static void unknown_flag(const struct flag_set *s, const char *name, const char *where)
{
    char bare[64];
    size_t n = 0;
    for (const char *c = name; *c != '\0' && n + 1 < sizeof bare; c++) {
        if ((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-') {
            bare[n++] = *c;
        }
    }
    bare[n] = '\0';
    if (strcmp(bare, name) != 0 && flags_find(s, bare) != NULL) {
        fprintf(stderr, "helix: error: %sunknown flag --%s: --%s with stray bytes in it "
                "(a byte-order mark, a blank or a control character); retype it\n", where,
                flags_esc(name), bare);
        return;
    }
    const char *near = nearest(s, name);
    if (near != NULL) {
        fprintf(stderr, "helix: error: %sunknown flag --%s; did you mean --%s? (see --help)\n",
                where, flags_esc(name), near);
    } else {
        fprintf(stderr, "helix: error: %sunknown flag --%s; see --help for the flags\n", where,
                flags_esc(name));
    }
}

void flags_format(const struct flag *f, char *buf, size_t n)
{
    switch (f->type) {
    case FLAG_INT: snprintf(buf, n, "%d", *(int *)f->dest); break;
    case FLAG_FLOAT: snprintf(buf, n, "%.9g", (double)*(float *)f->dest); break;
    case FLAG_BOOL: snprintf(buf, n, "%d", *(int *)f->dest); break;
    case FLAG_STRING:
    case FLAG_TEXT: {
        const char *v = *(const char **)f->dest;
        snprintf(buf, n, "%s", v ? v : "");
        break;
    }
    }
}

void flags_repeatable(struct flag_set *s, const char *name)
{
    const struct flag *f = flags_find(s, name);
    HX_ASSERT(f != NULL && f->type == FLAG_STRING, "flags_repeatable(%s): no such path flag",
              name);
    s->repeat[f - s->flags] = 1;
}

/* Keep @p str (malloc'd) until flags_free; 0, or -1 out of memory (str not kept). */
static int pool_add(struct flag_set *s, char *str)
{
    if (s->npool == s->cap) {
        int cap = s->cap > 0 ? 2 * s->cap : 32;
        char **grown = realloc(s->pool, (size_t)cap * sizeof *grown);
        if (grown == NULL) {
            return -1;
        }
        s->pool = grown;
        s->cap = cap;
    }
    s->pool[s->npool++] = str;
    return 0;
}

int flags_set(struct flag_set *s, const char *name, const char *v, enum flag_origin origin,
              const char *where)
{
    const struct flag *f = flags_find(s, name);
    if (f == NULL) {
        unknown_flag(s, name, where);
        return 2;
    }
    int idx = (int)(f - s->flags);
    if (s->origin[idx] > origin) {
        return 0; /* a later source already decided this flag */
    }
    char *end;
    errno = 0;
    if (f->type == FLAG_INT || f->type == FLAG_BOOL) {
        long x = strtol(v, &end, 10);
        if (*v == '\0' || *end != '\0' || errno != 0) {
            fprintf(stderr, "helix: error: %s--%s expects an integer, got '%s'\n", where, f->name,
                    flags_esc(v));
            return 2;
        }
        double lo = f->type == FLAG_BOOL ? 0 : f->min, hi = f->type == FLAG_BOOL ? 1 : f->max;
        if (x < lo || x > hi) {
            fprintf(stderr, "helix: error: %s--%s %ld is out of range; use %.0f..%.0f\n", where,
                    f->name, x, lo, hi);
            return 2;
        }
        *(int *)f->dest = (int)x;
    } else if (f->type == FLAG_FLOAT) {
        double x = strtod(v, &end);
        if (*v == '\0' || *end != '\0' || errno != 0 || !isfinite(x)) {
            fprintf(stderr, "helix: error: %s--%s expects a number, got '%s'\n", where, f->name,
                    flags_esc(v));
            return 2;
        }
        if (x < f->min || x > f->max) {
            fprintf(stderr, "helix: error: %s--%s %g is out of range; use %g..%g\n", where,
                    f->name, x, f->min, f->max);
            return 2;
        }
        *(float *)f->dest = (float)x;
    } else {
        /* "" from a checkpoint is how flags_write stores an unset string; from a user it
         * would switch a path or a mode off without a word (--save "" saving nothing) */
        if (*v == '\0' && f->type == FLAG_STRING && origin != FROM_CHECKPOINT) {
            fprintf(stderr, "helix: error: %s--%s is given an empty value; give one, or leave "
                    "the flag out for its default\n", where, f->name);
            return 2;
        }
        /* a path, a name or a mode never holds a control byte: refused here, it can reach no
         * later message raw (a terminal escape in a config file, echoed by a file error) */
        for (const unsigned char *c = (const unsigned char *)v; f->type == FLAG_STRING && *c;
             c++) {
            if (*c < 0x20 || *c == 0x7f) {
                fprintf(stderr, "helix: error: %s--%s '%s' holds a control character (byte %d); "
                        "paths, names and modes cannot\n", where, f->name, flags_esc(v),
                        (int)(c - (const unsigned char *)v) + 1);
                return 2;
            }
        }
        if (origin != FROM_ARGV) { /* argv strings live as long as the process */
            char *copy = strdup(v);
            if (copy == NULL || pool_add(s, copy) != 0) {
                free(copy);
                fprintf(stderr, "helix: error: %sout of memory for the settings\n", where);
                return 2;
            }
            v = copy;
        }
        const char *had = *(const char **)f->dest;
        if (s->repeat[idx] && had != NULL && s->origin[idx] == origin && *v != '\0') {
            char *joined = malloc(strlen(had) + strlen(v) + 2);
            if (joined == NULL || pool_add(s, joined) != 0) {
                free(joined);
                fprintf(stderr, "helix: error: %sout of memory for the settings\n", where);
                return 2;
            }
            sprintf(joined, "%s:%s", had, v);
            v = joined;
        }
        *(const char **)f->dest = *v != '\0' || f->type == FLAG_TEXT ? v : NULL;
    }
    s->origin[idx] = (unsigned char)origin;
    return 0;
}

const char *flags_peek_argv(int argc, char **argv, int first, const char *name)
{
    size_t len = strlen(name);
    for (int i = first; i < argc; i++) {
        if (strncmp(argv[i], "--", 2) == 0 && strncmp(argv[i] + 2, name, len) == 0) {
            if (argv[i][2 + len] == '=') {
                return argv[i] + 3 + len;
            }
            if (argv[i][2 + len] == '\0' && i + 1 < argc) {
                return argv[i + 1];
            }
        }
    }
    return NULL;
}

int flags_parse_argv(struct flag_set *s, int argc, char **argv, int first, const char *usage)
{
    for (int i = first; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            flags_usage(s, usage);
            return 1;
        }
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
            fprintf(stderr, "helix: error: unexpected argument '%s'; flags start with --, see "
                    "--help\n", flags_esc(arg));
            return 2;
        }
        char name[64];
        const char *eq = strchr(arg + 2, '=');
        size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        snprintf(name, sizeof name, "%.*s", (int)len, arg + 2);
        const struct flag *f = flags_find(s, name);
        if (f != NULL && f->type == FLAG_BOOL && eq == NULL) {
            if (flags_set(s, name, "1", FROM_ARGV, "") != 0) {
                return 2;
            }
            continue;
        }
        const char *v = eq ? eq + 1 : NULL;
        if (v == NULL && f != NULL) {
            if (i + 1 >= argc) {
                fprintf(stderr, "helix: error: --%s needs a value (see --help)\n", name);
                return 2;
            }
            v = argv[++i];
        }
        if (flags_set(s, name, v ? v : "", FROM_ARGV, "") != 0) {
            return 2;
        }
    }
    return 0;
}

/* The value after "key =" up to a '#' comment, blanks trimmed; or a double-quoted value with
 * C escapes (\\ \" \n \t \r \xNN), which may hold '#', blanks and nothing at all.  The
 * result is written over @p v itself (it only gets shorter).  NULL if a quote is unclosed,
 * an escape unknown, or text follows the closing quote. */
static char *parse_value(char *v)
{
    while (*v == ' ' || *v == '\t') {
        v++;
    }
    if (*v != '"') {
        char *hash = strchr(v, '#');
        if (hash != NULL) {
            *hash = '\0';
        }
        char *ve = v + strlen(v);
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t' || ve[-1] == '\r')) {
            *--ve = '\0';
        }
        return v;
    }
    char *in = v + 1, *out = v;
    for (; *in != '"'; in++) {
        if (*in == '\0') {
            return NULL;
        }
        if (*in != '\\') {
            *out++ = *in;
            continue;
        }
        in++;
        switch (*in) {
        case '\\': *out++ = '\\'; break;
        case '"': *out++ = '"'; break;
        case 'n': *out++ = '\n'; break;
        case 't': *out++ = '\t'; break;
        case 'r': *out++ = '\r'; break;
        case 'x': {
            const char *digits = "0123456789abcdef";
            const char *h = in[1] ? strchr(digits, in[1] | 0x20) : NULL;
            const char *l = h && in[2] ? strchr(digits, in[2] | 0x20) : NULL;
            if (h == NULL || l == NULL || (h - digits) * 16 + (l - digits) == 0) {
                return NULL; /* two hex digits, and not a NUL */
            }
            *out++ = (char)((h - digits) * 16 + (l - digits));
            in += 2;
            break;
        }
        default: return NULL;
        }
    }
    for (in++; *in == ' ' || *in == '\t' || *in == '\r'; in++) {
    }
    if (*in != '\0' && *in != '#') {
        return NULL;
    }
    *out = '\0';
    return v;
}

/* One `key = value` line (modified in place): 0, or 2 after its message. */
static int parse_line(struct flag_set *s, char *line, enum flag_origin origin,
                      const char *where, int lineno)
{
    char at[600];
    char *k = line;
    while (*k == ' ' || *k == '\t' || *k == '\r') {
        k++;
    }
    size_t klen = strcspn(k, "=#");
    if (k[klen] != '=') { /* a comment, a blank line, or no '=' before the comment */
        k[klen] = '\0';
        char *e = k + klen;
        while (e > k && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) {
            *--e = '\0';
        }
        if (*k == '\0') {
            return 0;
        }
        fprintf(stderr, "helix: error: %s:%d: expected 'key = value', got '%s'\n",
                flags_esc(where), lineno, flags_esc(k));
        return 2;
    }
    char *eq = k + klen;
    char *ke = eq;
    while (ke > k && (ke[-1] == ' ' || ke[-1] == '\t')) {
        ke--;
    }
    *ke = '\0';
    if (strncmp(k, "--", 2) == 0) {
        k += 2;
    }
    snprintf(at, sizeof at, "%s:%d: ", flags_esc(where), lineno);
    char *v = parse_value(eq + 1);
    if (v == NULL) {
        fprintf(stderr, "helix: error: %sthe quoted value of %s is not closed or holds an "
                "unknown escape; write \"...\" with \\\\ \\\" \\n \\t \\r or \\xNN inside\n",
                at, flags_esc(k));
        return 2;
    }
    return flags_set(s, k, v, origin, at);
}

int flags_parse_text(struct flag_set *s, const char *text, enum flag_origin origin,
                     const char *where)
{
    int lineno = 0, ret = 0;
    const char *p = text;
    if (strncmp(p, "\xef\xbb\xbf", 3) == 0) { /* a UTF-8 byte-order mark, as editors save */
        p += 3;
    }
    while (*p && ret == 0) { /* lines of any length: a long path or prompt round-trips */
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char *line = malloc(len + 1);
        lineno++;
        if (line == NULL) {
            fprintf(stderr, "helix: error: %s:%d: out of memory for a line of %zu bytes\n",
                    flags_esc(where), lineno, len);
            return 2;
        }
        memcpy(line, p, len);
        line[len] = '\0';
        p += len + (nl != NULL);
        ret = parse_line(s, line, origin, where, lineno);
        free(line);
    }
    return ret;
}

int flags_parse_file(struct flag_set *s, const char *path, enum flag_origin origin)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "helix: error: cannot open config file '%s': %s; check --config\n",
                flags_esc(path), strerror(errno));
        return 2;
    }
    char *text = NULL;
    size_t cap = 0;
    ssize_t n = getdelim(&text, &cap, '\0', f);
    int err = ferror(f);
    if (n >= 0 && getc(f) != EOF) { /* a NUL byte ends the text getdelim read */
        free(text);
        fclose(f);
        fprintf(stderr, "helix: error: config file '%s' holds a NUL byte: it is binary, not "
                "'key = value' lines; check --config\n", flags_esc(path));
        return 2;
    }
    fclose(f);
    if (n < 0 && err) {
        free(text);
        fprintf(stderr, "helix: error: cannot read config file '%s'\n", flags_esc(path));
        return 2;
    }
    int ret = flags_parse_text(s, n > 0 ? text : "", origin, path);
    free(text);
    return ret;
}

/* Does the value need quotes to come back the same from a `key = value` line? */
static int needs_quotes(const char *v, int text)
{
    size_t n = strlen(v);
    if (n == 0) {
        return text; /* an empty string flag means unset; empty text is a value */
    }
    if (v[0] == ' ' || v[0] == '\t' || v[0] == '"' || v[n - 1] == ' ' || v[n - 1] == '\t') {
        return 1;
    }
    for (const unsigned char *c = (const unsigned char *)v; *c != '\0'; c++) {
        if (*c == '#' || *c == '\\' || *c < 0x20 || *c == 0x7f) {
            return 1;
        }
    }
    return 0;
}

/* @p v double-quoted with C escapes into buf[n]: 0, or -1 if it does not fit. */
static int quote(const char *v, char *buf, size_t n)
{
    size_t o = 0;
    if (n < 3) {
        return -1;
    }
    buf[o++] = '"';
    for (const unsigned char *c = (const unsigned char *)v; *c != '\0'; c++) {
        char piece[8];
        if (*c == '\\' || *c == '"') {
            snprintf(piece, sizeof piece, "\\%c", *c);
        } else if (*c == '\n') {
            snprintf(piece, sizeof piece, "\\n");
        } else if (*c < 0x20 || *c == 0x7f) {
            snprintf(piece, sizeof piece, "\\x%02x", *c);
        } else {
            piece[0] = (char)*c, piece[1] = '\0';
        }
        size_t len = strlen(piece);
        if (o + len + 2 > n) {
            return -1;
        }
        memcpy(buf + o, piece, len), o += len;
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return 0;
}

int flags_write(const struct flag_set *s, char *buf, size_t len, const char *const *skip)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int k = 0; k < s->n; k++) {
        int skipped = 0;
        for (const char *const *q = skip; q && *q && !skipped; q++) {
            skipped = strcmp(*q, s->flags[k].name) == 0;
        }
        if (skipped) {
            continue;
        }
        const struct flag *f = &s->flags[k];
        char num[64];
        const char *v = num;
        int w;
        if (f->type == FLAG_STRING || f->type == FLAG_TEXT) {
            v = *(const char **)f->dest != NULL ? *(const char **)f->dest : "";
        } else {
            flags_format(f, num, sizeof num);
        }
        if ((f->type == FLAG_STRING || f->type == FLAG_TEXT) &&
            needs_quotes(v, f->type == FLAG_TEXT)) {
            w = snprintf(buf + off, len - off, "%s = ", f->name);
            if (w < 0 || (size_t)w >= len - off ||
                quote(v, buf + off + w, len - off - (size_t)w - 1) != 0) {
                return -1;
            }
            strcat(buf + off, "\n");
            w = (int)strlen(buf + off);
        } else {
            w = snprintf(buf + off, len - off, "%s = %s\n", f->name, v);
        }
        if (w < 0 || (size_t)w >= len - off) {
            return -1;
        }
        off += (size_t)w;
    }
    return 0;
}

void flags_usage(const struct flag_set *s, const char *usage)
{
    printf("%s\n\nflags (default in brackets):\n", usage);
    for (int i = 0; i < s->n; i++) {
        const struct flag *f = &s->flags[i];
        char def[64], left[64];
        flags_format(f, def, sizeof def);
        if (f->type == FLAG_FLOAT) { /* %.9g round-trips in config files; %g reads better */
            snprintf(def, sizeof def, "%g", (double)*(float *)f->dest);
        } else if (f->type == FLAG_BOOL) {
            snprintf(def, sizeof def, "%s", *(int *)f->dest ? "on" : "off");
        } else if (f->type == FLAG_STRING && def[0] == '\0') {
            snprintf(def, sizeof def, "none");
        } else if (f->type == FLAG_TEXT && def[0] == '\0') {
            snprintf(def, sizeof def, "empty");
        }
        snprintf(left, sizeof left, "--%s%s", f->name,
                 f->type == FLAG_BOOL                               ? ""
                 : f->type == FLAG_STRING || f->type == FLAG_TEXT ? " STR"
                                                                   : " N");
        printf("  %-30s %s [%s]\n", left, f->help, def);
    }
}
