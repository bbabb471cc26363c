// The project's general-purpose RNG: xoshiro256** seeded through splitmix64. Used for weight
// init, data shuffling and sampling. (MQAR uses MT19937 to match numpy; see data/mt19937.h.)
#pragma once
#include <stdint.h>

typedef struct Rng {
    uint64_t s[4];
} Rng;

void rng_seed(Rng *r, uint64_t seed);
uint64_t rng_u64(Rng *r);
// Uniform double in [0, 1) with 53 random bits.
double rng_uniform(Rng *r);
// Standard normal (Box-Muller, one draw pair per call: no hidden cached state).
double rng_normal(Rng *r);
// Uniform integer in [0, n), unbiased; n > 0.
uint64_t rng_below(Rng *r, uint64_t n);
// Mixes two values into a new seed (splitmix64 finaliser), for independent derived streams.
uint64_t seed_mix(uint64_t a, uint64_t b);
