/* SPDX-License-Identifier: MIT */
/* schedulers/json.h: a small JSON reader for the planners' files (overlap tables, plans).
 * Parses a whole text into a tree of values; errors say line:column and what was expected.
 * Strings keep ASCII and UTF-8 as given; \uXXXX escapes are decoded to UTF-8 (no surrogate
 * pairs: the files we read are ASCII).  Internal: not part of the installed API.
 * Test: tests/schedulers/plan_io.c */
#ifndef HX_SCHED_PJSON_H
#define HX_SCHED_PJSON_H

#include <stddef.h>
#include <stdio.h>

enum hx_pjson_type { HX_PJSON_NULL, HX_PJSON_BOOL, HX_PJSON_NUMBER, HX_PJSON_STRING, HX_PJSON_ARRAY,
                    HX_PJSON_OBJECT };

struct hx_pjson {
    enum hx_pjson_type type;
    double num;                /* NUMBER, BOOL (0/1) */
    char *str;                 /* STRING */
    int n;                     /* ARRAY, OBJECT: items */
    struct hx_pjson *items;     /* ARRAY, OBJECT: values */
    char **keys;               /* OBJECT: keys of items */
};

/**
 * Parse @p text (NUL-terminated) into @p root.  On error returns HX_EFORMAT and writes
 * "line L, column C: <what>" into @p err; nothing is left to free.
 */
int hx_pjson_parse(const char *text, struct hx_pjson *root, char *err, size_t errlen);
void hx_pjson_free(struct hx_pjson *v);
/** Member @p key of an object, or NULL (also when @p v is not an object). */
const struct hx_pjson *hx_pjson_get(const struct hx_pjson *v, const char *key);
/** Read a whole file into a NUL-terminated buffer (caller frees); NULL with errno set. */
char *hx_pjson_slurp(const char *path);
/** Write @p s as a JSON string literal (quotes and escapes). */
void hx_pjson_put_string(FILE *f, const char *s);

#endif /* HX_SCHED_PJSON_H */
