// The batch loader (docs/text.md#token-shards): the exact sequential order over shards, shuffled
// epochs, resume from pos, and the export format of docs/mqar.md#exporting-the-data.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "data/dataset.h"
#include "data/shards.h"
#include "tests/test.h"

// Shard s holds tokens 1000*(s+1) + position, so a token says where it came from.
static void write_tagged(const char *name, int s, long n, int wide) {
    uint32_t *tok = mallocCheck((size_t)n * sizeof *tok);
    for (long i = 0; i < n; i++) tok[i] = 1000u * (uint32_t)(s + 1) + (uint32_t)i;
    shard_write(test_path(name), tok, n, wide);
    free(tok);
}

static const char *pattern(const char *glob) {
    static char buf[600];
    snprintf(buf, sizeof buf, "%s/%s", test_tmpdir(), glob);
    return buf;
}

// With B=2, T=4 a batch is 9 tokens. Shard 0 (uint16, 20 tokens): batches at tokens 0 and 8, its
// 3-token tail skipped. Shard 1 (uint32, 9 tokens): one batch. Shard 2 (5 tokens): none (it holds a
// window, not a batch). Then back to shard 0.
TEST(loader_sequential_shards_order) {
    write_tagged("s0.bin", 0, 20, 0);
    write_tagged("s1.bin", 1, 9, 1);
    write_tagged("s2.bin", 2, 5, 0);
    Dataset ds;
    dataset_shards(&ds, pattern("s*.bin"), "train_data", 4, 0);
    CHECK(ds.n == 4 + 2 + 1, "%ld windows", ds.n);
    Loader ld;
    loader_init(&ld, &ds, 2, 0, 1);
    CHECK(loader_epoch_size(&ld) == 6, "epoch size %ld", loader_epoch_size(&ld));
    const int shard_of[5] = {0, 0, 1, 0, 0}, k_of[5] = {0, 1, 0, 0, 1};  // batches 0..4
    int32_t x[8], y[8];
    for (int batch = 0; batch < 5; batch++) {
        loader_next(&ld, x, y);
        int s = shard_of[batch], k = k_of[batch];
        for (int b = 0; b < 2; b++)
            for (int t = 0; t < 4; t++) {
                int32_t want = 1000 * (s + 1) + k * 2 * 4 + b * 4 + t;  // token k*B*T + b*T + t
                CHECK(x[b * 4 + t] == want, "batch %d row %d t %d: %d, want %d", batch, b, t, x[b * 4 + t], want);
                CHECK(y[b * 4 + t] == want + 1, "batch %d row %d t %d: target %d", batch, b, t, y[b * 4 + t]);
            }
    }
    CHECK(ld.pos == 10, "pos %llu", (unsigned long long)ld.pos);
    loader_free(&ld);
    dataset_free(&ds);
}

// MQAR: row b of a batch is an example's inputs and its labels are the targets; the stream wraps
// to example 0 mid-batch when N is not a multiple of B.
TEST(loader_sequential_mqar) {
    MqarSpec s = {.vocab_size = 64, .seq_len = 16, .kv_pairs = 2, .power_a = 0.01, .seed = 5, .n_examples = 7};
    Dataset ds;
    dataset_mqar(&ds, &s);
    Loader ld;
    loader_init(&ld, &ds, 3, 0, 0);
    CHECK(loader_epoch_size(&ld) == 7, "epoch size");
    int32_t x[48], y[48];
    for (int batch = 0; batch < 5; batch++) {
        loader_next(&ld, x, y);
        for (int b = 0; b < 3; b++) {
            long ex = (batch * 3 + b) % 7;
            CHECK(!memcmp(x + b * 16, ds.inputs + ex * 16, 16 * sizeof(int32_t)), "batch %d row %d inputs", batch, b);
            CHECK(!memcmp(y + b * 16, ds.labels + ex * 16, 16 * sizeof(int32_t)), "batch %d row %d labels", batch, b);
        }
    }
    loader_free(&ld);
    dataset_free(&ds);
}

// One shard of 1 + 37*4 tokens = 37 windows of T=4; window w starts with token 1000 + 4w.
static void shuffle_dataset(Dataset *ds) {
    write_tagged("perm.bin", 0, 1 + 37 * 4, 0);
    dataset_shards(ds, test_path("perm.bin"), "train_data", 4, 0);
}

// Window ids of the first n stream sequences of a loader with batch B (n a multiple of B).
static void stream_ids(Loader *ld, long n, long *ids) {
    int B = ld->B, T = ld->ds->T;
    int32_t *x = mallocCheck((size_t)B * T * sizeof *x), *y = mallocCheck((size_t)B * T * sizeof *y);
    for (long i = 0; i < n; i += B) {
        loader_next(ld, x, y);
        for (int b = 0; b < B; b++) {
            ids[i + b] = (x[b * T] - 1000) / T;
            for (int t = 0; t < T; t++) CHECK(y[b * T + t] == x[b * T + t] + 1, "targets not shifted");
        }
    }
    free(x), free(y);
}

TEST(loader_shuffle_is_a_permutation_per_epoch) {
    Dataset ds;
    shuffle_dataset(&ds);
    CHECK(ds.n == 37, "%ld windows", ds.n);
    Loader a, b, c;
    loader_init(&a, &ds, 5, 1, 42);
    loader_init(&b, &ds, 5, 1, 42);
    loader_init(&c, &ds, 5, 1, 43);
    CHECK(loader_epoch_size(&a) == 37, "epoch size %ld", loader_epoch_size(&a));
    long ia[150], ib[150], ic[150];
    stream_ids(&a, 150, ia);
    stream_ids(&b, 150, ib);
    stream_ids(&c, 150, ic);
    for (int e = 0; e < 4; e++) {  // epochs 0..3 = stream [37e, 37e + 37)
        int seen[37] = {0}, identity = 1;
        for (int i = 0; i < 37; i++) {
            long id = ia[37 * e + i];
            CHECK(id >= 0 && id < 37, "id %ld", id);
            seen[id]++;
            identity &= id == i;
        }
        for (int i = 0; i < 37; i++) CHECK(seen[i] == 1, "epoch %d: window %d seen %d times", e, i, seen[i]);
        CHECK(!identity, "epoch %d is not shuffled", e);
    }
    int same01 = 1, same_seed = 1, other_seed = 1;
    for (int i = 0; i < 37; i++) same01 &= ia[i] == ia[37 + i];
    for (int i = 0; i < 150; i++) same_seed &= ia[i] == ib[i], other_seed &= ia[i] == ic[i];
    CHECK(!same01, "epochs 0 and 1 have the same order");
    CHECK(same_seed, "same seed, different order");
    CHECK(!other_seed, "different seeds, same order");
    loader_free(&a), loader_free(&b), loader_free(&c);
    dataset_free(&ds);
}

// The loader's whole state is pos: a fresh loader with pos = p continues exactly like one that
// consumed p sequences (any p, also mid-epoch and not a multiple of B).
static void check_resume(const Dataset *ds, int shuffle, int B) {
    Loader ref;
    loader_init(&ref, ds, 1, shuffle, 7);  // B = 1: the stream one sequence at a time
    int T = ds->T;
    long total = 200;
    int32_t *sx = mallocCheck((size_t)total * T * sizeof *sx), *sy = mallocCheck((size_t)total * T * sizeof *sy);
    for (long i = 0; i < total; i++) loader_next(&ref, sx + i * T, sy + i * T);
    loader_free(&ref);
    const long ps[] = {0, 5, 7, 36, 37, 74, 100};
    int32_t *x = mallocCheck((size_t)B * T * sizeof *x), *y = mallocCheck((size_t)B * T * sizeof *y);
    for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++) {
        long p = ps[k];
        Loader ld;
        loader_init(&ld, ds, B, shuffle, 7);
        ld.pos = (uint64_t)p;
        for (long s = p; s + B <= total && s < p + 60; s += B) {
            loader_next(&ld, x, y);
            CHECK(!memcmp(x, sx + s * T, (size_t)B * T * sizeof *x), "shuffle %d p %ld: inputs at %ld", shuffle, p, s);
            CHECK(!memcmp(y, sy + s * T, (size_t)B * T * sizeof *y), "shuffle %d p %ld: targets at %ld", shuffle, p, s);
        }
        loader_free(&ld);
    }
    free(sx), free(sy), free(x), free(y);
}

TEST(loader_resume_from_pos) {
    Dataset ds;
    shuffle_dataset(&ds);
    check_resume(&ds, 1, 5);
    dataset_free(&ds);
    MqarSpec s = {.vocab_size = 64, .seq_len = 16, .kv_pairs = 2, .power_a = 0.01, .seed = 5, .n_examples = 37};
    dataset_mqar(&ds, &s);
    check_resume(&ds, 0, 5);
    check_resume(&ds, 1, 5);
    dataset_free(&ds);
}

// Sequential shards resume too, with pos a multiple of B (the only values training produces).
TEST(loader_resume_sequential_shards) {
    write_tagged("r0.bin", 0, 41, 0);
    write_tagged("r1.bin", 1, 30, 1);
    Dataset ds;
    dataset_shards(&ds, pattern("r*.bin"), "train_data", 4, 0);
    Loader a, b;
    loader_init(&a, &ds, 2, 0, 0);
    int32_t x[8], y[8], x2[8], y2[8];
    for (int i = 0; i < 7; i++) loader_next(&a, x, y);
    loader_init(&b, &ds, 2, 0, 0);
    b.pos = a.pos;
    for (int i = 0; i < 12; i++) {
        loader_next(&a, x, y);
        loader_next(&b, x2, y2);
        CHECK(!memcmp(x, x2, sizeof x) && !memcmp(y, y2, sizeof y), "batch %d after resume", i);
    }
    loader_free(&a), loader_free(&b);
    dataset_free(&ds);
}

static void loader_too_big(void *arg) {
    (void)arg;
    Dataset ds;
    dataset_shards(&ds, test_path("small.bin"), "train_data", 4, 0);
    Loader ld;
    loader_init(&ld, &ds, 8, 0, 0);  // a batch needs 33 tokens; the shard has 20
}

TEST(loader_shard_smaller_than_a_batch_exits_2) {
    write_tagged("small.bin", 0, 20, 0);
    char err[1024];
    int rc = test_fork(loader_too_big, NULL, err, sizeof err);
    CHECK(rc == 2, "exit status %d: %s", rc, err);
    CHECK(strstr(err, "small.bin") && strstr(err, "33"), "message: %s", err);
}

// docs/mqar.md#exporting-the-data: 256 int32 header (20241122, 1, N, L, zeros), inputs [N, L],
// labels [N, L].
TEST(loader_export_format) {
    MqarSpec s = {.vocab_size = 64, .seq_len = 16, .kv_pairs = 2, .power_a = 0.01, .seed = 9, .n_examples = 5};
    Dataset ds;
    dataset_mqar(&ds, &s);
    const char *path = test_path("train.bin");
    dataset_export(&ds, path);
    CHECK(!test_temp_left(path), "temporary file left behind");
    size_t len;
    char *buf = read_file_text(path, &len);
    CHECK(buf && len == 1024 + 2 * 5 * 16 * 4, "file length %zu", len);
    int32_t h[256];
    memcpy(h, buf, sizeof h);
    CHECK(h[0] == 20241122 && h[1] == 1 && h[2] == 5 && h[3] == 16, "header %d %d %d %d", h[0], h[1], h[2], h[3]);
    for (int i = 4; i < 256; i++) CHECK(h[i] == 0, "header[%d] = %d", i, h[i]);
    int32_t *x = (int32_t *)(buf + 1024), *y = x + 5 * 16;
    CHECK(!memcmp(x, ds.inputs, 5 * 16 * 4), "inputs differ");
    CHECK(!memcmp(y, ds.labels, 5 * 16 * 4), "labels differ");
    // first row by value: key, value pairs, then the labels sit at the queries
    CHECK(x[0] >= 1 && x[0] < 32 && x[1] >= 32 && x[1] < 64, "row 0 starts %d %d", x[0], x[1]);
    int labels = 0;
    for (int t = 0; t < 16; t++) {
        if (y[t] == -100) continue;
        labels++;
        CHECK(x[t] == x[0] || x[t] == x[2], "label at a non-query %d", t);
    }
    CHECK(labels == 2, "%d labels in row 0", labels);
    free(buf);
    dataset_free(&ds);
    // shards: the windows' inputs, then their targets
    write_tagged("e.bin", 0, 9, 0);
    dataset_shards(&ds, test_path("e.bin"), "train_data", 4, 0);
    dataset_export(&ds, path);
    buf = read_file_text(path, &len);
    CHECK(buf && len == 1024 + 2 * 2 * 4 * 4, "file length %zu", len);
    memcpy(h, buf, sizeof h);
    CHECK(h[2] == 2 && h[3] == 4, "header N %d L %d", h[2], h[3]);
    x = (int32_t *)(buf + 1024), y = x + 8;
    for (int i = 0; i < 8; i++) CHECK(x[i] == 1000 + i && y[i] == 1001 + i, "token %d: %d %d", i, x[i], y[i]);
    free(buf);
    dataset_free(&ds);
}
