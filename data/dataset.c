// Datasets (MQAR in memory, token shards mapped), the batch loader and the export format.
#include "data/dataset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/rng.h"
#include "data/shards.h"

#define EXPORT_MAGIC 20241122
#define EXPORT_VERSION 1

void dataset_mqar(Dataset *ds, const MqarSpec *spec) {
    MqarCell cell = {spec->kv_pairs, spec->seq_len};
    dataset_mqar_cells(ds, spec, &cell, 1, spec->seq_len);
}

void dataset_mqar_cells(Dataset *ds, const MqarSpec *spec, const MqarCell *cells, int n_cells, int T) {
    memset(ds, 0, sizeof *ds);
    if (n_cells < 1 || n_cells > MQAR_MAX_CELLS) die("internal error: %d MQAR cells", n_cells);
    long per_cell = spec->n_examples;
    ds->T = T;
    ds->vocab_size = spec->vocab_size;
    ds->n = per_cell * n_cells;
    ds->n_cells = n_cells;
    size_t count = (size_t)ds->n * (size_t)T;
    ds->inputs = mallocCheck(count * sizeof(int32_t));
    ds->labels = mallocCheck(count * sizeof(int32_t));
    for (int c = 0; c < n_cells; c++) {
        MqarSpec cs = *spec;
        cs.kv_pairs = cells[c].kv_pairs;
        cs.seq_len = cells[c].seq_len;
        cs.seed = spec->seed + (uint32_t)c;
        const char *err = mqar_spec_error(&cs);
        if (err) die_input("task = mqar: %s (cell %dx%d)", err, cs.kv_pairs, cs.seq_len);
        if (cs.seq_len > T) die("internal error: MQAR cell of %d tokens in rows of %d", cs.seq_len, T);
        ds->cells[c] = cells[c];
        ds->cell_first[c] = per_cell * c;
        if (cells[c].kv_pairs > ds->mqar_kv_pairs) ds->mqar_kv_pairs = cells[c].kv_pairs;
        int32_t *x = ds->inputs + (size_t)ds->cell_first[c] * T, *y = ds->labels + (size_t)ds->cell_first[c] * T;
        int L = cs.seq_len;
        if (L == T) {
            mqar_generate(&cs, x, y);
            continue;
        }
        // generated at the cell's length, then each row moved to its place and padded
        int32_t *gx = mallocCheck((size_t)per_cell * L * sizeof(int32_t));
        int32_t *gy = mallocCheck((size_t)per_cell * L * sizeof(int32_t));
        mqar_generate(&cs, gx, gy);
        for (long i = 0; i < per_cell; i++) {
            memcpy(x + (size_t)i * T, gx + (size_t)i * L, (size_t)L * sizeof(int32_t));
            memcpy(y + (size_t)i * T, gy + (size_t)i * L, (size_t)L * sizeof(int32_t));
            for (int t = L; t < T; t++) x[(size_t)i * T + t] = 0, y[(size_t)i * T + t] = MQAR_IGNORE;
        }
        free(gx), free(gy);
    }
    ds->cell_first[n_cells] = ds->n;
}

Dataset dataset_cell(const Dataset *ds, int c) {
    Dataset v = *ds;
    long first = ds->cell_first[c], n = ds->cell_first[c + 1] - first;
    v.inputs = ds->inputs + (size_t)first * ds->T;
    v.labels = ds->labels + (size_t)first * ds->T;
    v.n = n;
    v.n_cells = 1;
    v.cells[0] = ds->cells[c];
    v.cell_first[0] = 0;
    v.cell_first[1] = n;
    v.mqar_kv_pairs = ds->cells[c].kv_pairs;
    return v;
}

// Windows of T+1 tokens at stride T that fit in a shard of ntok tokens (windows never cross files).
static long shard_windows(long ntok, int T) { return ntok >= (long)T + 1 ? (ntok - 1) / T : 0; }

void dataset_shards(Dataset *ds, const char *glob_pattern, const char *key, int T, int vocab_size) {
    memset(ds, 0, sizeof *ds);
    if (T < 1) die_input("%s: seq_len must be at least 1, got %d", key, T);
    int n;
    char **paths = glob_sorted(glob_pattern, key, &n);
    ds->T = T;
    ds->n_shards = n;
    ds->shards = callocCheck((size_t)n, sizeof(Shard));
    ds->shard_first = mallocCheck((size_t)(n + 1) * sizeof(long));
    uint32_t max_tok = 0;
    long total = 0, largest = 0;
    ds->shard_first[0] = 0;
    for (int i = 0; i < n; i++) {
        Shard *s = &ds->shards[i];
        shard_open(s, paths[i]);
        uint32_t mx = shard_check_tokens(s, vocab_size);
        // vocab_size = 0 takes it from the data: a garbage token would size the embedding
        if (vocab_size == 0 && mx >= DATASET_MAX_VOCAB)
            die_input("%s: token %u is larger than any vocabulary (at most %d tokens): a corrupted shard?", paths[i],
                      mx, DATASET_MAX_VOCAB);
        if (mx > max_tok) max_tok = mx;
        if (i && s->tok_vocab && ds->shards[0].tok_vocab &&
            (s->tok_vocab != ds->shards[0].tok_vocab || s->tok_id != ds->shards[0].tok_id))
            die_input("%s: prepared with another tokenizer than %s (vocabulary %d, identity %08x vs %d, %08x)",
                      paths[i], paths[0], s->tok_vocab, s->tok_id, ds->shards[0].tok_vocab, ds->shards[0].tok_id);
        total += s->ntok;
        if (s->ntok > largest) largest = s->ntok;
        ds->shard_first[i + 1] = ds->shard_first[i] + shard_windows(s->ntok, T);
    }
    ds->n = ds->shard_first[n];
    if (total < (long)T + 1)
        die_input("%s: the files matching '%s' hold %ld tokens in total; seq_len = %d needs at least %d", key,
                  glob_pattern, total, T, T + 1);
    if (ds->n == 0)
        die_input("%s: no file matching '%s' holds seq_len + 1 = %d tokens (the largest has %ld; "
                  "sequences do not cross files)",
                  key, glob_pattern, T + 1, largest);
    ds->vocab_size = vocab_size > 0 ? vocab_size : (int)max_tok + 1;
    ds->tok_vocab = ds->shards[0].tok_vocab;
    ds->tok_id = ds->shards[0].tok_id;
    for (int i = 1; i < n; i++)
        if (!ds->shards[i].tok_vocab) ds->tok_vocab = 0, ds->tok_id = 0;
    free_paths(paths, n);
}

uint64_t dataset_sequence_hash(const Dataset *ds, long i) {
    const int32_t *x = ds->inputs + (size_t)i * (size_t)ds->T;
    uint64_t h = 1469598103934665603ULL;
    for (int t = 0; t < ds->T; t++) {
        uint32_t v = (uint32_t)x[t];
        for (int b = 0; b < 4; b++) h = (h ^ ((v >> (8 * b)) & 0xff)) * 1099511628211ULL;
    }
    return h;
}

long dataset_keep(Dataset *ds, const unsigned char *keep) {
    size_t T = (size_t)ds->T;
    long out = 0, first[MQAR_MAX_CELLS + 1];
    int c = 0;
    for (long i = 0; i < ds->n; i++) {
        while (c < ds->n_cells && ds->cell_first[c] <= i) first[c++] = out;  // cells starting here
        if (!keep[i]) continue;
        if (out != i) {
            memmove(ds->inputs + (size_t)out * T, ds->inputs + (size_t)i * T, T * sizeof(int32_t));
            memmove(ds->labels + (size_t)out * T, ds->labels + (size_t)i * T, T * sizeof(int32_t));
        }
        out++;
    }
    while (c < ds->n_cells) first[c++] = out;
    first[ds->n_cells] = out;
    if (ds->n_cells) memcpy(ds->cell_first, first, sizeof(long) * (size_t)(ds->n_cells + 1));
    long dropped = ds->n - out;
    ds->n = out;
    return dropped;
}

void dataset_free(Dataset *ds) {
    free(ds->inputs);
    free(ds->labels);
    for (int i = 0; i < ds->n_shards; i++) shard_close(&ds->shards[i]);
    free(ds->shards);
    free(ds->shard_first);
    memset(ds, 0, sizeof *ds);
}

// The shard holding window i: the last j with first[j] <= i (first [n + 1], non-decreasing).
static int find_shard(const long *first, int n, long i) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (first[mid] <= i) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

void dataset_get(const Dataset *ds, long i, int32_t *inputs, int32_t *targets) {
    if (i < 0 || i >= ds->n) die("dataset_get: sequence %ld out of range [0, %ld)", i, ds->n);
    int T = ds->T;
    if (ds->inputs) {
        memcpy(inputs, ds->inputs + i * T, (size_t)T * sizeof(int32_t));
        memcpy(targets, ds->labels + i * T, (size_t)T * sizeof(int32_t));
        return;
    }
    int j = find_shard(ds->shard_first, ds->n_shards, i);
    const Shard *s = &ds->shards[j];
    long start = (i - ds->shard_first[j]) * T;  // window w = tokens [w*T, w*T + T]
    for (int t = 0; t < T; t++) {
        inputs[t] = (int32_t)shard_token(s, start + t);
        targets[t] = (int32_t)shard_token(s, start + t + 1);
    }
}

void dataset_get_prefix(const Dataset *ds, long i, int L, int32_t *inputs, int32_t *targets) {
    if (L == ds->T) {
        dataset_get(ds, i, inputs, targets);
        return;
    }
    if (!ds->inputs || L > ds->T) die("internal error: a prefix of %d tokens of rows of %d", L, ds->T);
    if (i < 0 || i >= ds->n) die("dataset_get_prefix: sequence %ld out of range [0, %ld)", i, ds->n);
    memcpy(inputs, ds->inputs + (size_t)i * ds->T, (size_t)L * sizeof(int32_t));
    memcpy(targets, ds->labels + (size_t)i * ds->T, (size_t)L * sizeof(int32_t));
}

void loader_init(Loader *ld, const Dataset *ds, int B, int shuffle, uint64_t seed) {
    memset(ld, 0, sizeof *ld);
    if (B < 1) die_input("batch_size must be at least 1, got %d", B);
    ld->ds = ds;
    ld->B = B;
    ld->shuffle = shuffle;
    ld->seed = seed;
    ld->perm_epoch = -1;
    ld->plan_epoch = -1;
    ld->n_stream = ds->n;
    // MQAR, one cell or a mixture: a batch holds examples of one cell, each at most once
    for (int c = 0; c < ds->n_cells; c++) {
        long n = ds->cell_first[c + 1] - ds->cell_first[c];
        if (n < B)
            die_input("batch_size: %d is above the %ld training examples of MQAR cell %dx%d (a batch holds one "
                      "cell; expected mqar_train_examples >= batch_size)",
                      B, n, ds->cells[c].kv_pairs, ds->cells[c].seq_len);
    }
    if (ds->n_cells > 1) {  // a mixture: whole batches of one cell
        for (int c = 0; c < ds->n_cells; c++)
            ld->cell_batches[c + 1] = ld->cell_batches[c] + (ds->cell_first[c + 1] - ds->cell_first[c]) / B;
        ld->n_stream = ld->cell_batches[ds->n_cells] * B;
        return;
    }
    if (shuffle || !ds->shards) return;
    // Sequential shards: shard j contributes its whole batches of B*T+1 tokens, B windows each;
    // window w of the shard is row w%B of batch w/B, i.e. tokens [w*T, w*T + T].
    long BT = (long)B * ds->T;
    ld->stream_first = mallocCheck((size_t)(ds->n_shards + 1) * sizeof(long));
    ld->stream_first[0] = 0;
    long largest = 0;
    for (int j = 0; j < ds->n_shards; j++) {
        long ntok = ds->shards[j].ntok;
        long batches = ntok >= BT + 1 ? (ntok - 1) / BT : 0;
        ld->stream_first[j + 1] = ld->stream_first[j] + batches * B;
        if (ntok > largest) largest = ntok;
    }
    ld->n_stream = ld->stream_first[ds->n_shards];
    if (ld->n_stream == 0)
        die_input("%s: no token shard holds one batch (batch_size * seq_len + 1 = %ld tokens; the "
                  "largest has %ld)",
                  ds->shards[0].path, BT + 1, largest);
}

void loader_free(Loader *ld) {
    free(ld->perm);
    free(ld->stream_first);
    free(ld->batch_order);
    free(ld->cell_perm);
    ld->perm = NULL;
    ld->stream_first = NULL;
    ld->batch_order = NULL;
    ld->cell_perm = NULL;
    ld->perm_epoch = ld->plan_epoch = -1;
}

// Fisher-Yates over v[n] driven by seed (the loader's permutations).
static void shuffle_longs(long *v, long n, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    for (long i = n - 1; i > 0; i--) {
        long j = (long)rng_below(&rng, (uint64_t)i + 1);
        long t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

// A mixture's plan of epoch e: each cell's sequences (permuted from (seed, e, cell) when
// shuffling) and the order of the epoch's batches (permuted from (seed, e)).
static void make_plan(Loader *ld, long epoch) {
    const Dataset *ds = ld->ds;
    long nb = ld->cell_batches[ds->n_cells];
    if (!ld->cell_perm) ld->cell_perm = mallocCheck((size_t)ds->n * sizeof(long));
    if (!ld->batch_order) ld->batch_order = mallocCheck((size_t)nb * sizeof(long));
    uint64_t epoch_seed = seed_mix(ld->seed, (uint64_t)epoch);
    for (int c = 0; c < ds->n_cells; c++) {
        long first = ds->cell_first[c], n = ds->cell_first[c + 1] - first;
        for (long i = 0; i < n; i++) ld->cell_perm[first + i] = first + i;
        if (ld->shuffle) shuffle_longs(ld->cell_perm + first, n, seed_mix(epoch_seed, (uint64_t)c + 1));
    }
    for (long j = 0; j < nb; j++) ld->batch_order[j] = j;
    if (ld->shuffle) shuffle_longs(ld->batch_order, nb, epoch_seed);
    ld->plan_epoch = epoch;
}

// The next batch of a mixture: B sequences of one cell at the cell's length.
static int mixture_next(Loader *ld, int32_t *inputs, int32_t *targets) {
    const Dataset *ds = ld->ds;
    long nb = ld->cell_batches[ds->n_cells], batch = (long)(ld->pos / (uint64_t)ld->B);
    long epoch = batch / nb, slot = batch % nb;
    if (ld->plan_epoch != epoch) make_plan(ld, epoch);
    slot = ld->batch_order[slot];
    int c = 0;
    while (ld->cell_batches[c + 1] <= slot) c++;
    int L = ds->cells[c].seq_len;
    const long *rows = ld->cell_perm + ds->cell_first[c] + (slot - ld->cell_batches[c]) * ld->B;
    for (int b = 0; b < ld->B; b++) dataset_get_prefix(ds, rows[b], L, inputs + (size_t)b * L, targets + (size_t)b * L);
    ld->pos += (uint64_t)ld->B;
    return L;
}

// The permutation of epoch e: Fisher-Yates driven by seed_mix(seed, e), so any epoch can be
// rebuilt from (seed, pos) alone when resuming.
static void make_perm(Loader *ld, long epoch) {
    long n = ld->n_stream;
    if (!ld->perm) ld->perm = mallocCheck((size_t)n * sizeof(long));
    for (long i = 0; i < n; i++) ld->perm[i] = i;
    shuffle_longs(ld->perm, n, seed_mix(ld->seed, (uint64_t)epoch));
    ld->perm_epoch = epoch;
}

// Dataset index of stream sequence s (s counts from the start of training).
static long stream_index(Loader *ld, uint64_t s) {
    long epoch = (long)(s / (uint64_t)ld->n_stream), r = (long)(s % (uint64_t)ld->n_stream);
    if (ld->shuffle) {
        if (ld->perm_epoch != epoch) make_perm(ld, epoch);
        return ld->perm[r];
    }
    if (!ld->stream_first) return r;
    const Dataset *ds = ld->ds;
    int j = find_shard(ld->stream_first, ds->n_shards, r);
    return ds->shard_first[j] + (r - ld->stream_first[j]);
}

int loader_next(Loader *ld, int32_t *inputs, int32_t *targets) {
    if (ld->ds->n_cells > 1) return mixture_next(ld, inputs, targets);
    int T = ld->ds->T;
    for (int b = 0; b < ld->B; b++)
        dataset_get(ld->ds, stream_index(ld, ld->pos + (uint64_t)b), inputs + (size_t)b * T, targets + (size_t)b * T);
    ld->pos += (uint64_t)ld->B;
    return T;
}

long loader_epoch_size(const Loader *ld) { return ld->n_stream; }

void dataset_export(const Dataset *ds, const char *path) {
    if (ds->n > INT32_MAX) die_input("%s: %ld sequences do not fit the export header", path, ds->n);
    int T = ds->T;
    int32_t header[256] = {0};
    header[0] = EXPORT_MAGIC;
    header[1] = EXPORT_VERSION;
    header[2] = (int32_t)ds->n;
    header[3] = T;
    AtomicFile out;
    char err[2600];
    if (atomic_open(&out, path, err, sizeof err) != 0) die_input("%s", err);
    fwriteCheck(header, sizeof header, 1, out.f, out.tmp);
    if (ds->inputs) {  // int32 inputs [N, T], then labels [N, T] (little-endian host)
        fwriteCheck(ds->inputs, sizeof(int32_t), (size_t)ds->n * T, out.f, out.tmp);
        fwriteCheck(ds->labels, sizeof(int32_t), (size_t)ds->n * T, out.f, out.tmp);
    } else {  // shards: the windows' inputs, then their targets
        int32_t *x = mallocCheck((size_t)T * sizeof(int32_t)), *y = mallocCheck((size_t)T * sizeof(int32_t));
        for (int pass = 0; pass < 2; pass++)
            for (long i = 0; i < ds->n; i++) {
                dataset_get(ds, i, x, y);
                fwriteCheck(pass ? y : x, sizeof(int32_t), (size_t)T, out.f, out.tmp);
            }
        free(x), free(y);
    }
    if (atomic_commit(&out, err, sizeof err) != 0) die("%s", err);
}
