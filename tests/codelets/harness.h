/* SPDX-License-Identifier: MIT */
/* tests/codelets/harness.h: shared pieces of the codelet tests, header-only.
 * Inputs come from a fixed-seed splitmix64 stream (uniform in [-1,1)), so every run sees the
 * same numbers, and the double reference (codelets/ref/ref.h) gets exactly the fp32 inputs.
 * A result passes when its normwise relative error ||got - ref||_inf / ||ref||_inf is at most
 * the tolerance (1e-5) and it holds no NaN/Inf; check() prints one TAP line with the error
 * and, on failure, the first 5 mismatching pairs (llm.c's check_tensor); check_bitwise()
 * compares two results of the same tasks bit for bit (determinism).  The runtime runs on
 * 2 CPU workers under the default policy; a runtime that cannot start skips the whole test. */
#ifndef HX_TEST_HARNESS_H
#define HX_TEST_HARNESS_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codelets/ref/ref.h"
#include "helix/error.h"
#include "helix/graph.h"
#include "helix/layers.h"
#include "helix/runtime.h"
#include "tap.h"

#define TOL 1e-5

/* ---- fixed-seed random numbers ---------------------------------------------------------- */

struct rng {
    uint64_t s;
};

/* splitmix64 (Steele, Lea, Flood 2014) */
static inline uint64_t rng_next(struct rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [-1, 1) from the top 24 bits: exactly representable in fp32 */
static inline float rng_uniform(struct rng *r)
{
    return (float)(rng_next(r) >> 40) * 0x1.0p-23f - 1.0f;
}

/* integer in [0, n) */
static inline int rng_int(struct rng *r, int n)
{
    return (int)(rng_next(r) % (uint64_t)n);
}

/* x[i] = offset + scale * uniform[-1, 1) */
static inline void fill_uniform(float *x, size_t n, struct rng *r, float scale, float offset)
{
    for (size_t i = 0; i < n; i++) {
        x[i] = offset + scale * rng_uniform(r);
    }
}

/* Outputs that must be written (=) start as NaN: a skipped element cannot pass. */
static inline void fill_nan(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        x[i] = NAN;
    }
}

/* ---- buffers ---------------------------------------------------------------------------- */

static inline void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (p == NULL) {
        tap_diag("out of memory allocating %zu x %zu bytes", n, size);
        exit(1);
    }
    return p;
}

static inline double *dalloc(size_t n)
{
    return xcalloc(n, sizeof(double));
}

static inline void f32_to_f64(double *d, const float *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        d[i] = f[i];
    }
}

static inline void f64_to_f32(float *f, const double *d, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        f[i] = (float)d[i];
    }
}

/* A new double copy of n floats (free it). */
static inline double *dup_f64(const float *f, size_t n)
{
    double *d = dalloc(n);
    f32_to_f64(d, f, n);
    return d;
}

/* A TAP message built like printf, in a static buffer valid until the next call. */
static inline const char *label(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline const char *label(const char *fmt, ...)
{
    static char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

/* ---- comparison ------------------------------------------------------------------------- */

static double harness_worst_;

/* ||got - ref||_inf / ||ref||_inf (the absolute error when ref is all zeros); +Inf when got
 * or ref holds a NaN or an Inf, so that a non-finite result can never pass. */
static inline double rel_err_gen(const float *gotf, const double *gotd, const double *ref,
                                 size_t n)
{
    double diff = 0.0, norm = 0.0;
    for (size_t i = 0; i < n; i++) {
        double g = gotf != NULL ? (double)gotf[i] : gotd[i];
        if (!isfinite(g) || !isfinite(ref[i])) {
            return INFINITY;
        }
        diff = fmax(diff, fabs(g - ref[i]));
        norm = fmax(norm, fabs(ref[i]));
    }
    return norm > 0.0 ? diff / norm : diff;
}

static inline double rel_err(const float *got, const double *ref, size_t n)
{
    return rel_err_gen(got, NULL, ref, n);
}

static inline double rel_err_f64(const double *got, const double *ref, size_t n)
{
    return rel_err_gen(NULL, got, ref, n);
}

/* One TAP line: name (op and shapes), error and tolerance.  Fails also when a task of the
 * run reported an error.  On failure, the first 5 elements off by more than tol ||ref||_inf
 * (or not finite) are listed. */
static inline int check_gen(const char *name, const float *gotf, const double *gotd,
                            const double *ref, size_t n, double tol)
{
    double err = rel_err_gen(gotf, gotd, ref, n);
    int run_ok = hx_run_status() == HX_OK;
    int ok = err <= tol && run_ok;
    if (err > harness_worst_) {
        harness_worst_ = err;
    }
    tap_ok(ok, "%s: rel err %.2e (tol %.0e)%s", name, err, tol,
           run_ok ? "" : ", a task reported an error");
    if (!ok) {
        double norm = 0.0;
        for (size_t i = 0; i < n; i++) {
            norm = fmax(norm, fabs(ref[i]));
        }
        double lim = tol * (norm > 0.0 ? norm : 1.0);
        int shown = 0;
        for (size_t i = 0; i < n && shown < 5; i++) {
            double g = gotf != NULL ? (double)gotf[i] : gotd[i];
            if (!isfinite(g) || !(fabs(g - ref[i]) <= lim)) {
                tap_diag("  [%zu] got %.9g ref %.9g diff %.3g", i, g, ref[i], g - ref[i]);
                shown++;
            }
        }
    }
    return ok;
}

static inline int check(const char *name, const float *got, const double *ref, size_t n,
                        double tol)
{
    return check_gen(name, got, NULL, ref, n, tol);
}

static inline int check_f64(const char *name, const double *got, const double *ref, size_t n,
                            double tol)
{
    return check_gen(name, NULL, got, ref, n, tol);
}

/* check() on a realized tensor, acquired for reading so its host copy is the latest. */
static inline int check_tensor(const char *name, struct hx_tensor *t, const double *ref,
                               double tol)
{
    if (t->dtype == HX_I32) {
        return tap_ok(0, "%s: %s holds integers, not values to compare", name, t->name);
    }
    if (hx_tensor_begin_access(t, 'r') != HX_OK) {
        return tap_ok(0, "%s: cannot acquire %s", name, t->name);
    }
    int ok = t->dtype == HX_F64 ? check_f64(name, hx_f64(t), ref, hx_tensor_numel(t), tol)
                                : check(name, hx_f32(t), ref, hx_tensor_numel(t), tol);
    hx_tensor_end_access(t);
    return ok;
}

/* Determinism: x and y, two f32 tensors that the same tasks computed from the same inputs,
 * hold the same bits (and no NaN/Inf, which would compare equal to themselves bitwise).  One
 * TAP line with the count of differing elements. */
static inline int check_bitwise(const char *name, struct hx_tensor *x, struct hx_tensor *y)
{
    size_t n = hx_tensor_numel(x);
    if (hx_tensor_numel(y) != n) {
        return tap_ok(0, "%s: %s and %s differ in size", name, x->name, y->name);
    }
    if (hx_tensor_begin_access(x, 'r') != HX_OK) {
        return tap_ok(0, "%s: cannot acquire %s", name, x->name);
    }
    if (hx_tensor_begin_access(y, 'r') != HX_OK) {
        hx_tensor_end_access(x);
        return tap_ok(0, "%s: cannot acquire %s", name, y->name);
    }
    size_t diff = 0, nonfinite = 0;
    for (size_t i = 0; i < n; i++) {
        diff += memcmp(&hx_f32(x)[i], &hx_f32(y)[i], sizeof(float)) != 0;
        nonfinite += !isfinite(hx_f32(x)[i]);
    }
    hx_tensor_end_access(y);
    hx_tensor_end_access(x);
    return tap_ok(diff == 0 && nonfinite == 0 && hx_run_status() == HX_OK,
                  "%s: bitwise repeatable (%zu of %zu elements differ, %zu not finite)%s", name,
                  diff, n, nonfinite,
                  hx_run_status() == HX_OK ? "" : ", a task reported an error");
}

/* ---- runtime and graphs ----------------------------------------------------------------- */

/* Start StarPU on 2 CPU workers (default policy), then print the plan of nchecks lines.
 * With HX_TEST_DEVICE=opencl (tests/device/codelets.sh) or HX_TEST_DEVICE=cuda (a GPU, under
 * a CUDA-enabled StarPU: scripts/gpu-check) every compute task runs on one worker of that
 * device instead, beside one CPU worker for what has no device form; a device that does not
 * start is a failure, not a skip. */
static inline void harness_start(int nchecks)
{
    struct hx_runtime_opts o;
    hx_runtime_opts_init(&o);
    const char *dev = getenv("HX_TEST_DEVICE");
    int opencl = dev != NULL && strcmp(dev, "opencl") == 0;
    int cuda = dev != NULL && strcmp(dev, "cuda") == 0;
    if (dev != NULL && *dev != '\0' && !opencl && !cuda) {
        tap_plan(1);
        tap_ok(0, "HX_TEST_DEVICE=%s: not a device (opencl or cuda, or unset for the CPU)", dev);
        exit(tap_exit());
    }
    o.workers = opencl || cuda ? 1 : 2;
    o.sched = NULL;
    if (opencl) {
        o.opencl = 1;
        o.compute_on = HX_PLACE_OPENCL;
    } else if (cuda) {
        o.cuda = 1;
        o.compute_on = HX_PLACE_CUDA;
    }
    int ret = hx_runtime_init(&o);
    if (ret != HX_OK && (opencl || cuda)) {
        tap_plan(1);
        tap_ok(0, "a%s %s worker starts (%s; the error line above says why)", opencl ? "n" : "",
               opencl ? "OpenCL" : "CUDA", hx_status_str(ret));
        exit(tap_exit());
    }
    if (ret != HX_OK) {
        tap_skip_all(label("the runtime cannot start (%s)", hx_status_str(ret)));
    }
    tap_plan(nchecks);
    if (opencl) {
        tap_diag("compute tasks on %d OpenCL worker(s) only", hx_runtime_opencl_workers());
    } else if (cuda) {
        tap_diag("compute tasks on %d CUDA worker(s) only", hx_runtime_cuda_workers());
    }
}

/* Stop StarPU; the exit status of the test. */
static inline int harness_end(void)
{
    hx_runtime_shutdown();
    tap_diag("worst normwise relative error: %.2e", harness_worst_);
    return tap_exit();
}

/* A new empty graph (exits on allocation failure). */
static inline hx_graph_t graph_new(void)
{
    hx_graph_t g = hx_graph_create();
    if (g == NULL) {
        tap_diag("hx_graph_create: out of memory");
        exit(1);
    }
    return g;
}

/* Allocate and register every tensor of g (zero-filled); exits if that fails. */
static inline void graph_realize(hx_graph_t g)
{
    if (hx_graph_realize(g) != HX_OK) {
        tap_diag("hx_graph_realize failed");
        exit(1);
    }
}

/* Submit every node of g and wait; a failure is reported here and makes later checks fail. */
static inline int graph_run(hx_graph_t g)
{
    int ret = hx_graph_submit(g, 0, -1);
    int wret = hx_graph_wait(g);
    if (ret == HX_OK) {
        ret = wret;
    }
    if (ret != HX_OK) {
        tap_diag("graph run failed: %s", hx_status_str(ret));
    }
    return ret;
}

/* A row-tiled f32 tensor of g. */
static inline struct hx_tensor *tensor_f32(hx_graph_t g, const char *name, int rows, int cols,
                                           int tile_rows)
{
    return hx_graph_tensor(g, name, HX_F32, HX_ROLE_ACTIVATION, rows, cols, tile_rows);
}

#endif /* HX_TEST_HARNESS_H */
