/* SPDX-License-Identifier: MIT */
/* tools/progress.c: the log line, live bar, validation line and JSON log of `helix train`
 * (contract in tools/progress.h).  The bar owns the current stdout line: it is drawn with '\r'
 * and no newline, and every other print first erases it ('\r', spaces, '\r').  A step's JSON
 * object waits in `pending` until the next step, an eval or close, so an evaluation of that
 * step lands in the same object.  A write that fails (stdout or the JSON file) is remembered
 * with its errno and reported by progress_failed: the caller stops, it is not a warning.
 * Test: tests/tools/progress.c. */
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "helix/error.h"
#include "helix/runtime.h"
#include "tools/progress.h"
#include "tools/tools.h"

#define ETA_WINDOW 16 /* recent step times whose median predicts the rest */
#define BAR_WIDTH 30

struct step_record {
    int step; /* 0-based */
    double loss, grad_norm, ms, tokens_per_s, mfu, val_loss;
    float lr;
};

struct progress {
    struct progress_opts o;
    FILE *json;
    int json_errno;            /* a write to it failed (its errno): no more writes */
    int pending;               /* `rec` holds a step not yet written */
    struct step_record rec;
    int bar;                   /* draw the bar at all */
    int bar_len;               /* characters of the bar now on screen; 0 = none */
    char bar_text[160];        /* last bar drawn, to restore it after a validation line */
    double recent[ETA_WINDOW]; /* ring of step times, ms */
    int nrecent;
};

/* ---- JSON lines ------------------------------------------------------------------------ */

/* "%.9g" round-trips every float; NaN and Inf are not JSON numbers, so they become null. */
static void json_num(FILE *f, const char *key, double v)
{
    if (isfinite(v)) {
        fprintf(f, ", \"%s\": %.9g", key, v);
    } else {
        fprintf(f, ", \"%s\": null", key);
    }
}

/* Flushed after every object, so a failure (a full disk) is seen at the step it happens
 * and the log on disk is complete up to the last object reported. */
static void json_check(struct progress *p)
{
    if (p->json_errno == 0) {
        p->json_errno = tools_output_error(p->json);
    }
}

static void json_write(struct progress *p, const struct step_record *r)
{
    if (p->json == NULL || p->json_errno != 0) {
        return;
    }
    fprintf(p->json, "{\"step\": %d", r->step + 1);
    json_num(p->json, "loss", r->loss);
    json_num(p->json, "lr", r->lr);
    json_num(p->json, "grad_norm", r->grad_norm);
    json_num(p->json, "ms", r->ms);
    json_num(p->json, "tokens_per_s", r->tokens_per_s);
    if (p->o.peak_flops > 0) {
        json_num(p->json, "mfu", r->mfu);
    }
    if (!isnan(r->val_loss)) {
        json_num(p->json, "val_loss", r->val_loss);
    }
    fputs("}\n", p->json);
    json_check(p);
}

static void json_flush_pending(struct progress *p)
{
    if (p->pending) {
        json_write(p, &p->rec);
        p->pending = 0;
    }
}

/* ---- stdout: bar and lines ------------------------------------------------------------- */

static void bar_erase(struct progress *p)
{
    if (p->bar_len > 0) {
        printf("\r%*s\r", p->bar_len, "");
        p->bar_len = 0;
    }
}

static void bar_show(struct progress *p)
{
    printf("\r%s", p->bar_text);
    p->bar_len = (int)strlen(p->bar_text);
    tools_output_error(stdout); /* no newline, so line buffering would hold it back */
}

static void format_eta(char *buf, size_t n, double seconds)
{
    if (!isfinite(seconds) || seconds < 0) {
        snprintf(buf, n, "?");
        return;
    }
    long s = lround(seconds);
    snprintf(buf, n, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
}

/* Median rather than mean: the first steps (perf-model calibration, page faults) and the
 * occasional eval or checkpoint would skew a mean for many steps. */
static double median_recent_ms(const struct progress *p)
{
    double v[ETA_WINDOW];
    int n = p->nrecent < ETA_WINDOW ? p->nrecent : ETA_WINDOW;
    if (n == 0) {
        return NAN;
    }
    memcpy(v, p->recent, (size_t)n * sizeof v[0]);
    for (int i = 1; i < n; i++) {
        double x = v[i];
        int j = i;
        for (; j > 0 && v[j - 1] > x; j--) {
            v[j] = v[j - 1];
        }
        v[j] = x;
    }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* A resumed run writes its steps again from the checkpoint's: the log keeps only what the
 * steps up to it wrote.  Records are in step order, so the file is cut (one truncate: never
 * half-rewritten) at the first record of a later step, or at a last line a kill left
 * unfinished.  Not a regular file (a pipe, /dev/...): appended to as it is.  0 or an errno. */
static int json_cut_after(const char *path, int first_step)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return errno == ENOENT ? 0 : errno; /* missing: created by the append */
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return 0;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    off_t off = 0, cut = -1;
    while ((n = getline(&line, &cap, f)) > 0) {
        int step; /* 1-based: "step": first_step is the checkpoint's last step */
        if (line[n - 1] != '\n' ||
            (sscanf(line, "{\"step\": %d", &step) == 1 && step > first_step)) {
            cut = off;
            break;
        }
        off += n;
    }
    int err = ferror(f) ? EIO : 0;
    free(line);
    fclose(f);
    if (err == 0 && cut >= 0 && truncate(path, cut) != 0) {
        err = errno;
    }
    return err;
}

int progress_open(struct progress **pp, const struct progress_opts *o)
{
    *pp = NULL;
    struct progress *p = calloc(1, sizeof *p);
    if (p == NULL) {
        return HX_ERR(HX_ENOMEM, "progress state (%zu bytes)", sizeof *p);
    }
    p->o = *o;
    if (p->o.log_interval < 1) {
        p->o.log_interval = 1;
    }
    p->bar = o->force_bar < 0 ? isatty(STDOUT_FILENO) : o->force_bar != 0;
    if (o->json_path != NULL) {
        /* a resumed run appends, so one file holds the whole run's history, each step once */
        int err = o->first_step > 0 ? json_cut_after(o->json_path, o->first_step) : 0;
        if (err != 0) {
            fprintf(stderr, "helix: error: cannot drop the records after step %d from --log-json "
                    "%s: %s; fix its permissions or choose another file\n", o->first_step,
                    flags_esc(o->json_path), strerror(err));
            free(p);
            return HX_EIO;
        }
        p->json = fopen(o->json_path, o->first_step > 0 ? "a" : "w");
        if (p->json == NULL) {
            err = errno;
            fprintf(stderr, "helix: error: cannot create --log-json %s: %s; create its "
                    "directory or choose another file\n", flags_esc(o->json_path),
                    strerror(err));
            free(p);
            return HX_EIO;
        }
    }
    *pp = p;
    return HX_OK;
}

void progress_step(struct progress *p, int step, double loss, float lr, double grad_norm,
                   double step_ms)
{
    if (p == NULL) {
        return;
    }
    double sec = step_ms / 1e3;
    struct step_record r = { .step = step, .loss = loss, .lr = lr, .grad_norm = grad_norm,
                             .ms = step_ms, .val_loss = NAN };
    r.tokens_per_s = sec > 0 ? p->o.tokens_per_step / sec : NAN;
    r.mfu = sec > 0 && p->o.peak_flops > 0 ? p->o.flops_per_step / sec / p->o.peak_flops : NAN;
    if (isfinite(step_ms) && step_ms >= 0) {
        p->recent[p->nrecent++ % ETA_WINDOW] = step_ms;
    }
    int left = p->o.total_steps - (step + 1);
    char eta[32];
    format_eta(eta, sizeof eta, median_recent_ms(p) / 1e3 * (left > 0 ? left : 0));

    json_flush_pending(p);
    p->rec = r;
    p->pending = 1;

    bar_erase(p);
    if (step % p->o.log_interval == 0 || step == p->o.first_step || left <= 0) {
        if (hx_runtime_simulated()) { /* no loss or norm was computed; the time is SimGrid's */
            printf("step %5d/%d | simulated | lr %.2e | %.1f ms/step | %.0f tok/s", step + 1,
                   p->o.total_steps, (double)lr, step_ms, r.tokens_per_s);
        } else {
            printf("step %5d/%d | loss %.4f | lr %.2e | grad norm %.4f | %.1f ms/step | %.0f "
                   "tok/s", step + 1, p->o.total_steps, loss, (double)lr, grad_norm, step_ms,
                   r.tokens_per_s);
        }
        if (p->o.peak_flops > 0) {
            printf(" | MFU %.1f%%", 100.0 * r.mfu);
        }
        printf(" | ETA %s\n", eta);
    }
    if (p->bar) {
        /* integers, so 18/25 is 72% and not 71.99...% */
        long total = p->o.total_steps > 0 ? p->o.total_steps : 1;
        long done = step + 1 < 0 ? 0 : step + 1 > total ? total : step + 1;
        int fill = (int)(BAR_WIDTH * done / total);
        char cells[BAR_WIDTH + 1];
        memset(cells, '#', (size_t)fill);
        memset(cells + fill, '.', (size_t)(BAR_WIDTH - fill));
        cells[BAR_WIDTH] = '\0';
        snprintf(p->bar_text, sizeof p->bar_text, "[%s] %3d%% %d/%d loss %.2f ETA %s", cells,
                 (int)(100 * done / total), step + 1, p->o.total_steps, loss, eta);
        bar_show(p);
    } else {
        tools_output_error(stdout); /* a log piped to a file or `tee` should be current */
    }
}

void progress_eval(struct progress *p, int step, double val_loss)
{
    if (p == NULL) {
        return;
    }
    int had_bar = p->bar_len > 0;
    bar_erase(p);
    printf("validation | step %d | val loss %.4f (ppl %.4g)\n", step + 1, val_loss,
           exp(val_loss));
    if (had_bar) {
        bar_show(p);
    } else {
        tools_output_error(stdout);
    }
    if (p->pending && p->rec.step == step) {
        p->rec.val_loss = val_loss;
        json_flush_pending(p);
    } else if (p->json != NULL && p->json_errno == 0) {
        json_flush_pending(p);
        fprintf(p->json, "{\"step\": %d", step + 1);
        json_num(p->json, "val_loss", val_loss);
        fputs("}\n", p->json);
        json_check(p);
    }
}

void progress_clear(struct progress *p)
{
    if (p != NULL) {
        bar_erase(p);
        tools_output_error(stdout);
    }
}

int progress_failed(struct progress *p, char *msg, size_t n)
{
    int err;
    if (p == NULL) {
        return 0;
    }
    if (p->json_errno != 0) {
        snprintf(msg, n, "writing --log-json %s failed (%s)", flags_esc(p->o.json_path),
                 strerror(p->json_errno));
        return HX_EIO;
    }
    if ((err = tools_output_error(stdout)) != 0) {
        snprintf(msg, n, "writing standard output failed (%s)", strerror(err));
        return HX_EIO;
    }
    return 0;
}

int progress_log_failed(const struct progress *p)
{
    return p != NULL && p->json_errno != 0;
}

int progress_close(struct progress *p, char *msg, size_t n)
{
    if (p == NULL) {
        return 0;
    }
    json_flush_pending(p);
    bar_erase(p);
    if (p->json != NULL) {
        json_check(p);
        if (fclose(p->json) != 0 && p->json_errno == 0) {
            p->json_errno = errno != 0 ? errno : EIO;
        }
        p->json = NULL;
    }
    int ret = progress_failed(p, msg, n);
    free(p);
    return ret;
}

/* ---- peak FLOP/s --------------------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One thread per worker is how the runtime runs BLAS, so one thread's sgemm rate times the
 * workers is the ceiling MFU compares against.  n = 512 is large enough to reach the kernel's
 * steady rate and small enough (3 MiB, ~270 MFLOP a call) to stay well under 0.3 s. */
double progress_measure_sgemm_peak(int workers)
{
    enum { N = 512, REPS = 5 };
    float *a = malloc(sizeof(float) * N * N), *b = malloc(sizeof(float) * N * N);
    float *c = malloc(sizeof(float) * N * N);
    double best = INFINITY;
    if (a != NULL && b != NULL && c != NULL) {
        for (int i = 0; i < N * N; i++) {
            a[i] = (float)(i % 7) * 0.25f - 0.75f; /* finite, no denormals: a fair timing */
            b[i] = (float)(i % 5) * 0.5f - 1.0f;
            c[i] = 0.0f;
        }
        openblas_set_num_threads(1);
        for (int r = 0; r <= REPS; r++) { /* r == 0 is the warm-up (page faults, caches) */
            double t0 = now_s();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a, N, b, N,
                        0.0f, c, N);
            double t = now_s() - t0;
            if (r > 0 && t < best) {
                best = t;
            }
        }
    }
    free(a);
    free(b);
    free(c);
    if (!(best > 0) || !isfinite(best)) {
        return 0;
    }
    return 2.0 * N * N * N / best * (workers > 0 ? workers : 1);
}
