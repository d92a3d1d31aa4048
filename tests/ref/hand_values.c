/* SPDX-License-Identifier: MIT */
/* tests/ref/hand_values.c: each reference in codelets/ref/ref.h against small values worked
 * out by hand (literals are the exact math rounded to double; derivations in comments).
 * Covers matmul (four transposes, alpha, beta, bias), bias_bwd, layernorm fwd/bwd, rmsnorm
 * fwd/bwd, gelu, swiglu, attention (T=1, T=2), cross-entropy, embedding, add, sumsq, clip
 * coef, AdamW, lr schedule.
 * Gradients against finite differences: tests/ref/finite_diff.c. */
#include <math.h>
#include <stddef.h>

#include "codelets/ref/ref.h"
#include "tap.h"

#define NCHECKS 40

/* The literals are correctly rounded (mpmath); the references round differently in the last
 * few bits (summation order, exp/log), so "equal" means within 1e-12 relative to max(1, |x|),
 * far below any real bug. */
#define TOL 1e-12

/* max over i of |got - want| / max(1, |want|); a NaN or Inf anywhere gives +Inf */
static double max_err(const double *got, const double *want, int n)
{
    double err = 0.0;
    for (int i = 0; i < n; i++) {
        double d = fabs(got[i] - want[i]) / fmax(1.0, fabs(want[i]));
        if (!isfinite(d)) {
            return INFINITY;
        }
        err = fmax(err, d);
    }
    return err;
}

static void check(const double *got, const double *want, int n, const char *what)
{
    double e = max_err(got, want, n);
    tap_ok(e <= TOL, "%s (max err %.1e)", what, e);
}

static void check1(double got, double want, const char *what)
{
    check(&got, &want, 1, what);
}

/* ---------------------------------------------------------------------------------------- */
/* matmul: C (2,3) = alpha A (2,4) B (4,3) + beta C0 + bias, m, n, k all different so that
 * swapped dimensions in an index cannot go unnoticed. */
static void test_matmul(void)
{
    static const double A[2 * 4] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    static const double At[4 * 2] = { 1, 5, 2, 6, 3, 7, 4, 8 };
    static const double B[4 * 3] = { 1, 0, 2, 0, 1, -1, 1, 1, 0, 2, -1, 1 };
    static const double Bt[3 * 4] = { 1, 0, 1, 2, 0, 1, 1, -1, 2, -1, 0, 1 };
    static const double C0[2 * 3] = { 1, 2, 3, 4, 5, 6 };
    static const double bias[3] = { 1, -1, 0.5 };
    /* A B = [[1+0+3+8, 0+2+3-4, 2-2+0+4], [5+0+7+16, 0+6+7-8, 10-6+0+8]] = [[12,1,4],[28,5,12]] */
    static const double AB[2 * 3] = { 12, 1, 4, 28, 5, 12 };
    /* 2 AB + 0.5 C0 + bias */
    static const double want[2 * 3] = { 25.5, 2, 10, 59, 11.5, 27.5 };
    char what[96];

    for (int ta = 0; ta <= 1; ta++) {
        for (int tb = 0; tb <= 1; tb++) {
            double C[2 * 3];
            for (int i = 0; i < 6; i++) {
                C[i] = C0[i];
            }
            hx_ref_matmul(C, ta ? At : A, tb ? Bt : B, bias, ta, tb, 2, 3, 4, 2.0, 0.5);
            snprintf(what, sizeof what,
                     "matmul transa=%d transb=%d (2,3)=(2,4)(4,3), alpha=2 beta=0.5 bias", ta, tb);
            check(C, want, 6, what);
        }
    }

    /* beta = 0 must not read C (BLAS): NaN in C must not reach the result */
    double err = 0.0;
    for (int ta = 0; ta <= 1; ta++) {
        for (int tb = 0; tb <= 1; tb++) {
            double C[2 * 3];
            for (int i = 0; i < 6; i++) {
                C[i] = NAN;
            }
            hx_ref_matmul(C, ta ? At : A, tb ? Bt : B, NULL, ta, tb, 2, 3, 4, 1.0, 0.0);
            err = fmax(err, max_err(C, AB, 6));
        }
    }
    tap_ok(err <= TOL, "matmul beta=0 ignores a NaN-filled C, no bias, all transposes (max err "
           "%.1e)", err);

    /* bias_bwd accumulates column sums: dbias = 1 + [1+4, 2+5, 3+6] */
    double dbias[3] = { 1, 1, 1 };
    static const double dbias_want[3] = { 6, 8, 10 };
    hx_ref_bias_bwd(dbias, C0, 2, 3);
    check(dbias, dbias_want, 3, "bias_bwd (2,3): += column sums");
}

/* ---------------------------------------------------------------------------------------- */
/* layernorm of x = [1,2,3]: mean 2, biased var 2/3, rstd = 1/sqrt(2/3 + eps),
 * xhat = [-1,0,1] rstd.  With eps = 0, r = sqrt(3/2) = 1.224744871391589. */
static void test_layernorm(void)
{
    static const double x[2 * 3] = { 1, 2, 3, 2, 2, 2 };
    static const double w[3] = { 1, 2, 3 };
    static const double b[3] = { 0.5, 0, -0.5 };
    const double r = 1.224744871391589;
    double out[2 * 3], mean[2], rstd[2];

    /* out = xhat w + b = [-r + 0.5, 0, 3r - 0.5] */
    static const double out0[3] = { -0.724744871391589, 0, 3.1742346141747673 };
    hx_ref_layernorm_fwd(out, mean, rstd, x, w, b, 1, 3, 0.0);
    check(out, out0, 3, "layernorm_fwd [1,2,3], w=[1,2,3], b=[.5,0,-.5], eps=0");
    double stats[2] = { mean[0], rstd[0] };
    const double stats_want[2] = { 2, r };
    check(stats, stats_want, 2, "layernorm_fwd keeps mean=2, rstd=sqrt(3/2)");

    /* eps = 1e-5: rstd = 1/sqrt(2/3 + 1e-5); a constant row has var 0, rstd = 1/sqrt(1e-5)
     * and out = b exactly */
    static const double rstd_want[2] = { 1.2247356859083902, 316.22776601683796 };
    hx_ref_layernorm_fwd(out, mean, rstd, x, w, b, 2, 3, 1e-5);
    double got[3 + 2] = { out[3], out[4], out[5], rstd[0], rstd[1] };
    double want[3 + 2] = { b[0], b[1], b[2], rstd_want[0], rstd_want[1] };
    check(got, want, 5, "layernorm_fwd eps=1e-5: rstd of [1,2,3] and [2,2,2], constant row -> b");

    /* backward on [1,2,3] (eps = 0) with dout = [1,0,0]: g = dout w = [1,0,0],
     * mean(g) = 1/3, mean(g xhat) = -r/3,
     * dx = r (g - 1/3 - xhat (-r/3)) = r ([2/3,-1/3,-1/3] + [-1,0,1] r^2/3) = r [1/6,-1/3,1/6];
     * plus resid 0.5.  dw = 10 + dout xhat = [10 - r, 10, 10]; db = 1 + dout = [2,1,1]. */
    static const double dout[3] = { 1, 0, 0 };
    static const double resid[3] = { 0.5, 0.5, 0.5 };
    static const double dx_want[3] = { 0.5 + 0.2041241452319315, 0.5 - 0.408248290463863,
                                       0.5 + 0.2041241452319315 };
    static const double dwb_want[6] = { 8.77525512860841, 10, 10, 2, 1, 1 };
    double dx[3], dwb[6] = { 10, 10, 10, 1, 1, 1 };
    hx_ref_layernorm_fwd(out, mean, rstd, x, w, b, 1, 3, 0.0);
    hx_ref_layernorm_bwd(dx, dwb, dwb + 3, dout, x, w, mean, rstd, resid, 1, 3);
    check(dx, dx_want, 3, "layernorm_bwd dinp = resid + r[1/6,-1/3,1/6] for dout=[1,0,0]");
    check(dwb, dwb_want, 6, "layernorm_bwd dw += dout xhat, db += dout");

    /* dout constant along the row and w = 1: LN is shift invariant, so dinp = 0 (no resid) */
    static const double ones[3] = { 1, 1, 1 };
    static const double zeros[3] = { 0, 0, 0 };
    hx_ref_layernorm_fwd(out, mean, rstd, x, ones, zeros, 1, 3, 0.0);
    hx_ref_layernorm_bwd(dx, NULL, NULL, ones, x, ones, mean, rstd, NULL, 1, 3);
    check(dx, zeros, 3, "layernorm_bwd shift invariance: constant dout, w=1 -> dinp=0");
}

/* ---------------------------------------------------------------------------------------- */
/* rmsnorm of x = [1,2,3]: mean(x^2) = 14/3, so with eps = 0 rstd = r = sqrt(3/14) =
 * 0.4629100498862757 and xhat = r [1,2,3]. */
static void test_rmsnorm(void)
{
    static const double x[3] = { 1, 2, 3 };
    static const double w[3] = { 1, 2, 3 };
    const double r = 0.46291004988627573;
    double out[3], rstd, dx[3];

    /* out = xhat w = r [1,4,9]; no mean is subtracted and there is no bias */
    hx_ref_rmsnorm_fwd(out, &rstd, x, w, 1, 3, 0.0);
    double got[4] = { out[0], out[1], out[2], rstd };
    static const double want[4] = { 0.46291004988627573, 1.8516401995451029, 4.1661904489764816,
                                    0.46291004988627573 };
    check(got, want, 4, "rmsnorm_fwd [1,2,3], w=[1,2,3], eps=0: r[1,4,9], rstd=sqrt(3/14)");

    /* backward with dout = [1,0,0]: g = dout w = [1,0,0], mean(g xhat) = r/3,
     * dx = r (g - xhat r/3) = r ([1,0,0] - [1,2,3]/14) = r [13/14,-2/14,-3/14]; plus resid 0.5.
     * dw = 10 + dout xhat = [10 + r, 10, 10]. */
    static const double dout[3] = { 1, 0, 0 };
    static const double resid[3] = { 0.5, 0.5, 0.5 };
    static const double dx_want[3] = { 0.92984504632297032, 0.43386999287338918,
                                       0.40080498931008377 };
    static const double dw_want[3] = { 10.462910049886276, 10, 10 };
    double dw[3] = { 10, 10, 10 };
    hx_ref_rmsnorm_bwd(dx, dw, dout, x, w, &rstd, resid, 1, 3);
    check(dx, dx_want, 3, "rmsnorm_bwd dinp = resid + r[13,-2,-3]/14 for dout=[1,0,0]");
    check(dw, dw_want, 3, "rmsnorm_bwd dw += dout xhat");

    /* RMSNorm is scale invariant (eps = 0): a dout along xhat, with w = 1, changes only the
     * scale of x, so dinp = 0 */
    static const double ones[3] = { 1, 1, 1 };
    static const double zeros[3] = { 0, 0, 0 };
    double xhat[3] = { r, 2 * r, 3 * r };
    hx_ref_rmsnorm_bwd(dx, NULL, xhat, x, ones, &rstd, NULL, 1, 3);
    check(dx, zeros, 3, "rmsnorm_bwd scale invariance: dout = xhat, w=1 -> dinp=0");
}

/* ---------------------------------------------------------------------------------------- */
static void test_gelu(void)
{
    /* gelu(x) - gelu(-x) = x, so gelu(-1) = gelu(1) - 1 */
    static const double x[4] = { 0, 1, -1, 2 };
    static const double want[4] = { 0, 0.8411919906082768, -0.15880800939172324,
                                    1.954597694087775 };
    double out[4];
    hx_ref_gelu_fwd(out, x, 4);
    check(out, want, 4, "gelu_fwd at 0, 1, -1, 2");

    /* gelu'(0) = 0.5 (1 + tanh 0) = 0.5; times dout = 3 */
    double dx, three = 3;
    hx_ref_gelu_bwd(&dx, x, &three, 1);
    check1(dx, 1.5, "gelu_bwd gelu'(0) * 3 = 1.5");
}

/* ---------------------------------------------------------------------------------------- */
/* swiglu: one row of F = 4, inp = [gate | up] = [0, 1, -1, -2 | 5, 2, 1, -1.5].
 * silu(g) = g s(g): silu(0) = 0, silu(1) = s(1) = 0.7310585786300049, silu(-1) = -s(-1) =
 * -0.2689414213699951, silu(-2) = -2 s(-2); silu'(g) = s(g) (1 + g (1 - s(g))), silu'(0) = 1/2. */
static void test_swiglu(void)
{
    static const double inp[8] = { 0, 1, -1, -2, 5, 2, 1, -1.5 };
    static const double out_want[4] = { 0, 1.4621171572600098, -0.2689414213699951,
                                        0.35760876606635267 };
    double out[4];
    hx_ref_swiglu_fwd(out, inp, 1, 4);
    check(out, out_want, 4, "swiglu_fwd silu(gate) up at gates 0, 1, -1, -2");

    /* dout = [3, 1, 0, 0.5]: dgate = dout up silu'(g) (3 5 / 2 = 7.5 at g = 0),
     * dup = dout silu(g) */
    static const double dout[4] = { 3, 1, 0, 0.5 };
    static const double dinp_want[8] = { 7.5, 1.8553410237429735, 0, 0.068088186588671609,
                                         0, 0.7310585786300049, 0, -0.11920292202211756 };
    double dinp[8];
    hx_ref_swiglu_bwd(dinp, inp, dout, 1, 4);
    check(dinp, dinp_want, 8, "swiglu_bwd [dout up silu'(gate) | dout silu(gate)]");
}

/* ---------------------------------------------------------------------------------------- */
/* qkv rows are [q | k | v], each C wide; head h uses columns h*hs..(h+1)*hs of each part */
static void test_attention(void)
{
    /* T = 1: the softmax has one entry, so out = v and lse = scale q.k, for every sequence and
     * head.  nseq=3, C=4, NH=2, hs=2, scale = 1/sqrt(2). */
    double qkv[3 * 12], out[3 * 4], lse[3 * 2];
    for (int i = 0; i < 3 * 12; i++) {
        qkv[i] = (double)((i * 7) % 11) - 5.0;
    }
    hx_ref_attention_fwd(out, lse, qkv, 3, 1, 4, 2);
    double v_want[3 * 4], lse_want[3 * 2];
    for (int s = 0; s < 3; s++) {
        const double *row = qkv + s * 12;
        for (int i = 0; i < 4; i++) {
            v_want[s * 4 + i] = row[8 + i];
        }
        for (int h = 0; h < 2; h++) {
            double qk = row[2 * h] * row[4 + 2 * h] + row[2 * h + 1] * row[4 + 2 * h + 1];
            lse_want[s * 2 + h] = qk / sqrt(2.0);
        }
    }
    check(out, v_want, 12, "attention_fwd T=1 (nseq=3,C=4,NH=2): out = v");
    check(lse, lse_want, 6, "attention_fwd T=1: lse = q.k/sqrt(hs)");

    /* and its gradient: dq = dk = 0 (a one-entry softmax is constant), dv = dout */
    double dout[3 * 4], dqkv[3 * 12], dqkv_want[3 * 12];
    for (int i = 0; i < 3 * 4; i++) {
        dout[i] = 0.25 * i - 1.0;
    }
    for (int s = 0; s < 3; s++) {
        for (int i = 0; i < 8; i++) {
            dqkv_want[s * 12 + i] = 0.0;
        }
        for (int i = 0; i < 4; i++) {
            dqkv_want[s * 12 + 8 + i] = dout[s * 4 + i];
        }
    }
    for (int i = 0; i < 3 * 12; i++) {
        dqkv[i] = NAN; /* written, not accumulated */
    }
    hx_ref_attention_bwd(dqkv, dout, qkv, 3, 1, 4, 2);
    check(dqkv, dqkv_want, 36, "attention_bwd T=1: dq = dk = 0, dv = dout");

    /* T = 2, one sequence, C = 4, NH = 2, scale = 1/sqrt(2).
     * head 0: q0=[1,1] k0=[0,5] v0=[1,2];  q1=[1,0] k1=[sqrt2 ln3, 0] v1=[3,-2]
     *   row 0: S = 5/sqrt2, lse = 5/sqrt2, out = v0 = [1,2]
     *   row 1: S = [0, ln3], P = [1/4, 3/4], lse = ln4, out = [1/4+9/4, 2/4-6/4] = [2.5,-1]
     * head 1: q0=[2,0] k0=[1,1] v0=[4,0];  q1=[0,0] k1=[7,-3] v1=[0,8]
     *   row 0: S = 2/sqrt2, lse = sqrt2, out = [4,0]
     *   row 1: S = [0,0], P = [1/2,1/2], lse = ln2, out = [2,4] */
    const double k1 = sqrt(2.0) * log(3.0);
    /*                     q (h0 | h1)    k (h0 | h1)      v (h0 | h1) */
    double qkv2[2 * 12] = { 1, 1, 2, 0,   0, 5, 1, 1,      1, 2, 4, 0,
                            1, 0, 0, 0,   k1, 0, 7, -3,    3, -2, 0, 8 };
    static const double out2_want[2 * 4] = { 1, 2, 4, 0, 2.5, -1, 2, 4 };
    static const double lse2_want[2 * 2] = { 3.5355339059327373, 1.4142135623730951,
                                             1.3862943611198906, 0.6931471805599453 };
    double out2[2 * 4], lse2[2 * 2];
    hx_ref_attention_fwd(out2, lse2, qkv2, 1, 2, 4, 2);
    check(out2, out2_want, 8, "attention_fwd T=2 by hand (C=4,NH=2): out");
    check(lse2, lse2_want, 4, "attention_fwd T=2 by hand: lse");
}

/* ---------------------------------------------------------------------------------------- */
static void test_xent(void)
{
    /* V = 3.  row 0: [1,2,3], target 0: lse = 3 + log(1 + e^-1 + e^-2), loss = lse - 1.
     * row 1: [0, ln2, ln5], target 2: e^logits = [1,2,5], lse = ln8, loss = ln8 - ln5 = ln1.6.
     * row 2: [1000,1000,1000], target 1: loss = ln3, lse = 1000 + ln3 (needs the max shift) */
    const double logits[3 * 3] = { 1, 2, 3, 0, log(2.0), log(5.0), 1000, 1000, 1000 };
    static const int targets[3] = { 0, 2, 1 };
    static const double loss_want[3] = { 2.40760596444438, 0.47000362924573563,
                                         1.0986122886681098 };
    static const double lse_want[3] = { 3.40760596444438, 2.0794415416798357,
                                        1001.0986122886682 };
    double losses[3], lse[3];
    hx_ref_xent_fwd(losses, lse, logits, targets, 3, 3);
    check(losses, loss_want, 3, "xent_fwd (3,3) losses, incl. logits 1000 (no overflow)");
    check(lse, lse_want, 3, "xent_fwd (3,3) lse");

    /* 0.25 (softmax - onehot): row 0 softmax = e^[1,2,3] / sum, minus [1,0,0];
     * row 1 [1,2,5]/8 - [0,0,1] = [1,2,-3]/8; row 2 [1,1,1]/3 - [0,1,0] = [1,-2,1]/3 */
    static const double dl_want[3 * 3] = { -0.2274923567074049, 0.06118211776369941,
                                           0.16631023894370547, 0.25 / 8, 0.5 / 8, -0.75 / 8,
                                           0.25 / 3, -0.5 / 3, 0.25 / 3 };
    double dl[3 * 3];
    hx_ref_xent_bwd(dl, logits, targets, 3, 3, 0.25);
    check(dl, dl_want, 9, "xent_bwd (3,3) scale=0.25: scale (softmax - onehot)");
}

/* ---------------------------------------------------------------------------------------- */
static void test_embedding(void)
{
    /* V=3, C=2, T=3, nseq=2 (N=6); tokens [2,0,1 | 2,2,0].  T differs from nseq and V so that
     * r % T cannot be confused with another modulus. */
    static const double wte[3 * 2] = { 1, 2, 3, 4, 5, 6 };
    static const double wpe[3 * 2] = { 10, 20, 30, 40, 50, 60 };
    static const int tokens[6] = { 2, 0, 1, 2, 2, 0 };
    /* wte[2]+wpe[0], wte[0]+wpe[1], wte[1]+wpe[2], wte[2]+wpe[0], wte[2]+wpe[1], wte[0]+wpe[2] */
    static const double out_want[6 * 2] = { 15, 26, 31, 42, 53, 64, 15, 26, 35, 46, 51, 62 };
    double out[6 * 2];
    hx_ref_embed_fwd(out, tokens, wte, wpe, 6, 3, 2);
    check(out, out_want, 12, "embed_fwd (N=6,T=3,C=2): wte[token] + wpe[r % T]");

    /* dout row r is [r+1, r+1]; accumulators start at 1.
     * dwte: token 0 <- rows 1, 5 (2+6), token 1 <- row 2 (3), token 2 <- rows 0, 3, 4 (1+4+5)
     * dwpe: position 0 <- rows 0, 3 (1+4), 1 <- rows 1, 4 (2+5), 2 <- rows 2, 5 (3+6) */
    static const double dout[6 * 2] = { 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6 };
    static const double dwte_want[3 * 2] = { 9, 9, 4, 4, 11, 11 };
    static const double dwpe_want[3 * 2] = { 6, 6, 8, 8, 10, 10 };
    double dwte[3 * 2] = { 1, 1, 1, 1, 1, 1 }, dwpe[3 * 2] = { 1, 1, 1, 1, 1, 1 };
    hx_ref_embed_bwd(dwte, dwpe, dout, tokens, 6, 3, 2);
    check(dwte, dwte_want, 6, "embed_bwd dwte += (token 2 sums rows 0, 3, 4)");
    check(dwpe, dwpe_want, 6, "embed_bwd dwpe += (position r % T)");
}

/* ---------------------------------------------------------------------------------------- */
static void test_add(void)
{
    double a[3] = { 1, 2, 3 };
    static const double b[3] = { 0.5, -2, 1 };
    static const double want[3] = { 1.5, 0, 4 };
    double out[3];
    hx_ref_add(out, a, b, 3);
    check(out, want, 3, "add [1,2,3] + [.5,-2,1]");
    hx_ref_add(a, a, b, 3);
    check(a, want, 3, "add in place (out aliases a)");
}

/* ---------------------------------------------------------------------------------------- */
static void test_optimizer(void)
{
    static const double x[4] = { 1, 2, 3, -4 };
    check1(hx_ref_sumsq(x, 4), 30, "sumsq [1,2,3,-4] = 30");

    /* norm 4: max_norm 1 -> 1/(4 + 1e-6); max_norm 10 -> clamped to 1; max_norm 0 -> off */
    check1(hx_ref_clip_coef(16, 1), 0.24999993750001562, "clip_coef norm=4 max=1: 1/(4+1e-6)");
    double c[2] = { hx_ref_clip_coef(16, 10), hx_ref_clip_coef(16, 0) };
    static const double ones[2] = { 1, 1 };
    check(c, ones, 2, "clip_coef norm=4: max=10 -> 1 (clamped), max=0 -> 1 (off)");

    /* t=1, lr .1, wd .1, b1 .9, b2 .999, eps 1e-8; bias corrections 1 - .9 = .1, 1 - .999 = .001
     * element 0: p=1, grad .5, clip 1, m=v=0:
     *   p = 1 (1 - .01) = .99; m = .1 .5 = .05; v = .001 .25 = 2.5e-4;
     *   mhat = .05/.1 = .5; vhat = 2.5e-4/.001 = .25; p = .99 - .1 .5/(.5 + 1e-8) = .890000002
     * element 1: p=-2, grad -2, clip .25 (so g = -.5), m=.2, v=.03:
     *   p = -1.98; m = .18 - .05 = .13; v = .02997 + .00025 = .03022; mhat = 1.3, vhat = 30.22;
     *   p = -1.98 - .1 1.3/(sqrt(30.22) + 1e-8) = -1.98 - .023648092872... = -2.003648092829186 */
    double p[2] = { 1, -2 }, m[2] = { 0, 0.2 }, v[2] = { 0, 0.03 };
    static const double g[2] = { 0.5, -2 };
    hx_ref_adamw(p, m, v, g, 1, 0.1, 0.9, 0.999, 1e-8, 0.1, 1.0, 1);
    hx_ref_adamw(p + 1, m + 1, v + 1, g + 1, 1, 0.1, 0.9, 0.999, 1e-8, 0.1, 0.25, 1);
    double got[6] = { p[0], m[0], v[0], p[1], m[1], v[1] };
    static const double want[6] = { 0.890000002, 0.05, 2.5e-4, -2.003648092829186, 0.13, 0.03022 };
    check(got, want, 6, "adamw t=1 by hand: param, m, v (clip 1 and clip .25, wd .1)");

    /* t = 3 with wd = .5, lr = .01, p=-2, m=.2, v=.03, g=-2 clip .25 -> g=-.5:
     *   p = -2 (1 - .005) = -1.99; m = .13, v = .03022 as above;
     *   mhat = .13/(1 - .9^3) = .13/.271; vhat = .03022/(1 - .999^3) = .03022/.002997001;
     *   p = -1.99 - .01 mhat / (sqrt(vhat) + 1e-8) = -1.991510672327903 */
    double p3 = -2, m3 = 0.2, v3 = 0.03, g3 = -2;
    hx_ref_adamw(&p3, &m3, &v3, &g3, 1, 0.01, 0.9, 0.999, 1e-8, 0.5, 0.25, 3);
    double got3[3] = { p3, m3, v3 };
    static const double want3[3] = { -1.991510672327903, 0.13, 0.03022 };
    check(got3, want3, 3, "adamw t=3 bias correction by hand (clip .25, wd .5)");

    /* max 6e-4, min 6e-5, warmup 10, decay 100:
     *   s=0: 6e-4/10; s=9: peak 6e-4; s=10: cos 0 -> 6e-4; s=55: half way, cos(pi/2) = 0 ->
     *   (max+min)/2 = 3.3e-4; s=100: min; s=200: stays min */
    static const int steps[6] = { 0, 9, 10, 55, 100, 200 };
    static const double lr_want[6] = { 6e-5, 6e-4, 6e-4, 3.3e-4, 6e-5, 6e-5 };
    double lr[6];
    for (int i = 0; i < 6; i++) {
        lr[i] = hx_ref_lr(steps[i], 6e-4, 6e-5, 10, 100);
    }
    check(lr, lr_want, 6, "lr warmup=10 decay=100 at s=0 (warmup), 9,10 (peak), 55, 100, 200");
    /* no warmup, decay_iters 0: the span is clamped to 1, so s=0 is max and s>=1 is min */
    double lr0[2] = { hx_ref_lr(0, 1.0, 0.1, 0, 0), hx_ref_lr(5, 1.0, 0.1, 0, 0) };
    static const double lr0_want[2] = { 1.0, 0.1 };
    check(lr0, lr0_want, 2, "lr warmup=0 decay=0: s=0 -> max, s=5 -> min (no division by 0)");
}

int main(void)
{
    tap_plan(NCHECKS);
    test_matmul();
    test_layernorm();
    test_rmsnorm();
    test_gelu();
    test_swiglu();
    test_attention();
    test_xent();
    test_embedding();
    test_add();
    test_optimizer();
    if (tap_count_ != NCHECKS) {
        tap_diag("ran %d checks but planned %d", tap_count_, NCHECKS);
        return 1;
    }
    return tap_exit();
}
