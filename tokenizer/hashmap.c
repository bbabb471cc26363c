#include "tokenizer/hashmap.h"

#include <stdlib.h>
#include <string.h>

#include "core/io.h"

uint64_t hash_bytes(const uint8_t *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    memcpy(&w, p, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

void strmap_init(StrMap *m) {
    memset(m, 0, sizeof *m);
    m->cap = 1024;
    m->slots = mallocCheck(m->cap * sizeof *m->slots);
    memset(m->slots, 0xff, m->cap * sizeof *m->slots);
}

void strmap_free(StrMap *m) {
    free(m->slots);
    free(m->hash);
    free(m->off);
    free(m->len);
    free(m->bytes);
    memset(m, 0, sizeof *m);
}

void strmap_clear(StrMap *m) {
    memset(m->slots, 0xff, m->cap * sizeof *m->slots);
    m->n = 0;
    m->n_bytes = 0;
}

int32_t strmap_find(const StrMap *m, const uint8_t *key, size_t len, uint64_t h) {
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        int32_t id = m->slots[i];
        if (id < 0) return -1;
        if (m->hash[id] == h && (size_t)m->len[id] == len && !memcmp(m->bytes + m->off[id], key, len)) return id;
    }
}

static void strmap_grow(StrMap *m) {
    free(m->slots);
    m->cap *= 2;
    m->slots = mallocCheck(m->cap * sizeof *m->slots);
    memset(m->slots, 0xff, m->cap * sizeof *m->slots);
    for (int32_t id = 0; id < m->n; id++) {
        size_t i = m->hash[id] & (m->cap - 1);
        while (m->slots[i] >= 0) i = (i + 1) & (m->cap - 1);
        m->slots[i] = id;
    }
}

int32_t strmap_intern(StrMap *m, const uint8_t *key, size_t len, uint64_t h, int *added) {
    *added = 0;
    size_t i = h & (m->cap - 1);
    for (;; i = (i + 1) & (m->cap - 1)) {
        int32_t id = m->slots[i];
        if (id < 0) break;
        if (m->hash[id] == h && (size_t)m->len[id] == len && !memcmp(m->bytes + m->off[id], key, len)) return id;
    }
    if (m->n == INT32_MAX - 1) die("too many distinct strings for the tokenizer's tables");
    if (m->n == m->n_cap) {
        m->n_cap = m->n_cap ? 2 * m->n_cap : 1024;
        m->hash = reallocCheck(m->hash, (size_t)m->n_cap * sizeof *m->hash);
        m->off = reallocCheck(m->off, (size_t)m->n_cap * sizeof *m->off);
        m->len = reallocCheck(m->len, (size_t)m->n_cap * sizeof *m->len);
    }
    if (m->n_bytes + len > m->bytes_cap) {
        while (m->n_bytes + len > m->bytes_cap) m->bytes_cap = m->bytes_cap ? 2 * m->bytes_cap : 65536;
        m->bytes = reallocCheck(m->bytes, m->bytes_cap);
    }
    int32_t id = m->n++;
    memcpy(m->bytes + m->n_bytes, key, len);
    m->off[id] = m->n_bytes;
    m->len[id] = (int32_t)len;
    m->hash[id] = h;
    m->n_bytes += len;
    m->slots[i] = id;
    *added = 1;
    if ((size_t)m->n * 2 > m->cap) strmap_grow(m);
    return id;
}

void pairmap_init(PairMap *m, size_t expected) {
    m->cap = 64;
    while (m->cap < 2 * expected) m->cap *= 2;
    m->keys = callocCheck(m->cap, sizeof *m->keys);
    m->vals = mallocCheck(m->cap * sizeof *m->vals);
    m->n = 0;
}

void pairmap_free(PairMap *m) {
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

void pairmap_put(PairMap *m, uint32_t a, uint32_t b, int32_t v) {
    if (2 * (m->n + 1) > m->cap) {
        PairMap big;
        pairmap_init(&big, m->cap);  // doubles the capacity
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i]) {
                size_t j = pair_slot(m->keys[i], big.cap);
                while (big.keys[j]) j = (j + 1) & (big.cap - 1);
                big.keys[j] = m->keys[i];
                big.vals[j] = m->vals[i];
            }
        big.n = m->n;
        pairmap_free(m);
        *m = big;
    }
    uint64_t k = pair_key(a, b);
    size_t i = pair_slot(k, m->cap);
    while (m->keys[i] && m->keys[i] != k) i = (i + 1) & (m->cap - 1);
    if (!m->keys[i]) m->n++;
    m->keys[i] = k;
    m->vals[i] = v;
}
