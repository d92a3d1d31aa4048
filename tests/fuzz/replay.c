/* SPDX-License-Identifier: MIT */
/* tests/fuzz/replay.c: the main of a fuzz harness in `make check`.  A harness (tests/fuzz/
 * NAME.c) defines only LLVMFuzzerTestOneInput (and, optionally, LLVMFuzzerInitialize), as
 * libFuzzer wants; scripts/fuzz links it with libFuzzer's main to search for inputs, and the
 * test suite links it with this one to run it over its committed corpus (tests/fuzz/corpus/
 * NAME/), one TAP line per file, so harnesses never rot and every crash found and added to the
 * corpus stays a regression test (the sanitizer build turns a memory error into a failure).
 * Each input is handed over in a buffer of exactly its size, as libFuzzer does, so reading
 * one byte past it is caught.  Arguments: files or directories to replay instead of the
 * corpus (a crash file: tests/fuzz/NAME crash-<sha1>).  HX_FUZZ_NAME is set per program. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tap.h"

#ifndef HX_FUZZ_NAME
#error "compile with -DHX_FUZZ_NAME='\"name\"' (tests/Makefile.am)"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

/* The whole file in a malloc'd buffer of exactly its size (NULL and *n = 0 if unreadable). */
static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    uint8_t *b = NULL;
    struct stat st;
    *n = 0;
    if (f != NULL && fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode)) {
        b = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
        *n = b != NULL ? fread(b, 1, (size_t)st.st_size, f) : 0;
        if (b != NULL && *n != (size_t)st.st_size) {
            free(b);
            b = NULL;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return b;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The regular files of @p dir, sorted (a stable TAP numbering), appended to *list. */
static void add_dir(const char *dir, char ***list, int *n)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int first = *n;
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') {
            continue;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        char *p = malloc(len);
        *list = realloc(*list, (size_t)(*n + 1) * sizeof **list);
        snprintf(p, len, "%s/%s", dir, e->d_name);
        (*list)[(*n)++] = p;
    }
    if (d != NULL) {
        closedir(d);
    }
    qsort(*list + first, (size_t)(*n - first), sizeof **list, by_name);
}

int main(int argc, char **argv)
{
    char **list = NULL, corpus[4096];
    int n = 0;
    snprintf(corpus, sizeof corpus, "%s/tests/fuzz/corpus/%s", HX_ABS_SRCDIR, HX_FUZZ_NAME);
    if (LLVMFuzzerInitialize != NULL) {
        LLVMFuzzerInitialize(&argc, &argv);
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            add_dir(argv[i], &list, &n);
        } else {
            list = realloc(list, (size_t)(n + 1) * sizeof *list);
            list[n++] = strdup(argv[i]);
        }
    }
    if (argc < 2) {
        add_dir(corpus, &list, &n);
    }
    if (n == 0) {
        tap_plan(1);
        tap_ok(0, "the corpus of harness '%s' (%s) has inputs", HX_FUZZ_NAME, corpus);
        return tap_exit();
    }
    tap_plan(n + 1);
    /* the empty input, which every harness must take */
    uint8_t *none = malloc(1);
    int ret = LLVMFuzzerTestOneInput(none, 0);
    free(none);
    /* libFuzzer: 0, or -1 to keep an input out of the corpus; nothing else */
    tap_ok(ret == 0 || ret == -1, "%s: the empty input (returned %d)", HX_FUZZ_NAME, ret);
    for (int i = 0; i < n; i++) {
        size_t size;
        uint8_t *data = slurp(list[i], &size);
        const char *base = strrchr(list[i], '/');
        if (data != NULL) {
            fprintf(stderr, "--- %s (%zu bytes)\n", list[i], size);
            ret = LLVMFuzzerTestOneInput(data, size);
        }
        tap_ok(data != NULL && (ret == 0 || ret == -1), "%s: %s (%zu bytes) %s (returned %d)",
               HX_FUZZ_NAME, base ? base + 1 : list[i], size,
               data != NULL ? "ran" : "is unreadable", ret);
        free(data);
        free(list[i]);
    }
    free(list);
    return tap_exit();
}
