/* SPDX-License-Identifier: MIT */
/* runtime/rng.c: xoshiro256** (Blackman & Vigna), seeded through splitmix64. */
#include <math.h>

#include "runtime/rng.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void hx_rng_seed(struct hx_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) {
        r->s[i] = splitmix64(&seed);
    }
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t hx_rng_next(struct hx_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double hx_rng_uniform(struct hx_rng *r)
{
    return (double)(hx_rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t hx_rng_below(struct hx_rng *r, uint64_t n)
{
    /* Lemire-free simple rejection keeps it unbiased and obvious */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do {
        x = hx_rng_next(r);
    } while (x >= limit);
    return x % n;
}

double hx_rng_normal(struct hx_rng *r)
{
    double u1 = hx_rng_uniform(r), u2 = hx_rng_uniform(r);
    if (u1 < 1e-300) {
        u1 = 1e-300;
    }
    return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}
