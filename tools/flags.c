/* SPDX-License-Identifier: MIT */
/* tools/flags.c: one table-driven parser for argv, config files and checkpoint settings.
 * Accepts "--name value" and "--name=value"; numbers must parse completely and lie in the
 * flag's range; an unknown name is answered with the nearest valid one (edit distance).
 * Every value remembers its origin, so a later source (argv > config > checkpoint > preset
 * > default) wins regardless of the order in which sources are read. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    s->npool = 0;
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

static const char *nearest(const struct flag_set *s, const char *name)
{
    int best = 0, bestd = 1000;
    for (int k = 0; k < s->n; k++) {
        int d = distance(name, s->flags[k].name);
        if (d < bestd) {
            bestd = d;
            best = k;
        }
    }
    return s->flags[best].name;
}

void flags_format(const struct flag *f, char *buf, size_t n)
{
    switch (f->type) {
    case FLAG_INT: snprintf(buf, n, "%d", *(int *)f->dest); break;
    case FLAG_FLOAT: snprintf(buf, n, "%.9g", (double)*(float *)f->dest); break;
    case FLAG_BOOL: snprintf(buf, n, "%d", *(int *)f->dest); break;
    case FLAG_STRING: {
        const char *v = *(const char **)f->dest;
        snprintf(buf, n, "%s", v ? v : "");
        break;
    }
    }
}

int flags_set(struct flag_set *s, const char *name, const char *v, enum flag_origin origin,
              const char *where)
{
    const struct flag *f = flags_find(s, name);
    if (f == NULL) {
        fprintf(stderr, "helix: error: %sunknown flag --%s; did you mean --%s? (see --help)\n",
                where, name, nearest(s, name));
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
                    v);
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
            fprintf(stderr, "helix: error: %s--%s expects a number, got '%s'\n", where, f->name, v);
            return 2;
        }
        if (x < f->min || x > f->max) {
            fprintf(stderr, "helix: error: %s--%s %g is out of range; use %g..%g\n", where,
                    f->name, x, f->min, f->max);
            return 2;
        }
        *(float *)f->dest = (float)x;
    } else {
        if (origin != FROM_ARGV) { /* argv strings live as long as the process */
            if (s->npool == FLAGS_STRPOOL || (s->pool[s->npool] = strdup(v)) == NULL) {
                fprintf(stderr, "helix: error: %stoo many string settings\n", where);
                return 2;
            }
            v = s->pool[s->npool++];
        }
        *(const char **)f->dest = *v ? v : NULL;
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
                    "--help\n", arg);
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

int flags_parse_text(struct flag_set *s, const char *text, enum flag_origin origin,
                     const char *where)
{
    int lineno = 0;
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[1024], at[600];
        lineno++;
        if (len >= sizeof line) {
            fprintf(stderr, "helix: error: %s:%d: line longer than %zu characters\n", where,
                    lineno, sizeof line - 1);
            return 2;
        }
        memcpy(line, p, len);
        line[len] = '\0';
        p += len + (nl != NULL);
        char *hash = strchr(line, '#');
        if (hash) {
            *hash = '\0';
        }
        char *k = line;
        while (*k == ' ' || *k == '\t' || *k == '\r') {
            k++;
        }
        if (*k == '\0') {
            continue;
        }
        char *eq = strchr(k, '=');
        if (eq == NULL) {
            fprintf(stderr, "helix: error: %s:%d: expected 'key = value', got '%s'\n", where,
                    lineno, k);
            return 2;
        }
        char *ke = eq;
        while (ke > k && (ke[-1] == ' ' || ke[-1] == '\t')) {
            ke--;
        }
        *ke = '\0';
        char *v = eq + 1;
        while (*v == ' ' || *v == '\t') {
            v++;
        }
        char *ve = v + strlen(v);
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t' || ve[-1] == '\r')) {
            *--ve = '\0';
        }
        if (strncmp(k, "--", 2) == 0) {
            k += 2;
        }
        snprintf(at, sizeof at, "%s:%d: ", where, lineno);
        if (flags_set(s, k, v, origin, at) != 0) {
            return 2;
        }
    }
    return 0;
}

int flags_parse_file(struct flag_set *s, const char *path, enum flag_origin origin)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "helix: error: cannot open config file '%s': %s; check --config\n", path,
                strerror(errno));
        return 2;
    }
    char *text = NULL;
    size_t cap = 0;
    ssize_t n = getdelim(&text, &cap, '\0', f);
    int err = ferror(f);
    fclose(f);
    if (n < 0 && err) {
        free(text);
        fprintf(stderr, "helix: error: cannot read config file '%s'\n", path);
        return 2;
    }
    int ret = flags_parse_text(s, n > 0 ? text : "", origin, path);
    free(text);
    return ret;
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
        char v[512];
        flags_format(&s->flags[k], v, sizeof v);
        int w = snprintf(buf + off, len - off, "%s = %s\n", s->flags[k].name, v);
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
        }
        snprintf(left, sizeof left, "--%s%s", f->name,
                 f->type == FLAG_BOOL ? "" : f->type == FLAG_STRING ? " STR" : " N");
        printf("  %-30s %s [%s]\n", left, f->help, def);
    }
}
