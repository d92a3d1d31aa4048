/* SPDX-License-Identifier: MIT */
/* tools/flags.c: one table-driven parser for every subcommand.  Accepts "--name value" and
 * "--name=value"; numbers must parse completely and lie in the flag's range; an unknown flag
 * is answered with the nearest valid name (edit distance). */
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

static void show_default(const struct flag *f, char *buf, size_t n)
{
    switch (f->type) {
    case FLAG_INT: snprintf(buf, n, "%d", *(int *)f->dest); break;
    case FLAG_FLOAT: snprintf(buf, n, "%g", (double)*(float *)f->dest); break;
    case FLAG_BOOL: snprintf(buf, n, "%s", *(int *)f->dest ? "on" : "off"); break;
    case FLAG_STRING: {
        const char *s = *(const char **)f->dest;
        snprintf(buf, n, "%s", s ? s : "none");
        break;
    }
    }
}

void flags_usage(const struct flag *flags, int nflags, const char *usage)
{
    printf("%s\n\nflags (default in brackets):\n", usage);
    for (int i = 0; i < nflags; i++) {
        char def[64], left[64];
        show_default(&flags[i], def, sizeof def);
        snprintf(left, sizeof left, "--%s%s", flags[i].name,
                 flags[i].type == FLAG_BOOL ? "" : flags[i].type == FLAG_STRING ? " STR" : " N");
        printf("  %-30s %s [%s]\n", left, flags[i].help, def);
    }
}

static int set_value(const struct flag *f, const char *v)
{
    char *end;
    errno = 0;
    if (f->type == FLAG_INT) {
        long x = strtol(v, &end, 10);
        if (*v == '\0' || *end != '\0' || errno != 0) {
            fprintf(stderr, "helix: error: --%s expects an integer, got '%s'\n", f->name, v);
            return 2;
        }
        if (x < f->min || x > f->max) {
            fprintf(stderr, "helix: error: --%s %ld is out of range; use %.0f..%.0f\n", f->name,
                    x, f->min, f->max);
            return 2;
        }
        *(int *)f->dest = (int)x;
    } else if (f->type == FLAG_FLOAT) {
        double x = strtod(v, &end);
        if (*v == '\0' || *end != '\0' || errno != 0 || !isfinite(x)) {
            fprintf(stderr, "helix: error: --%s expects a number, got '%s'\n", f->name, v);
            return 2;
        }
        if (x < f->min || x > f->max) {
            fprintf(stderr, "helix: error: --%s %g is out of range; use %g..%g\n", f->name, x,
                    f->min, f->max);
            return 2;
        }
        *(float *)f->dest = (float)x;
    } else {
        *(const char **)f->dest = v;
    }
    return 0;
}

int flags_parse(const struct flag *flags, int nflags, int argc, char **argv, int first,
                const char *usage)
{
    for (int i = first; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            flags_usage(flags, nflags, usage);
            return 1;
        }
        if (strncmp(arg, "--", 2) != 0) {
            fprintf(stderr, "helix: error: unexpected argument '%s'; flags start with --, see "
                    "--help\n", arg);
            return 2;
        }
        char name[64];
        const char *eq = strchr(arg + 2, '=');
        size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        snprintf(name, sizeof name, "%.*s", (int)len, arg + 2);
        const struct flag *f = NULL;
        int best = -1, bestd = 1000;
        for (int k = 0; k < nflags; k++) {
            if (strcmp(flags[k].name, name) == 0) {
                f = &flags[k];
            }
            int d = distance(name, flags[k].name);
            if (d < bestd) {
                bestd = d;
                best = k;
            }
        }
        if (f == NULL) {
            fprintf(stderr, "helix: error: unknown flag --%s; did you mean --%s? (see --help)\n",
                    name, flags[best].name);
            return 2;
        }
        if (f->type == FLAG_BOOL) {
            if (eq) {
                fprintf(stderr, "helix: error: --%s takes no value\n", f->name);
                return 2;
            }
            *(int *)f->dest = 1;
            continue;
        }
        const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (v == NULL) {
            fprintf(stderr, "helix: error: --%s needs a value (see --help)\n", f->name);
            return 2;
        }
        int ret = set_value(f, v);
        if (ret != 0) {
            return ret;
        }
    }
    return 0;
}
