/* SPDX-License-Identifier: MIT */
/* runtime/rng.h: the one random generator of helix (splitmix64 seeding xoshiro256**), so
 * parameter initialisation and data sampling are bit-reproducible from --seed on any
 * machine.  Normal variates by Box-Muller in double. */
#ifndef HX_RNG_H
#define HX_RNG_H

#include <stdint.h>

struct hx_rng {
    uint64_t s[4];
};

void hx_rng_seed(struct hx_rng *r, uint64_t seed);
uint64_t hx_rng_next(struct hx_rng *r);
/* uniform in [0, 1) with 53 random bits */
double hx_rng_uniform(struct hx_rng *r);
/* uniform integer in [0, n) */
uint64_t hx_rng_below(struct hx_rng *r, uint64_t n);
/* N(0, 1) */
double hx_rng_normal(struct hx_rng *r);

#endif /* HX_RNG_H */
