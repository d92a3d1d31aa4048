/* SPDX-License-Identifier: MIT */
/* runtime/json.h: a small, strict JSON (RFC 8259) reader for helix's own files (the overlap
 * table, schedulers/overlap_table.c): objects, arrays, strings, numbers, true/false/null, into a
 * tree of plain values.  Strict: no comments, no trailing commas, no NaN, nothing after the
 * value; errors give the line and column.  Not a general library: the whole text is in memory
 * and nesting stops at 64 levels.  Used by the overlap table (schedulers/overlap_table.c) and
 * the pairing plan (schedulers/plan_json.c).
 * Test: tests/schedulers/overlap_table.c, tests/schedulers/plan_io.c. */
#ifndef HX_JSON_H
#define HX_JSON_H

#include <stddef.h>
#include <stdio.h>

enum hx_json_type {
    HX_JSON_NULL,
    HX_JSON_BOOL,
    HX_JSON_NUMBER,
    HX_JSON_STRING,
    HX_JSON_ARRAY,
    HX_JSON_OBJECT
};

struct hx_json {
    enum hx_json_type type;
    int line, col;             /* where the value starts (1-based), for messages */
    double num;                /* NUMBER; BOOL: 0 or 1 */
    char *str;                 /* STRING, NUL-terminated UTF-8 (may hold no NUL itself) */
    int n;                     /* ARRAY, OBJECT: number of items */
    struct hx_json *items;     /* ARRAY, OBJECT: the values, in file order */
    char **keys;               /* OBJECT: keys[i] names items[i] */
};

/**
 * Parse @p len bytes of @p text into @p out (freed with hx_json_free even on failure).
 * @return 0, or -1 with a message "line L, column C: what was expected" in @p err.
 */
int hx_json_parse(const char *text, size_t len, struct hx_json *out, char *err, size_t errlen);
void hx_json_free(struct hx_json *v);
/** The value of @p key in object @p obj (first one), or NULL (also when obj is no object). */
const struct hx_json *hx_json_get(const struct hx_json *obj, const char *key);
/** Name of a type ("number", "object", ...) for messages. */
const char *hx_json_type_name(enum hx_json_type t);
/**
 * The whole file @p path, NUL-terminated (the terminator not counted in @p len), for
 * hx_json_parse; free() it.  @return NULL with errno set (ENOMEM, or fopen's/fread's).
 */
char *hx_json_slurp(const char *path, size_t *len);
/** Write @p s as a JSON string literal (quotes and escapes) to @p f. */
void hx_json_write_string(FILE *f, const char *s);

#endif /* HX_JSON_H */
