// Checkpoints: byte layout, validation of every kind of damage, atomic saves, bit-exact resume.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/io.h"
#include "core/json.h"
#include "model/keys.h"
#include "core/safetensors.h"
#include "trainer/checkpoint.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

#define TINY                                                                                                           \
    "vocab_size=64 seq_len=32 mqar_kv_pairs=4 mqar_train_examples=300 mqar_test_examples=64 mqar_val_examples=64 "     \
    "d_model=16 n_head=2 batch_size=16 lr=3e-3 log_every=1 eval_every=4 save_every=5"

static Model *small_model(Config *cfg, int d_model) {
    char over[64];
    snprintf(over, sizeof over, "d_model=%d", d_model);
    test_config(cfg, over);
    ModelShape s = {.V = 13, .C = d_model, .L = 2, .H = 2, .T = 6, .mlp = 1, .pos_emb = 1};
    Model *m = model_create(&s, mixer_find("softmax"), cfg, 2, 12);
    model_init_weights(m, 5);
    return m;
}

static const char *save_small(const char *name, Model *m, Config *cfg, Optimizer *opt) {
    const char *path = test_path(name);
    TrainState ts = {42, 1234, 7, 42, 0, 0};
    char err[256];
    CHECK(ckpt_save(path, m, opt, cfg, &ts, err, sizeof err) == 0, "%s", err);
    return path;
}

TEST(checkpoint_byte_layout_is_safetensors) {
    Config cfg;
    Model *m = small_model(&cfg, 8);
    Optimizer opt;
    optim_init(&opt, OPT_ADAMW, m->n_params, 0.9, 0.999, 1e-8, 0.1);
    for (size_t i = 0; i < m->n_params; i++) opt.m[i] = (real)i * 0.5f, opt.v[i] = 1;
    const char *path = save_small("a.safetensors", m, &cfg, &opt);
    size_t len;
    char *buf = read_file_text(path, &len);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | (unsigned char)buf[i];
    CHECK((8 + hlen) % 8 == 0, "data section not 8-byte aligned");
    char err[256];
    JsonValue *h = json_parse(buf + 8, hlen, err, sizeof err);
    CHECK(h && h->type == JSON_OBJECT, "%s", err);
    const JsonValue *meta = json_get(h, "__metadata__");
    CHECK(meta && !strcmp(json_get(meta, "format")->string, CKPT_FORMAT));
    CHECK(!strcmp(json_get(meta, "step")->string, "42"));
    CHECK(strstr(json_get(meta, "config")->string, "d_model = 8"));
    CHECK(strlen(json_get(meta, "crc32")->string) == 8);
    CHECK(json_get(meta, "data_pos") && json_get(meta, "rng"));
    // every model tensor and both AdamW moments, F32, shapes as the table, raw little-endian floats
    const unsigned char *data = (const unsigned char *)buf + 8 + hlen;
    for (int i = 0; i < m->n_tensors; i++) {
        const TensorInfo *t = &m->tensors[i];
        for (int k = 0; k < 3; k++) {
            char name[128];
            snprintf(name, sizeof name, "%s%s", k == 0 ? "" : k == 1 ? "optim.m." : "optim.v.", t->name);
            const JsonValue *e = json_get(h, name);
            CHECK(e, "tensor %s missing", name);
            CHECK(!strcmp(json_get(e, "dtype")->string, "F32"));
            const JsonValue *shape = json_get(e, "shape"), *off = json_get(e, "data_offsets");
            CHECK(shape->n == t->ndim && shape->items[0].integer == t->shape[0]);
            long b = off->items[0].integer, end = off->items[1].integer;
            CHECK(end - b == (long)(4 * t->count));
            const real *src = (k == 0 ? m->params : k == 1 ? opt.m : opt.v) + t->offset;
            size_t j = t->count - 1;
            float want = (float)src[j], got;
            unsigned char le[4] = {data[b + 4 * j], data[b + 4 * j + 1], data[b + 4 * j + 2], data[b + 4 * j + 3]};
            uint32_t u = (uint32_t)le[0] | (uint32_t)le[1] << 8 | (uint32_t)le[2] << 16 | (uint32_t)le[3] << 24;
            memcpy(&got, &u, 4);
            CHECK(got == want, "%s[%zu] = %g on disk, %g in memory", name, j, got, want);
        }
    }
    json_free(h);
    // and it loads back
    Config cfg2;
    Model *m2 = small_model(&cfg2, 8);
    Optimizer opt2;
    optim_init(&opt2, OPT_ADAMW, m2->n_params, 0.9, 0.999, 1e-8, 0.1);
    TrainState ts;
    CHECK(ckpt_load(path, m2, &opt2, &ts, err, sizeof err) == 0, "%s", err);
    CHECK(ts.step == 42 && ts.data_pos == 1234 && ts.data_seed == 7 && opt2.t == 42);
    for (size_t i = 0; i < m->n_params; i++) CHECK(m2->params[i] == (real)(float)m->params[i]);
    CHECK(opt2.m[5] == (real)(float)opt.m[5]);
}

static void expect_refused(const char *path, Model *m, const char *want) {
    char err[512];
    CHECK(ckpt_load(path, m, NULL, NULL, err, sizeof err) != 0, "loaded a bad checkpoint (%s)", want);
    CHECK(strstr(err, want), "message '%s' lacks '%s'", err, want);
}

static void write_bytes(const char *path, const char *buf, size_t n) {
    FILE *f = fopenCheck(path, "wb");
    fwriteCheck(buf, 1, n, f, path);
    fclose(f);
}

TEST(checkpoint_damage_is_refused_with_its_own_message) {
    Config cfg;
    Model *m = small_model(&cfg, 8);
    const char *good = strdupCheck(save_small("good.safetensors", m, &cfg, NULL));
    size_t len;
    char *buf = read_file_text(good, &len);
    real before = m->params[3];
    // truncated
    write_bytes(test_path("trunc.safetensors"), buf, len - 100);
    expect_refused(test_path("trunc.safetensors"), m, "truncated");
    write_bytes(test_path("tiny.safetensors"), buf, 5);
    expect_refused(test_path("tiny.safetensors"), m, "shorter than the 8-byte header length");
    // a flipped data byte
    char *flip = mallocCheck(len);
    memcpy(flip, buf, len);
    flip[len - 7] ^= 0x10;
    write_bytes(test_path("flip.safetensors"), flip, len);
    expect_refused(test_path("flip.safetensors"), m, "CRC32");
    // garbage header
    memcpy(flip, buf, len);
    memcpy(flip + 8, "{\"x\":[1,2", 9);
    write_bytes(test_path("garbage.safetensors"), flip, len);
    expect_refused(test_path("garbage.safetensors"), m, "not valid JSON");
    // a header length beyond the file
    memcpy(flip, buf, len);
    flip[5] = 0x7f;
    write_bytes(test_path("hlen.safetensors"), flip, len);
    expect_refused(test_path("hlen.safetensors"), m, "header length");
    // wrong shape: a model of another width
    Config cfg16;
    Model *wide = small_model(&cfg16, 16);
    expect_refused(good, wide, "has shape [13,8], the config needs [13,16]");
    // a missing tensor: written without h.1.mlp.fc.bias
    StWriter *w = st_writer_new();
    for (int i = 0; i < m->n_tensors; i++) {
        const TensorInfo *t = &m->tensors[i];
        if (!strcmp(t->name, "h.1.mlp.fc.bias")) continue;
        int64_t shape[4];
        float *tmp = mallocCheck(sizeof(float) * t->count);
        for (size_t k = 0; k < t->count; k++) tmp[k] = (float)m->params[t->offset + k];
        for (int k = 0; k < t->ndim; k++) shape[k] = t->shape[k];
        st_writer_add_f32(w, t->name, t->ndim, shape, tmp);
        free(tmp);
    }
    st_writer_meta(w, "format", CKPT_FORMAT);
    st_writer_meta(w, "config", "");
    st_writer_meta(w, "step", "1");
    st_writer_meta(w, "data_pos", "0");
    st_writer_meta(w, "data_seed", "0");
    st_writer_meta(w, "optimizer_steps", "1");
    char err[256];
    CHECK(st_writer_save(w, test_path("missing.safetensors"), err, sizeof err) == 0, "%s", err);
    st_writer_free(w);
    expect_refused(test_path("missing.safetensors"), m, "tensor 'h.1.mlp.fc.bias' is missing");
    // no AdamW state when resuming needs it
    Optimizer opt;
    optim_init(&opt, OPT_ADAMW, m->n_params, 0.9, 0.999, 1e-8, 0.1);
    CHECK(ckpt_load(good, m, &opt, NULL, err, sizeof err) != 0 && strstr(err, "optim.m.wte' is missing"), "%s", err);
    // not a checkpoint at all
    write_bytes(test_path("text.safetensors"), "hello world, not a checkpoint", 29);
    expect_refused(test_path("text.safetensors"), m, "header length");
    CHECK(m->params[3] == before, "a refused load changed the model");
}

// --- end to end through ./train ---------------------------------------------------------------

static char *losses(const char *dir) {
    char p[512];
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    char *text = read_file_text(p, NULL);
    CHECK(text, "no %s", p);
    return text;
}

// Removes the timing fields (",\"tok_per_s\":...") of every record, so runs compare exactly.
static void strip_timing(char *text) {
    for (char *p; (p = strstr(text, ",\"tok_per_s\":"));) {
        char *end = strchr(p, '}');
        memmove(p, end, strlen(end) + 1);
    }
}

// The data section of a checkpoint (the tensors, without the metadata).
static char *tensor_bytes(const char *path, size_t *n) {
    SafeTensors st;
    char err[256];
    CHECK(st_read(path, &st, err, sizeof err) == 0, "%s: %s", path, err);
    char *copy = mallocCheck(st.data_len);
    memcpy(copy, st.data, st.data_len);
    *n = st.data_len;
    st_free(&st);
    return copy;
}

static void check_resume_bit_exact(const char *extra) {
    char out[8192];
    const char *d1 = strdupCheck(test_path("straight")), *d2 = strdupCheck(test_path("split"));
    int st = test_run(out, sizeof out, "./train /dev/null " TINY " steps=14 %s out_dir=%s", extra, d1);
    CHECK(st == 0, "%s", out);
    st = test_run(out, sizeof out, "./train /dev/null " TINY " steps=14 %s out_dir=%s stop_at_step=7", extra, d2);
    CHECK(st == 0 && strstr(out, "stop_at_step 7 reached"), "%s", out);
    st = test_run(out, sizeof out, "./train /dev/null " TINY " steps=14 %s out_dir=%s", extra, d2);
    CHECK(st == 0 && strstr(out, "resuming from") && strstr(out, "step 7"), "%s", out);
    char *a = losses(d1), *b = losses(d2);
    strip_timing(a);
    strip_timing(b);
    CHECK(!strcmp(a, b), "metrics differ (%s):\n%s\n---\n%s", extra, a, b);
    char p1[600], p2[600];
    snprintf(p1, sizeof p1, "%s/ckpt_00000014.safetensors", d1);
    snprintf(p2, sizeof p2, "%s/ckpt_00000014.safetensors", d2);
    size_t n1, n2;
    char *t1 = tensor_bytes(p1, &n1), *t2 = tensor_bytes(p2, &n2);
    CHECK(n1 == n2 && !memcmp(t1, t2, n1), "final parameters differ (%s)", extra);
}

TEST(resume_is_bit_exact_adamw_shuffled) { check_resume_bit_exact("optimizer=adamw shuffle=true"); }
TEST(resume_is_bit_exact_sgd_shuffled) { check_resume_bit_exact("optimizer=sgd shuffle=true lr=0.1"); }

TEST(resume_ignores_half_written_checkpoint_and_refuses_changes) {
    char out[8192];
    const char *d = strdupCheck(test_path("run"));
    int st = test_run(out, sizeof out, "./train /dev/null " TINY " steps=12 out_dir=%s stop_at_step=6", d);
    CHECK(st == 0, "%s", out);
    // a crash while saving step 9 left its temporary file; latest still names step 6
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s/ckpt_00000009.safetensors.99999999.tmp", d);  // a pid above any pid_max
    write_bytes(tmp, "partial", 7);
    st = test_run(out, sizeof out, "./train /dev/null " TINY " steps=12 out_dir=%s d_model=32", d);
    CHECK(st == 2 && strstr(out, "d_model is '16' in the checkpoint but '32' now"), "%d %s", st, out);
    st = test_run(out, sizeof out, "./train /dev/null " TINY " steps=12 out_dir=%s", d);
    CHECK(st == 0 && strstr(out, "ckpt_00000006.safetensors (step 6)"), "%s", out);
    // resume = never refuses the folder unless told to overwrite
    st = test_run(out, sizeof out, "./train /dev/null " TINY " out_dir=%s resume=never", d);
    CHECK(st == 2 && strstr(out, "already holds a run"), "%d %s", st, out);
    st = test_run(out, sizeof out, "./train /dev/null " TINY " steps=3 out_dir=%s resume=never overwrite=true", d);
    CHECK(st == 0 && !strstr(out, "resuming"), "%s", out);
    char p[600];
    snprintf(p, sizeof p, "%s/ckpt_00000010.safetensors", d);
    CHECK(!path_exists(p), "overwrite kept old checkpoints");
    // a damaged latest checkpoint stops the run with the file and the problem
    snprintf(p, sizeof p, "%s/ckpt_00000003.safetensors", d);
    size_t len;
    char *buf = read_file_text(p, &len);
    buf[len - 3] ^= 1;
    write_bytes(p, buf, len);
    st = test_run(out, sizeof out, "./train /dev/null " TINY " steps=6 out_dir=%s", d);
    CHECK(st == 2 && strstr(out, "ckpt_00000003.safetensors: CRC32"), "%d %s", st, out);
}

TEST(keep_last_and_init_from) {
    char out[8192];
    const char *d = strdupCheck(test_path("k"));
    int st = test_run(out, sizeof out, "./train /dev/null " TINY " steps=20 keep_last=2 out_dir=%s", d);
    CHECK(st == 0, "%s", out);
    char **paths;
    long *steps;
    int n = ckpt_list(d, &paths, &steps);
    CHECK(n == 2 && steps[0] == 15 && steps[1] == 20, "%d checkpoints", n);
    // a new run from those weights: fresh optimizer, step 0, same val loss before training
    const char *e = strdupCheck(test_path("e"));
    st = test_run(out, sizeof out, "./train /dev/null " TINY " steps=2 out_dir=%s init_from=%s", e, paths[1]);
    CHECK(st == 0 && strstr(out, "initialised from"), "%s", out);
    char *m1 = losses(d), *m2 = losses(e);
    char *last_eval = strstr(m1, "{\"type\":\"eval\",\"step\":20");
    CHECK(last_eval);
    char *loss1 = strstr(last_eval, "\"loss\":"), *loss2 = strstr(strstr(m2, "{\"type\":\"eval\",\"step\":0"), "\"loss\":");
    CHECK(!strncmp(loss1, loss2, 20), "%.30s vs %.30s", loss1, loss2);
    st = test_run(out, sizeof out, "./train /dev/null " TINY " steps=2 d_model=32 out_dir=%s/f init_from=%s",
                  test_tmpdir(), paths[1]);
    CHECK(st == 2 && strstr(out, "init_from:") && strstr(out, "shape"), "%d %s", st, out);
    // the same init_from command run again after an interruption resumes; it does not start over
    const char *g = strdupCheck(test_path("g")), *h = strdupCheck(test_path("h"));
    st = test_run(out, sizeof out, "./train /dev/null " TINY " steps=6 out_dir=%s init_from=%s", g, paths[1]);
    CHECK(st == 0, "%s", out);
    st = test_run(out, sizeof out, "./train /dev/null " TINY " steps=6 stop_at_step=3 out_dir=%s init_from=%s", h, paths[1]);
    CHECK(st == 0, "%s", out);
    st = test_run(out, sizeof out, "./train /dev/null " TINY " steps=6 out_dir=%s init_from=%s", h, paths[1]);
    CHECK(st == 0 && strstr(out, "resuming from") && !strstr(out, "initialised from"), "%s", out);
    char *lg = losses(g), *lh = losses(h);
    strip_timing(lg), strip_timing(lh);
    CHECK(!strcmp(lg, lh), "interrupted init_from run differs:\n%s\nvs\n%s", lg, lh);
}
