#include "tokenizer/bpe_train.h"

#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/progress.h"
#include "tokenizer/chunks.h"
#include "tokenizer/hashmap.h"

typedef struct {
    uint32_t a, b;
    int64_t count;   // occurrences, with the word counts as weights
    int32_t *where;  // words it occurs in (may hold words it left since; checked on use)
    int32_t n_where, cap_where;
    int32_t queued;  // the merge after which it was last queued
} Pair;

typedef struct {
    int64_t count;
    uint32_t a, b;
    int32_t pair;
} HeapItem;

struct BpeTrainer {
    StrMap words;     // chunk bytes -> word id
    int64_t *wcount;  // [words] occurrences of each distinct chunk
    int32_t wcap;
    long n_chunks;
    // during run()
    uint32_t **sym;   // [words] symbols of each word
    int32_t *nsym;    // [words]
    int32_t *seen;    // [words] the merge that last touched the word (de-duplicates where lists)
    PairMap pair_id;  // (a, b) -> index into pairs
    Pair *pairs;
    int32_t n_pairs, cap_pairs;
    HeapItem *heap;
    long n_heap, cap_heap;
    int32_t *grown;  // pairs whose count rose during one merge
    long n_grown, cap_grown;
};

BpeTrainer *bpe_trainer_create(void) {
    BpeTrainer *t = callocCheck(1, sizeof *t);
    strmap_init(&t->words);
    return t;
}

void bpe_trainer_free(BpeTrainer *t) {
    if (!t) return;
    for (int32_t w = 0; t->sym && w < t->words.n; w++) free(t->sym[w]);
    free(t->sym);
    free(t->nsym);
    free(t->seen);
    for (int32_t p = 0; p < t->n_pairs; p++) free(t->pairs[p].where);
    free(t->pairs);
    pairmap_free(&t->pair_id);
    free(t->heap);
    free(t->grown);
    strmap_free(&t->words);
    free(t->wcount);
    free(t);
}

void bpe_trainer_add_chunk(BpeTrainer *t, const uint8_t *chunk, int len) {
    t->n_chunks++;
    if (len < 2) return;  // a single byte holds no pair
    int added;
    int32_t w = strmap_intern(&t->words, chunk, (size_t)len, hash_bytes(chunk, (size_t)len), &added);
    if (added) {
        if (w == t->wcap) {
            t->wcap = t->wcap ? 2 * t->wcap : 4096;
            t->wcount = reallocCheck(t->wcount, (size_t)t->wcap * sizeof *t->wcount);
        }
        t->wcount[w] = 0;
    }
    t->wcount[w]++;
}

long bpe_trainer_words(const BpeTrainer *t) { return t->words.n; }
long bpe_trainer_chunks(const BpeTrainer *t) { return t->n_chunks; }

// --- the heap: largest count first, then smallest (a, b) ---------------------------------------

static int heap_before(const HeapItem *x, const HeapItem *y) {
    if (x->count != y->count) return x->count > y->count;
    if (x->a != y->a) return x->a < y->a;
    return x->b < y->b;
}

static void heap_push(BpeTrainer *t, int32_t p) {
    if (t->n_heap == t->cap_heap) {
        t->cap_heap = t->cap_heap ? 2 * t->cap_heap : 4096;
        t->heap = reallocCheck(t->heap, (size_t)t->cap_heap * sizeof *t->heap);
    }
    HeapItem it = {t->pairs[p].count, t->pairs[p].a, t->pairs[p].b, p};
    long i = t->n_heap++;
    while (i > 0) {
        long parent = (i - 1) / 2;
        if (!heap_before(&it, &t->heap[parent])) break;
        t->heap[i] = t->heap[parent];
        i = parent;
    }
    t->heap[i] = it;
}

static HeapItem heap_pop(BpeTrainer *t) {
    HeapItem top = t->heap[0], last = t->heap[--t->n_heap];
    long i = 0, n = t->n_heap;
    for (;;) {
        long c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && heap_before(&t->heap[c + 1], &t->heap[c])) c++;
        if (!heap_before(&t->heap[c], &last)) break;
        t->heap[i] = t->heap[c];
        i = c;
    }
    if (n > 0) t->heap[i] = last;
    return top;
}

// --- pair counts -------------------------------------------------------------------------------

static int32_t pair_index(BpeTrainer *t, uint32_t a, uint32_t b) {
    int32_t p = pairmap_get(&t->pair_id, a, b);
    if (p >= 0) return p;
    if (t->n_pairs == t->cap_pairs) {
        t->cap_pairs = t->cap_pairs ? 2 * t->cap_pairs : 4096;
        t->pairs = reallocCheck(t->pairs, (size_t)t->cap_pairs * sizeof *t->pairs);
    }
    p = t->n_pairs++;
    t->pairs[p] = (Pair){a, b, 0, NULL, 0, 0, -1};
    pairmap_put(&t->pair_id, a, b, p);
    return p;
}

// count(a, b) += delta; a rise also records word w as a place where the pair occurs.
static void pair_add(BpeTrainer *t, uint32_t a, uint32_t b, int64_t delta, int32_t w) {
    int32_t p = pair_index(t, a, b);
    Pair *pr = &t->pairs[p];
    pr->count += delta;
    if (delta <= 0) return;
    if (!pr->n_where || pr->where[pr->n_where - 1] != w) {
        if (pr->n_where == pr->cap_where) {
            pr->cap_where = pr->cap_where ? 2 * pr->cap_where : 4;
            pr->where = reallocCheck(pr->where, (size_t)pr->cap_where * sizeof *pr->where);
        }
        pr->where[pr->n_where++] = w;
    }
    if (t->n_grown == t->cap_grown) {
        t->cap_grown = t->cap_grown ? 2 * t->cap_grown : 1024;
        t->grown = reallocCheck(t->grown, (size_t)t->cap_grown * sizeof *t->grown);
    }
    t->grown[t->n_grown++] = p;
}

// Replaces every (a, b) in word w, left to right, by z, and moves the counts of the neighbours.
static void merge_word(BpeTrainer *t, int32_t w, uint32_t a, uint32_t b, uint32_t z) {
    uint32_t *s = t->sym[w];
    int32_t n = t->nsym[w], o = 0;
    int64_t c = t->wcount[w];
    for (int32_t r = 0; r < n;) {
        if (r + 1 < n && s[r] == a && s[r + 1] == b) {
            pair_add(t, a, b, -c, w);
            if (o > 0) {
                pair_add(t, s[o - 1], a, -c, w);
                pair_add(t, s[o - 1], z, c, w);
            }
            if (r + 2 < n) {
                pair_add(t, b, s[r + 2], -c, w);
                pair_add(t, z, s[r + 2], c, w);
            }
            s[o++] = z;
            r += 2;
        } else {
            s[o++] = s[r++];
        }
    }
    t->nsym[w] = o;
}

Bpe *bpe_trainer_run(BpeTrainer *t, int vocab_size, int progress) {
    int target = vocab_size - 257;
    if (target < 0) target = 0;
    int32_t W = t->words.n;
    t->sym = mallocCheck((size_t)(W ? W : 1) * sizeof *t->sym);
    t->nsym = mallocCheck((size_t)(W ? W : 1) * sizeof *t->nsym);
    t->seen = mallocCheck((size_t)(W ? W : 1) * sizeof *t->seen);
    pairmap_init(&t->pair_id, 65536);
    for (int32_t w = 0; w < W; w++) {
        int32_t n = t->words.len[w];
        const uint8_t *k = strmap_key(&t->words, w);
        t->sym[w] = mallocCheck((size_t)n * sizeof **t->sym);
        for (int32_t i = 0; i < n; i++) t->sym[w][i] = k[i];
        t->nsym[w] = n;
        t->seen[w] = -1;
        for (int32_t i = 0; i + 1 < n; i++) pair_add(t, k[i], k[i + 1], t->wcount[w], w);
    }
    t->n_grown = 0;
    for (int32_t p = 0; p < t->n_pairs; p++) heap_push(t, p);

    uint32_t(*merges)[2] = mallocCheck((size_t)(target ? target : 1) * sizeof *merges);
    int m = 0;
    double t0 = now_seconds(), shown = 0;
    while (m < target && t->n_heap > 0) {
        HeapItem top = heap_pop(t);
        Pair *pr = &t->pairs[top.pair];
        if (top.count != pr->count) {  // stale: counts only fall, so re-queue the current one
            if (pr->count > 0) heap_push(t, top.pair);
            continue;
        }
        if (pr->count < 2) break;  // nothing left that occurs twice
        uint32_t a = pr->a, b = pr->b, z = 256 + (uint32_t)m;
        merges[m][0] = a;
        merges[m][1] = b;
        // The where list of (a, b) cannot grow during this merge (new pairs all hold z), but the
        // pairs array can move: keep the list itself.
        int32_t *where = pr->where, n_where = pr->n_where;
        pr->where = NULL;
        pr->n_where = pr->cap_where = 0;
        t->n_grown = 0;
        for (int32_t i = 0; i < n_where; i++) {
            int32_t w = where[i];
            if (t->seen[w] == m) continue;
            t->seen[w] = m;
            merge_word(t, w, a, b, z);
        }
        free(where);
        for (long i = 0; i < t->n_grown; i++) {  // new pairs (with z) enter the heap once each
            int32_t p = t->grown[i];
            if (t->pairs[p].count > 0 && t->pairs[p].queued != m) {
                t->pairs[p].queued = m;
                heap_push(t, p);
            }
        }
        m++;
        double now = now_seconds();
        if (progress && now - shown > 0.2) {
            shown = now;
            progress_line("bpe: merge %d/%d (count %lld) | %.1f s", m, target, (long long)top.count, now - t0);
        }
    }
    if (progress) progress_break();
    Bpe *bpe = bpe_create((const uint32_t(*)[2])merges, m);
    free(merges);
    return bpe;
}
