/* SPDX-License-Identifier: MIT */
/* tools/progress.h: what `helix train` tells the user while it runs.  A log line on stdout
 * every --log-interval steps (and at the first and last step), an optional live bar redrawn
 * in place with '\r', validation lines, and with --log-json one JSON object per step.  The
 * bar is always cleared before anything else is printed, so log lines never share a line
 * with bar fragments.  Main thread only.  Test: tests/tools/progress.c. */
#ifndef HX_PROGRESS_H
#define HX_PROGRESS_H

#include <stddef.h>

struct progress; /* opaque */

struct progress_opts {
    int total_steps;        /* --train-iters */
    int first_step;         /* 0, or the resumed step */
    int log_interval;       /* print a line every N steps (and the last step); < 1 means 1 */
    double flops_per_step;  /* model FLOPs of one optimizer step (caller computes) */
    double tokens_per_step; /* global batch * seq len */
    double peak_flops;      /* progress_measure_sgemm_peak(); 0 = unknown, no MFU */
    const char *json_path;  /* --log-json FILE or NULL; when first_step > 0, its records of
                             * steps after first_step are dropped, then it is appended to */
    int force_bar;          /* -1 auto (stdout is a TTY), 0 off, 1 on */
};

/* HX_OK, HX_ENOMEM, or HX_EIO (message names the JSON file) when json_path cannot be opened
 * for writing; called before training so a bad path costs nothing.  *p is NULL on failure. */
int progress_open(struct progress **p, const struct progress_opts *o);

/* Report 0-based @p step (shown 1-based).  Log line when step % log_interval == 0, at the
 * first step of the run and at step total_steps - 1:
 *   step   120/600 | loss 2.0412 | lr 1.93e-03 | grad norm 0.8421 | 84.3 ms/step |
 *   12150 tok/s | MFU 21.4% | ETA 0:00:40        (one line; no MFU field when peak is 0)
 * ms/step, tok/s and MFU are of this step; the ETA is the median of the last 16 step times
 * times the steps left.  JSON: {"step" (1-based), "loss", "lr", "grad_norm", "ms",
 * "tokens_per_s", "mfu" (a fraction, only when peak_flops > 0), "val_loss" (if evaluated)},
 * "%.9g", null for NaN/Inf; written when the next step, an eval of this step, or
 * progress_close arrives, so val_loss joins its step's object. */
void progress_step(struct progress *p, int step, double loss, float lr, double grad_norm,
                   double step_ms);

/* Print "validation | step N | val loss X (ppl Y)" (N 1-based, as in the log) and add
 * "val_loss" to step's JSON object; an eval of a step that has no pending object (nothing
 * was reported for it) is written as its own object {"step": N, "val_loss": X}. */
void progress_eval(struct progress *p, int step, double val_loss);

/* Clear the bar before the caller prints anything itself (a "saved checkpoint" line, an
 * error on stderr); the next progress_step draws it again. */
void progress_clear(struct progress *p);

/* Did a write fail, to stdout or to the JSON file (flushed after every object)?  0, or
 * HX_EIO with "writing --log-json FILE failed (errno text)" or "writing standard output
 * failed (...)" in msg[n] (n may be 0).  Nothing is printed: the caller stops the run and
 * reports it in its one error line.  After a JSON failure nothing more is written to it. */
int progress_failed(struct progress *p, char *msg, size_t n);
/* A write to the --log-json file failed (stdout's failures aside).  NULL: 0. */
int progress_log_failed(const struct progress *p);

/* Write the pending JSON object, clear the bar, close the file, free; then as
 * progress_failed, for the whole run.  NULL is a no-op (0). */
int progress_close(struct progress *p, char *msg, size_t n);

/* FLOP/s of @p workers single-threaded BLAS workers: best of 5 cblas_sgemm (n = 512) on one
 * thread after a warm-up, times @p workers (< 1 counts as 1).  Sets OpenBLAS to one thread,
 * as the runtime does: call before StarPU starts.  0 if memory is short.  About 0.05-0.3 s. */
double progress_measure_sgemm_peak(int workers);

#endif /* HX_PROGRESS_H */
