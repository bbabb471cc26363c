// llm.c token shards: both formats round-trip, files are read in name order, and every kind of bad
// file exits 2 with one line naming it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "data/dataset.h"
#include "data/shards.h"
#include "tests/test.h"

// Writes a shard by hand: header fields magic/version/count, then n tokens of width bytes.
static const char *write_raw(const char *name, int magic, int version, int count, int width, const uint32_t *tok, long n) {
    const char *path = test_path(name);
    int32_t h[256] = {magic, version, count};
    FILE *f = fopenCheck(path, "wb");
    fwriteCheck(h, sizeof h, 1, f, path);
    for (long i = 0; i < n; i++) {
        uint16_t t16 = (uint16_t)tok[i];
        fwriteCheck(width == 2 ? (const void *)&t16 : (const void *)&tok[i], (size_t)width, 1, f, path);
    }
    fcloseCheck(f, path);
    return path;
}

static int one_line(const char *s) { return strchr(s, '\n') == s + strlen(s) - 1; }

TEST(shards_write_header_bytes) {
    uint32_t tok[5] = {1, 2, 3, 65535, 7};
    shard_write(test_path("a.bin"), tok, 5, 0);
    size_t len;
    char *buf = read_file_text(test_path("a.bin"), &len);
    CHECK(buf && len == 1024 + 5 * 2, "length %zu", len);
    int32_t h[256];
    memcpy(h, buf, sizeof h);
    CHECK(h[0] == 20240520 && h[1] == 1 && h[2] == 5, "header %d %d %d", h[0], h[1], h[2]);
    for (int i = 3; i < 256; i++) CHECK(h[i] == 0, "header[%d] = %d", i, h[i]);
    uint16_t t[5];
    memcpy(t, buf + 1024, sizeof t);
    for (int i = 0; i < 5; i++) CHECK(t[i] == tok[i], "token %d", i);
    free(buf);
    uint32_t wide[2] = {70000, 5};
    shard_write(test_path("b.bin"), wide, 2, 1);
    buf = read_file_text(test_path("b.bin"), &len);
    CHECK(buf && len == 1024 + 2 * 4, "length %zu", len);
    memcpy(h, buf, sizeof h);
    CHECK(h[0] == 20240801 && h[1] == 7 && h[2] == 2, "header %d %d %d", h[0], h[1], h[2]);
    uint32_t t32;
    memcpy(&t32, buf + 1024, 4);
    CHECK(t32 == 70000, "token %u", t32);
    free(buf);
    CHECK(!test_temp_left(test_path("a.bin")), "temporary file left behind");
}

// Both versions, read back through a glob: windows of T+1 tokens at stride T, in name order.
TEST(shards_read_both_versions) {
    uint32_t a[23], b[13];  // a: uint16, 23 tokens -> 5 windows of T=4; b: uint32, 13 -> 3 windows
    for (int i = 0; i < 23; i++) a[i] = 100 + (uint32_t)i;
    for (int i = 0; i < 13; i++) b[i] = 100000 + (uint32_t)i;
    shard_write(test_path("tok_2.bin"), b, 13, 1);  // written first, read second (name order)
    shard_write(test_path("tok_1.bin"), a, 23, 0);
    char pattern[600];
    snprintf(pattern, sizeof pattern, "%s/tok_*.bin", test_tmpdir());
    Dataset ds;
    dataset_shards(&ds, pattern, "train_data", 4, 0);
    CHECK(ds.n_shards == 2 && ds.n == 8, "%d shards, %ld windows", ds.n_shards, ds.n);
    CHECK(ds.vocab_size == 100013, "vocab_size %d (max token + 1)", ds.vocab_size);
    CHECK(strstr(ds.shards[0].path, "tok_1.bin") && ds.shards[0].width == 2, "first shard %s", ds.shards[0].path);
    CHECK(ds.shards[1].width == 4 && ds.shards[1].ntok == 13, "second shard");
    int32_t x[4], y[4];
    for (long i = 0; i < 8; i++) {
        dataset_get(&ds, i, x, y);
        const uint32_t *src = i < 5 ? a + 4 * i : b + 4 * (i - 5);
        for (int t = 0; t < 4; t++)
            CHECK(x[t] == (int32_t)src[t] && y[t] == (int32_t)src[t + 1], "window %ld t %d: %d %d", i, t, x[t], y[t]);
    }
    dataset_free(&ds);
    dataset_shards(&ds, pattern, "train_data", 4, 200000);  // explicit vocab is kept
    CHECK(ds.vocab_size == 200000, "vocab_size %d", ds.vocab_size);
    dataset_free(&ds);
}

typedef struct {
    const char *pattern;
    int T, vocab;
} OpenArgs;

static void open_dataset(void *arg) {
    const OpenArgs *a = arg;
    Dataset ds;
    dataset_shards(&ds, a->pattern, "train_data", a->T, a->vocab);
}

// Runs dataset_shards in a child; it must exit 2 with one line containing every string in want.
static void expect_input_error(const char *pattern, int T, int vocab, const char *want1, const char *want2) {
    OpenArgs a = {pattern, T, vocab};
    char err[1024];
    int rc = test_fork(open_dataset, &a, err, sizeof err);
    CHECK(rc == 2, "exit status %d for %s (stderr: %s)", rc, pattern, err);
    CHECK(one_line(err), "not one line: %s", err);
    CHECK(strstr(err, want1), "'%s' missing from: %s", want1, err);
    CHECK(!want2 || strstr(err, want2), "'%s' missing from: %s", want2, err);
}

TEST(shards_bad_magic) {
    uint32_t tok[20] = {0};
    const char *p = write_raw("magic.bin", 12345, 1, 20, 2, tok, 20);
    expect_input_error(p, 4, 0, p, "20240520");
}

TEST(shards_unsupported_version) {
    uint32_t tok[20] = {0};
    const char *p = write_raw("v2.bin", 20240520, 2, 20, 2, tok, 20);
    expect_input_error(p, 4, 0, p, "version 2");
    p = write_raw("v1wide.bin", 20240801, 1, 20, 4, tok, 20);
    expect_input_error(p, 4, 0, p, "version 1");
}

TEST(shards_truncated) {
    uint32_t tok[20] = {0};
    const char *p = write_raw("short.bin", 20240520, 1, 30, 2, tok, 20);  // declares 30, holds 20
    expect_input_error(p, 4, 0, p, "truncated");
    p = write_raw("short32.bin", 20240801, 7, 21, 4, tok, 20);
    expect_input_error(p, 4, 0, p, "truncated");
    p = test_write_file("tiny.bin", "not a shard");  // shorter than the header
    expect_input_error(p, 4, 0, p, "truncated");
    p = write_raw("long.bin", 20240520, 1, 10, 2, tok, 20);  // trailing bytes
    expect_input_error(p, 4, 0, p, "unexpected bytes");
}

TEST(shards_token_out_of_vocab) {
    uint32_t tok[20];
    for (int i = 0; i < 20; i++) tok[i] = (uint32_t)i;
    tok[13] = 777;
    shard_write(test_path("ok.bin"), tok, 20, 0);
    expect_input_error(test_path("ok.bin"), 4, 500, "ok.bin", "token 777 at position 13");
    Dataset ds;  // a vocabulary that holds it is fine
    dataset_shards(&ds, test_path("ok.bin"), "train_data", 4, 778);
    CHECK(ds.n == 4, "%ld windows", ds.n);
    dataset_free(&ds);
}

TEST(shards_no_match) {
    char pattern[600];
    snprintf(pattern, sizeof pattern, "%s/nothing_*.bin", test_tmpdir());
    char want[700];
    snprintf(want, sizeof want, "train_data: no files match '%s'", pattern);
    expect_input_error(pattern, 4, 0, want, "docs/gpt2.md");  // and how to get shards
}

TEST(shards_too_few_tokens) {
    uint32_t tok[4] = {1, 2, 3, 4};
    shard_write(test_path("few.bin"), tok, 4, 0);
    expect_input_error(test_path("few.bin"), 4, 0, "train_data", "4 tokens in total");
    // enough in total, but no single file holds a window (windows never cross files)
    shard_write(test_path("few2.bin"), tok, 4, 0);
    char pattern[600];
    snprintf(pattern, sizeof pattern, "%s/few*.bin", test_tmpdir());
    expect_input_error(pattern, 4, 0, "train_data", "no file");
}
