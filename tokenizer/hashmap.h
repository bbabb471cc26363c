// Two open-addressing hash maps for the tokenizer: byte strings -> dense ids (the word counts of
// BPE training, the encoder's cache) and pairs of token ids -> int32 (merge ranks, pair slots).
// Ids are handed out in insertion order, so anything indexed by them is deterministic.
#pragma once
#include <stddef.h>
#include <stdint.h>

uint64_t hash_bytes(const uint8_t *p, size_t n);

typedef struct {
    int32_t *slots;  // [cap] entry id or -1
    size_t cap;      // power of two
    uint64_t *hash;  // [n] per entry
    size_t *off;     // [n] key offset into bytes
    int32_t *len;    // [n] key length
    int32_t n, n_cap;
    uint8_t *bytes;  // key arena
    size_t n_bytes, bytes_cap;
} StrMap;

void strmap_init(StrMap *m);
void strmap_free(StrMap *m);
void strmap_clear(StrMap *m);
// Id of the key; -1 when absent.
int32_t strmap_find(const StrMap *m, const uint8_t *key, size_t len, uint64_t h);
// Id of the key, adding it when absent (*added = 1 then).
int32_t strmap_intern(StrMap *m, const uint8_t *key, size_t len, uint64_t h, int *added);
static inline const uint8_t *strmap_key(const StrMap *m, int32_t id) { return m->bytes + m->off[id]; }

typedef struct {
    uint64_t *keys;  // [cap] (left << 32 | right) + 1, 0 = empty
    int32_t *vals;   // [cap]
    size_t cap, n;
} PairMap;

void pairmap_init(PairMap *m, size_t expected);
void pairmap_free(PairMap *m);
static inline uint64_t pair_key(uint32_t a, uint32_t b) { return ((uint64_t)a << 32 | b) + 1; }
static inline size_t pair_slot(uint64_t key, size_t cap) {
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}
// The value stored for (a, b), or -1.
static inline int32_t pairmap_get(const PairMap *m, uint32_t a, uint32_t b) {
    uint64_t k = pair_key(a, b);
    for (size_t i = pair_slot(k, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == k) return m->vals[i];
        if (m->keys[i] == 0) return -1;
    }
}
// Stores v for (a, b) (replacing any value).
void pairmap_put(PairMap *m, uint32_t a, uint32_t b, int32_t v);
