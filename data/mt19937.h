// MT19937 with numpy's legacy RandomState draws on top of it, so MQAR reproduces zoology's numpy
// code token for token (docs/mqar.md#the-generator). Not the project's general RNG (core/rng.h).
#pragma once
#include <stdint.h>

#define MT_N 624

typedef struct {
    uint32_t mt[MT_N];   // the raw state words
    uint32_t out[MT_N];  // tempered outputs of the current block (tempering done a block at a time)
    int mti;             // next index into out; MT_N means "twist first"
} Mt19937;

// Matsumoto-Nishimura init_genrand (numpy's legacy np.random.seed(int) for seeds < 2^32).
void mt_init_genrand(Mt19937 *m, uint32_t seed);
// Regenerates the next block of MT_N outputs (internal; called by mt_genrand_int32).
void mt_next_block(Mt19937 *m);

// genrand_int32: the next tempered 32-bit output.
static inline uint32_t mt_genrand_int32(Mt19937 *m) {
    if (m->mti >= MT_N) mt_next_block(m);
    return m->out[m->mti++];
}

// numpy legacy random_interval(max): uniform in [0, max] by masking to the next power of two minus
// one and rejecting values above max (one u32 per try). max < 2^32.
static inline uint32_t mt_random_interval(Mt19937 *m, uint32_t max) {
    if (max == 0) return 0;
    uint32_t mask = max;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    uint32_t v;
    while ((v = mt_genrand_int32(m) & mask) > max) {}
    return v;
}

// genrand_res53: a double in [0, 1) with 53 random bits from two draws (numpy's random_sample).
static inline double mt_genrand_res53(Mt19937 *m) {
    uint32_t a = mt_genrand_int32(m) >> 5, b = mt_genrand_int32(m) >> 6;
    return ((double)a * 67108864.0 + (double)b) * (1.0 / 9007199254740992.0);
}

// numpy legacy shuffle of a 1-d array arr[n]: for i = n-1 down to 1, swap arr[i] and
// arr[random_interval(i)]. Same draws and result as that loop, written without unpredictable
// branches (the rejection test feeds a conditional move), which makes it about twice as fast.
void mt_legacy_shuffle(Mt19937 *m, int *arr, uint32_t n);
