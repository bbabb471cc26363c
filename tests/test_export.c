// ./export format=hf and format=safetensors (docs/export.md). The Hugging Face folder is read back
// with the project's safetensors reader and checked against the checkpoint it came from from HF's
// side: every name transformers' GPT2LMHeadModel has (and no other), its shape, and every value
// (Conv1D weights the transpose of ours), config.json's fields, and the logits of a GPT-2 forward
// written here from HF's definition (x W + b with W stored (in, out), gelu_new, the stacked c_attn)
// on the folder's arrays alone, against the model's own forward. A model without MLP gets zero MLP
// weights and the same logits; what GPT-2 cannot express is refused with one line naming the key
// and leaves nothing behind. The weights-only file holds exactly the model's tensors, and opens in
// ./sample, ./train init_from and the loader; resuming from it is refused with one line.
// (tests/hf/hf_check.py runs the same folder in transformers itself, outside `make test`.)
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/json.h"
#include "core/safetensors.h"
#include "model/model.h"
#include "trainer/checkpoint.h"
#include "trainer/hf_export.h"
#include "trainer/ckpt_open.h"
#include "tests/test.h"

enum { L = 2, NH = 2, C = 16, V = 300, T = 16 };

// A tiny MQAR run of the shape above (softmax unless `extra` says otherwise); its folder.
static const char *train_tiny(const char *name, const char *extra) {
    char out[4096];
    const char *dir = test_path(name);
    int st = test_run(out, sizeof out,
                      "./train configs/quickstart.conf steps=3 n_layer=%d n_head=%d d_model=%d vocab_size=%d "
                      "seq_len=%d mqar_kv_pairs=2 mqar_train_examples=64 mqar_test_examples=16 mqar_val_examples=16 batch_size=8 "
                      "eval_every=0 sparsity_every=0 sample_every=0 threads=1 resume=never %s out_dir=%s",
                      L, NH, C, V, T, extra, dir);
    CHECK(st == 0, "%s: exit %d: %s", extra, st, out);
    return dir;
}

static int one_line(const char *s) { return s[0] && strchr(s, '\n') == s + strlen(s) - 1; }

// ---- the folder, read from HF's side ----

// A tensor of the folder as fp32 values (the file is little-endian, as this machine).
static const float *hf_tensor(const SafeTensors *st, const char *name, int64_t d0, int64_t d1) {
    const StTensor *t = st_find(st, name);
    CHECK(t, "model.safetensors has no '%s'", name);
    CHECK(!strcmp(t->dtype, "F32"), "%s: dtype %s", name, t->dtype);
    CHECK(t->ndim == (d1 ? 2 : 1) && t->shape[0] == d0 && (!d1 || t->shape[1] == d1),
          "%s: shape [%lld,%lld], expected [%lld,%lld]", name, (long long)t->shape[0],
          t->ndim == 2 ? (long long)t->shape[1] : 0LL, (long long)d0, (long long)d1);
    return (const float *)(st->data + t->begin);
}

// The per-layer names of HF's GPT2Block with their shapes, as modeling_gpt2.py declares them
// (Conv1D(nf, nx) stores weight [nx, nf]: in, out).
static const struct {
    const char *name;
    int64_t d0, d1;
} k_block[] = {
    // clang-format off
    {"ln_1.weight", C, 0},        {"ln_1.bias", C, 0},          {"attn.c_attn.weight", C, 3 * C},
    {"attn.c_attn.bias", 3 * C, 0}, {"attn.c_proj.weight", C, C}, {"attn.c_proj.bias", C, 0},
    {"ln_2.weight", C, 0},        {"ln_2.bias", C, 0},          {"mlp.c_fc.weight", C, 4 * C},
    {"mlp.c_fc.bias", 4 * C, 0},  {"mlp.c_proj.weight", 4 * C, C}, {"mlp.c_proj.bias", C, 0},
    // clang-format on
};

static const float *block(const SafeTensors *st, int l, int k) {
    char name[96];
    snprintf(name, sizeof name, "transformer.h.%d.%s", l, k_block[k].name);
    return hf_tensor(st, name, k_block[k].d0, k_block[k].d1);
}

static void layernorm(double *out, const double *x, const float *w, const float *b) {
    double m = 0, v = 0;
    for (int c = 0; c < C; c++) m += x[c];
    m /= C;
    for (int c = 0; c < C; c++) v += (x[c] - m) * (x[c] - m);
    v /= C;
    for (int c = 0; c < C; c++) out[c] = (x[c] - m) / sqrt(v + 1e-5) * w[c] + b[c];
}

// HF's Conv1D: y[o] = b[o] + sum_i x[i] W[i, o], W [n_in, n_out].
static void conv1d(double *y, const double *x, const float *W, const float *b, int n_in, int n_out) {
    for (int o = 0; o < n_out; o++) {
        double s = b[o];
        for (int i = 0; i < n_in; i++) s += x[i] * (double)W[(size_t)i * n_out + o];
        y[o] = s;
    }
}

static double gelu_new(double x) { return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }

// GPT2LMHeadModel's logits [n, V] for tokens, from the folder's arrays alone.
static void hf_forward(const SafeTensors *st, const int *tok, int n, double *logits) {
    const float *wte = hf_tensor(st, "transformer.wte.weight", V, C), *wpe = hf_tensor(st, "transformer.wpe.weight", T, C);
    static double h[T][C], a[T][C], qkv[T][3 * C], o[T][C], y[C], f[4 * C];
    int D = C / NH;
    for (int t = 0; t < n; t++)
        for (int c = 0; c < C; c++) h[t][c] = (double)wte[tok[t] * C + c] + wpe[t * C + c];
    for (int l = 0; l < L; l++) {
        for (int t = 0; t < n; t++) {
            layernorm(a[t], h[t], block(st, l, 0), block(st, l, 1));
            conv1d(qkv[t], a[t], block(st, l, 2), block(st, l, 3), C, 3 * C);
        }
        // q, k, v = c_attn(x).split(n_embd); head hd at columns hd*D.. of each; causal softmax
        for (int t = 0; t < n; t++)
            for (int hd = 0; hd < NH; hd++) {
                double s[T], mx = -1e300, sum = 0;
                for (int j = 0; j <= t; j++) {
                    s[j] = 0;
                    for (int d = 0; d < D; d++) s[j] += qkv[t][hd * D + d] * qkv[j][C + hd * D + d];
                    s[j] /= sqrt(D);
                    mx = s[j] > mx ? s[j] : mx;
                }
                for (int j = 0; j <= t; j++) sum += s[j] = exp(s[j] - mx);
                for (int d = 0; d < D; d++) {
                    double acc = 0;
                    for (int j = 0; j <= t; j++) acc += s[j] / sum * qkv[j][2 * C + hd * D + d];
                    o[t][hd * D + d] = acc;
                }
            }
        for (int t = 0; t < n; t++) {
            conv1d(y, o[t], block(st, l, 4), block(st, l, 5), C, C);
            for (int c = 0; c < C; c++) h[t][c] += y[c];
            layernorm(a[t], h[t], block(st, l, 6), block(st, l, 7));
            conv1d(f, a[t], block(st, l, 8), block(st, l, 9), C, 4 * C);
            for (int k = 0; k < 4 * C; k++) f[k] = gelu_new(f[k]);
            conv1d(y, f, block(st, l, 10), block(st, l, 11), 4 * C, C);
            for (int c = 0; c < C; c++) h[t][c] += y[c];
        }
    }
    for (int t = 0; t < n; t++) {
        layernorm(a[t], h[t], hf_tensor(st, "transformer.ln_f.weight", C, 0), hf_tensor(st, "transformer.ln_f.bias", C, 0));
        for (int v = 0; v < V; v++) {  // lm_head tied to wte
            double z = 0;
            for (int c = 0; c < C; c++) z += a[t][c] * wte[v * C + c];
            logits[t * V + v] = z;
        }
    }
}

// The model's own logits: its forward to ln_f, then the tied head.
static void model_logits(Model *m, const int *tok, int n, double *logits) {
    model_forward(m, tok, NULL, 1, n, 0);
    for (int t = 0; t < n; t++)
        for (int v = 0; v < V; v++) {
            double z = 0;
            for (int c = 0; c < C; c++) z += (double)m->lnf[t * C + c] * m->wte[v * C + c];
            logits[t * V + v] = z;
        }
}

// Our tensor `name`'s element (r, c) of its [rows, cols] (out, in) layout.
static double ours(const Model *m, const char *name, size_t r, size_t c, size_t cols) {
    const TensorInfo *t = model_find_tensor(m, name);
    CHECK(t, "the model has no '%s'", name);
    return m->params[t->offset + r * cols + c];
}

// Every tensor of the folder against the checkpoint's model (mlp: whether it has an MLP), config.json,
// and the logits of HF's forward against the model's.
static void check_folder(const char *dir, const char *run, int mlp) {
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    SafeTensors st;
    CHECK(st_read(path, &st, err, sizeof err) == 0, "%s: %s", path, err);
    CHECK(st_meta(&st, "format") && !strcmp(st_meta(&st, "format"), "pt"), "transformers needs metadata format = pt");
    CHECK(st.n_tensors == 4 + 12 * L, "%d tensors, GPT-2 of %d layers has %d", st.n_tensors, L, 4 + 12 * L);
    Config cfg;
    char *ck = ckpt_resolve(run);
    Model *m = ckpt_open_model(ck, &cfg, 1, T, NULL);
    // the model-wide tensors: the same layout as ours
    const struct {
        const char *hf, *ours;
        int64_t d0, d1;
    } global[] = {{"transformer.wte.weight", "wte", V, C},
                  {"transformer.wpe.weight", "wpe", T, C},
                  {"transformer.ln_f.weight", "ln_f.weight", C, 0},
                  {"transformer.ln_f.bias", "ln_f.bias", C, 0}};
    for (int g = 0; g < 4; g++) {
        const float *x = hf_tensor(&st, global[g].hf, global[g].d0, global[g].d1);
        size_t cols = global[g].d1 ? (size_t)global[g].d1 : 1;
        for (size_t k = 0; k < (size_t)global[g].d0 * cols; k++)
            CHECK(x[k] == (float)ours(m, global[g].ours, k / cols, k % cols, cols), "%s[%zu]", global[g].hf, k);
    }
    // per layer: Conv1D weights [in, out] = ours [out, in] transposed; vectors as they are
    const char *src[12] = {"ln_1.weight",      "ln_1.bias",      "attn.qkv.weight", "attn.qkv.bias",
                           "attn.proj.weight", "attn.proj.bias", "ln_2.weight",     "ln_2.bias",
                           "mlp.fc.weight",    "mlp.fc.bias",    "mlp.proj.weight", "mlp.proj.bias"};
    char name[96];
    for (int l = 0; l < L; l++)
        for (int k = 0; k < 12; k++) {
            const float *x = block(&st, l, k);
            size_t d0 = (size_t)k_block[k].d0, d1 = (size_t)k_block[k].d1;
            int is_mlp = k >= 6;
            snprintf(name, sizeof name, "h.%d.%s", l, src[k]);
            for (size_t i = 0; i < d0; i++)
                for (size_t j = 0; j < (d1 ? d1 : 1); j++) {
                    double want = !is_mlp || mlp ? (d1 ? ours(m, name, j, i, d0) : ours(m, name, i, 0, 1))
                        : k == 6                 ? 1
                                                 : 0;  // no MLP: ln_2 ones and zeros, the MLP zeros
                    CHECK(x[d1 ? i * d1 + j : i] == (float)want, "transformer.h.%d.%s[%zu,%zu] = %g, expected %g", l,
                          k_block[k].name, i, j, (double)x[d1 ? i * d1 + j : i], want);
                }
        }
    // config.json
    snprintf(path, sizeof path, "%s/config.json", dir);
    size_t len;
    char *text = read_file_text(path, &len);
    CHECK(text, "no %s", path);
    JsonValue *j = json_parse(text, len, err, sizeof err);
    CHECK(j, "config.json: %s", err);
    const struct {
        const char *key;
        double v;
    } nums[] = {
        {"vocab_size", V}, {"n_positions", T},           {"n_ctx", T},       {"n_embd", C},     {"n_layer", L},
        {"n_head", NH},    {"layer_norm_epsilon", 1e-5}, {"resid_pdrop", 0}, {"embd_pdrop", 0}, {"attn_pdrop", 0}};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        CHECK(json_number(j, nums[i].key) == nums[i].v, "config.json %s = %g, expected %g", nums[i].key,
              json_number(j, nums[i].key), nums[i].v);
    const struct { const char *key, *v; } strs[] = {{"model_type", "gpt2"}, {"activation_function", "gelu_new"}};
    for (size_t i = 0; i < 2; i++) {
        const JsonValue *s = json_get(j, strs[i].key);
        CHECK(s && s->type == JSON_STRING && !strcmp(s->string, strs[i].v), "config.json %s", strs[i].key);
    }
    const char *trues[] = {"scale_attn_weights", "tie_word_embeddings"};
    for (int i = 0; i < 2; i++) {
        const JsonValue *b = json_get(j, trues[i]);
        CHECK(b && b->type == JSON_BOOL && b->number == 1, "config.json %s should be true", trues[i]);
    }
    const JsonValue *b = json_get(j, "scale_attn_by_inverse_layer_idx");
    CHECK(b && b->type == JSON_BOOL && b->number == 0);
    // an MQAR run has no end-of-text token: bos and eos null, pad one past the vocabulary, so that
    // generate masks no input token (MQAR's filler 0 among them)
    const JsonValue *bos = json_get(j, "bos_token_id"), *eos = json_get(j, "eos_token_id");
    CHECK(bos && bos->type == JSON_NULL && eos && eos->type == JSON_NULL, "bos/eos should be null");
    CHECK(json_number(j, "pad_token_id") == V, "pad_token_id %g, expected %d", json_number(j, "pad_token_id"), V);
    // GPT-2's vocabulary and a text run's BPE end in their end-of-text token
    CHECK(hf_eos_id(50257, 0) == 50256 && hf_eos_id(300, 300) == 299 && hf_eos_id(8192, 0) == -1);
    json_free(j);
    free(text);
    // the same logits, at full length and shorter
    int tok[T];
    static double theirs[T * V], mine[T * V];
    for (int n = T; n >= 5; n -= 11) {
        for (int t = 0; t < n; t++) tok[t] = (t * 97 + 13) % V;
        hf_forward(&st, tok, n, theirs);
        model_logits(m, tok, n, mine);
        double worst = 0, big = 0;
        for (int k = 0; k < n * V; k++) {
            worst = fmax(worst, fabs(theirs[k] - mine[k]));
            big = fmax(big, fabs(mine[k]));
        }
        CHECK(worst < 1e-9 && big > 0.01, "%d tokens: max |logit difference| %g (logits up to %g)", n, worst, big);
    }
    model_free(m);
    config_free(&cfg);
    free(ck);
    st_free(&st);
}

TEST(export_hf_folder_reads_back_as_gpt2) {
    const char *run = train_tiny("run", "mlp=true");
    const char *dir = test_path("hf");
    char out[4096];
    int st = test_run(out, sizeof out, "./export %s format=hf out=%s", run, dir);
    CHECK(st == 0, "exit %d: %s", st, out);
    check_folder(dir, run, 1);
    // a second export replaces the first (the folder holds only an export's files), even with
    // a temporary file a killed export left
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/model.safetensors.tmp", dir);
    FILE *f = fopenCheck(tmp, "wb");
    fclose(f);
    st = test_run(out, sizeof out, "./export %s format=hf out=%s/", run, dir);
    CHECK(st == 0, "exit %d: %s", st, out);
    check_folder(dir, run, 1);
}

TEST(export_hf_without_mlp_writes_zero_mlp_weights) {
    const char *run = train_tiny("run", "mlp=false");
    const char *dir = test_path("hf");
    char out[4096];
    int st = test_run(out, sizeof out, "./export %s format=hf out=%s", run, dir);
    CHECK(st == 0 && strstr(out, "zero MLP"), "exit %d: %s", st, out);
    check_folder(dir, run, 0);
}

TEST(export_hf_refuses_what_gpt2_cannot_express_and_bad_outputs) {
    char out[4096];
    const BadInput refused[] = {
        {"mixer=linear", "mixer: Hugging Face's GPT-2 is softmax attention in every layer, not the model's 'linear'"},
        {"mixer=softmax,linear", "(layer 1 of a hybrid stack)"},
        {"pos_emb=none", "pos_emb:"},
        {"short_conv=4", "short_conv:"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "run%zu", i);
        const char *run = train_tiny(name, refused[i].in);
        snprintf(name, sizeof name, "hf%zu", i);
        int st = test_run(out, sizeof out, "./export %s format=hf out=%s", run, test_path(name));
        CHECK(st == 2 && one_line(out) && strstr(out, refused[i].want) && !path_exists(test_path(name)),
              "%s: exit %d: %s", refused[i].in, st, out);
    }
    const char *run = train_tiny("good", "mlp=true");
    CHECK(mkdir_p(test_path("other")) == 0);
    test_write_file("other/notes.txt", "mine\n");
    const struct {
        const char *args, *want;
    } bad[] = {
        {"format=onnx out=%s/x", "format: expected one of llmc|hf|safetensors, got 'onnx'"},
        {"format=hf", "out: expected the folder"},
        {"format=hf out=%s/good", "is a run folder"},
        {"format=hf out=%s/good/hf", "is in the run folder"},
        {"format=hf out=%s/other", "holds 'notes.txt'"},
        {"format=hf out=%s/other/notes.txt", "is a file; format=hf writes a folder"},
        {"format=hf out=%s/no/such/hf", "out: the folder"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char args[4096];
        snprintf(args, sizeof args, bad[i].args, test_tmpdir());
        int st = test_run(out, sizeof out, "./export %s %s", run, args);
        CHECK(st == 2 && one_line(out) && strstr(out, bad[i].want), "%s: exit %d: %s", args, st, out);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/good/hf", test_tmpdir());
    CHECK(!path_exists(path), "a refused export left %s", path);
}

TEST(export_safetensors_is_the_weights_only_and_opens_as_a_checkpoint) {
    const char *run = train_tiny("run", "mlp=true");
    const char *file = test_path("weights.safetensors");
    char out[4096], err[512];
    int st = test_run(out, sizeof out, "./export %s format=safetensors out=%s", run, file);
    CHECK(st == 0, "exit %d: %s", st, out);
    SafeTensors sf;
    CHECK(st_read(file, &sf, err, sizeof err) == 0, "%s", err);
    Config cfg;
    char *ck = ckpt_resolve(run);
    Model *m = ckpt_open_model(ck, &cfg, 1, T, NULL);
    // exactly the model's tensors, with its values: no optimizer moments
    CHECK(sf.n_tensors == m->n_tensors, "%d tensors, the model has %d", sf.n_tensors, m->n_tensors);
    for (int i = 0; i < m->n_tensors; i++) {
        const TensorInfo *t = &m->tensors[i];
        const StTensor *f = st_find(&sf, t->name);
        CHECK(f && !strcmp(f->dtype, "F32") && (f->end - f->begin) / 4 == t->count, "%s", t->name);
        const float *x = (const float *)(sf.data + f->begin);
        for (size_t k = 0; k < t->count; k++) CHECK(x[k] == (float)m->params[t->offset + k], "%s[%zu]", t->name, k);
    }
    CHECK(!strcmp(st_meta(&sf, "format"), CKPT_FORMAT) && !strcmp(st_meta(&sf, "optimizer"), "none") &&
          st_meta(&sf, "config") && !strcmp(st_meta(&sf, "step"), "3"));
    st_free(&sf);
    // the loader opens it as the same model; ./sample runs it
    Config c2;
    Model *m2 = ckpt_open_model(file, &c2, 1, T, NULL);
    CHECK(m2->n_params == m->n_params && !memcmp(m2->params, m->params, sizeof(real) * m->n_params));
    model_free(m2), config_free(&c2);
    st = test_run(out, sizeof out, "./sample %s n=4", file);
    CHECK(st == 0, "./sample: exit %d: %s", st, out);
    // init_from: a new run's step-0 checkpoint holds these weights
    char base[1024];
    snprintf(base, sizeof base,
             "./train configs/quickstart.conf steps=1 n_layer=%d n_head=%d d_model=%d vocab_size=%d "
             "seq_len=%d mqar_kv_pairs=2 mqar_train_examples=64 mqar_test_examples=16 mqar_val_examples=16 batch_size=8 eval_every=0 "
             "sparsity_every=0 sample_every=0 threads=1 mlp=true",
             L, NH, C, V, T);
    st = test_run(out, sizeof out, "%s resume=never init_from=%s out_dir=%s", base, file, test_path("init"));
    CHECK(st == 0, "init_from: exit %d: %s", st, out);
    char ck0[4096];
    snprintf(ck0, sizeof ck0, "%s/ckpt_00000000.safetensors", test_path("init"));
    m2 = ckpt_open_model(ck0, &c2, 1, T, NULL);
    CHECK(!memcmp(m2->params, m->params, sizeof(real) * m->n_params), "init_from did not start from the weights");
    model_free(m2), config_free(&c2);
    // resuming needs the optimizer state it does not hold
    st = test_run(out, sizeof out, "%s resume=%s out_dir=%s", base, file, test_path("res"));
    CHECK(st == 2 && one_line(out) && strstr(out, "weights-only") && strstr(out, "init_from"), "exit %d: %s", st, out);
    // never over the checkpoint, nor into a run folder
    st = test_run(out, sizeof out, "./export %s format=safetensors out=%s", ck, ck);
    CHECK(st == 2 && one_line(out) && strstr(out, "is the checkpoint"), "exit %d: %s", st, out);
    st = test_run(out, sizeof out, "./export %s format=safetensors out=%s/w.safetensors", run, run);
    CHECK(st == 2 && one_line(out) && strstr(out, "run folder"), "exit %d: %s", st, out);
    model_free(m), config_free(&cfg), free(ck);
}
