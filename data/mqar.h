// MQAR, the multi-query associative recall task of Zoology (docs/mqar.md).
// With random_filler = 0 the generator reproduces zoology's numpy code token for token.
#pragma once
#include <stdint.h>

#define MQAR_IGNORE (-100)

typedef struct {
    int vocab_size;     // V: keys from [1, V/2), values from [V/2, V)
    int seq_len;        // L: even, V > L
    int kv_pairs;       // K: 4K <= L
    double power_a;     // query-gap power law exponent (zoology default 0.01)
    int random_filler;  // 0: filler token 0 (zoology Figure 2); 1: uniform random tokens (our RNG)
    uint32_t seed;      // MT19937 seed
    long n_examples;
} MqarSpec;

// NULL when the spec is valid, else a static message naming what is wrong (e.g. "seq_len must be even").
const char *mqar_spec_error(const MqarSpec *s);
// Generates n_examples examples: inputs [n, L] and labels [n, L] (MQAR_IGNORE where unlabelled).
void mqar_generate(const MqarSpec *s, int32_t *inputs, int32_t *labels);
// The deterministic layout of one example from its draws: keys[K], values[K], gaps[K] (distinct in
// [0, (L-2K)/2)). Writes x[L] and y[L]. Exposed for tests.
void mqar_layout(int K, int L, const int *keys, const int *values, const int *gaps, int32_t *x, int32_t *y);
