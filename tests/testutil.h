/* SPDX-License-Identifier: MIT */
/* tests/testutil.h: what several TAP programs share, header-only.
 * int s = capture_begin(DIR); call(); msg = capture_end(s, buf, n): stderr went to DIR/stderr.txt
 * and comes back in buf (one trailing newline dropped; hx_run_status_reset() called).
 * tap_diag_lines(text): each line a "#" diagnostic.  require_torch(): skip all, or fail with
 * HX_REQUIRE_TORCH=1, unless torch_python() (HX_TORCH_PYTHON or /usr/bin/python3) has torch.
 * dir_listing(dir, out, n): the names in dir but dot files, sorted, space-separated.
 * model_state(m, &n): a model's parameters and both Adam moments, concatenated (malloc'd). */
#ifndef HX_TESTUTIL_H
#define HX_TESTUTIL_H

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helix/error.h"
#include "helix/gpt.h"
#include "helix/tensor.h"
#include "tap.h"

static char capture_path_[512];

/* Sends stderr to @p where/stderr.txt; returns the saved descriptor for capture_end. */
static inline int capture_begin(const char *where)
{
    snprintf(capture_path_, sizeof capture_path_, "%s/stderr.txt", where);
    fflush(stderr);
    int saved = dup(2), fd = open(capture_path_, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
        dup2(fd, 2);
        close(fd);
    }
    return saved;
}

/* Restores stderr and returns what it received, in @p buf of @p n bytes. */
static inline const char *capture_end(int saved, char *buf, size_t n)
{
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fopen(capture_path_, "r");
    size_t got = f ? fread(buf, 1, n - 1, f) : 0;
    buf[got] = '\0';
    if (got > 0 && buf[got - 1] == '\n') {
        buf[got - 1] = '\0';
    }
    if (f) {
        fclose(f);
    }
    unlink(capture_path_);
    hx_run_status_reset();
    return buf;
}

/* @p text as TAP diagnostics, one indented "#" line per line. */
static inline void tap_diag_lines(const char *text)
{
    for (const char *p = text; *p != '\0';) {
        size_t len = strcspn(p, "\n");
        tap_diag("  %.*s", (int)len, p);
        p += len + (p[len] == '\n');
    }
}

static inline const char *torch_python(void)
{
    const char *py = getenv("HX_TORCH_PYTHON");
    return py != NULL && py[0] != '\0' ? py : "/usr/bin/python3";
}

/* Returns when torch_python() imports torch; otherwise skips the program, or fails it (plan
 * 1, one "not ok", exit 1) when HX_REQUIRE_TORCH=1. */
static inline void require_torch(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s -c 'import torch' >/dev/null 2>&1", torch_python());
    if (system(cmd) == 0) {
        return;
    }
    const char *req = getenv("HX_REQUIRE_TORCH");
    if (req != NULL && strcmp(req, "1") == 0) {
        tap_plan(1);
        tap_ok(0, "PyTorch is required (HX_REQUIRE_TORCH=1) but '%s -c \"import torch\"' "
               "fails; install it with: apt-get install python3-torch", torch_python());
        exit(tap_exit());
    }
    tap_skip_all("PyTorch not importable by HX_TORCH_PYTHON (apt-get install python3-torch)");
}

/* The names in @p d but dot files (a lock), sorted, space-separated, into @p out of @p size
 * bytes: a directory's listing to compare before and after. */
static inline void dir_listing(const char *d, char *out, size_t size)
{
    struct dirent **e;
    int n = scandir(d, &e, NULL, alphasort);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (e[i]->d_name[0] != '.') {
            strncat(out, e[i]->d_name, size - strlen(out) - 2);
            strcat(out, " ");
        }
        free(e[i]);
    }
    free(n >= 0 ? e : NULL);
}

/* Parameters, Adam m and Adam v of every tensor in turn: 3 x hx_gpt_num_params floats, what a
 * checkpoint holds, to compare two models bitwise. */
static inline float *model_state(hx_gpt_t m, size_t *n)
{
    size_t total = 3 * hx_gpt_num_params(m), at = 0;
    float *x = malloc(total * sizeof *x);
    if (x == NULL) {
        *n = 0;
        return NULL;
    }
    for (int i = 0; i < hx_gpt_num_param_tensors(m); i++) {
        hx_tensor_t t[3] = { hx_gpt_param(m, i), hx_gpt_adam_m(m, i), hx_gpt_adam_v(m, i) };
        for (int k = 0; k < 3; k++) {
            hx_tensor_read(t[k], x + at);
            at += hx_tensor_numel(t[k]);
        }
    }
    *n = total;
    return x;
}

#endif /* HX_TESTUTIL_H */
