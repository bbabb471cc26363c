// llm.c's GPT-2 model file (llmc.h).
#include "trainer/llmc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/keys.h"

// The 16 tensors in file order: this project's name (per layer after "h.<l>.") and whether the
// file holds one per layer.
static const struct {
    const char *name;
    int per_layer;
} k_tensors[LLMC_N_TENSORS] = {
    // clang-format off
    {"wte", 0},           {"wpe", 0},              {"ln_1.weight", 1},     {"ln_1.bias", 1},
    {"attn.qkv.weight", 1}, {"attn.qkv.bias", 1},  {"attn.proj.weight", 1}, {"attn.proj.bias", 1},
    {"ln_2.weight", 1},   {"ln_2.bias", 1},        {"mlp.fc.weight", 1},   {"mlp.fc.bias", 1},
    {"mlp.proj.weight", 1}, {"mlp.proj.bias", 1},  {"ln_f.weight", 0},     {"ln_f.bias", 0},
    // clang-format on
};

// Elements of tensor i in the file, for one layer when it is per layer.
static size_t file_count(const LlmcHeader *h, int i) {
    size_t C = (size_t)h->C;
    // clang-format off
    const size_t counts[LLMC_N_TENSORS] = {(size_t)h->Vp * C, (size_t)h->max_T * C, C, C, 3 * C * C, 3 * C,
                                           C * C, C, C, C, 4 * C * C, 4 * C, 4 * C * C, C, C, C};
    // clang-format on
    return counts[i];
}

// Elements of file tensor i the model holds (one layer's): wte without its padded rows, wpe's
// first T rows, every other tensor whole.
static size_t kept_count(const LlmcHeader *h, int i, int T) {
    return i == 0 ? (size_t)h->V * h->C : i == 1 ? (size_t)T * h->C : file_count(h, i);
}

static size_t file_params(const LlmcHeader *h) {
    size_t n = 0;
    for (int i = 0; i < LLMC_N_TENSORS; i++) n += file_count(h, i) * (k_tensors[i].per_layer ? (size_t)h->L : 1);
    return n;
}

static size_t elem_bytes(const LlmcHeader *h) { return h->version == 5 ? 2 : 4; }

int llmc_is_model_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    int32_t magic = 0;
    int ok = fread(&magic, sizeof magic, 1, f) == 1 && magic == LLMC_MODEL_MAGIC;
    fclose(f);
    return ok;
}

int llmc_is_damaged_model_file(const char *path) {
    size_t n = strlen(path);
    if (n < 4 || strcmp(path + n - 4, ".bin")) return 0;
    FILE *f = fopen(path, "rb");
    if (!f) return 1;  // llmc_read_header says why it cannot be opened
    unsigned char head[9];
    size_t got = fread(head, 1, sizeof head, f);
    int seek_ok = fseek(f, 0, SEEK_END) == 0;
    long size = seek_ok ? ftell(f) : -1;
    fclose(f);
    if (got < sizeof head || size < 0) return 1;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | head[i];
    return !(hlen <= (uint64_t)size - 8 && head[8] == '{');
}

int llmc_read_header(const char *path, LlmcHeader *h, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open: %s", strerror(errno));
        return -1;
    }
    int32_t hd[LLMC_HEADER_INTS];
    size_t got = fread(hd, sizeof(int32_t), LLMC_HEADER_INTS, f);
    int seek_ok = fseek(f, 0, SEEK_END) == 0;
    long size = seek_ok ? ftell(f) : -1;
    fclose(f);
    if (got != LLMC_HEADER_INTS) {
        snprintf(err, errlen, "shorter than llm.c's 1024-byte model header");
        return -1;
    }
    if (hd[0] != LLMC_MODEL_MAGIC) {
        snprintf(err, errlen, "not an llm.c model file (magic %d, expected %d)", hd[0], LLMC_MODEL_MAGIC);
        return -1;
    }
    if (hd[1] != 3 && hd[1] != 5) {
        snprintf(err, errlen, "llm.c model file version %d (expected 3 for fp32 or 5 for bf16)", hd[1]);
        return -1;
    }
    *h = (LlmcHeader){hd[1], hd[2], hd[3], hd[4], hd[5], hd[6], hd[7]};
    // Bounds that keep every size below in range (and a model this trainer can build).
    const struct {
        const char *name;
        int v, lo, hi;
    } fields[] = {
        {"max_seq_len", h->max_T, 1, 1 << 20}, {"vocab_size", h->V, 1, 1 << 24},
        {"n_layer", h->L, 1, MAX_LAYERS},      {"n_head", h->H, 1, 1 << 12},
        {"channels", h->C, 1, 1 << 16},        {"padded_vocab_size", h->Vp, 1, 1 << 24},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (fields[i].v < fields[i].lo || fields[i].v > fields[i].hi) {
            snprintf(err, errlen, "header %s = %d (expected %d to %d)", fields[i].name, fields[i].v, fields[i].lo,
                     fields[i].hi);
            return -1;
        }
    if (h->C % h->H) {
        snprintf(err, errlen, "header channels %d do not divide by n_head %d", h->C, h->H);
        return -1;
    }
    if (h->Vp < h->V) {
        snprintf(err, errlen, "header padded_vocab_size %d is below vocab_size %d", h->Vp, h->V);
        return -1;
    }
    long want = (long)(sizeof hd + file_params(h) * elem_bytes(h));
    if (size != want) {
        snprintf(err, errlen, "file is %ld bytes, but its header (%s, L=%d C=%d Vp=%d maxT=%d) says %ld", size,
                 h->version == 5 ? "bf16" : "fp32", h->L, h->C, h->Vp, h->max_T, want);
        return -1;
    }
    return 0;
}

int llmc_read_config(const char *path, Config *cfg, char *err, size_t errlen) {
    LlmcHeader h;
    if (llmc_read_header(path, &h, err, errlen) != 0) return -1;
    config_init_all(cfg);
    char num[32];
    const struct {
        const char *key;
        int v;
    } shape[] = {{"n_layer", h.L}, {"n_head", h.H}, {"d_model", h.C}, {"vocab_size", h.V}, {"seq_len", h.max_T}};
    for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++) {
        snprintf(num, sizeof num, "%d", shape[i].v);
        config_set(cfg, shape[i].key, num, path);
    }
    config_set(cfg, "mixer", "softmax", path);
    config_set(cfg, "mlp", "true", path);
    config_set(cfg, "pos_emb", "learned", path);
    config_set(cfg, "task", "shards", path);
    return 0;
}

void llmc_shape_config(Config *cfg, const char *path) {
    LlmcHeader h;
    char err[512], num[32];
    if (llmc_read_header(path, &h, err, sizeof err) != 0) die_input("init_from: %s: %s", path, err);
    const struct {
        const char *key;
        int v;
    } shape[] = {{"n_layer", h.L}, {"n_head", h.H}, {"d_model", h.C}, {"vocab_size", h.V}};
    for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++) {
        int k = config_index(cfg, shape[i].key);
        if (cfg->origin[k] && cfg_int(cfg, shape[i].key) != shape[i].v)
            die_input("%s: %s = %ld, but init_from %s has %d", cfg->origin[k], shape[i].key, cfg_int(cfg, shape[i].key),
                      path, shape[i].v);
        snprintf(num, sizeof num, "%d", shape[i].v);
        config_set(cfg, shape[i].key, num, cfg->origin[k] ? cfg->origin[k] : path);
    }
    if (cfg_int(cfg, "seq_len") > h.max_T)
        die_input("seq_len: %ld is longer than init_from %s's max_seq_len %d", cfg_int(cfg, "seq_len"), path, h.max_T);
    const MixerKind *kinds[MAX_LAYERS];
    model_parse_mixers(cfg_str(cfg, "mixer"), h.L, kinds);
    for (int l = 0; l < h.L; l++)
        if (strcmp(kinds[l]->name, "softmax"))
            die_input("mixer: init_from %s is an llm.c GPT-2 (softmax attention in every layer), not '%s'", path,
                      cfg_str(cfg, "mixer"));
    if (cfg_int(cfg, "short_conv") != 0)
        die_input("short_conv: init_from %s is an llm.c GPT-2, which has no short convolution (set short_conv = 0)", path);
    if (!cfg_bool(cfg, "mlp")) die_input("mlp: init_from %s is an llm.c GPT-2, which has an MLP in every block", path);
    if (strcmp(cfg_str(cfg, "pos_emb"), "learned"))
        die_input("pos_emb: init_from %s is an llm.c GPT-2, which has learned positions", path);
}

// The model's tensor for file tensor i at layer l, checked to hold `count` elements.
static const TensorInfo *model_tensor(const Model *m, int i, int l, size_t count, char *err, size_t errlen) {
    char name[96];
    if (k_tensors[i].per_layer) snprintf(name, sizeof name, "h.%d.%s", l, k_tensors[i].name);
    else snprintf(name, sizeof name, "%s", k_tensors[i].name);
    const TensorInfo *t = model_find_tensor(m, name);
    if (!t) snprintf(err, errlen, "the model has no tensor '%s' for llm.c's layout", name);
    else if (t->count != count)
        snprintf(err, errlen, "tensor '%s' holds %zu values, llm.c's layout %zu", name, t->count, count), t = NULL;
    return t;
}

// -1 with err when m holds a tensor outside llm.c's layout (a short convolution, another mixer's)
// or not exactly the `expected` count of them.
static int no_foreign_tensors(const Model *m, size_t expected, char *err, size_t errlen) {
    for (int i = 0; i < m->n_tensors; i++) {
        const char *n = m->tensors[i].name, *suffix = n;
        if (!strncmp(n, "h.", 2)) suffix = strchr(n + 2, '.') + 1;
        int known = 0;
        for (int k = 0; k < LLMC_N_TENSORS; k++) known |= !strcmp(suffix, k_tensors[k].name);
        if (!known) {
            snprintf(err, errlen, "llm.c's GPT-2 has no tensor like '%s'", n);
            return -1;
        }
    }
    if ((size_t)m->n_tensors != expected) {
        snprintf(err, errlen, "the model has %d tensors, llm.c's GPT-2 %zu", m->n_tensors, expected);
        return -1;
    }
    return 0;
}

static float bf16_to_f32(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

int llmc_load(const char *path, Model *m, char *err, size_t errlen) {
    LlmcHeader h;
    if (llmc_read_header(path, &h, err, errlen) != 0) return -1;
    const ModelShape *s = &m->s;
    if (s->T > h.max_T) {
        snprintf(err, errlen, "seq_len %d is longer than the file's max_seq_len %d", s->T, h.max_T);
        return -1;
    }
    if (s->L != h.L || s->H != h.H || s->C != h.C || s->V != h.V || s->T > h.max_T || !s->mlp || !s->pos_emb) {
        snprintf(err, errlen, "the model (L=%d H=%d C=%d V=%d T=%d) does not match the file (L=%d H=%d C=%d V=%d maxT=%d)",
                 s->L, s->H, s->C, s->V, s->T, h.L, h.H, h.C, h.V, h.max_T);
        return -1;
    }
    // Check every destination, and that every tensor of the model has a source, before touching
    // the model, so a failure leaves it unchanged.
    size_t expected = 0;
    for (int i = 0; i < LLMC_N_TENSORS; i++)
        for (int l = 0; l < (k_tensors[i].per_layer ? h.L : 1); l++, expected++) {
            size_t want = kept_count(&h, i, s->T);
            if (!model_tensor(m, i, l, want, err, errlen)) return -1;
        }
    if (no_foreign_tensors(m, expected, err, errlen) != 0) return -1;
    FILE *f = fopenCheck(path, "rb");
    size_t eb = elem_bytes(&h), biggest = 0;
    for (int i = 0; i < LLMC_N_TENSORS; i++)
        if (file_count(&h, i) > biggest) biggest = file_count(&h, i);
    void *raw = mallocCheck(biggest * eb);
    long pos = (long)(LLMC_HEADER_INTS * sizeof(int32_t));
    for (int i = 0; i < LLMC_N_TENSORS; i++)
        for (int l = 0; l < (k_tensors[i].per_layer ? h.L : 1); l++) {
            size_t n = file_count(&h, i);
            size_t use = kept_count(&h, i, s->T);
            const TensorInfo *t = model_tensor(m, i, l, use, err, errlen);
            if (fseek(f, pos, SEEK_SET) != 0) die("%s: cannot seek: %s", path, strerror(errno));
            freadCheck(raw, eb, use, f, path);
            real *dst = m->params + t->offset;
            for (size_t k = 0; k < use; k++)
                dst[k] = eb == 2 ? (real)bf16_to_f32(((const uint16_t *)raw)[k]) : (real)((const float *)raw)[k];
            pos += (long)(n * eb);
        }
    free(raw);
    fcloseCheck(f, path);
    return 0;
}

int llmc_exportable(const Model *m, char *err, size_t errlen) {
    const ModelShape *s = &m->s;
    // Other mixers may share softmax's tensor names (elu+1 linear does) but not its function.
    for (int l = 0; l < s->L; l++)
        if (strcmp(m->mixer[l]->name, "softmax")) {
            snprintf(err, errlen, "llm.c's GPT-2 is softmax attention in every layer, not the model's mixer '%s'%s",
                     m->mixer[l]->name, model_is_hybrid(m) ? " (a hybrid stack)" : "");
            return -1;
        }
    if (!s->mlp || !s->pos_emb) {
        snprintf(err, errlen, "llm.c's GPT-2 needs %s",
                 !s->mlp ? "an MLP in every block (mlp = true)" : "learned positions (pos_emb = learned)");
        return -1;
    }
    // Exactly llm.c's tensors: anything else (a short convolution, say) it cannot run.
    LlmcHeader h = {3, s->T, s->V, s->L, s->H, s->C, s->V};  // Vp = V: the rows the model holds
    size_t expected = 0;
    for (int i = 0; i < LLMC_N_TENSORS; i++)
        for (int l = 0; l < (k_tensors[i].per_layer ? s->L : 1); l++, expected++)
            if (!model_tensor(m, i, l, file_count(&h, i), err, errlen)) return -1;
    if (no_foreign_tensors(m, expected, err, errlen) != 0) return -1;
    return 0;
}

int llmc_save(const char *path, const Model *m, char *err, size_t errlen) {
    if (llmc_exportable(m, err, errlen) != 0) return -1;
    const ModelShape *s = &m->s;
    LlmcHeader h = {3, s->T, s->V, s->L, s->H, s->C, (s->V + 127) / 128 * 128};
    int32_t hd[LLMC_HEADER_INTS] = {LLMC_MODEL_MAGIC, h.version, h.max_T, h.V, h.L, h.H, h.C, h.Vp};
    AtomicFile a;  // PATH.<pid>.tmp renamed over PATH (core/io.h): a kill leaves no half-written file
    if (atomic_open(&a, path, err, errlen) != 0) return -1;
    FILE *f = a.f;
    int ok = fwrite(hd, sizeof hd, 1, f) == 1;
    size_t biggest = 0;
    for (int i = 0; i < LLMC_N_TENSORS; i++)
        if (file_count(&h, i) > biggest) biggest = file_count(&h, i);
    float *buf = mallocCheck(sizeof(float) * biggest);
    for (int i = 0; i < LLMC_N_TENSORS && ok; i++)
        for (int l = 0; l < (k_tensors[i].per_layer ? h.L : 1) && ok; l++) {
            size_t n = file_count(&h, i), use = kept_count(&h, i, h.max_T);  // max_T = T here
            const TensorInfo *t = model_tensor(m, i, l, use, err, errlen);
            const real *src = m->params + t->offset;
            for (size_t k = 0; k < n; k++) buf[k] = k < use ? (float)src[k] : 0.0f;
            ok = fwrite(buf, sizeof(float), n, f) == n;
        }
    free(buf);
    int saved_errno = errno;
    if (!ok) atomic_abort(&a);
    else if (atomic_commit(&a, NULL, 0) != 0) ok = 0, saved_errno = errno;
    if (!ok) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(saved_errno));
        return -1;
    }
    return 0;
}
