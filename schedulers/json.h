/* SPDX-License-Identifier: MIT */
/* schedulers/json.h: a small JSON reader for the planners' files (overlap tables, plans).
 * Parses a whole text into a tree of values; errors say line:column and what was expected.
 * Strings keep ASCII and UTF-8 as given; \uXXXX escapes are decoded to UTF-8 (no surrogate
 * pairs: the files we read are ASCII).  Internal: not part of the installed API.
 * Test: tests/schedulers/plan_io.c */
#ifndef HX_SCHED_JSON_H
#define HX_SCHED_JSON_H

#include <stddef.h>
#include <stdio.h>

enum hx_json_type { HX_JSON_NULL, HX_JSON_BOOL, HX_JSON_NUMBER, HX_JSON_STRING, HX_JSON_ARRAY,
                    HX_JSON_OBJECT };

struct hx_json {
    enum hx_json_type type;
    double num;                /* NUMBER, BOOL (0/1) */
    char *str;                 /* STRING */
    int n;                     /* ARRAY, OBJECT: items */
    struct hx_json *items;     /* ARRAY, OBJECT: values */
    char **keys;               /* OBJECT: keys of items */
};

/**
 * Parse @p text (NUL-terminated) into @p root.  On error returns HX_EFORMAT and writes
 * "line L, column C: <what>" into @p err; nothing is left to free.
 */
int hx_json_parse(const char *text, struct hx_json *root, char *err, size_t errlen);
void hx_json_free(struct hx_json *v);
/** Member @p key of an object, or NULL (also when @p v is not an object). */
const struct hx_json *hx_json_get(const struct hx_json *v, const char *key);
/** Read a whole file into a NUL-terminated buffer (caller frees); NULL with errno set. */
char *hx_json_slurp(const char *path);
/** Write @p s as a JSON string literal (quotes and escapes). */
void hx_json_put_string(FILE *f, const char *s);

#endif /* HX_SCHED_JSON_H */
