// Byte-level BPE: training picks the merges a rescan per merge would (the incremental counts are
// exact), ties and files are deterministic, encoding replays the merges in training order and
// round-trips every byte string, gzip and plain input give the same tokens, and a missing or
// damaged tokenizer file is one line and exit 2.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/io.h"
#include "core/rng.h"
#include "tests/test.h"
#include "tokenizer/bpe.h"
#include "tokenizer/bpe_train.h"
#include "tokenizer/chunks.h"
#include "tokenizer/tokenizer_file.h"

static int one_line(const char *s) { return *s && strchr(s, '\n') == s + strlen(s) - 1; }

static void add_chunk(void *ctx, const uint8_t *c, int len) { bpe_trainer_add_chunk(ctx, c, len); }

static Bpe *train_text(const char *text, size_t n, int vocab) {
    BpeTrainer *t = bpe_trainer_create();
    chunks_of((const uint8_t *)text, n, add_chunk, t);
    Bpe *b = bpe_trainer_run(t, vocab, 0);
    bpe_trainer_free(t);
    return b;
}

// --- a reference trainer: recount every pair before every merge --------------------------------

typedef struct {
    uint32_t *s[4096];
    int n[4096];
    long count[4096];
    int words;
} Words;

static void ref_add(void *ctx, const uint8_t *c, int len) {
    Words *w = ctx;
    for (int i = 0; i < w->words; i++)
        if (w->n[i] == len) {
            int same = 1;
            for (int k = 0; k < len && same; k++) same = w->s[i][k] == c[k];
            if (same) {
                w->count[i]++;
                return;
            }
        }
    if (w->words == 4096) test_fail(__FILE__, __LINE__, "reference trainer: too many words");
    int i = w->words++;
    w->s[i] = malloc(sizeof(uint32_t) * (size_t)len);
    for (int k = 0; k < len; k++) w->s[i][k] = c[k];
    w->n[i] = len;
    w->count[i] = 1;
}

static int ref_train(const char *text, size_t n, int n_merges, uint32_t (*merges)[2]) {
    Words *w = calloc(1, sizeof *w);
    chunks_of((const uint8_t *)text, n, ref_add, w);
    int m = 0;
    for (; m < n_merges; m++) {
        // best pair: highest overlapping count, then smallest (a, b)
        long best = 0;
        uint32_t ba = 0, bb = 0;
        for (int i = 0; i < w->words; i++)
            for (int k = 0; k + 1 < w->n[i]; k++) {
                uint32_t a = w->s[i][k], b = w->s[i][k + 1];
                long c = 0;
                for (int j = 0; j < w->words; j++)
                    for (int q = 0; q + 1 < w->n[j]; q++)
                        if (w->s[j][q] == a && w->s[j][q + 1] == b) c += w->count[j];
                if (c > best || (c == best && (a < ba || (a == ba && b < bb)))) best = c, ba = a, bb = b;
            }
        if (best < 2) break;
        merges[m][0] = ba;
        merges[m][1] = bb;
        for (int i = 0; i < w->words; i++) {
            int o = 0;
            for (int r = 0; r < w->n[i];) {
                if (r + 1 < w->n[i] && w->s[i][r] == ba && w->s[i][r + 1] == bb) {
                    w->s[i][o++] = 256 + (uint32_t)m;
                    r += 2;
                } else {
                    w->s[i][o++] = w->s[i][r++];
                }
            }
            w->n[i] = o;
        }
    }
    for (int i = 0; i < w->words; i++) free(w->s[i]);
    free(w);
    return m;
}

static char *random_text(Rng *rng, size_t n, const char *alphabet) {
    char *t = malloc(n + 1);
    size_t k = strlen(alphabet);
    for (size_t i = 0; i < n; i++) t[i] = alphabet[rng_below(rng, k)];
    t[n] = 0;
    return t;
}

TEST(bpe_merges_of_the_textbook_example) {
    // "aaabdaaabac": aa (4) first; then ab and (aa)a tie at 2 and the smaller ids win: ab; then (aa)(ab)
    Bpe *b = train_text("aaabdaaabac", 11, 300);
    CHECK(b->n_merges == 3, "%d merges", b->n_merges);
    CHECK(b->merges[0][0] == 'a' && b->merges[0][1] == 'a');
    CHECK(b->merges[1][0] == 'a' && b->merges[1][1] == 'b');
    CHECK(b->merges[2][0] == 256 && b->merges[2][1] == 257);
    CHECK(b->vocab_size == 260 && b->eot == 259);
    bpe_free(b);
    // "aaaa" as one word: overlapping count 3, then (aa)(aa)
    b = train_text("aaaa", 4, 300);
    CHECK(b->n_merges == 1 && b->merges[0][0] == 'a' && b->merges[0][1] == 'a', "%d merges", b->n_merges);
    bpe_free(b);
}

TEST(bpe_incremental_counts_match_a_rescan_per_merge) {
    const char *alphabets[] = {"ab", "abc ", "aab b\n", "xyzzy  \n\t.,", "ab\xc3\xa9\xe2\x82\xac "};
    Rng rng;
    rng_seed(&rng, 7);
    for (int a = 0; a < 5; a++)
        for (int rep = 0; rep < 3; rep++) {
            size_t n = 200 + rng_below(&rng, 600);
            char *text = random_text(&rng, n, alphabets[a]);
            int want_merges = 60;
            uint32_t ref[64][2];
            int m = ref_train(text, n, want_merges, ref);
            Bpe *b = train_text(text, n, 257 + want_merges);
            CHECK(b->n_merges == m, "alphabet %d: %d merges, the rescan found %d", a, b->n_merges, m);
            for (int k = 0; k < m; k++)
                CHECK(b->merges[k][0] == ref[k][0] && b->merges[k][1] == ref[k][1],
                      "alphabet %d rep %d merge %d: (%u %u), the rescan picks (%u %u)", a, rep, k, b->merges[k][0],
                      b->merges[k][1], ref[k][0], ref[k][1]);
            bpe_free(b);
            free(text);
        }
}

// Applies merge k to every occurrence, k = 0, 1, ... (the definition encoding must reproduce).
static size_t ref_encode_chunk(const Bpe *b, const uint8_t *p, int n, uint32_t *out) {
    for (int i = 0; i < n; i++) out[i] = p[i];
    for (int k = 0; k < b->n_merges; k++) {
        int o = 0;
        for (int r = 0; r < n;) {
            if (r + 1 < n && out[r] == b->merges[k][0] && out[r + 1] == b->merges[k][1]) {
                out[o++] = 256 + (uint32_t)k;
                r += 2;
            } else {
                out[o++] = out[r++];
            }
        }
        n = o;
    }
    return (size_t)n;
}

typedef struct {
    const Bpe *b;
    TokBuf *out;
} RefCtx;

static void ref_chunk(void *ctx, const uint8_t *c, int len) {
    RefCtx *r = ctx;
    uint32_t t[CHUNK_MAX];
    size_t n = ref_encode_chunk(r->b, c, len, t);
    for (size_t i = 0; i < n; i++) tokbuf_push(r->out, t[i]);
}

static const char *k_sample_text =
    "The GNU General Public License is a free, copyleft license for software and other kinds of works.\n"
    "  When we speak of free software, we are referring to freedom, not price.  Our General Public\n"
    "Licenses are designed to make sure that you have the freedom to distribute copies of free software\n"
    "(and charge for them if you wish), that you receive source code or can get it if you want it.\n\n"
    "Copyright (C) 2007 Free Software Foundation, Inc. <https://fsf.org/> 1234567 89\t\ttabs\r\n"
    "Ünïcödé: naïve café, Straße, Ελληνικά, русский, 中文字符, 日本語, 한국어, emoji \xf0\x9f\x98\x80!\n";

TEST(bpe_encoding_replays_the_merges_in_training_order) {
    size_t n = strlen(k_sample_text);
    Bpe *b = train_text(k_sample_text, n, 400);
    CHECK(b->n_merges > 50, "only %d merges", b->n_merges);
    Rng rng;
    rng_seed(&rng, 3);
    for (int rep = 0; rep < 20; rep++) {
        // random slices and random recombinations of the text
        char buf[2048];
        size_t len = 0;
        while (len < 1500) {
            size_t a = rng_below(&rng, n), k = 1 + rng_below(&rng, 40);
            if (a + k > n) k = n - a;
            memcpy(buf + len, k_sample_text + a, k);
            len += k;
        }
        TokBuf got = {0}, want = {0};
        bpe_encode(b, (const uint8_t *)buf, len, &got);
        RefCtx r = {b, &want};
        chunks_of((const uint8_t *)buf, len, ref_chunk, &r);
        CHECK(got.n == want.n, "rep %d: %zu tokens vs %zu by applying the merges in order", rep, got.n, want.n);
        for (size_t i = 0; i < got.n; i++) CHECK(got.v[i] == want.v[i], "rep %d token %zu", rep, i);
        free(got.v);
        free(want.v);
    }
    bpe_free(b);
}

static void check_round_trip(Bpe *b, const uint8_t *p, size_t n, const char *what) {
    TokBuf t = {0};
    ByteBuf d = {0};
    bpe_encode(b, p, n, &t);
    for (size_t i = 0; i < t.n; i++)
        CHECK(t.v[i] < (uint32_t)b->eot, "%s: token %u at %zu is special or out of range", what, t.v[i], i);
    bpe_decode(b, t.v, t.n, &d);
    CHECK(d.n == n && (n == 0 || !memcmp(d.v, p, n)), "%s: %zu bytes decode to %zu bytes", what, n, d.n);
    free(t.v);
    free(d.v);
}

TEST(bpe_round_trip_random_bytes) {
    size_t n = strlen(k_sample_text);
    Bpe *b = train_text(k_sample_text, n, 512);
    Rng rng;
    rng_seed(&rng, 11);
    uint8_t *buf = malloc(20000);
    check_round_trip(b, buf, 0, "empty");
    for (int rep = 0; rep < 40; rep++) {
        size_t len = rng_below(&rng, 20000);
        int mode = rep % 4;
        for (size_t i = 0; i < len; i++) {
            if (mode == 0) buf[i] = (uint8_t)rng_below(&rng, 256);             // any byte
            else if (mode == 1) buf[i] = " \n\t\r\0\xff"[rng_below(&rng, 6)];  // whitespace, NUL, 0xff
            else if (mode == 2) buf[i] = rng_below(&rng, 50) ? ' ' : 'a';      // runs longer than CHUNK_MAX
            else buf[i] = (uint8_t)k_sample_text[rng_below(&rng, n)];
        }
        char what[32];
        snprintf(what, sizeof what, "random %d", rep);
        check_round_trip(b, buf, len, what);
    }
    free(buf);
    bpe_free(b);
}

TEST(bpe_round_trip_utf8) {
    const char *texts[] = {
        k_sample_text,
        "Ünïcödé: naïve café, Straße; Ελληνικά; русский язык; 中文字符; 日本語のテキスト; 한국어; עברית; العربية",
        "\xf0\x9f\x98\x80\xf0\x9f\x98\x81\xf0\x9f\x8e\x89 mixed \xe2\x80\x94 dashes \xe2\x80\x9cquotes\xe2\x80\x9d",
        "invalid UTF-8: \xc3\x28 \xa0\xa1 \xe2\x28\xa1 \xf0\x28\x8c\xbc \xff\xfe",
    };
    Bpe *b = train_text(texts[1], strlen(texts[1]), 400);
    for (int i = 0; i < 4; i++) check_round_trip(b, (const uint8_t *)texts[i], strlen(texts[i]), texts[i]);
    bpe_free(b);
}

typedef struct {
    const uint8_t *p;
    int len;
} Piece;

typedef struct {
    Piece v[4096];
    int n;
} Pieces;

static void collect_piece(void *ctx, const uint8_t *c, int len) {
    Pieces *ps = ctx;
    if (ps->n == 4096) test_fail(__FILE__, __LINE__, "too many chunks");
    ps->v[ps->n++] = (Piece){c, len};
}

typedef struct {
    ByteBuf joined;
    int lens[8192];
    int n;
} Streamed;

static void collect_streamed(void *ctx, const uint8_t *c, int len) {
    Streamed *s = ctx;
    bytebuf_append(&s->joined, c, (size_t)len);
    s->lens[s->n++] = len;
}

TEST(chunks_split_a_stream_as_the_whole_text) {
    Rng rng;
    rng_seed(&rng, 5);
    size_t n = 3000;
    char *text = random_text(&rng, n, "ab 1.\n\n   \t");
    for (size_t i = 100; i < 700; i++) text[i] = ' ';  // a run longer than CHUNK_MAX
    Pieces *whole = calloc(1, sizeof *whole);
    chunks_of((const uint8_t *)text, n, collect_piece, whole);
    size_t total = 0;
    for (int i = 0; i < whole->n; i++) {
        CHECK(whole->v[i].len >= 1 && whole->v[i].len <= CHUNK_MAX);
        total += (size_t)whole->v[i].len;
    }
    CHECK(total == n);
    for (int rep = 0; rep < 20; rep++) {
        Streamed *s = calloc(1, sizeof *s);
        ChunkStream cs;
        chunks_init(&cs);
        for (size_t pos = 0; pos < n;) {
            size_t k = 1 + rng_below(&rng, rep < 10 ? 8 : 700);
            if (pos + k > n) k = n - pos;
            chunks_feed(&cs, (const uint8_t *)text + pos, k, collect_streamed, s);
            pos += k;
        }
        chunks_finish(&cs, collect_streamed, s);
        chunks_free(&cs);
        CHECK(s->n == whole->n, "rep %d: %d chunks, the whole text has %d", rep, s->n, whole->n);
        for (int i = 0; i < s->n; i++) CHECK(s->lens[i] == whole->v[i].len, "rep %d chunk %d", rep, i);
        CHECK(s->joined.n == n && !memcmp(s->joined.v, text, n));
        free(s->joined.v);
        free(s);
    }
    // the GPT-2 style split of a small example
    const char *ex = "Hello  world\n\n  x=1234;  ";
    Pieces *p = calloc(1, sizeof *p);
    chunks_of((const uint8_t *)ex, strlen(ex), collect_piece, p);
    // GPT-2's \s+(?!\S): a whitespace run gives its last character to the word after it
    const char *want[] = {"Hello", " ", " world", "\n\n ", " x", "=", "1234", ";", "  "};
    CHECK(p->n == 9, "%d chunks", p->n);
    for (int i = 0; i < 9; i++)
        CHECK(p->v[i].len == (int)strlen(want[i]) && !memcmp(p->v[i].p, want[i], strlen(want[i])), "chunk %d", i);
    free(p);
    free(whole);
    free(text);
}

TEST(bpe_file_round_trip_and_deterministic_training) {
    size_t n = strlen(k_sample_text);
    Bpe *a = train_text(k_sample_text, n, 450), *b = train_text(k_sample_text, n, 450);
    const char *pa = test_path("a.bpe"), *pb = test_path("b.bpe");
    bpe_save(a, pa);
    bpe_save(b, pb);
    size_t la, lb;
    char *ta = read_file_text(pa, &la), *tb = read_file_text(pb, &lb);
    CHECK(la == lb && !memcmp(ta, tb, la), "two trainings on the same text wrote different files");
    char err[512];
    Bpe *c = tokenizer_read(pa, err, sizeof err);
    CHECK(c, "%s", err);
    CHECK(c->vocab_size == a->vocab_size && c->n_merges == a->n_merges && c->eot == a->eot);
    CHECK(!memcmp(c->merges, a->merges, sizeof *a->merges * (size_t)a->n_merges));
    for (int id = 0; id < a->vocab_size; id++) {
        size_t l1, l2;
        const uint8_t *x = bpe_token_bytes(a, (uint32_t)id, &l1), *y = bpe_token_bytes(c, (uint32_t)id, &l2);
        CHECK(l1 == l2 && !memcmp(x, y, l1), "token %d", id);
    }
    size_t el;
    CHECK(!memcmp(bpe_token_bytes(c, (uint32_t)c->eot, &el), "<|endoftext|>", 13) && el == 13);
    free(ta);
    free(tb);
    bpe_free(a);
    bpe_free(b);
    bpe_free(c);
}

static void write_gz(const char *path, const char *text, size_t n) {
    gzFile g = gzopen(path, "wb");
    CHECK(g && gzwrite(g, text, (unsigned)n) == (int)n);
    gzclose(g);
}

TEST(bpe_gzip_and_plain_input_give_the_same_tokens) {
    // a few hundred KB so the reader's blocks and the chunk stream both cut it
    ByteBuf big = {0};
    for (int i = 0; i < 600; i++) bytebuf_append(&big, k_sample_text, strlen(k_sample_text));
    const char *plain = test_path("t.txt"), *gz = test_path("t.txt.gz");
    FILE *f = fopenCheck(plain, "wb");
    fwriteCheck(big.v, 1, big.n, f, plain);
    fcloseCheck(f, plain);
    write_gz(gz, (const char *)big.v, big.n);
    char out[4096];
    int st = test_run(out, sizeof out, "./tokenize train %s vocab_size=600 out=%s", plain, test_path("p.bpe"));
    CHECK(st == 0, "%s", out);
    st = test_run(out, sizeof out, "./tokenize train %s vocab_size=600 out=%s", gz, test_path("g.bpe"));
    CHECK(st == 0, "%s", out);
    size_t l1, l2;
    char *b1 = read_file_text(test_path("p.bpe"), &l1), *b2 = read_file_text(test_path("g.bpe"), &l2);
    CHECK(l1 == l2 && !memcmp(b1, b2, l1), "gzip and plain training differ");
    st = test_run(out, sizeof out,
                  "./tokenize encode %s tokenizer=%s > %s && ./tokenize encode %s tokenizer=%s > %s && cmp %s %s",
                  plain, test_path("p.bpe"), test_path("p.ids"), gz, test_path("p.bpe"), test_path("g.ids"),
                  test_path("p.ids"), test_path("g.ids"));
    CHECK(st == 0, "gzip and plain encode differ: %s", out);
    // and the program's ids equal the library's
    Bpe *b = tokenizer_load(test_path("p.bpe"));
    TokBuf t = {0};
    bpe_encode(b, big.v, big.n, &t);
    char *ids = read_file_text(test_path("p.ids"), NULL);
    char *p = ids;
    for (size_t i = 0; i < t.n; i++) {
        char *end;
        unsigned long v = strtoul(p, &end, 10);
        CHECK(end != p && v == t.v[i], "id %zu", i);
        p = end;
    }
    // encode | decode round-trips the file
    st = test_run(out, sizeof out, "./tokenize encode %s tokenizer=%s | ./tokenize decode tokenizer=%s | cmp - %s", gz,
                  test_path("p.bpe"), test_path("p.bpe"), plain);
    CHECK(st == 0, "encode | decode: %s", out);
    free(ids);
    free(t.v);
    bpe_free(b);
    free(b1);
    free(b2);
    free(big.v);
}

// Writes text with a correct CRC line (so only the parser can object).
static const char *write_with_crc(const char *name, const char *body) {
    char *full = malloc(strlen(body) + 32);
    sprintf(full, "%scrc32 %08x\n", body, (unsigned)crc32(0L, (const Bytef *)body, (uInt)strlen(body)));
    const char *p = test_write_file(name, full);
    free(full);
    return p;
}

TEST(bpe_missing_or_damaged_tokenizer_is_one_line_exit_2) {
    Bpe *b = train_text(k_sample_text, strlen(k_sample_text), 300);
    const char *good = test_path("good.bpe");
    bpe_save(b, good);
    bpe_free(b);
    size_t len;
    char *text = read_file_text(good, &len);
    const char *input = test_write_file("in.txt", "hello world\n");

    // flipped byte in a merge line
    char *flip = strdupCheck(text);
    flip[strstr(flip, "\n32 ") - flip + 2] = '4';
    const char *flipped = test_write_file("flip.bpe", flip);
    // cut in the middle
    char *cut = strdupCheck(text);
    cut[len / 2] = 0;
    const char *truncated = test_write_file("cut.bpe", cut);
    BadInput cases[] = {
        {test_path("missing.bpe"), "cannot open"},
        {flipped, "CRC32"},
        {truncated, "truncated"},
        {test_write_file("empty.bpe", ""), "not a tokenizer file"},
        {input, "not a tokenizer file"},
        {write_with_crc("ids.bpe", "attnscope-bpe 1\nvocab_size 258\nmerges 1\nspecial 257 <|endoftext|>\n97 300\t\"?\"\n"),
         ":5: merge 0"},
        {write_with_crc("count.bpe", "attnscope-bpe 1\nvocab_size 259\nmerges 2\nspecial 258 <|endoftext|>\n97 98\n"),
         "1 merge lines but the header declares 2"},
        {write_with_crc("dup.bpe", "attnscope-bpe 1\nvocab_size 259\nmerges 2\nspecial 258 <|endoftext|>\n97 98\n97 98\n"),
         "repeats the pair"},
        {write_with_crc("noeot.bpe", "attnscope-bpe 1\nvocab_size 257\nmerges 0\nspecial 256 <|pad|>\n"), "<|endoftext|>"},
        {write_with_crc("pre.bpe", "attnscope-bpe 1\nvocab_size 257\nmerges 0\npretokenizer gpt4\nspecial 256 <|endoftext|>\n"),
         "pretokenizer"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[2048];
        const char *cmds[] = {"./tokenize encode %s tokenizer=%s", "./tokenize prepare %s tokenizer=%s out=%s/x"};
        for (int c = 0; c < 2; c++) {
            int st = c == 0 ? test_run(out, sizeof out, cmds[0], input, cases[i].in)
                            : test_run(out, sizeof out, cmds[1], input, cases[i].in, test_tmpdir());
            CHECK(st == 2, "%s: exit %d: %s", cases[i].in, st, out);
            CHECK(one_line(out) && strstr(out, cases[i].in) && strstr(out, cases[i].want), "%s: '%s' (want '%s')",
                  cases[i].in, out, cases[i].want);
        }
    }
    char err[512];
    CHECK(tokenizer_read(good, err, sizeof err) != NULL, "%s", err);
    free(text);
    free(flip);
    free(cut);
}

TEST(tokenizer_bad_arguments_are_one_line_exit_2) {
    const char *input = test_write_file("in.txt", "hello world\n");
    const char *tok = test_path("t.bpe");
    char out[2048];
    CHECK(test_run(out, sizeof out, "./tokenize train %s vocab_size=512 out=%s", input, tok) == 0, "%s", out);
    BadInput cases[] = {
        {"frobnicate", "unknown command 'frobnicate'"},
        {"train IN vocab_size=100 out=OUT", "vocab_size"},
        {"train IN vocab_size=abc out=OUT", "vocab_size"},
        {"train IN vocab_size=512", "out="},
        {"train vocab_size=512 out=OUT", "no INPUT"},
        {"train /nonexistent/x.txt vocab_size=512 out=OUT", "/nonexistent/x.txt"},
        {"train IN vocab_sise=512 out=OUT", "did you mean 'vocab_size'"},
        {"prepare IN out=OUT", "tokenizer="},
        {"prepare IN tokenizer=TOK out=OUT val_fraction=1.5", "val_fraction"},
        {"prepare IN tokenizer=TOK out=OUT documents=lines", "documents"},
        {"prepare IN tokenizer=TOK out=OUT shard_tokens=0", "shard_tokens"},
        {"prepare IN tokenizer=TOK out=OUT val_files=nothere.txt", "val_files: 'nothere.txt' is none of the INPUT"},
        {"prepare IN tokenizer=TOK out=OUT val_files=in.txt", "val_files: names all 1 INPUT"},
        {"prepare IN tokenizer=TOK out=OUT val_files=in.txt,,in.txt", "val_files: an empty name"},
        {"prepare IN tokenizer=TOK out=OUT val_files=in.txt val_fraction=0.2", "val_fraction: set with val_files"},
        {"encode IN", "tokenizer="},
        {"decode IN tokenizer=TOK", "expected token ids"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        // substitute the placeholders
        char args[1024] = "", *o = args;
        for (const char *p = cases[i].in; *p;) {
            const char *rep = !strncmp(p, "IN", 2) ? input
                : !strncmp(p, "OUT", 3)            ? test_path("o.bpe")
                : !strncmp(p, "TOK", 3)            ? tok
                                                   : NULL;
            if (rep) {
                o += sprintf(o, "%s", rep);
                p += !strncmp(p, "IN", 2) ? 2 : 3;
            } else {
                *o++ = *p++;
                *o = 0;
            }
        }
        int st = test_run(out, sizeof out, "./tokenize %s", args);
        CHECK(st == 2 && one_line(out) && strstr(out, cases[i].want), "./tokenize %s: exit %d: '%s' (want '%s')", args,
              st, out, cases[i].want);
    }
}
