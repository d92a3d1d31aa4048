/* SPDX-License-Identifier: MIT */
/* codelets/vecmath.h: exp and tanh written so the compiler vectorizes the loops that call
 * them (no branches, no libm calls): glibc's scalar expf/tanhf cost 20-40 ns an element and
 * made GELU a quarter of a training step.  hx_expf: Cephes' range reduction x = n ln2 + r,
 * a degree-6 polynomial for e^r on |r| <= ln2/2, and 2^n assembled in the exponent bits;
 * relative error ~2 ulp on [-87, 88]; 0 below (so masked -inf scores give exactly 0), and
 * inputs above 88 saturate at e^88.
 * hx_tanhf = 1 - 2 / (e^{2u} + 1): its absolute error ~1e-7 is what GELU's 0.5 x (1 + tanh)
 * needs.  Checked against the double references by tests/codelets/{gelu,attention}.c. */
#ifndef HX_VECMATH_H
#define HX_VECMATH_H

#include <stdint.h>
#include <math.h>
#include <string.h>

/* Hot element-wise kernels are compiled three times, for AVX-512, AVX2+FMA and baseline
 * x86-64, and the loader picks the best the CPU has (GCC's target_clones, via ifunc). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HX_VECTOR_CLONES \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define HX_VECTOR_CLONES
#endif

static inline float hx_expf(float x0)
{
    float x = x0 < -87.0f ? -87.0f : (x0 > 88.0f ? 88.0f : x0);
    /* n = round(x / ln2) by the 1.5 * 2^23 trick: exact for |x / ln2| < 2^22, vectorizable */
    float fn = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = x - fn * 0.693359375f - fn * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t bits = ((int32_t)fn + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return x0 < -87.0f ? 0.0f : p * scale; /* exactly 0 below, as masked scores need */
}

static inline float hx_tanhf(float u)
{
    return 1.0f - 2.0f / (hx_expf(2.0f * u) + 1.0f);
}

/* log sum_j exp(x[j]) over a row of V logits: the row max subtracted keeps every exp()
 * <= 1, and the sum of up to 50k terms is kept in double so the loss of a confident
 * prediction keeps its digits.  Shared by the cross-entropy and its vocabulary-parallel
 * form, so both see the same rounding. */
static inline double hx_row_lse(const float *x, int V)
{
    float mx = x[0];
    for (int j = 1; j < V; j++) {
        mx = x[j] > mx ? x[j] : mx;
    }
    double sum = 0.0;
    for (int j = 0; j < V; j++) {
        sum += hx_expf(x[j] - mx);
    }
    return (double)mx + log(sum);
}

#endif /* HX_VECMATH_H */
