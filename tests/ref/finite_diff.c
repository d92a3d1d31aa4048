/* SPDX-License-Identifier: MIT */
/* tests/ref/finite_diff.c: every backward in codelets/ref/ref.h against central finite
 * differences of its forward.  Objective L = sum(out * R), R random and fixed; the gradient
 * g from the backward must satisfy ||g - g_fd||_inf / max(||g_fd||_inf, 1e-12) <= 1e-6 with
 * g_fd[i] = (L(x + h e_i) - L(x - h e_i)) / 2h, h = 1e-6, all in double.
 * Activation gradients are pre-filled with NaN (they must be written); parameter gradients
 * start from random values that are subtracted afterwards (they must accumulate).
 * Hand-computed values: tests/ref/hand_values.c. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codelets/ref/ref.h"
#include "tap.h"

#define NCHECKS 41
#define FD_H 1e-6
#define FD_TOL 1e-6

/* ---------------------------------------------------------------------------------------- */
/* helpers: a fixed-seed RNG, buffers, the finite-difference gradient and the error norm */

static uint64_t rng_state = 0x1234abcd5678ef01ull;

/* splitmix64 (Steele, Lea, Flood 2014): tiny, full period, good enough for test data */
static uint64_t splitmix64(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [lo, hi) from the top 53 bits */
static double uniform(double lo, double hi)
{
    return lo + (hi - lo) * (double)(splitmix64() >> 11) * 0x1.0p-53;
}

static double *alloc(long n)
{
    double *p = malloc((size_t)n * sizeof *p);
    if (p == NULL) {
        tap_diag("out of memory allocating %ld doubles", n);
        exit(1);
    }
    return p;
}

static double *rand_vec(long n, double lo, double hi)
{
    double *p = alloc(n);
    for (long i = 0; i < n; i++) {
        p[i] = uniform(lo, hi);
    }
    return p;
}

static double *nan_vec(long n)
{
    double *p = alloc(n);
    for (long i = 0; i < n; i++) {
        p[i] = NAN;
    }
    return p;
}

static double *copy_vec(const double *x, long n)
{
    double *p = alloc(n);
    memcpy(p, x, (size_t)n * sizeof *p);
    return p;
}

static double dot(const double *a, const double *b, long n)
{
    double acc = 0.0;
    for (long i = 0; i < n; i++) {
        acc += a[i] * b[i];
    }
    return acc;
}

/* the objective evaluated at the current contents of the buffers in ctx */
typedef double (*objective_fn)(void *ctx);

/* central differences of L with respect to x (n values, one of the buffers L reads); x is
 * restored bit for bit after each perturbation */
static void fd_grad(double *gfd, double *x, long n, objective_fn L, void *ctx)
{
    for (long i = 0; i < n; i++) {
        double x0 = x[i];
        x[i] = x0 + FD_H;
        double lp = L(ctx);
        x[i] = x0 - FD_H;
        double lm = L(ctx);
        x[i] = x0;
        gfd[i] = (lp - lm) / (2.0 * FD_H);
    }
}

/* ||g - gfd||_inf / max(||gfd||_inf, 1e-12) over n values read with stride `ld` in rows of
 * `width` (a column block of a matrix; ld = width for a plain vector).  Non-finite: +Inf. */
static double rel_err_block(const double *g, const double *gfd, long rows, long width, long ld)
{
    double diff = 0.0, ref = 0.0;
    for (long r = 0; r < rows; r++) {
        for (long i = 0; i < width; i++) {
            double d = fabs(g[r * ld + i] - gfd[r * ld + i]);
            if (!isfinite(d)) {
                return INFINITY;
            }
            diff = fmax(diff, d);
            ref = fmax(ref, fabs(gfd[r * ld + i]));
        }
    }
    return diff / fmax(ref, 1e-12);
}

static double rel_err(const double *g, const double *gfd, long n)
{
    return rel_err_block(g, gfd, 1, n, n);
}

/* a parameter gradient accumulated (+=) onto prior values: take the prior back out */
static void subtract(double *g, const double *prior, long n)
{
    for (long i = 0; i < n; i++) {
        g[i] -= prior[i];
    }
}

/* ---------------------------------------------------------------------------------------- */
/* matmul: C (m,n) = alpha op(A) op(B) + beta C0 + bias, L = sum(C * R).
 * dop(A) = alpha R op(B)^T (m,k), dop(B) = alpha op(A)^T R (k,n), dbias = column sums of R,
 * each computed with hx_ref_matmul itself as the training graph does. */
struct mm {
    double *A, *B, *bias, *C0, *C, *R;
    int ta, tb, m, n, k;
    double alpha, beta;
};

static double mm_loss(void *ctx)
{
    struct mm *p = ctx;
    memcpy(p->C, p->C0, (size_t)p->m * p->n * sizeof *p->C);
    hx_ref_matmul(p->C, p->A, p->B, p->bias, p->ta, p->tb, p->m, p->n, p->k, p->alpha, p->beta);
    return dot(p->C, p->R, (long)p->m * p->n);
}

static void test_matmul(int ta, int tb)
{
    const int m = 5, n = 7, k = 3;
    struct mm p = {
        .A = rand_vec(m * k, -1, 1), .B = rand_vec(k * n, -1, 1), .bias = rand_vec(n, -1, 1),
        .C0 = rand_vec(m * n, -1, 1), .C = alloc(m * n), .R = rand_vec(m * n, -1, 1),
        .ta = ta, .tb = tb, .m = m, .n = n, .k = k, .alpha = 1.5, .beta = 0.5,
    };
    double *dA = nan_vec(m * k), *dB = nan_vec(k * n);
    double *dbias = rand_vec(n, -1, 1), *dbias0 = copy_vec(dbias, n);
    double *gfd = alloc(m * k > k * n ? m * k : k * n);

    /* dA: stored (m,k) = alpha R (m,n) op(B)^T (n,k), or stored (k,m) = alpha op(B) R^T */
    if (!ta) {
        hx_ref_matmul(dA, p.R, p.B, NULL, 0, !tb, m, k, n, p.alpha, 0.0);
    } else {
        hx_ref_matmul(dA, p.B, p.R, NULL, tb, 1, k, m, n, p.alpha, 0.0);
    }
    /* dB: stored (k,n) = alpha op(A)^T (k,m) R (m,n), or stored (n,k) = alpha R^T op(A) */
    if (!tb) {
        hx_ref_matmul(dB, p.A, p.R, NULL, !ta, 0, k, n, m, p.alpha, 0.0);
    } else {
        hx_ref_matmul(dB, p.R, p.A, NULL, 1, ta, n, k, m, p.alpha, 0.0);
    }
    hx_ref_bias_bwd(dbias, p.R, m, n);
    subtract(dbias, dbias0, n);

    fd_grad(gfd, p.A, m * k, mm_loss, &p);
    double e = rel_err(dA, gfd, m * k);
    tap_ok(e <= FD_TOL, "matmul transa=%d transb=%d (m,n,k)=(%d,%d,%d) alpha=1.5 beta=0.5: "
           "wrt A, rel err %.2e", ta, tb, m, n, k, e);
    fd_grad(gfd, p.B, k * n, mm_loss, &p);
    e = rel_err(dB, gfd, k * n);
    tap_ok(e <= FD_TOL, "matmul transa=%d transb=%d (m,n,k)=(%d,%d,%d): wrt B, rel err %.2e", ta,
           tb, m, n, k, e);
    fd_grad(gfd, p.bias, n, mm_loss, &p);
    e = rel_err(dbias, gfd, n);
    tap_ok(e <= FD_TOL, "matmul transa=%d transb=%d (m,n,k)=(%d,%d,%d): wrt bias via bias_bwd "
           "(+=), rel err %.2e", ta, tb, m, n, k, e);

    free(p.A), free(p.B), free(p.bias), free(p.C0), free(p.C), free(p.R);
    free(dA), free(dB), free(dbias), free(dbias0), free(gfd);
}

/* ---------------------------------------------------------------------------------------- */
/* layernorm: L = sum(LN(inp) * R) [+ sum(inp * Rres)].  The second term is what a residual
 * branch contributes, so its gradient is the `resid` argument of the backward. */
struct ln {
    double *inp, *w, *b, *R, *Rres, *out, *mean, *rstd;
    int N, C;
};

static double ln_loss(void *ctx)
{
    struct ln *p = ctx;
    long nc = (long)p->N * p->C;
    hx_ref_layernorm_fwd(p->out, p->mean, p->rstd, p->inp, p->w, p->b, p->N, p->C, 1e-5);
    return dot(p->out, p->R, nc) + (p->Rres != NULL ? dot(p->inp, p->Rres, nc) : 0.0);
}

static void test_layernorm(void)
{
    const int N = 4, C = 13;
    const long nc = (long)N * C;
    struct ln p = {
        /* offset rows so the mean matters; C = 13 keeps var well away from eps */
        .inp = rand_vec(nc, 0.5, 3), .w = rand_vec(C, 0.5, 1.5), .b = rand_vec(C, -1, 1),
        .R = rand_vec(nc, -1, 1), .Rres = NULL, .out = alloc(nc), .mean = alloc(N),
        .rstd = alloc(N), .N = N, .C = C,
    };
    double *resid = rand_vec(nc, -1, 1);
    double *dinp = nan_vec(nc), *gfd = alloc(nc);
    double *dw0 = rand_vec(C, -1, 1), *db0 = rand_vec(C, -1, 1);
    double *dw = copy_vec(dw0, C), *db = copy_vec(db0, C);
    double *dw2 = copy_vec(dw0, C), *db2 = copy_vec(db0, C);

    /* the backward uses the forward's mean and rstd at the unperturbed point: run it first */
    ln_loss(&p);
    hx_ref_layernorm_bwd(dinp, NULL, NULL, p.R, p.inp, p.w, p.mean, p.rstd, NULL, N, C);
    fd_grad(gfd, p.inp, nc, ln_loss, &p);
    double e = rel_err(dinp, gfd, nc);
    tap_ok(e <= FD_TOL, "layernorm (N,C)=(%d,%d) wrt inp, no resid, dw=db=NULL: rel err %.2e", N,
           C, e);

    p.Rres = resid;
    ln_loss(&p);
    for (long i = 0; i < nc; i++) {
        dinp[i] = NAN;
    }
    hx_ref_layernorm_bwd(dinp, dw, db, p.R, p.inp, p.w, p.mean, p.rstd, resid, N, C);
    subtract(dw, dw0, C);
    subtract(db, db0, C);
    fd_grad(gfd, p.inp, nc, ln_loss, &p);
    e = rel_err(dinp, gfd, nc);
    tap_ok(e <= FD_TOL, "layernorm (N,C)=(%d,%d) wrt inp with resid (full call): rel err %.2e", N,
           C, e);
    fd_grad(gfd, p.w, C, ln_loss, &p);
    e = rel_err(dw, gfd, C);
    tap_ok(e <= FD_TOL, "layernorm (N,C)=(%d,%d) wrt w (full call, += onto random dw): rel err "
           "%.2e", N, C, e);
    double *gfd_b = alloc(C);
    fd_grad(gfd_b, p.b, C, ln_loss, &p);
    e = rel_err(db, gfd_b, C);
    tap_ok(e <= FD_TOL, "layernorm (N,C)=(%d,%d) wrt b (full call, += onto random db): rel err "
           "%.2e", N, C, e);

    /* weight part alone (dinp = NULL), as the split codelets call it; the resid term of the
     * objective does not involve w or b, so the finite differences above still apply */
    ln_loss(&p);
    hx_ref_layernorm_bwd(NULL, dw2, db2, p.R, p.inp, p.w, p.mean, p.rstd, NULL, N, C);
    subtract(dw2, dw0, C);
    subtract(db2, db0, C);
    e = fmax(rel_err(dw2, gfd, C), rel_err(db2, gfd_b, C));
    tap_ok(e <= FD_TOL, "layernorm (N,C)=(%d,%d) wrt w, b, weight-only call (dinp=NULL): rel err "
           "%.2e", N, C, e);

    free(p.inp), free(p.w), free(p.b), free(p.R), free(p.out), free(p.mean), free(p.rstd);
    free(resid), free(dinp), free(gfd), free(gfd_b);
    free(dw0), free(db0), free(dw), free(db), free(dw2), free(db2);
}

/* ---------------------------------------------------------------------------------------- */
/* rmsnorm: L = sum(RMSNorm(inp) * R) [+ sum(inp * Rres)], as layernorm's */
struct rms {
    double *inp, *w, *R, *Rres, *out, *rstd;
    int N, C;
};

static double rms_loss(void *ctx)
{
    struct rms *p = ctx;
    long nc = (long)p->N * p->C;
    hx_ref_rmsnorm_fwd(p->out, p->rstd, p->inp, p->w, p->N, p->C, 1e-5);
    return dot(p->out, p->R, nc) + (p->Rres != NULL ? dot(p->inp, p->Rres, nc) : 0.0);
}

static void test_rmsnorm(void)
{
    const int N = 4, C = 13;
    const long nc = (long)N * C;
    struct rms p = {
        /* both signs, so the rows' mean is not what RMSNorm divides by */
        .inp = rand_vec(nc, -2, 3), .w = rand_vec(C, 0.5, 1.5), .R = rand_vec(nc, -1, 1),
        .Rres = NULL, .out = alloc(nc), .rstd = alloc(N), .N = N, .C = C,
    };
    double *resid = rand_vec(nc, -1, 1);
    double *dinp = nan_vec(nc), *gfd = alloc(nc), *gfd_w = alloc(C);
    double *dw0 = rand_vec(C, -1, 1), *dw = copy_vec(dw0, C), *dw2 = copy_vec(dw0, C);

    /* the backward uses the forward's rstd at the unperturbed point: run it first */
    rms_loss(&p);
    hx_ref_rmsnorm_bwd(dinp, NULL, p.R, p.inp, p.w, p.rstd, NULL, N, C);
    fd_grad(gfd, p.inp, nc, rms_loss, &p);
    double e = rel_err(dinp, gfd, nc);
    tap_ok(e <= FD_TOL, "rmsnorm (N,C)=(%d,%d) wrt inp, no resid, dw=NULL: rel err %.2e", N, C,
           e);

    p.Rres = resid;
    rms_loss(&p);
    for (long i = 0; i < nc; i++) {
        dinp[i] = NAN;
    }
    hx_ref_rmsnorm_bwd(dinp, dw, p.R, p.inp, p.w, p.rstd, resid, N, C);
    subtract(dw, dw0, C);
    fd_grad(gfd, p.inp, nc, rms_loss, &p);
    e = rel_err(dinp, gfd, nc);
    tap_ok(e <= FD_TOL, "rmsnorm (N,C)=(%d,%d) wrt inp with resid (full call): rel err %.2e", N,
           C, e);
    fd_grad(gfd_w, p.w, C, rms_loss, &p);
    e = rel_err(dw, gfd_w, C);
    tap_ok(e <= FD_TOL, "rmsnorm (N,C)=(%d,%d) wrt w (full call, += onto random dw): rel err "
           "%.2e", N, C, e);

    /* weight part alone (dinp = NULL), as the split codelets call it */
    rms_loss(&p);
    hx_ref_rmsnorm_bwd(NULL, dw2, p.R, p.inp, p.w, p.rstd, NULL, N, C);
    subtract(dw2, dw0, C);
    e = rel_err(dw2, gfd_w, C);
    tap_ok(e <= FD_TOL, "rmsnorm (N,C)=(%d,%d) wrt w, weight-only call (dinp=NULL): rel err %.2e",
           N, C, e);

    free(p.inp), free(p.w), free(p.R), free(p.out), free(p.rstd);
    free(resid), free(dinp), free(gfd), free(gfd_w), free(dw0), free(dw), free(dw2);
}

/* ---------------------------------------------------------------------------------------- */
struct gelu {
    double *x, *R, *out;
    int n;
};

static double gelu_loss(void *ctx)
{
    struct gelu *p = ctx;
    hx_ref_gelu_fwd(p->out, p->x, p->n);
    return dot(p->out, p->R, p->n);
}

static void test_gelu(void)
{
    const int n = 37;
    struct gelu p = { .x = rand_vec(n, -4, 4), .R = rand_vec(n, -1, 1), .out = alloc(n), .n = n };
    double *dx = nan_vec(n), *gfd = alloc(n);
    hx_ref_gelu_bwd(dx, p.x, p.R, n);
    fd_grad(gfd, p.x, n, gelu_loss, &p);
    double e = rel_err(dx, gfd, n);
    tap_ok(e <= FD_TOL, "gelu n=%d on [-4,4]: rel err %.2e", n, e);
    free(p.x), free(p.R), free(p.out), free(dx), free(gfd);
}

/* ---------------------------------------------------------------------------------------- */
/* swiglu: L = sum(out * R); the gate and up column blocks of dinp (N,2F) are checked apart */
struct swiglu {
    double *inp, *R, *out;
    int N, F;
};

static double swiglu_loss(void *ctx)
{
    struct swiglu *p = ctx;
    hx_ref_swiglu_fwd(p->out, p->inp, p->N, p->F);
    return dot(p->out, p->R, (long)p->N * p->F);
}

static void test_swiglu(void)
{
    const int N = 3, F = 11;
    const long n2 = 2L * N * F;
    struct swiglu p = {
        .inp = rand_vec(n2, -4, 4), .R = rand_vec((long)N * F, -1, 1), .out = alloc((long)N * F),
        .N = N, .F = F,
    };
    double *dinp = nan_vec(n2), *gfd = alloc(n2);
    hx_ref_swiglu_bwd(dinp, p.inp, p.R, N, F);
    fd_grad(gfd, p.inp, n2, swiglu_loss, &p);
    static const char *const part[2] = { "gate", "up" };
    for (int s = 0; s < 2; s++) {
        double e = rel_err_block(dinp + s * F, gfd + s * F, N, F, 2L * F);
        tap_ok(e <= FD_TOL, "swiglu (N,F)=(%d,%d) on [-4,4] wrt %s: rel err %.2e", N, F, part[s],
               e);
    }
    free(p.inp), free(p.R), free(p.out), free(dinp), free(gfd);
}

/* ---------------------------------------------------------------------------------------- */
/* attention, multi-head (KV = NH) or grouped-query: L = sum(out * R); the q, k and v column
 * blocks of dqkv (C, KV hs and KV hs wide) are checked separately, so a kv head's gradient
 * must hold the terms of all its query heads */
struct att {
    double *qkv, *R, *out, *lse;
    int nseq, T, C, NH, KV;
};

static double att_loss(void *ctx)
{
    struct att *p = ctx;
    hx_ref_gqa_attention_fwd(p->out, p->lse, p->qkv, p->nseq, p->T, p->C, p->NH, p->KV);
    return dot(p->out, p->R, (long)p->nseq * p->T * p->C);
}

static void test_attention(int nseq, int T, int C, int NH, int KV)
{
    const long rows = (long)nseq * T, kvw = (long)KV * (C / NH), W = C + 2 * kvw;
    /* q, k in [-2,2] give scores of std ~4/3 whatever hs is: a softmax far from uniform */
    struct att p = {
        .qkv = rand_vec(rows * W, -2, 2), .R = rand_vec(rows * C, -1, 1),
        .out = alloc(rows * C), .lse = alloc(rows * NH), .nseq = nseq, .T = T, .C = C, .NH = NH,
        .KV = KV,
    };
    double *dqkv = nan_vec(rows * W), *gfd = alloc(rows * W);
    hx_ref_gqa_attention_bwd(dqkv, p.R, p.qkv, nseq, T, C, NH, KV);
    fd_grad(gfd, p.qkv, rows * W, att_loss, &p);
    static const char *const part[3] = { "q", "k", "v" };
    const long off[3] = { 0, C, C + kvw }, width[3] = { C, kvw, kvw };
    for (int s = 0; s < 3; s++) {
        double e = rel_err_block(dqkv + off[s], gfd + off[s], rows, width[s], W);
        tap_ok(e <= FD_TOL, "attention (nseq,T,C,NH,KV)=(%d,%d,%d,%d,%d) wrt %s: rel err %.2e",
               nseq, T, C, NH, KV, part[s], e);
    }
    free(p.qkv), free(p.R), free(p.out), free(p.lse), free(dqkv), free(gfd);
}

/* ---------------------------------------------------------------------------------------- */
/* RoPE: L = sum(rope(x) * R); the backward (the transpose) applied to R must be dL/dx, the
 * v columns passing R through */
struct rope {
    double *x, *y, *R;
    int rows, T, NH, KV, hs;
    float base;
};

static double rope_loss(void *ctx)
{
    struct rope *p = ctx;
    long n = (long)p->rows * (p->NH + 2 * p->KV) * p->hs;
    memcpy(p->y, p->x, (size_t)n * sizeof(double));
    hx_ref_rope(p->y, p->rows, p->T, p->NH, p->KV, p->hs, p->base, 0);
    return dot(p->y, p->R, n);
}

static void test_rope(int nseq, int T, int NH, int KV, int hs, float base)
{
    const long rows = (long)nseq * T, n = rows * (NH + 2 * KV) * hs;
    struct rope p = {
        .x = rand_vec(n, -1, 1), .y = alloc(n), .R = rand_vec(n, -1, 1), .rows = (int)rows,
        .T = T, .NH = NH, .KV = KV, .hs = hs, .base = base,
    };
    double *dx = copy_vec(p.R, n), *gfd = alloc(n);
    hx_ref_rope(dx, p.rows, T, NH, KV, hs, base, 1);
    fd_grad(gfd, p.x, n, rope_loss, &p);
    double e = rel_err(dx, gfd, n);
    tap_ok(e <= FD_TOL, "rope (nseq,T,NH,KV,hs,base)=(%d,%d,%d,%d,%d,%g) wrt x: rel err %.2e",
           nseq, T, NH, KV, hs, (double)base, e);
    free(p.x), free(p.y), free(p.R), free(dx), free(gfd);
}

/* ---------------------------------------------------------------------------------------- */
/* cross-entropy: the backward takes one scale for all rows, so the objective is
 * L = scale * sum(losses) rather than a random weight per row */
struct xent {
    double *logits, *losses, *lse;
    const int *targets;
    int N, V;
    double scale;
};

static double xent_loss(void *ctx)
{
    struct xent *p = ctx;
    hx_ref_xent_fwd(p->losses, p->lse, p->logits, p->targets, p->N, p->V);
    double sum = 0.0;
    for (int r = 0; r < p->N; r++) {
        sum += p->losses[r];
    }
    return p->scale * sum;
}

static void test_xent(void)
{
    const int N = 4, V = 257;
    static const int targets[4] = { 0, 256, 17, 128 }; /* both ends of the vocabulary */
    struct xent p = {
        .logits = rand_vec((long)N * V, -3, 3), .losses = alloc(N), .lse = alloc(N),
        .targets = targets, .N = N, .V = V, .scale = 0.37,
    };
    double *dl = nan_vec((long)N * V), *gfd = alloc((long)N * V);
    hx_ref_xent_bwd(dl, p.logits, targets, N, V, p.scale);
    fd_grad(gfd, p.logits, (long)N * V, xent_loss, &p);
    double e = rel_err(dl, gfd, (long)N * V);
    tap_ok(e <= FD_TOL, "xent (N,V)=(%d,%d) scale=0.37 wrt logits: rel err %.2e", N, V, e);
    free(p.logits), free(p.losses), free(p.lse), free(dl), free(gfd);
}

/* ---------------------------------------------------------------------------------------- */
/* embedding: L = sum(out * R) with respect to wte and wpe (both accumulate) */
struct emb {
    double *wte, *wpe, *R, *out;
    const int *tokens;
    int N, T, C;
};

static double emb_loss(void *ctx)
{
    struct emb *p = ctx;
    hx_ref_embed_fwd(p->out, p->tokens, p->wte, p->wpe, p->N, p->T, p->C);
    return dot(p->out, p->R, (long)p->N * p->C);
}

static void test_embedding(void)
{
    const int nseq = 2, T = 3, V = 5, C = 4, N = nseq * T;
    static const int tokens[6] = { 4, 1, 4, 0, 1, 1 }; /* repeats; token 2, 3 unused */
    struct emb p = {
        .wte = rand_vec(V * C, -1, 1), .wpe = rand_vec(T * C, -1, 1),
        .R = rand_vec(N * C, -1, 1), .out = alloc(N * C), .tokens = tokens, .N = N, .T = T,
        .C = C,
    };
    double *dwte0 = rand_vec(V * C, -1, 1), *dwpe0 = rand_vec(T * C, -1, 1);
    double *dwte = copy_vec(dwte0, V * C), *dwpe = copy_vec(dwpe0, T * C);
    double *gfd = alloc(V * C);
    hx_ref_embed_bwd(dwte, dwpe, p.R, tokens, N, T, C);
    subtract(dwte, dwte0, V * C);
    subtract(dwpe, dwpe0, T * C);
    fd_grad(gfd, p.wte, V * C, emb_loss, &p);
    double e = rel_err(dwte, gfd, V * C);
    tap_ok(e <= FD_TOL, "embedding (nseq,T,V,C)=(%d,%d,%d,%d) wrt wte (+=): rel err %.2e", nseq,
           T, V, C, e);
    fd_grad(gfd, p.wpe, T * C, emb_loss, &p);
    e = rel_err(dwpe, gfd, T * C);
    tap_ok(e <= FD_TOL, "embedding (nseq,T,V,C)=(%d,%d,%d,%d) wrt wpe (+=): rel err %.2e", nseq,
           T, V, C, e);
    free(p.wte), free(p.wpe), free(p.R), free(p.out);
    free(dwte0), free(dwpe0), free(dwte), free(dwpe), free(gfd);
}

int main(void)
{
    tap_plan(NCHECKS);
    for (int ta = 0; ta <= 1; ta++) {
        for (int tb = 0; tb <= 1; tb++) {
            test_matmul(ta, tb);
        }
    }
    test_layernorm();
    test_rmsnorm();
    test_gelu();
    test_swiglu();
    test_attention(1, 5, 8, 2, 2);
    test_attention(2, 17, 96, 3, 3);
    test_attention(2, 9, 48, 6, 2); /* grouped-query: 3 query heads per kv head */
    test_attention(1, 7, 32, 4, 1); /* multi-query */
    test_rope(2, 17, 6, 2, 16, 10000.0f);
    test_rope(1, 9, 2, 2, 8, 500000.0f);
    test_xent();
    test_embedding();
    if (tap_count_ != NCHECKS) {
        tap_diag("ran %d checks but planned %d", tap_count_, NCHECKS);
        return 1;
    }
    return tap_exit();
}
