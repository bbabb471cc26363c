// ./tokenize train|prepare|encode|decode: byte-level BPE (tokenizer/bpe.h) and text -> token shards
// (tokenizer/prepare.h). Inputs are files, plain or gzip, or "-" for standard input; options are
// key=value arguments. Bad input exits 2 with one line naming the file or argument.
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/config.h"
#include "core/io.h"
#include "core/run_dir.h"
#include "core/progress.h"
#include "data/shards.h"
#include "tokenizer/bpe.h"
#include "tokenizer/bpe_train.h"
#include "tokenizer/chunks.h"
#include "tokenizer/prepare.h"
#include "tokenizer/tokenizer_file.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: ./tokenize train INPUT... vocab_size=N out=FILE\n"
            "       ./tokenize prepare INPUT... tokenizer=FILE out=PREFIX [val_fraction=0.1]\n"
            "                   [shard_tokens=10000000] [documents=paragraphs|files] [val_files=NAME,...]\n"
            "       ./tokenize encode [INPUT...] tokenizer=FILE [out=SHARD]\n"
            "       ./tokenize decode [INPUT...] tokenizer=FILE\n"
            "INPUT: a text file, plain or gzip, or - for standard input (encode and decode read\n"
            "standard input when no INPUT is given). train learns byte-level BPE merges (vocab_size=257:\n"
            "the 256 bytes and <|endoftext|>, no merges, needs no INPUT); prepare\n"
            "writes PREFIX_train_000.bin, PREFIX_val_000.bin, ... (llm.c token shards) for\n"
            "`task = shards`; encode prints token ids (or writes one shard with out=); decode\n"
            "turns token ids (text, or an llm.c shard) back into bytes. See docs/text.md.\n");
}

static const KeyDef k_train[] = {
    {"vocab_size", KEY_INT, "0", RANGE_NONNEG, 0, 0, "", "256 bytes + merges + <|endoftext|>"},
    {"out", KEY_STRING, "", 0, 0, 0, "", "tokenizer file to write"},
    {NULL, 0, NULL, 0, NULL, 0, NULL, NULL},
};
static const KeyDef k_prepare[] = {
    {"tokenizer", KEY_STRING, "", 0, 0, 0, "", "tokenizer file"},
    {"out", KEY_STRING, "", 0, 0, 0, "", "prefix of the shards"},
    {"val_fraction", KEY_FLOAT, "0.1", RANGE_UNIT, 0, 0, "", "share of documents for validation"},
    {"shard_tokens", KEY_INT, "10000000", RANGE_POS, 0, 0, "", "tokens per shard"},
    {"documents", KEY_ENUM, "paragraphs", 0, "paragraphs|files", 0, "", "what a document is"},
    {"val_files", KEY_STRING, "", 0, 0, 0, "", "comma list of INPUT files (as given, or file names) for validation"},
    {NULL, 0, NULL, 0, NULL, 0, NULL, NULL},
};
static const KeyDef k_encode[] = {
    {"tokenizer", KEY_STRING, "", 0, 0, 0, "", "tokenizer file"},
    {"out", KEY_STRING, "", 0, 0, 0, "", "write one shard instead of printing ids"},
    {NULL, 0, NULL, 0, NULL, 0, NULL, NULL},
};
static const KeyDef k_decode[] = {
    {"tokenizer", KEY_STRING, "", 0, 0, 0, "", "tokenizer file"},
    {NULL, 0, NULL, 0, NULL, 0, NULL, NULL},
};

// An argument is an option when it starts with a key name followed by '='; anything else is an input.
static int is_option(const char *a) {
    const char *p = a;
    while (islower((unsigned char)*p) || *p == '_') p++;
    return p > a && *p == '=';
}

typedef struct {
    Config cfg;
    char **inputs;
    int n_inputs;
} Args;

static void parse_args(Args *a, int argc, char **argv, const KeyDef *keys) {
    config_init(&a->cfg);
    config_add_keys(&a->cfg, keys);
    a->inputs = mallocCheck(sizeof(char *) * (size_t)(argc + 1));
    a->n_inputs = 0;
    for (int i = 0; i < argc; i++) {
        if (is_option(argv[i])) config_apply_args(&a->cfg, 1, &argv[i]);
        else a->inputs[a->n_inputs++] = argv[i];
    }
}

static const char *need_str(const Config *c, const char *key, const char *what) {
    const char *v = cfg_str(c, key);
    if (!*v) die_input("command line: %s= is required (%s)", key, what);
    return v;
}

// The file out= names must not be one of the inputs (the same file under any name: same device
// and inode), which the write would replace, nor a folder. Checked before any work.
// out over an input, the tokenizer or into a run folder: refused (core/run_dir.h, as ./export).
static void check_output(const char *out, char *const *inputs, int n_inputs, const char *tokenizer) {
    RunDirInput *in = callocCheck((size_t)n_inputs + 1, sizeof *in);
    for (int i = 0; i < n_inputs; i++) in[i] = (RunDirInput){"input", inputs[i]};
    in[n_inputs] = (RunDirInput){"tokenizer", tokenizer};
    run_dir_check_output("out", out, in, n_inputs + 1);
    free(in);
}

static void make_parent_dir(const char *path, const char *key) {
    char *dir = strdupCheck(path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        if (mkdir_p(dir) != 0) die_input("%s: cannot create the folder '%s'", key, dir);
    }
    free(dir);
}

// --- train -------------------------------------------------------------------------------------

typedef struct {
    BpeTrainer *t;
    ChunkStream cs;
    uint64_t bytes;
    double t0, shown;
    const char *path;
} TrainCtx;

static void train_chunk(void *ctx, const uint8_t *chunk, int len) {
    bpe_trainer_add_chunk(((TrainCtx *)ctx)->t, chunk, len);
}

static void train_block(void *ctx, const uint8_t *p, size_t n) {
    TrainCtx *c = ctx;
    chunks_feed(&c->cs, p, n, train_chunk, c);
    c->bytes += n;
    double now = now_seconds();
    if (now - c->shown > 0.2) {
        c->shown = now;
        progress_line("counting: %s | %.1f MB | %ld distinct chunks | %.1f MB/s", c->path, c->bytes / 1e6,
                      bpe_trainer_words(c->t), c->bytes / 1e6 / (now - c->t0 + 1e-9));
    }
}

static int cmd_train(int argc, char **argv) {
    Args a;
    parse_args(&a, argc, argv, k_train);
    long V = cfg_int(&a.cfg, "vocab_size");
    if (V == 0 && !*cfg_str(&a.cfg, "out"))  // neither given: name both at once
        die_input("command line: missing vocab_size=N (257..%d: 256 bytes + merges + <|endoftext|>) and out=FILE (the "
                  "tokenizer file to write)",
                  1 << 24);
    if (V < 257 || V > (1 << 24))
        die_input("command line: vocab_size: expected 257..%d (256 bytes + merges + <|endoftext|>), got %ld", 1 << 24, V);
    const char *out = need_str(&a.cfg, "out", "the tokenizer file to write");
    // 257 = the bytes and <|endoftext|>: no merges to learn, so no text is needed
    if (a.n_inputs == 0 && V > 257) die_input("command line: no INPUT files to learn from");
    for (int i = 0; i < a.n_inputs; i++)  // refuse a bad input before any work
        if (strcmp(a.inputs[i], "-") && !path_exists(a.inputs[i]))
            die_input("%s: cannot open (no such file)", a.inputs[i]);
    check_output(out, a.inputs, a.n_inputs, NULL);
    TrainCtx c = {.t = bpe_trainer_create(), .t0 = now_seconds()};
    chunks_init(&c.cs);
    for (int i = 0; i < a.n_inputs; i++) {
        c.path = a.inputs[i];
        read_text_file(a.inputs[i], train_block, &c);
        chunks_finish(&c.cs, train_chunk, &c);
    }
    progress_break();
    double t_count = now_seconds() - c.t0;
    Bpe *b = bpe_trainer_run(c.t, (int)V, 1);
    double t_all = now_seconds() - c.t0;
    make_parent_dir(out, "out");
    bpe_save(b, out);
    printf("%s: vocab_size %d = 256 bytes + %d merges + <|endoftext|> (id %d), from %.2f MB in %d file%s "
           "(%ld chunks, %ld distinct) in %.2f s (counting %.2f s, merging %.2f s)\n",
           out, b->vocab_size, b->n_merges, b->eot, c.bytes / 1e6, a.n_inputs, a.n_inputs != 1 ? "s" : "",
           bpe_trainer_chunks(c.t), bpe_trainer_words(c.t), t_all, t_count, t_all - t_count);
    if (b->vocab_size < V)
        printf("note: stopped at %d merges: no pair of tokens occurs twice any more (asked for vocab_size %ld)\n",
               b->n_merges, V);
    chunks_free(&c.cs);
    bpe_trainer_free(c.t);
    bpe_free(b);
    config_free(&a.cfg);
    free(a.inputs);
    return 0;
}

// --- prepare -----------------------------------------------------------------------------------

static const char *file_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

// val_files: the inputs whose every document goes to validation (NULL when the key is empty, so
// val_fraction picks). Each comma-separated name must be an INPUT as given or an INPUT's file
// name, and at least one INPUT must be left for training.
static unsigned char *val_inputs(const Config *c, char *const *inputs, int n) {
    const char *list = cfg_str(c, "val_files");
    if (!*list) return NULL;
    if (strcmp(cfg_origin(c, "val_fraction"), "default"))
        die_input("%s: val_fraction: set with val_files (expected one of them: val_files names the validation "
                  "files, val_fraction takes a share of the documents)",
                  cfg_origin(c, "val_fraction"));
    unsigned char *v = callocCheck((size_t)n, 1);
    for (const char *p = list;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0)
            die_input("%s: val_files: an empty name in '%s' (expected NAME,NAME,...)", cfg_origin(c, "val_files"), list);
        int hits = 0;
        for (int i = 0; i < n; i++) {
            const char *full = inputs[i], *base = file_name(inputs[i]);
            if ((strlen(full) == len && !strncmp(full, p, len)) || (strlen(base) == len && !strncmp(base, p, len)))
                v[i] = 1, hits++;
        }
        if (!hits)
            die_input("%s: val_files: '%.*s' is none of the INPUT files (expected an INPUT as given, or its file name)",
                      cfg_origin(c, "val_files"), (int)len, p);
        if (!comma) break;
        p = comma + 1;
    }
    int n_val = 0;
    for (int i = 0; i < n; i++) n_val += v[i];
    if (n_val == n)
        die_input("%s: val_files: names all %d INPUT files (expected at least one left for training)",
                  cfg_origin(c, "val_files"), n);
    return v;
}

static int cmd_prepare(int argc, char **argv) {
    Args a;
    parse_args(&a, argc, argv, k_prepare);
    const char *tok = need_str(&a.cfg, "tokenizer", "the file ./tokenize train wrote");
    const char *out = need_str(&a.cfg, "out", "the prefix of the shards, e.g. out=data/mytext");
    if (a.n_inputs == 0) die_input("command line: no INPUT files to prepare");
    for (int i = 0; i < a.n_inputs; i++)
        if (strcmp(a.inputs[i], "-") && !path_exists(a.inputs[i]))
            die_input("%s: cannot open (no such file)", a.inputs[i]);
    unsigned char *val = val_inputs(&a.cfg, a.inputs, a.n_inputs);
    Bpe *b = tokenizer_load_encoder(tok, "tokenizer");
    check_output(out, a.inputs, a.n_inputs, tok);
    make_parent_dir(out, "out");
    PrepareOptions o = {
        .out = out,
        .val_fraction = cfg_float(&a.cfg, "val_fraction"),
        .shard_tokens = cfg_int(&a.cfg, "shard_tokens"),
        .by_file = !strcmp(cfg_str(&a.cfg, "documents"), "files"),
        .progress = 1,
        .val_input = val,
    };
    PrepareStats st;
    double t0 = now_seconds();
    prepare_shards(b, a.inputs, a.n_inputs, &o, &st);
    double dt = now_seconds() - t0;
    printf("read %.2f MB in %d file%s: %ld documents (%s), %.2f s, %.1f MB/s\n", st.bytes / 1e6, a.n_inputs,
           a.n_inputs != 1 ? "s" : "", st.docs[0] + st.docs[1], o.by_file ? "one per file" : "blank-line separated", dt,
           st.bytes / 1e6 / (dt + 1e-9));
    for (int s = 0; s < 2; s++) {
        const char *name = s ? "val" : "train";
        if (st.shards[s] == 0) {
            printf("%-5s: no documents%s\n", name, s && !val ? " (val_fraction is 0 or there are too few documents)" : "");
            continue;
        }
        char *first = prepare_shard_path(out, s, 0);
        printf("%-5s: %ld documents, %ld tokens in %d shard%s: %s%s\n", name, st.docs[s], st.tokens[s], st.shards[s],
               st.shards[s] > 1 ? "s" : "", first, st.shards[s] > 1 ? " ..." : "");
        free(first);
    }
    printf("train with: task=shards train_data=\"%s_train_*.bin\"%s%s%s tokenizer=%s\n", out,
           st.shards[1] ? " val_data=\"" : "", st.shards[1] ? out : "", st.shards[1] ? "_val_*.bin\"" : "", tok);
    bpe_free(b);
    free(val);
    config_free(&a.cfg);
    free(a.inputs);
    return 0;
}

// --- encode / decode ---------------------------------------------------------------------------

typedef struct {
    Bpe *b;
    ChunkStream cs;
    TokBuf toks;
    FILE *text_out;  // ids as text, or NULL to keep them for a shard
    long count;
} EncCtx;

static void enc_flush(EncCtx *e) {
    if (!e->text_out) return;
    for (size_t i = 0; i < e->toks.n; i++) fprintf(e->text_out, e->count++ ? " %u" : "%u", e->toks.v[i]);
    e->toks.n = 0;
}

static void enc_chunk(void *ctx, const uint8_t *chunk, int len) {
    EncCtx *e = ctx;
    bpe_encode_chunk(e->b, chunk, len, &e->toks);
    if (e->toks.n > 65536) enc_flush(e);
}

static void enc_block(void *ctx, const uint8_t *p, size_t n) {
    chunks_feed(&((EncCtx *)ctx)->cs, p, n, enc_chunk, ctx);
}

static int cmd_encode(int argc, char **argv) {
    Args a;
    parse_args(&a, argc, argv, k_encode);
    const char *tok = need_str(&a.cfg, "tokenizer", "the tokenizer file");
    const char *out = cfg_str(&a.cfg, "out");
    char *std_in[] = {"-"};
    char **inputs = a.n_inputs ? a.inputs : std_in;
    int n_inputs = a.n_inputs ? a.n_inputs : 1;
    if (*out) check_output(out, inputs, n_inputs, tok);
    EncCtx e = {.b = tokenizer_load_encoder(tok, "tokenizer"), .text_out = *out ? NULL : stdout};
    chunks_init(&e.cs);
    for (int i = 0; i < n_inputs; i++) {
        read_text_file(inputs[i], enc_block, &e);
        chunks_finish(&e.cs, enc_chunk, &e);
    }
    if (*out) {
        make_parent_dir(out, "out");
        shard_write_tagged(out, e.toks.v, (long)e.toks.n, e.b->vocab_size > 65536, e.b->vocab_size, bpe_identity(e.b));
        fprintf(stderr, "%s: %zu tokens\n", out, e.toks.n);
    } else {
        enc_flush(&e);
        fputc('\n', stdout);
    }
    chunks_free(&e.cs);
    free(e.toks.v);
    bpe_free(e.b);
    config_free(&a.cfg);
    free(a.inputs);
    return 0;
}

// Reads the whole input (for decode: ids are small).
typedef struct {
    ByteBuf buf;
} Slurp;

static void slurp_block(void *ctx, const uint8_t *p, size_t n) { bytebuf_append(&((Slurp *)ctx)->buf, p, n); }

static void decode_write(const Bpe *b, const uint32_t *t, size_t n) {
    ByteBuf out = {0};
    bpe_decode(b, t, n, &out);
    fwrite(out.v, 1, out.n, stdout);
    free(out.v);
}

static int cmd_decode(int argc, char **argv) {
    Args a;
    parse_args(&a, argc, argv, k_decode);
    Bpe *b = tokenizer_load(need_str(&a.cfg, "tokenizer", "the tokenizer file"));
    char *std_in[] = {"-"};
    char **inputs = a.n_inputs ? a.inputs : std_in;
    int n_inputs = a.n_inputs ? a.n_inputs : 1;
    for (int i = 0; i < n_inputs; i++) {
        const char *path = inputs[i];
        int32_t magic = 0;
        if (strcmp(path, "-")) {
            FILE *f = fopenCheck(path, "rb");
            if (fread(&magic, 4, 1, f) != 1) magic = 0;
            fclose(f);
        }
        TokBuf t = {0};
        if (magic == SHARD_MAGIC_U16 || magic == SHARD_MAGIC_U32) {
            Shard s;
            shard_open(&s, path);
            for (long k = 0; k < s.ntok; k++) tokbuf_push(&t, shard_token(&s, k));
            shard_close(&s);
        } else {
            Slurp sl = {{0}};
            read_text_file(path, slurp_block, &sl);
            bytebuf_append(&sl.buf, "", 1);
            char *p = (char *)sl.buf.v;
            for (;;) {
                while (isspace((unsigned char)*p)) p++;
                if (!*p) break;
                char *end;
                unsigned long v = strtoul(p, &end, 10);
                if (end == p || (*end && !isspace((unsigned char)*end)) || v > 0x7fffffffUL) {
                    int w = 0;
                    while (p[w] && !isspace((unsigned char)p[w]) && w < 20) w++;
                    die_input("%s: expected token ids separated by spaces, got '%.*s'", path, w, p);
                }
                tokbuf_push(&t, (uint32_t)v);
                p = end;
            }
            free(sl.buf.v);
        }
        for (size_t k = 0; k < t.n; k++)
            if (t.v[k] >= (uint32_t)b->vocab_size)
                die_input("%s: token %u at position %zu is outside the tokenizer's vocabulary of %d", path, t.v[k], k,
                          b->vocab_size);
        decode_write(b, t.v, t.n);
        free(t.v);
    }
    fflush(stdout);
    bpe_free(b);
    config_free(&a.cfg);
    free(a.inputs);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "train")) return cmd_train(argc - 2, argv + 2);
    if (!strcmp(cmd, "prepare")) return cmd_prepare(argc - 2, argv + 2);
    if (!strcmp(cmd, "encode")) return cmd_encode(argc - 2, argv + 2);
    if (!strcmp(cmd, "decode")) return cmd_decode(argc - 2, argv + 2);
    die_input("tokenize: unknown command '%s' (expected train, prepare, encode or decode; --help shows usage)", cmd);
}
