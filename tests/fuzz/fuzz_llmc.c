// Fuzz target: llm.c's files (docs/gpt2.md): the GPT-2 model file (trainer/llmc.c) and the
// tokenizer file (tokenizer/llmc_tokenizer.c). The input is one file, named in.bin, and the
// programs' own dispatch picks the reader: a file beginning with the tokenizer magic 20240328 is a
// tokenizer, anything else a model file (so a damaged magic still reaches the model loader, whose
// message for a *.bin that is no safetensors file names the magic). No selector byte is needed,
// and every seed is a real file that ./sample reads.
//
// Model file, properties:
//   header     llmc_read_header accepts it or returns -1 with a one-line message, never exits;
//              an accepted header's shape makes a model (C divides by H, V <= Vp, sizes in range).
//   load       ckpt_open_model, the loader ./sample, ./evaluate and ./export use: a bad file exits
//              2 with one line (tests/fuzz/harness.c); a loaded one holds every value of the file
//              at its place (read here from the format's definition, bf16 widened), and is freed
//              whole (the harness counts every block).
//   export     the loaded model is one llm.c can run (llmc_exportable), ./export's writer saves it,
//              and the saved file loads again to bit-identical tensors; a file already as
//              ./export writes it (fp32, Vp = V rounded up to 128, zero padded rows, zero header
//              tail) comes back byte for byte.
//   init       llmc_load into a fixed model (seq_len 2, the seeds' shape: what init_from and a
//              shorter ./evaluate seq_len do) holds the file's tensors, wpe's first rows, when it
//              loads, and leaves the model untouched when it does not.
// Tokenizer file, properties: tokenizer_read (./sample's tokenizer= loader) returns a decode-only
// tokenizer or a one-line message naming the file; a loaded one decodes every id to exactly the
// bytes of that id's record, read here independently, and has the header's eot. llm.c's
// tokenizer format has no writer in this project (it decodes only), so there is no save/reload.
//
// FUZZ_WRITE_SEED=DIR: write the seeds (tests/fuzz/corpus/llmc) to DIR and exit: a GPT-2 of
// vocabulary 5, 4 positions, 1 layer, 2 heads, d_model 4 saved by llmc_save (fp32, Vp 128), the
// same as bf16 (version 5) and with Vp = V (llm.c's files need not pad), and tokenizers of
// version 2 (vocabulary 6) and version 1 (a header only: GPT-2's eot 50256 needs 50257 tokens).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/keys.h"
#include "tokenizer/bpe.h"
#include "tokenizer/llmc_tokenizer.h"
#include "trainer/ckpt_open.h"
#include "trainer/llmc.h"
#include "tests/fuzz/fuzz.h"
#include "tokenizer/tokenizer_file.h"

enum { SEED_V = 5, SEED_T = 4, SEED_L = 1, SEED_H = 2, SEED_C = 4, FIXED_T = 2 };

static Model *g_fixed;  // the init property's model (SEED shape, seq_len FIXED_T)
static Config g_fixed_cfg;
static int g_stage;  // 1 while the exported file is reloaded: no exit may happen there

static Model *build(int T) {
    ModelShape s = {.V = SEED_V, .C = SEED_C, .L = SEED_L, .H = SEED_H, .T = T, .mlp = 1, .pos_emb = 1};
    return model_create(&s, mixer_find("softmax"), &g_fixed_cfg, 1, 1);
}

static int32_t read_i32(const unsigned char *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static void write_file(const char *dir, const char *name, const void *data, size_t n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) fuzz_fail("cannot write %s", path);
}

static void write_seeds(const char *dir) {
    char path[4096], err[512];
    Model *m = build(SEED_T);
    model_init_weights(m, 1);
    snprintf(path, sizeof path, "%s/gpt2_fp32.bin", dir);
    if (llmc_save(path, m, err, sizeof err) != 0) fuzz_fail("%s", err);
    model_free(m);
    FILE *f = fopen(path, "rb");
    if (!f) fuzz_fail("cannot read %s", path);
    static unsigned char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    size_t vals = (n - 1024) / 4;
    // bf16: version 5, each float's top 16 bits (llm.c rounds; truncation is as valid a file)
    static unsigned char bf[1 << 16];
    memcpy(bf, buf, 1024);
    bf[4] = 5;
    for (size_t k = 0; k < vals; k++) memcpy(bf + 1024 + 2 * k, buf + 1024 + 4 * k + 2, 2);
    write_file(dir, "gpt2_bf16.bin", bf, 1024 + 2 * vals);
    // Vp = V: drop wte's padded rows (rows SEED_V..127 of the first tensor)
    static unsigned char nopad[1 << 16];
    int32_t vp = SEED_V;
    memcpy(nopad, buf, 1024);
    memcpy(nopad + 7 * 4, &vp, 4);
    size_t wte_kept = (size_t)SEED_V * SEED_C * 4, wte_all = (size_t)128 * SEED_C * 4;
    memcpy(nopad + 1024, buf + 1024, wte_kept);
    memcpy(nopad + 1024 + wte_kept, buf + 1024 + wte_all, n - 1024 - wte_all);
    write_file(dir, "gpt2_nopad.bin", nopad, n - (wte_all - wte_kept));
    // tokenizers: version 2 with 6 tokens (eot the last), version 1 as a header only
    static unsigned char tok[2048];
    uint32_t hd[256] = {LLMC_TOKENIZER_MAGIC, 2, 6, 5};
    memcpy(tok, hd, sizeof hd);
    size_t pos = sizeof hd;
    const char *words[6] = {"a", " b", "\xe2\x82\xac", "\n", "\xff", "<|endoftext|>"};
    for (int t = 0; t < 6; t++) {
        tok[pos++] = (unsigned char)strlen(words[t]);
        memcpy(tok + pos, words[t], strlen(words[t]));
        pos += strlen(words[t]);
    }
    write_file(dir, "tokenizer_v2.bin", tok, pos);
    hd[1] = 1, hd[2] = 50257, hd[3] = 0;
    write_file(dir, "tokenizer_v1_header.bin", hd, sizeof hd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    config_init_all(&g_fixed_cfg);
    const char *seed = getenv("FUZZ_WRITE_SEED");
    if (seed) {
        write_seeds(seed);
        exit(0);
    }
    g_fixed = build(FIXED_T);
    model_init_weights(g_fixed, 7);
    return 0;
}

// --- model file ----------------------------------------------------------------------------------

typedef struct {
    const char *path, *out;
    const unsigned char *data;
    size_t size;
} Input;

static void check_header(void *arg) {
    const Input *in = arg;
    LlmcHeader h;
    char err[512];
    err[0] = 0;
    if (llmc_read_header(in->path, &h, err, sizeof err) != 0) {
        if (!err[0] || strchr(err, '\n')) fuzz_fail("llmc_read_header: bad message '%s'", err);
        return;
    }
    if (h.C % h.H || h.V > h.Vp || h.V < 1 || h.max_T < 1 || h.L < 1 || h.L > MAX_LAYERS)
        fuzz_fail("llmc_read_header accepted L=%d H=%d C=%d V=%d Vp=%d maxT=%d", h.L, h.H, h.C, h.V, h.Vp, h.max_T);
}

// Tensor `name` of a and b hold the same bits over the first n values (all when n = 0).
static void same_tensor(const Model *a, const Model *b, const char *name, size_t n, const char *what) {
    const TensorInfo *ta = model_find_tensor(a, name), *tb = model_find_tensor(b, name);
    if (!ta || !tb) fuzz_fail("%s: tensor %s missing", what, name);
    if (!n) {
        n = ta->count;
        if (tb->count != n) fuzz_fail("%s: tensor %s holds %zu and %zu values", what, name, ta->count, tb->count);
    }
    if (memcmp(a->params + ta->offset, b->params + tb->offset, n * sizeof(real)))
        fuzz_fail("%s: tensor %s differs", what, name);
}

// The file's layout, written here from docs/gpt2.md (not taken from trainer/llmc.c): each tensor's
// name in this project (per layer after "h.<l>.") and its element count for one layer, in units
// of C: wte Vp C, wpe maxT C, then C, C, 3C C, 3C, C C, C, C, C, 4C C, 4C, C 4C, C per layer, and C, C.
// clang-format off
static const char *const k_names[16] = {"wte", "wpe", "ln_1.weight", "ln_1.bias", "attn.qkv.weight",
                                        "attn.qkv.bias", "attn.proj.weight", "attn.proj.bias", "ln_2.weight",
                                        "ln_2.bias", "mlp.fc.weight", "mlp.fc.bias", "mlp.proj.weight",
                                        "mlp.proj.bias", "ln_f.weight", "ln_f.bias"};
// clang-format on

// Every value the model holds is the file's, at its place: wte's first V rows, wpe's first T rows,
// the rest whole, bf16 (version 5) as the top half of the fp32.
static void check_values(const Input *in, const Model *m) {
    const unsigned char *d = in->data;
    int bf16 = read_i32(d + 4) == 5;
    size_t C = (size_t)m->s.C, Vp = (size_t)read_i32(d + 28), maxT = (size_t)read_i32(d + 8);
    const size_t count[16] = {Vp * C, maxT * C, C,         C,     3 * C * C, 3 * C, C * C, C,
                              C,      C,        4 * C * C, 4 * C, 4 * C * C, C,     C,     C};
    const size_t kept[2] = {(size_t)m->s.V * C, (size_t)m->s.T * C};
    size_t pos = 1024;
    for (int i = 0; i < 16; i++)
        for (int l = 0; l < (i >= 2 && i < 14 ? m->s.L : 1); l++) {
            char name[96];
            if (i >= 2 && i < 14) snprintf(name, sizeof name, "h.%d.%s", l, k_names[i]);
            else snprintf(name, sizeof name, "%s", k_names[i]);
            const TensorInfo *t = model_find_tensor(m, name);
            size_t use = i < 2 ? kept[i] : count[i];
            if (!t || t->count != use) fuzz_fail("tensor %s: %s", name, t ? "another size" : "missing");
            for (size_t k = 0; k < use; k++) {
                uint32_t u = 0;
                if (bf16) u = (uint32_t)(d[pos + 2 * k] | d[pos + 2 * k + 1] << 8) << 16;
                else memcpy(&u, d + pos + 4 * k, 4);
                float want, got = (float)m->params[t->offset + k];
                memcpy(&want, &u, 4);
                if (memcmp(&want, &got, 4)) fuzz_fail("tensor %s value %zu is not the file's", name, k);
            }
            pos += count[i] * (bf16 ? 2 : 4);
        }
    if (pos != in->size) fuzz_fail("a file of %zu bytes loaded, its tensors take %zu", in->size, pos);
}

// The input is exactly what llmc_save writes for its model: fp32, Vp = V rounded up to 128, the
// header's tail and wte's padded rows all zero bytes.
static int as_export_writes(const Input *in, const Model *m) {
    const unsigned char *d = in->data;
    if (read_i32(d + 4) != 3 || read_i32(d + 28) != (m->s.V + 127) / 128 * 128) return 0;
    for (size_t i = 32; i < 1024; i++)
        if (d[i]) return 0;
    size_t from = 1024 + (size_t)m->s.V * m->s.C * 4, to = 1024 + (size_t)read_i32(d + 28) * m->s.C * 4;
    for (size_t i = from; i < to; i++)
        if (d[i]) return 0;
    return 1;
}

static void load_export_reload(void *arg) {
    const Input *in = arg;
    Config cfg, cfg2;
    Model *m = ckpt_open_model(in->path, &cfg, 1, 1, NULL);  // as ./export opens it
    check_values(in, m);
    char err[1024];
    if (llmc_exportable(m, err, sizeof err) != 0)
        fuzz_fail("a model read from an llm.c file is not exportable: %s", err);
    if (llmc_save(in->out, m, err, sizeof err) != 0) fuzz_fail("llmc_save: %s", err);
    g_stage = 1;
    Model *m2 = ckpt_open_model(in->out, &cfg2, 1, 1, NULL);
    g_stage = 0;
    if (memcmp(&m->s, &m2->s, sizeof m->s) || m->n_tensors != m2->n_tensors)
        fuzz_fail("the exported file has another shape");
    for (int i = 0; i < m->n_tensors; i++) same_tensor(m, m2, m->tensors[i].name, 0, "export then reload");
    if (as_export_writes(in, m)) {
        FILE *f = fopen(in->out, "rb");
        unsigned char *back = malloc(in->size + 1);
        size_t n = f ? fread(back, 1, in->size + 1, f) : 0;
        if (f) fclose(f);
        if (n != in->size || memcmp(back, in->data, n))
            fuzz_fail("./export's file is not the bytes it read (%zu of %zu)", n, in->size);
        free(back);
    }
    // The same file into the fixed model (a shorter seq_len), when the shapes agree.
    if (m->s.V == SEED_V && m->s.C == SEED_C && m->s.L == SEED_L && m->s.H == SEED_H) {
        if (llmc_load(in->path, g_fixed, err, sizeof err) != 0)
            fuzz_fail("llmc_load into seq_len %d: %s", FIXED_T, err);
        for (int i = 0; i < g_fixed->n_tensors; i++) {
            const char *name = g_fixed->tensors[i].name;
            same_tensor(g_fixed, m, name, !strcmp(name, "wpe") ? (size_t)FIXED_T * SEED_C : 0, "init");
        }
    }
    model_free(m2);
    config_free(&cfg2);
    model_free(m);
    config_free(&cfg);
}

static void load_fixed(void *arg) {
    const Input *in = arg;
    size_t n = g_fixed->n_params * sizeof(real);
    real *before = malloc(n);
    memcpy(before, g_fixed->params, n);
    char err[1024];
    err[0] = 0;
    if (llmc_load(in->path, g_fixed, err, sizeof err) != 0) {
        if (!err[0] || strchr(err, '\n')) fuzz_fail("llmc_load: bad message '%s'", err);
        if (memcmp(before, g_fixed->params, n)) fuzz_fail("a failed llmc_load changed the model: %s", err);
    }
    free(before);
}

// --- tokenizer file ------------------------------------------------------------------------------

static void load_tokenizer(void *arg) {
    const Input *in = arg;
    char err[1024];
    err[0] = 0;
    Bpe *b = tokenizer_read(in->path, err, sizeof err);
    if (!b) {
        if (!strstr(err, in->path) || strchr(err, '\n')) fuzz_fail("tokenizer_read: bad message '%s'", err);
        return;
    }
    const unsigned char *d = in->data;
    uint32_t version = (uint32_t)read_i32(d + 4), vocab = (uint32_t)read_i32(d + 8);
    uint32_t eot = version == 2 ? (uint32_t)read_i32(d + 12) : 50256;
    if (!b->decode_only || (uint32_t)b->vocab_size != vocab || (uint32_t)b->eot != eot)
        fuzz_fail("tokenizer: decode_only %d, vocab %d (header %u), eot %d (header %u)", b->decode_only, b->vocab_size,
                  vocab, b->eot, eot);
    // every id decodes to its record's bytes; all ids in order to the records' concatenation
    uint32_t *ids = malloc(sizeof *ids * vocab);
    ByteBuf want = {0};
    size_t pos = 1024;
    for (uint32_t t = 0; t < vocab; t++) {
        size_t len;
        const uint8_t *p = bpe_token_bytes(b, t, &len);
        if (pos >= in->size || !p || len != d[pos] || memcmp(p, d + pos + 1, len))
            fuzz_fail("token %u does not decode to its record", t);
        bytebuf_append(&want, d + pos + 1, len);
        pos += 1 + len;
        ids[t] = t;
    }
    if (pos != in->size) fuzz_fail("a tokenizer with %zu bytes after its last record loaded", in->size - pos);
    ByteBuf got = {0};
    bpe_decode(b, ids, vocab, &got);
    if (got.n != want.n || memcmp(got.v, want.v, got.n)) fuzz_fail("decoding every id is not the records' bytes");
    free(got.v);
    free(want.v);
    free(ids);
    bpe_free(b);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    Input in = {fuzz_file("in.bin", data, size), fuzz_file("out.bin", "", 0), data, size};
    if (llmc_is_tokenizer(data, size)) {
        fuzz_call(load_tokenizer, &in);
        return 0;
    }
    fuzz_call(check_header, &in);
    g_stage = 0;
    if (fuzz_call(load_export_reload, &in) == 2 && g_stage == 1)
        fuzz_fail("the exported file does not load again: %s", fuzz_message());
    fuzz_call(load_fixed, &in);
    return 0;
}
