#include "data/mt19937.h"

#define MT_M 397
#define MATRIX_A 0x9908b0dfU
#define UPPER_MASK 0x80000000U
#define LOWER_MASK 0x7fffffffU

void mt_init_genrand(Mt19937 *m, uint32_t seed) {
    m->mt[0] = seed;
    for (int i = 1; i < MT_N; i++) m->mt[i] = 1812433253U * (m->mt[i - 1] ^ (m->mt[i - 1] >> 30)) + (uint32_t)i;
    m->mti = MT_N;
}

static inline uint32_t twist(uint32_t a, uint32_t b, uint32_t c) {
    uint32_t y = (a & UPPER_MASK) | (b & LOWER_MASK);
    return c ^ (y >> 1) ^ ((0U - (y & 1U)) & MATRIX_A);
}

// The standard MT19937 state update, split into loops without wrap-around so they vectorize, then
// tempering of the whole block at once (cheaper than tempering one word per call).
void mt_next_block(Mt19937 *m) {
    uint32_t *mt = m->mt;
    int k;
    for (k = 0; k < MT_N - MT_M; k++) mt[k] = twist(mt[k], mt[k + 1], mt[k + MT_M]);
    for (; k < MT_N - 1; k++) mt[k] = twist(mt[k], mt[k + 1], mt[k + MT_M - MT_N]);
    mt[MT_N - 1] = twist(mt[MT_N - 1], mt[0], mt[MT_M - 1]);
    for (k = 0; k < MT_N; k++) {
        uint32_t y = mt[k];
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c5680U;
        y ^= (y << 15) & 0xefc60000U;
        y ^= y >> 18;
        m->out[k] = y;
    }
    m->mti = 0;
}

void mt_legacy_shuffle(Mt19937 *m, int *arr, uint32_t n) {
    uint32_t i = n ? n - 1 : 0;  // the next index to fill; done when it reaches 0
    while (i >= 1) {
        if (m->mti >= MT_N) mt_next_block(m);
        const uint32_t *w = m->out;
        int k = m->mti;
        while (k < MT_N && i >= 1) {
            uint32_t mask = 0xffffffffU >> __builtin_clz(i);  // random_interval's mask for max = i
            uint32_t v = w[k++] & mask;
            uint32_t accept = v <= i;
            uint32_t j = accept ? v : i;  // a rejected draw swaps arr[i] with itself
            int t = arr[i];
            arr[i] = arr[j];
            arr[j] = t;
            i -= accept;
        }
        m->mti = k;
    }
}
