/* SPDX-License-Identifier: MIT */
/* tests/tools/progress.c: tools/progress.c with stdout captured in a file.  25 steps of known
 * values, log interval 10, an eval at (1-based) step 20: log lines at steps 1, 11, 21 and 25
 * with exact text, MFU only when the peak is known, 25 JSON lines with every key and val_loss
 * on step 20 only, null for NaN.  With the bar forced on, the stream replayed as a terminal
 * shows exactly the bar-less output, and every printed line starts at a line start or right
 * after the bar was erased.  A resumed run drops the JSON log's records of steps after its
 * first step (and a line a kill cut short), then appends: each step once.  A JSON path in a
 * missing directory is HX_EIO; a write that fails (the JSON log or stdout on /dev/full) is
 * reported by progress_failed and progress_close, naming the file and the errno.  No timing
 * is asserted (the sgemm peak only has to be > 0). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helix/error.h"
#include "tap.h"
#include "tools/progress.h"

static char dir[256];
static int saved_stdout = -1;

static void capture_begin(const char *path)
{
    fflush(stdout);
    saved_stdout = dup(STDOUT_FILENO);
    if (saved_stdout < 0 || freopen(path, "w", stdout) == NULL) {
        fprintf(stderr, "cannot capture stdout into %s\n", path);
        exit(99);
    }
}

static void capture_end(void)
{
    fflush(stdout);
    if (dup2(saved_stdout, STDOUT_FILENO) < 0) {
        exit(99);
    }
    close(saved_stdout);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = calloc(1 << 16, 1);
    if (f == NULL || buf == NULL) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(99);
    }
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static char *path_in_dir(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", dir, name);
    return buf;
}

/* The run every check below observes: loss 3.00, 2.96, ..., lr (s+1)/25 * 1e-3, grad norm
 * 0.5 + s/100, 100 ms a step; 1024 tokens and 1 GFLOP a step.  With a 100 GFLOP/s peak the
 * MFU is exactly 10%.  A "saved" line is printed by the caller after step 10. */
static void feed(int force_bar, double peak, const char *json, int nan_step)
{
    struct progress_opts o = { .total_steps = 25, .first_step = 0, .log_interval = 10,
                               .flops_per_step = 1e9, .tokens_per_step = 1024,
                               .peak_flops = peak, .json_path = json, .force_bar = force_bar };
    struct progress *p;
    if (progress_open(&p, &o) != HX_OK) {
        exit(99);
    }
    for (int s = 0; s < 25; s++) {
        double loss = s == nan_step ? NAN : 3.0 - 0.04 * s;
        progress_step(p, s, loss, 1e-3f * (float)(s + 1) / 25.0f, 0.5 + s / 100.0, 100.0);
        if (s == 19) {
            progress_eval(p, s, 1.5);
        }
        if (s == 9) {
            progress_clear(p);
            printf("saved checkpoint of step 10\n");
        }
    }
    progress_close(p, NULL, 0);
}

static int count_lines_starting(const char *text, const char *prefix)
{
    int n = 0;
    size_t len = strlen(prefix);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        n += strncmp(l, prefix, len) == 0;
    }
    return n;
}

/* Line i (0-based) of text, without its newline, in buf. */
static const char *line_at(const char *text, int i, char *buf, size_t n)
{
    const char *l = text;
    for (; i > 0 && l; i--) {
        l = strchr(l, '\n');
        l = l ? l + 1 : NULL;
    }
    if (l == NULL) {
        buf[0] = '\0';
        return buf;
    }
    size_t len = strcspn(l, "\n");
    snprintf(buf, n, "%.*s", (int)len, l);
    return buf;
}

/* What a terminal shows after `raw`: '\r' returns to column 0, text overwrites, '\n' ends
 * the line; trailing blanks dropped.  The unfinished last line goes to *tail. */
static char *replay_terminal(const char *raw, char *tail, size_t ntail)
{
    char *out = calloc(strlen(raw) + 1, 1), line[512] = "";
    size_t col = 0, len = 0, o = 0;
    for (const char *c = raw; *c; c++) {
        if (*c == '\r') {
            col = 0;
        } else if (*c == '\n') {
            while (len > 0 && line[len - 1] == ' ') {
                len--;
            }
            memcpy(out + o, line, len);
            o += len;
            out[o++] = '\n';
            col = len = 0;
        } else if (col < sizeof line - 1) {
            line[col++] = *c;
            len = col > len ? col : len;
        }
    }
    while (len > 0 && line[len - 1] == ' ') {
        len--;
    }
    snprintf(tail, ntail, "%.*s", (int)len, line);
    return out;
}

/* Every printed line ("step ", "validation |", "saved ") begins at the start of the output,
 * after '\n', or right after the bar was erased ("\r", spaces, "\r"): never after a bar. */
static int lines_start_clean(const char *raw)
{
    static const char *const starts[] = { "step ", "validation |", "saved " };
    for (int k = 0; k < 3; k++) {
        for (const char *s = strstr(raw, starts[k]); s; s = strstr(s + 1, starts[k])) {
            if (k == 0 && s[5 + strspn(s + 5, " 0123456789")] != '/') {
                continue; /* "validation | step 20", "of step 10": not a log line */
            }
            if (s == raw || s[-1] == '\n') {
                continue;
            }
            const char *q = s - 1;
            if (*q != '\r') {
                return 0;
            }
            for (q--; q > raw && *q == ' '; q--) {
            }
            if (*q != '\r' || q + 1 == s - 1) {
                return 0;
            }
        }
    }
    return 1;
}

static void check_json(const char *path)
{
    char *js = slurp(path), line[512];
    static const char *const keys[] = { "\"step\": ", "\"loss\": ", "\"lr\": ",
                                        "\"grad_norm\": ", "\"ms\": ", "\"tokens_per_s\": ",
                                        "\"mfu\": " };
    int nlines = count_lines_starting(js, "{"), bad = 0, nval = 0;
    tap_ok(nlines == 25 && js[strlen(js) - 1] == '\n', "JSON: 25 lines (got %d)", nlines);
    for (int i = 0; i < 25; i++) {
        char want[32];
        line_at(js, i, line, sizeof line);
        snprintf(want, sizeof want, "{\"step\": %d, ", i + 1);
        int ok = strncmp(line, want, strlen(want)) == 0 && line[strlen(line) - 1] == '}';
        for (int k = 0; k < 7; k++) {
            ok = ok && strstr(line, keys[k]) != NULL;
        }
        if (strstr(line, "\"val_loss\": ") != NULL) {
            nval++;
            ok = ok && i == 19 && strstr(line, "\"val_loss\": 1.5}") != NULL;
        }
        if (!ok && bad++ == 0) {
            tap_diag("bad JSON line %d: %s", i + 1, line);
        }
    }
    tap_ok(bad == 0 && nval == 1, "JSON: each line an object for its step with every key, "
           "val_loss on step 20 only (%d bad, %d val_loss)", bad, nval);
    /* the float lr is written exactly: 9 significant digits, not the 4e-05 a double shows */
    char exact[256];
    snprintf(exact, sizeof exact, "{\"step\": 1, \"loss\": 3, \"lr\": %.9g, \"grad_norm\": 0.5, "
             "\"ms\": 100, \"tokens_per_s\": 10240, \"mfu\": 0.1}", (double)(1e-3f / 25.0f));
    line_at(js, 0, line, sizeof line);
    tap_ok(strcmp(line, exact) == 0 && strstr(line, "e-05") && !strstr(line, "4e-05"),
           "JSON: step 1 exactly, floats in %%.9g: %s", line);
    free(js);
}

int main(void)
{
    tap_plan(20);
    snprintf(dir, sizeof dir, "%s/hx-progress.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR")
                                                                        : "/tmp");
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 99;
    }
    char out_plain[300], out_nomfu[300], out_bar[300], json[300], json2[300], tmp[300];
    path_in_dir(out_plain, sizeof out_plain, "plain.out");
    path_in_dir(out_nomfu, sizeof out_nomfu, "nomfu.out");
    path_in_dir(out_bar, sizeof out_bar, "bar.out");
    path_in_dir(json, sizeof json, "log.json");
    path_in_dir(json2, sizeof json2, "nomfu.json");

    /* 1. without the bar, peak 100 GFLOP/s */
    capture_begin(out_plain);
    feed(0, 1e11, json, -1);
    capture_end();
    char *plain = slurp(out_plain), line[512];
    tap_ok(count_lines_starting(plain, "step ") == 4, "4 log lines (got %d)",
           count_lines_starting(plain, "step "));
    static const char *const want[] = {
        "step     1/25 | loss 3.0000 | lr 4.00e-05 | grad norm 0.5000 | 100.0 ms/step | "
        "10240 tok/s | MFU 10.0% | ETA 0:00:02",
        "step    11/25 | loss 2.6000 | lr 4.40e-04 | grad norm 0.6000 | 100.0 ms/step | "
        "10240 tok/s | MFU 10.0% | ETA 0:00:01",
        "saved checkpoint of step 10",
        "validation | step 20 | val loss 1.5000 (ppl 4.482)",
        "step    21/25 | loss 2.2000 | lr 8.40e-04 | grad norm 0.7000 | 100.0 ms/step | "
        "10240 tok/s | MFU 10.0% | ETA 0:00:00",
        "step    25/25 | loss 2.0400 | lr 1.00e-03 | grad norm 0.7400 | 100.0 ms/step | "
        "10240 tok/s | MFU 10.0% | ETA 0:00:00",
    };
    /* the "saved" line comes after step 10, before the log line of step 11 */
    static const int order[] = { 0, 2, 1, 3, 4, 5 };
    int bad = 0;
    for (int i = 0; i < 6; i++) {
        line_at(plain, i, line, sizeof line);
        if (strcmp(line, want[order[i]]) != 0) {
            bad++;
            tap_diag("line %d: got  \"%s\"\n#          want \"%s\"", i + 1, line,
                     want[order[i]]);
        }
    }
    tap_ok(bad == 0 && line_at(plain, 6, line, sizeof line)[0] == '\0',
           "log lines of steps 1, 11, 21, 25 and the validation line, exactly");
    tap_ok(strchr(plain, '\r') == NULL, "no '\\r' without the bar");
    check_json(json);

    /* 2. peak unknown, a NaN loss at (1-based) step 6 */
    capture_begin(out_nomfu);
    feed(0, 0, json2, 5);
    capture_end();
    char *nomfu = slurp(out_nomfu), *js2 = slurp(json2);
    tap_ok(count_lines_starting(nomfu, "step ") == 4 && strstr(nomfu, "MFU") == NULL &&
           strstr(nomfu, "| ETA 0:00:00\n") != NULL, "peak 0: log lines without the MFU field");
    tap_ok(strstr(js2, "mfu") == NULL, "peak 0: no \"mfu\" key in the JSON");
    char want6[256];
    snprintf(want6, sizeof want6, "{\"step\": 6, \"loss\": null, \"lr\": %.9g, \"grad_norm\": "
             "0.55, \"ms\": 100, \"tokens_per_s\": 10240}", (double)(1e-3f * 6.0f / 25.0f));
    tap_ok(strcmp(line_at(js2, 5, line, sizeof line), want6) == 0,
           "a NaN loss is null in the JSON: %s", line);

    /* 3. the bar forced on (stdout is a file here) */
    capture_begin(out_bar);
    feed(1, 1e11, NULL, -1);
    capture_end();
    char *raw = slurp(out_bar), tail[256];
    char *screen = replay_terminal(raw, tail, sizeof tail);
    tap_ok(strchr(raw, '\r') != NULL && strstr(raw, "] 100% 25/25 loss 2.04 ETA 0:00:00"),
           "bar: drawn with '\\r', last one at 100%%");
    tap_ok(strstr(raw, "\r[#####################.........]  72% 18/25 loss 2.32 ETA 0:00:01")
           != NULL, "bar: fill, percent, step, loss and ETA");
    tap_ok(strcmp(screen, plain) == 0 && tail[0] == '\0',
           "bar: the terminal shows exactly the bar-less lines, bar erased at close");
    tap_ok(lines_start_clean(raw), "bar: each line starts after '\\n' or the erase sequence");
    free(screen);

    /* 4. resumed from a checkpoint of step 22 after the first run wrote 25 steps (killed after
     * its save at 22): the records of 23..25 are dropped and written again, each step once;
     * a last line cut short by the kill goes too */
    FILE *jf = fopen(json, "a");
    fputs("{\"step\": 26, \"loss\": 1.9", jf); /* no newline: the kill came mid-line */
    fclose(jf);
    struct progress_opts ro = { .total_steps = 25, .first_step = 22, .log_interval = 10,
                                .tokens_per_step = 1024, .json_path = json, .force_bar = 0 };
    struct progress *p;
    capture_begin(path_in_dir(tmp, sizeof tmp, "resume.out"));
    int rc = progress_open(&p, &ro);
    for (int s = 22; rc == HX_OK && s < 25; s++) {
        progress_step(p, s, 2.0, 1e-3f, 0.5, 50.0);
    }
    int closed = progress_close(p, NULL, 0);
    capture_end();
    char *res = slurp(tmp), *js = slurp(json);
    int once = 1;
    for (int i = 0; i < 25; i++) {
        char head[32];
        snprintf(head, sizeof head, "{\"step\": %d, ", i + 1);
        once = once && strncmp(line_at(js, i, line, sizeof line), head, strlen(head)) == 0;
    }
    tap_ok(rc == HX_OK && closed == 0 && once && count_lines_starting(js, "{") == 25 &&
           strstr(line_at(js, 22, line, sizeof line), "\"loss\": 2, ") != NULL &&
           js[strlen(js) - 1] == '\n',
           "resume at 22: steps 1..22 kept, 23..25 written again (%d lines, each step once)",
           count_lines_starting(js, "{"));
    tap_ok(count_lines_starting(res, "step    23/25 ") == 1 &&
           count_lines_starting(res, "step    25/25 ") == 1 && count_lines_starting(res, "step ")
           == 2, "resume: log lines at the first step (23) and the last (25)");

    /* 5. errors and edge cases */
    char missing[300];
    snprintf(missing, sizeof missing, "%s/no-such-dir/log.json", dir);
    struct progress_opts bo = ro;
    bo.json_path = missing;
    p = (struct progress *)&bo; /* must be reset to NULL */
    rc = progress_open(&p, &bo);
    tap_ok(rc == HX_EIO && p == NULL, "JSON path in a missing directory: HX_EIO (%d)", rc);
    progress_step(NULL, 0, 1, 1, 1, 1);
    progress_eval(NULL, 0, 1);
    progress_clear(NULL);
    tap_ok(progress_close(NULL, NULL, 0) == 0 && progress_failed(NULL, NULL, 0) == 0,
           "NULL progress is a no-op everywhere");

    /* 6. lost output is a failure: the JSON log on a full device, then stdout on one */
    struct progress_opts fo = ro;
    fo.first_step = 0;
    fo.json_path = "/dev/full";
    char msg[512] = "";
    capture_begin(path_in_dir(tmp, sizeof tmp, "full.out"));
    rc = progress_open(&p, &fo);
    int before = rc == HX_OK ? progress_failed(p, msg, sizeof msg) : -1;
    progress_step(p, 0, 2.0, 1e-3f, 0.5, 50.0);
    progress_step(p, 1, 2.0, 1e-3f, 0.5, 50.0); /* writes step 1's object: ENOSPC */
    int after = progress_failed(p, msg, sizeof msg);
    closed = progress_close(p, NULL, 0);
    capture_end();
    tap_ok(rc == HX_OK && before == 0 && after == HX_EIO && closed == HX_EIO &&
           strcmp(msg, "writing --log-json /dev/full failed (No space left on device)") == 0,
           "--log-json /dev/full: progress_failed says '%s'", msg);
    fo.json_path = NULL;
    msg[0] = '\0';
    capture_begin("/dev/full");
    rc = progress_open(&p, &fo);
    progress_step(p, 0, 2.0, 1e-3f, 0.5, 50.0); /* the first step's log line, flushed */
    after = progress_failed(p, msg, sizeof msg);
    closed = progress_close(p, NULL, 0);
    capture_end();
    clearerr(stdout);
    tap_ok(rc == HX_OK && after == HX_EIO && closed == HX_EIO &&
           strcmp(msg, "writing standard output failed (No space left on device)") == 0,
           "stdout on /dev/full: progress_failed says '%s'", msg);

    double peak = progress_measure_sgemm_peak(2);
    tap_ok(peak > 0 && isfinite(peak), "sgemm peak of 2 workers: %.1f GFLOP/s", peak / 1e9);

    free(plain);
    free(nomfu);
    free(js2);
    free(raw);
    free(res);
    free(js);
    const char *const files[] = { "plain.out", "nomfu.out", "bar.out", "log.json",
                                  "nomfu.json", "resume.out", "full.out" };
    for (int i = 0; i < 7; i++) {
        unlink(path_in_dir(tmp, sizeof tmp, files[i]));
    }
    rmdir(dir);
    return tap_exit();
}
