// llm.c's GPT-2 files on weights no one here made: the tests write a small GPT-2-shaped model
// file byte by byte from the format's definition (not through trainer/llmc.c), each tensor filled
// with its own known pattern, and check that every value lands in the tensor and place it
// belongs, that the loss on a fixed batch equals a plain GPT-2 forward written here from llm.c's
// definition (reading the file's arrays directly: padded vocabulary rows included in its logits
// but not in its softmax), that export writes the same bytes back, that bf16 files widen exactly,
// and that bad files, mismatched configs and models llm.c cannot run are refused with one line.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/io.h"
#include "data/shards.h"
#include "model/model.h"
#include "tokenizer/bpe.h"
#include "trainer/checkpoint.h"
#include "trainer/ckpt_open.h"
#include "trainer/llmc.h"
#include "tests/test.h"
#include "tokenizer/tokenizer_file.h"

enum { MAXT = 8, V = 100, VP = 128, L = 2, NH = 2, C = 8 };

// Elements of file tensor i (per layer for the per-layer ones), in llm.c's order.
// clang-format off
static const size_t k_count[16] = {VP * C, MAXT * C, C, C, 3 * C * C, 3 * C, C * C, C, C, C, 4 * C * C, 4 * C,
                                   4 * C * C, C, C, C};
static const int k_per_layer[16] = {0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
static const char *const k_name[16] = {"wte", "wpe", "ln_1.weight", "ln_1.bias", "attn.qkv.weight",
                                       "attn.qkv.bias", "attn.proj.weight", "attn.proj.bias", "ln_2.weight",
                                       "ln_2.bias", "mlp.fc.weight", "mlp.fc.bias", "mlp.proj.weight",
                                       "mlp.proj.bias", "ln_f.weight", "ln_f.bias"};
// clang-format on

// Element k (over all layers) of tensor i: distinct per tensor and place, exact in fp32. Layer
// norm gains sit near 1 so the forward stays well scaled; padded wte rows are zero, as llm.c
// writes them.
static float pattern(int i, size_t k) {
    if (i == 0 && k >= (size_t)V * C) return 0;
    float p = (float)((int)((k * 37 + (size_t)i * 101) % 203) - 101) / 512.0f;
    return (i == 2 || i == 8 || i == 14) ? 1.0f + p : p;
}

static size_t tensor_total(int i) { return k_count[i] * (k_per_layer[i] ? L : 1); }

static uint16_t to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

// The file, written from the definition: 256 int32 header, then the 16 tensors.
static const char *write_gpt2(const char *name, int version, int header_layers, long drop_bytes) {
    const char *path = test_path(name);
    FILE *f = fopenCheck(path, "wb");
    int32_t hd[256] = {20240326, version, MAXT, V, header_layers, NH, C, VP};
    fwrite(hd, sizeof hd, 1, f);
    for (int i = 0; i < 16; i++)
        for (size_t k = 0; k < tensor_total(i); k++) {
            float x = pattern(i, k);
            if (version == 5) {
                uint16_t b = to_bf16(x);
                fwrite(&b, 2, 1, f);
            } else {
                fwrite(&x, 4, 1, f);
            }
        }
    fclose(f);
    if (drop_bytes) {  // a truncated copy
        FILE *g = fopenCheck(path, "r+b");
        fseek(g, 0, SEEK_END);
        long n = ftell(g);
        fclose(g);
        CHECK(truncate(path, n - drop_bytes) == 0);
    }
    return path;
}

// A token shard (llm.c's format, through the project's writer) of n tokens, token i = (a i) % m + b.
static const char *token_shard(const char *name, int n, int a, int b, int m) {
    uint32_t *t = mallocCheck(sizeof(uint32_t) * (size_t)n);
    for (int i = 0; i < n; i++) t[i] = (uint32_t)((a * i) % m + b);
    const char *path = test_path(name);
    shard_write(path, t, n, 0);
    free(t);
    return path;
}

// Value the model should hold for tensor i, layer l, element k (as the file stores it).
static double expected(int i, int l, size_t k, int version) {
    float x = pattern(i, (k_per_layer[i] ? (size_t)l * k_count[i] : 0) + k);
    return version == 5 ? from_bf16(to_bf16(x)) : x;
}

static void check_every_value(const Model *m, int version) {
    char name[96];
    for (int i = 0; i < 16; i++)
        for (int l = 0; l < (k_per_layer[i] ? L : 1); l++) {
            if (k_per_layer[i]) snprintf(name, sizeof name, "h.%d.%s", l, k_name[i]);
            else snprintf(name, sizeof name, "%s", k_name[i]);
            const TensorInfo *t = model_find_tensor(m, name);
            CHECK(t, "no tensor %s", name);
            size_t want = i == 0 ? (size_t)V * C : i == 1 ? (size_t)m->s.T * C : k_count[i];
            CHECK(t->count == want, "%s holds %zu, expected %zu", name, t->count, want);
            for (size_t k = 0; k < t->count; k++)
                CHECK(m->params[t->offset + k] == expected(i, l, k, version), "%s[%zu] = %g, expected %g", name, k,
                      (double)m->params[t->offset + k], expected(i, l, k, version));
        }
}

// ---- a plain GPT-2 forward from llm.c's definition, on the file's own arrays ----

static const float *file_tensor(const float *params, int i, int l) {
    size_t off = 0;
    for (int j = 0; j < i; j++) off += tensor_total(j);
    return params + off + (k_per_layer[i] ? (size_t)l * k_count[i] : 0);
}

static void layernorm(double *out, const double *x, const float *w, const float *b) {
    double m = 0, v = 0;
    for (int c = 0; c < C; c++) m += x[c];
    m /= C;
    for (int c = 0; c < C; c++) v += (x[c] - m) * (x[c] - m);
    v /= C;
    for (int c = 0; c < C; c++) out[c] = (x[c] - m) / sqrt(v + 1e-5) * w[c] + b[c];
}

// out[o] = b[o] + sum_i W[o, i] x[i], W (out, in) row-major as llm.c's matmul_forward.
static void matvec(double *out, const float *W, const float *b, const double *x, int n_out, int n_in) {
    for (int o = 0; o < n_out; o++) {
        double s = b[o];
        for (int i = 0; i < n_in; i++) s += (double)W[o * n_in + i] * x[i];
        out[o] = s;
    }
}

// Mean cross-entropy of targets[T] given inputs[T] (one sequence), computed as llm.c does.
static double gpt2_loss(const float *P, const int *inputs, const int *targets, int T) {
    double x[MAXT][C], ln[MAXT][C], qkv[MAXT][3 * C], att[MAXT][C], tmp[C], h4[4 * C], h[C];
    for (int t = 0; t < T; t++)
        for (int c = 0; c < C; c++)
            x[t][c] = (double)file_tensor(P, 0, 0)[inputs[t] * C + c] + file_tensor(P, 1, 0)[t * C + c];
    int hs = C / NH;
    for (int l = 0; l < L; l++) {
        for (int t = 0; t < T; t++) {
            layernorm(ln[t], x[t], file_tensor(P, 2, l), file_tensor(P, 3, l));
            matvec(qkv[t], file_tensor(P, 4, l), file_tensor(P, 5, l), ln[t], 3 * C, C);
        }
        for (int t = 0; t < T; t++)
            for (int hd = 0; hd < NH; hd++) {
                double s[MAXT], mx = -1e300, sum = 0;
                for (int j = 0; j <= t; j++) {
                    double d = 0;
                    for (int i = 0; i < hs; i++) d += qkv[t][hd * hs + i] * qkv[j][C + hd * hs + i];
                    s[j] = d / sqrt((double)hs);
                    if (s[j] > mx) mx = s[j];
                }
                for (int j = 0; j <= t; j++) sum += s[j] = exp(s[j] - mx);
                for (int i = 0; i < hs; i++) {
                    double o = 0;
                    for (int j = 0; j <= t; j++) o += s[j] / sum * qkv[j][2 * C + hd * hs + i];
                    att[t][hd * hs + i] = o;
                }
            }
        for (int t = 0; t < T; t++) {
            matvec(tmp, file_tensor(P, 6, l), file_tensor(P, 7, l), att[t], C, C);
            for (int c = 0; c < C; c++) x[t][c] += tmp[c];
            layernorm(ln[t], x[t], file_tensor(P, 8, l), file_tensor(P, 9, l));
            matvec(h4, file_tensor(P, 10, l), file_tensor(P, 11, l), ln[t], 4 * C, C);
            for (int i = 0; i < 4 * C; i++)
                h4[i] = 0.5 * h4[i] * (1 + tanh(sqrt(2 / M_PI) * (h4[i] + 0.044715 * h4[i] * h4[i] * h4[i])));
            matvec(h, file_tensor(P, 12, l), file_tensor(P, 13, l), h4, C, 4 * C);
            for (int c = 0; c < C; c++) x[t][c] += h[c];
        }
    }
    double loss = 0;
    for (int t = 0; t < T; t++) {
        layernorm(ln[t], x[t], file_tensor(P, 14, 0), file_tensor(P, 15, 0));
        double logits[VP], mx = -1e300, sum = 0;
        for (int v = 0; v < VP; v++) {  // llm.c computes all Vp logits ...
            logits[v] = 0;
            for (int c = 0; c < C; c++) logits[v] += ln[t][c] * file_tensor(P, 0, 0)[v * C + c];
        }
        for (int v = 0; v < V; v++) mx = logits[v] > mx ? logits[v] : mx;  // ... and normalises over V
        for (int v = 0; v < V; v++) sum += exp(logits[v] - mx);
        loss += -(logits[targets[t]] - mx - log(sum));
    }
    return loss / T;
}

static float *read_params(const char *path) {
    size_t n = 0;
    for (int i = 0; i < 16; i++) n += tensor_total(i);
    float *p = mallocCheck(sizeof(float) * n);
    FILE *f = fopenCheck(path, "rb");
    fseek(f, 1024, SEEK_SET);
    freadCheck(p, sizeof(float), n, f, path);
    fclose(f);
    return p;
}

TEST(llmc_model_file_lands_every_tensor_and_gives_gpt2s_loss) {
    const char *path = write_gpt2("gpt2.bin", 3, L, 0);
    CHECK(llmc_is_model_file(path));
    Config cfg;
    Model *m = ckpt_open_model(path, &cfg, 1, MAXT, NULL);
    CHECK(m->s.V == V && m->s.T == MAXT && m->s.L == L && m->s.H == NH && m->s.C == C && m->s.mlp && m->s.pos_emb);
    CHECK(!strcmp(cfg_str(&cfg, "mixer"), "softmax"));
    check_every_value(m, 3);

    int inputs[MAXT] = {3, 97, 0, 42, 42, 7, 99, 1}, targets[MAXT] = {97, 0, 42, 42, 7, 99, 1, 5};
    HeadStats st = model_forward(m, inputs, targets, 1, MAXT, 0);
    float *P = read_params(path);
    double want = gpt2_loss(P, inputs, targets, MAXT);
    CHECK(st.n_counted == MAXT);
    CHECK_CLOSE(st.loss_sum / st.n_counted, want, 1e-10);
    free(P);
    model_free(m);
    config_free(&cfg);
}

TEST(llmc_model_file_round_trips_bit_exactly) {
    const char *path = write_gpt2("rt.bin", 3, L, 0);
    CHECK(test_run(NULL, 0, "./export %s out=%s", path, test_path("rt_out.bin")) == 0);
    size_t a_len, b_len;
    char *a = read_file_text(path, &a_len), *b = read_file_text(test_path("rt_out.bin"), &b_len);
    CHECK(a && b && a_len == b_len && !memcmp(a, b, a_len), "export wrote %zu bytes, the file has %zu (or differs)",
          b_len, a_len);
    free(a), free(b);

    // a model trained here -> llm.c file -> the same model, bit for bit
    char out[4096];
    int st = test_run(out, sizeof out,
                      "./train configs/quickstart.conf steps=3 d_model=16 n_head=2 vocab_size=300 "
                      "seq_len=16 mlp=true mqar_kv_pairs=2 mqar_train_examples=64 mqar_test_examples=16 mqar_val_examples=16 batch_size=8 "
                      "eval_every=0 sparsity_every=0 sample_every=0 threads=1 resume=never out_dir=%s",
                      test_path("rt_run"));
    CHECK(st == 0, "%s", out);
    CHECK(test_run(out, sizeof out, "./export %s out=%s", test_path("rt_run"), test_path("rt_run.bin")) == 0, "%s", out);
    Config c1, c2;
    char *ck = ckpt_resolve(test_path("rt_run"));
    Model *m1 = ckpt_open_model(ck, &c1, 1, 16, NULL), *m2 = ckpt_open_model(test_path("rt_run.bin"), &c2, 1, 16, NULL);
    CHECK(m1->n_params == m2->n_params);
    for (int i = 0; i < m1->n_tensors; i++) {
        const TensorInfo *t1 = &m1->tensors[i], *t2 = model_find_tensor(m2, t1->name);
        CHECK(t2 && t2->count == t1->count, "%s", t1->name);
        CHECK(!memcmp(m1->params + t1->offset, m2->params + t2->offset, sizeof(real) * t1->count), "%s differs", t1->name);
    }
    model_free(m1), model_free(m2), config_free(&c1), config_free(&c2), free(ck);

    // a vocabulary below 128 with d_model 64: mlp.fc (4C x C) is larger than the padded wte
    st = test_run(out, sizeof out,
                  "./train configs/quickstart.conf steps=1 d_model=64 n_head=2 vocab_size=100 "
                  "seq_len=64 mlp=true mqar_kv_pairs=2 mqar_train_examples=16 mqar_test_examples=8 mqar_val_examples=8 batch_size=4 "
                  "eval_every=0 sparsity_every=0 sample_every=0 threads=1 resume=never out_dir=%s",
                  test_path("wide"));
    CHECK(st == 0, "%s", out);
    CHECK(test_run(out, sizeof out, "./export %s out=%s", test_path("wide"), test_path("wide.bin")) == 0, "%s", out);
    ck = ckpt_resolve(test_path("wide"));
    m1 = ckpt_open_model(ck, &c1, 1, 16, NULL), m2 = ckpt_open_model(test_path("wide.bin"), &c2, 1, 16, NULL);
    CHECK(m1->n_params == m2->n_params && !memcmp(m1->params, m2->params, sizeof(real) * m1->n_params));
    model_free(m1), model_free(m2), config_free(&c1), config_free(&c2), free(ck);
}

TEST(llmc_bf16_file_widens_exactly_and_shorter_seq_len_takes_the_first_rows) {
    const char *path = write_gpt2("bf16.bin", 5, L, 0);
    Config cfg;
    Model *m = ckpt_open_model(path, &cfg, 1, MAXT, NULL);
    check_every_value(m, 5);
    model_free(m);
    // a model with seq_len 5 < max_seq_len 8 keeps wpe's first 5 rows
    ModelShape s = {.V = V, .C = C, .L = L, .H = NH, .T = 5, .mlp = 1, .pos_emb = 1};
    config_set(&cfg, "seq_len", "5", "test");
    m = model_create(&s, mixer_find("softmax"), &cfg, 1, 5);
    char err[512];
    CHECK(llmc_load(path, m, err, sizeof err) == 0, "%s", err);
    check_every_value(m, 5);
    model_free(m);
    config_free(&cfg);
}

static int one_line(const char *s) { return s[0] && strchr(s, '\n') == s + strlen(s) - 1; }

TEST(llmc_bad_files_and_mismatched_configs_are_one_line_exit_2) {
    char out[4096];
    BadInput cases[] = {
        {write_gpt2("short.bin", 3, L, 4), "bytes, but its header"},
        {write_gpt2("v4.bin", 4, L, 0), "version 4"},
        {write_gpt2("layers.bin", 3, L + 1, 0), "bytes, but its header"},
        {write_gpt2("zero.bin", 3, 0, 0), "n_layer = 0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int st = test_run(out, sizeof out, "./sample %s n=2", cases[i].in);
        CHECK(st == 2 && one_line(out) && strstr(out, cases[i].want), "%s: exit %d: %s", cases[i].in, st, out);
    }
    // shards of tokens < V for ./train init_from
    const char *shard = token_shard("tok.bin", 400, 7, 0, V);
    const char *gpt = write_gpt2("init.bin", 3, L, 0);
    // a config that leaves the shape to the file (the MQAR configs name n_head and mlp)
    const char *conf = test_write_file("gpt.conf",
                                       "task = shards\nbatch_size = 2\nsteps = 1\neval_every = 0\n"
                                       "sparsity_every = 0\nthreads = 1\nresume = never\n");
    char base[512];
    snprintf(base, sizeof base, "./train %s train_data=%%s val_data=%%s init_from=%%s %%s out_dir=%%s", conf);
    int st = test_run(out, sizeof out, base, shard, shard, gpt, "n_layer=3 seq_len=8", test_path("bad_init"));
    CHECK(st == 2 && one_line(out) && strstr(out, "n_layer") && strstr(out, "init.bin"), "exit %d: %s", st, out);
    st = test_run(out, sizeof out, base, shard, shard, gpt, "seq_len=16", test_path("bad_init2"));
    CHECK(st == 2 && one_line(out) && strstr(out, "seq_len") && strstr(out, "max_seq_len"), "exit %d: %s", st, out);
    st = test_run(out, sizeof out, base, shard, shard, gpt, "seq_len=8 mixer=linear", test_path("bad_init3"));
    CHECK(st == 2 && one_line(out) && strstr(out, "mixer"), "exit %d: %s", st, out);

    // init_from the file: the run's step-0 checkpoint holds the file's weights; it then trains
    st = test_run(out, sizeof out, base, shard, shard, gpt, "seq_len=8 steps=2 save_every=1 lr=1e-3", test_path("good_init"));
    CHECK(st == 0, "exit %d: %s", st, out);
    char ck0[4096];
    snprintf(ck0, sizeof ck0, "%s/ckpt_00000000.safetensors", test_path("good_init"));
    Config cfg;
    Model *m = ckpt_open_model(ck0, &cfg, 1, MAXT, NULL);
    check_every_value(m, 3);
    model_free(m);
    config_free(&cfg);

    // export refuses a model llm.c cannot run
    st = test_run(out, sizeof out,
                  "./train configs/quickstart.conf mixer=linear mlp=true steps=1 d_model=16 seq_len=16 "
                  "vocab_size=300 mqar_kv_pairs=2 mqar_train_examples=16 mqar_test_examples=8 mqar_val_examples=8 batch_size=8 "
                  "eval_every=0 sparsity_every=0 threads=1 resume=never out_dir=%s",
                  test_path("lin"));
    CHECK(st == 0, "%s", out);
    st = test_run(out, sizeof out, "./export %s out=%s", test_path("lin"), test_path("lin.bin"));
    CHECK(st == 2 && one_line(out) && strstr(out, "mixer 'linear'") && !path_exists(test_path("lin.bin")),
          "exit %d: %s", st, out);
    st = test_run(out, sizeof out, "./export %s", gpt);
    CHECK(st == 2 && one_line(out) && strstr(out, "out:"), "exit %d: %s", st, out);
    st = test_run(out, sizeof out, "./export %s out=%s/no/such/x.bin", gpt, test_tmpdir());
    CHECK(st == 2 && one_line(out) && strstr(out, "out: the folder"), "exit %d: %s", st, out);
    // init_from: a short convolution llm.c's file has no weights for; an all-softmax list is fine
    st = test_run(out, sizeof out, base, shard, shard, gpt, "seq_len=8 short_conv=4", test_path("bad_init4"));
    CHECK(st == 2 && one_line(out) && strstr(out, "short_conv"), "exit %d: %s", st, out);
    st = test_run(out, sizeof out, base, shard, shard, gpt, "seq_len=8 steps=1 mixer=softmax,softmax", test_path("list"));
    CHECK(st == 0, "exit %d: %s", st, out);
}

// A .bin whose first int32 is not llm.c's magic is named as a damaged llm.c file (docs/gpt2.md: "magic
// X, expected 20240326"), not read as a safetensors header (its magic and version would be a
// "header length" of 12905142215); a good llm.c file as resume= is told to be init_from (it holds no
// optimizer state), before any config comparison.
TEST(llmc_bad_magic_and_resume_from_a_model_file_are_named) {
    const char *bad = write_gpt2("magic.bin", 3, L, 0);
    FILE *f = fopenCheck(bad, "r+b");
    int32_t wrong = 20240327;
    fwrite(&wrong, sizeof wrong, 1, f);
    fclose(f);
    char out[4096];
    const char *shard = token_shard("mtok.bin", 400, 7, 0, V);
    const char *conf = test_write_file("m.conf",
                                       "task = shards\nbatch_size = 2\nsteps = 1\neval_every = 0\n"
                                       "sparsity_every = 0\nthreads = 1\nseq_len = 8\n");
    const char *cmds[] = {"./sample %s n=2", "./export %s out=%s/magic_out.bin"};
    for (int i = 0; i < 2; i++) {
        int st = test_run(out, sizeof out, cmds[i], bad, test_tmpdir());
        CHECK(st == 2 && one_line(out) && strstr(out, "magic.bin") && strstr(out, "magic 20240327, expected 20240326"),
              "%s: exit %d: %s", cmds[i], st, out);
    }
    int st = test_run(out, sizeof out, "./train %s train_data=%s val_data=%s init_from=%s out_dir=%s", conf, shard,
                      shard, bad, test_path("magic_init"));
    CHECK(st == 2 && one_line(out) && strstr(out, "init_from") && strstr(out, "magic 20240327, expected 20240326"),
          "exit %d: %s", st, out);
    const char *gpt = write_gpt2("resume.bin", 3, L, 0);
    st = test_run(out, sizeof out, "./train %s train_data=%s val_data=%s resume=%s out_dir=%s", conf, shard, shard, gpt,
                  test_path("res_bin"));
    CHECK(st == 2 && one_line(out) && strstr(out, "resume.bin") && strstr(out, "use it as init_from"), "exit %d: %s",
          st, out);
}

// ./evaluate on an llm.c file and a token shard: S(a) of every head, outputs in FILE.eval/ beside
// it, seq_len up to max_seq_len accepted, beyond it refused.
TEST(llmc_evaluate_real_text_per_head) {
    const char *gpt = write_gpt2("ev.bin", 3, L, 0);
    const char *shard = token_shard("ev_tok.bin", 200, 13, 0, V);
    char out[16384], path[1024];
    int st = test_run(out, sizeof out, "./evaluate %s val_data=%s seq_len=6 threads=2", gpt, shard);
    CHECK(st == 0, "exit %d: %s", st, out);
    snprintf(path, sizeof path, "%s/ev.eval/eval.jsonl", test_tmpdir());
    char *text = read_file_text(path, NULL);
    CHECK(text, "no %s", path);
    int records = 0;
    for (const char *p = text; (p = strstr(p, "\"type\":\"sparsity\"")); p++) records++;
    CHECK(records == L * NH && strstr(text, "\"theory\":\"softmax\""), "%d records: %s", records, text);
    free(text);
    snprintf(path, sizeof path, "%s/ev.eval/report.html", test_tmpdir());
    CHECK(path_exists(path));
    // heatmaps of a window of positions (maps.safetensors keeps every position)
    st = test_run(out, sizeof out,
                  "./evaluate %s val_data=%s --maps map_layer=0 map_head=1 map_start=2 map_len=4 "
                  "threads=1",
                  gpt, shard);
    CHECK(st == 0, "exit %d: %s", st, out);
    snprintf(path, sizeof path, "%s/ev.eval/map_L0_H1.svg", test_tmpdir());
    char *svg = read_file_text(path, NULL);
    CHECK(svg && strstr(svg, "positions 2 to 5 of 8") && strstr(svg, ">2:") && strstr(svg, ">5:") &&
              !strstr(svg, ">6:") && !strstr(svg, ">1:"),
          "%s", path);
    free(svg);
    st = test_run(out, sizeof out, "./evaluate %s val_data=%s --maps map_start=8 threads=1", gpt, shard);
    CHECK(st == 2 && strstr(out, "map_start: 8 is out of range"), "exit %d: %s", st, out);
    st = test_run(out, sizeof out, "./evaluate %s val_data=%s seq_len=9 threads=1", gpt, shard);
    CHECK(st == 2 && strstr(out, "max_seq_len 8"), "exit %d: %s", st, out);
    // seq_len stays fixed for this project's checkpoints
    st = test_run(out, sizeof out,
                  "./train configs/quickstart.conf steps=1 d_model=16 seq_len=16 vocab_size=300 "
                  "mqar_kv_pairs=2 mqar_train_examples=16 mqar_test_examples=8 mqar_val_examples=8 batch_size=8 eval_every=0 "
                  "sparsity_every=0 threads=1 resume=never out_dir=%s",
                  test_path("sl"));
    CHECK(st == 0, "%s", out);
    st = test_run(out, sizeof out, "./evaluate %s seq_len=8", test_path("sl"));
    CHECK(st == 2 && strstr(out, "seq_len: fixed by the checkpoint"), "exit %d: %s", st, out);
}

// llm.c's tokenizer file: version 2 with its EOT, decoded by ./sample; version 1 and damage.
static const char *write_tokenizer(const char *name, int version, int vocab, int eot, int cut) {
    const char *path = test_path(name);
    FILE *f = fopenCheck(path, "wb");
    uint32_t hd[256] = {20240328, (uint32_t)version, (uint32_t)vocab, (uint32_t)eot};
    fwrite(hd, sizeof hd, 1, f);
    for (int t = 0; t < vocab - cut; t++) {
        char s[32];
        int n = t == eot ? snprintf(s, sizeof s, "<|endoftext|>") : snprintf(s, sizeof s, "<%d>", t);
        uint8_t len = (uint8_t)n;
        fwrite(&len, 1, 1, f);
        fwrite(s, 1, (size_t)n, f);
    }
    fclose(f);
    return path;
}

TEST(llmc_tokenizer_file_decodes_and_bad_ones_are_refused) {
    char err[512];
    Bpe *b = tokenizer_read(write_tokenizer("tok2.bin", 2, V, V - 1, 0), err, sizeof err);
    CHECK(b && b->decode_only && b->vocab_size == V && b->eot == V - 1, "%s", b ? "" : err);
    uint32_t toks[3] = {5, 42, V - 1};
    ByteBuf text = {0};
    bpe_decode(b, toks, 3, &text);
    CHECK(text.n == strlen("<5><42><|endoftext|>") && !memcmp(text.v, "<5><42><|endoftext|>", text.n));
    free(text.v);
    bpe_free(b);

    // ./sample decodes with it; the prompt is token ids (it cannot encode)
    char out[8192];
    const char *gpt = write_gpt2("tokgpt.bin", 3, L, 0);
    int st = test_run(out, sizeof out, "./sample %s tokenizer=%s prompt='3 4' n=4 seed=1", gpt, test_path("tok2.bin"));
    CHECK(st == 0 && strstr(out, "<3><4>"), "exit %d: %s", st, out);
    // ./evaluate --maps labels the tokens with it
    const char *shard = token_shard("lab_tok.bin", 40, 1, 7, 3);  // 7 8 9 7 8 9 ...
    st = test_run(out, sizeof out, "./evaluate %s val_data=%s tokenizer=%s --maps map_layer=1 map_head=0 threads=1",
                  gpt, shard, test_path("tok2.bin"));
    CHECK(st == 0, "exit %d: %s", st, out);
    char svg[1024];
    snprintf(svg, sizeof svg, "%s/tokgpt.eval/map_L1_H0.svg", test_tmpdir());
    char *text_svg = read_file_text(svg, NULL);
    CHECK(text_svg && strstr(text_svg, "0:&quot;&lt;7&gt;&quot;") && strstr(text_svg, "2:&quot;&lt;9&gt;&quot;"), "%s", svg);
    free(text_svg);
    st = test_run(out, sizeof out, "./sample %s tokenizer=%s prompt=hello n=4", gpt, test_path("tok2.bin"));
    CHECK(st == 2 && one_line(out) && strstr(out, "token ids"), "exit %d: %s", st, out);
    // it cannot encode: ./tokenize encode and prepare refuse it
    const char *txt = test_write_file("t.txt", "hello world\n");
    st = test_run(out, sizeof out, "./tokenize encode %s tokenizer=%s out=%s", txt, test_path("tok2.bin"),
                  test_path("t.bin"));
    CHECK(st == 2 && one_line(out) && strstr(out, "decodes only"), "exit %d: %s", st, out);
    st = test_run(out, sizeof out, "./tokenize prepare %s tokenizer=%s out=%s", txt, test_path("tok2.bin"), test_path("tp"));
    CHECK(st == 2 && one_line(out) && strstr(out, "decodes only"), "exit %d: %s", st, out);

    BadInput bad[] = {
        {write_tokenizer("tok1.bin", 1, 300, 0, 0), "eot_token 50256"},
        {write_tokenizer("tok3.bin", 3, V, 0, 0), "version 3"},
        {write_tokenizer("tokcut.bin", 2, V, 0, 1), "token 99"},
        // the largest vocabulary in a file of 2 tokens: refused before 128 MiB of tables are made
        {write_tokenizer("tokbig.bin", 2, 1 << 24, 0, (1 << 24) - 2), "vocab_size 16777216 needs at least 33554432 bytes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        b = tokenizer_read(bad[i].in, err, sizeof err);
        CHECK(!b && strstr(err, bad[i].want) && strstr(err, bad[i].in), "%s: %s", bad[i].in, b ? "loaded" : err);
    }
}

// The walk-through of docs/gpt2.md as written: configs/gpt2_finetune.conf is the base (a GPT-2 file
// gives the shape), only the paths and the length of the run replaced; then ./export writes a
// GPT-2 file of max_seq_len = the fine-tune's seq_len that loads back as the fine-tuned model.
TEST(llmc_finetune_config_of_the_walkthrough_trains_and_exports) {
    const char *model = write_gpt2("gpt2_tiny.bin", 3, L, 0);
    const char *train = token_shard("tiny_shakespeare_train.bin", 2000, 7, 1, 90);
    const char *val = token_shard("tiny_shakespeare_val.bin", 400, 3, 2, 90);
    char out[8192];
    int st = test_run(out, sizeof out,
                      "./train configs/gpt2_finetune.conf init_from=%s train_data=%s val_data=%s "
                      "tokenizer= sample_every=0 seq_len=8 steps=4 eval_every=2 save_every=4 threads=1 out_dir=%s 2>&1",
                      model, train, val, test_path("ft"));
    CHECK(st == 0, "exit %d: %s", st, out);
    CHECK(strstr(out, "initialised from") && strstr(out, "d_model 8"), "%s", out);
    st = test_run(out, sizeof out, "./export %s out=%s 2>&1", test_path("ft"), test_path("finetuned.bin"));
    CHECK(st == 0 && strstr(out, "maxT=8"), "exit %d: %s", st, out);
}
