// Fuzz target: the safetensors reader (core/safetensors.c) and the checkpoint loader on top of it
// (trainer/checkpoint.c). The input is a file. st_read must accept it or return an error, never
// crash; an accepted file's tensors lie inside its data section. Then the same file with its
// "crc32" metadata recomputed (so mutations get past the CRC: over the whole file with the value
// read as 00000000, st_file_crc32; format 1: over the data section) goes to ckpt_read_config and
// ckpt_load into a fixed small model (softmax, d_model 8, 1 layer, vocabulary 16, 8 tokens),
// which must load it whole or report why and leave the model unchanged.
// FUZZ_WRITE_SEED=PATH: write that model's checkpoint to PATH (the seed corpus) and exit.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "model/keys.h"
#include "core/safetensors.h"
#include "trainer/checkpoint.h"
#include "tests/fuzz/fuzz.h"

static Model *g_model;
static Optimizer g_opt;
static Config g_cfg;
static volatile unsigned char g_sink;

static void build_model(void) {
    config_init_all(&g_cfg);
    char *args[] = {"d_model=8", "n_head=2", "n_layer=1", "vocab_size=16", "seq_len=8"};
    config_apply_args(&g_cfg, 5, args);
    ModelShape s = {.V = 16, .C = 8, .L = 1, .H = 2, .T = 8, .mlp = 1, .pos_emb = 1};
    g_model = model_create(&s, mixer_find("softmax"), &g_cfg, 1, 8);
    model_init_weights(g_model, 1);
    optim_init(&g_opt, OPT_ADAMW, g_model->n_params, 0.9, 0.999, 1e-8, 0.1);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    build_model();
    const char *seed = getenv("FUZZ_WRITE_SEED");
    if (seed) {
        for (size_t i = 0; i < g_model->n_params; i++) g_opt.m[i] = 0.001f * (float)i, g_opt.v[i] = 1e-6f;
        TrainState ts = {3, 48, 7, 3, 0, 0};
        char err[256];
        if (ckpt_save(seed, g_model, &g_opt, &g_cfg, &ts, err, sizeof err)) fuzz_fail("%s", err);
        exit(0);
    }
    return 0;
}

static void read_container(void *path) {
    SafeTensors st;
    char err[512];
    if (st_read(path, &st, err, sizeof err) != 0) {
        if (!err[0]) fuzz_fail("st_read failed without a message");
        return;
    }
    for (int i = 0; i < st.n_tensors; i++) {
        const StTensor *t = &st.tensors[i];
        if (t->begin > t->end || t->end > st.data_len) fuzz_fail("tensor %s outside the data section", t->name);
        if (st_find(&st, t->name) != t) fuzz_fail("st_find(%s) finds another entry", t->name);
        unsigned char sum = 0;  // reads every byte of the tensor (ASan checks the bounds)
        for (size_t k = t->begin; k < t->end; k++) sum ^= st.data[k];
        g_sink ^= sum;
    }
    for (int i = 0; i < st.n_meta; i++) (void)st_meta(&st, st.meta_keys[i]);
    st_free(&st);
}

static void load_checkpoint(void *path) {
    char err[512];
    Config c;
    long step;
    if (ckpt_read_config(path, &c, &step, err, sizeof err) == 0) config_free(&c);
    size_t n = g_model->n_params * sizeof(real);
    real *before = malloc(n);
    memcpy(before, g_model->params, n);
    TrainState ts;
    if (ckpt_load(path, g_model, &g_opt, &ts, err, sizeof err) != 0) {
        if (!err[0]) fuzz_fail("ckpt_load failed without a message");
        if (memcmp(before, g_model->params, n)) fuzz_fail("a failed ckpt_load changed the model: %s", err);
    }
    free(before);
}

// The input with its "crc32":"xxxxxxxx" metadata set to the value the loader expects: the CRC32
// of the file with the value read as 00000000 (st_file_crc32), or for a header naming format 1,
// of the data section.
static unsigned char *with_crc(const unsigned char *data, size_t size) {
    unsigned char *out = malloc(size + 1);
    memcpy(out, data, size);
    size_t slot = st_crc_slot(data, size);
    if (!slot) return out;
    unsigned long long hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | data[i];
    uint32_t crc = 0;
    if (memmem(data + 8, (size_t)hlen, CKPT_FORMAT_V1, strlen(CKPT_FORMAT_V1)))
        crc = (uint32_t)crc32(0L, data + 8 + hlen, (uInt)(size - 8 - hlen));
    else if (st_file_crc32(data, size, &crc) != 0) return out;
    char hex[16];
    snprintf(hex, sizeof hex, "%08x", (unsigned)crc);
    memcpy(out + slot, hex, 8);
    return out;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    fuzz_call(read_container, (void *)fuzz_file("in.safetensors", data, size));
    unsigned char *fixed = with_crc(data, size);
    fuzz_call(load_checkpoint, (void *)fuzz_file("crc.safetensors", fixed, size));
    free(fixed);
    return 0;
}
