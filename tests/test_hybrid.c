// Hybrid stacks (a mixer per layer: `mixer = gla, softmax`) and the short convolution
// (`short_conv = K`) on the mixer's input: the convolution's own finite-difference checks (input,
// weight, bias) and step(); whole-model gradients, tensor names, generation (step() per layer
// with each layer's own state size) and the attention maps of hybrids with and without the
// convolution; the bad inputs; and the programs (train, resume, init_from, evaluate, sample) on a
// hybrid checkpoint.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "core/io.h"
#include "eval/sparsity.h"
#include "model/generate.h"
#include "model/layers.h"
#include "model/model.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

// --- the short convolution as a layer ---------------------------------------------------------

typedef struct {
    int B, T, C, K;
    real *x, *w, *b, *out, *R;  // [B,T,C], [C,K], [C], [B,T,C], [B,T,C]
} ConvCtx;

static double conv_loss(void *p) {
    ConvCtx *c = p;
    short_conv_forward(c->out, c->x, c->w, c->b, c->B, c->T, c->C, c->K);
    double s = 0;
    for (size_t i = 0; i < (size_t)c->B * c->T * c->C; i++) s += (double)c->out[i] * (double)c->R[i];
    return s;
}

static ConvCtx conv_ctx(int B, int T, int C, int K, uint64_t seed) {
    ConvCtx c = {.B = B, .T = T, .C = C, .K = K};
    size_t n = (size_t)B * T * C;
    c.x = callocCheck(n, sizeof(real));
    c.out = callocCheck(n, sizeof(real));
    c.R = callocCheck(n, sizeof(real));
    c.w = callocCheck((size_t)C * K, sizeof(real));
    c.b = callocCheck((size_t)C, sizeof(real));
    Rng rng;
    rng_seed(&rng, seed);
    fill_normal(c.x, n, &rng, 1);
    fill_normal(c.R, n, &rng, 1);
    fill_normal(c.w, (size_t)C * K, &rng, 0.7);
    fill_normal(c.b, (size_t)C, &rng, 0.5);
    return c;
}

static void conv_free(ConvCtx *c) { free(c->x), free(c->out), free(c->R), free(c->w), free(c->b); }

TEST(short_conv_backward_matches_finite_differences) {
    // K = 1, K > T, K = T; then width 4 over 19 and 16 channels, where a sequence's inner rows take
    // the register path of 16-channel blocks (model/layers.c) and its end rows and the 3 channels
    // past the block the row-by-row one
    int shapes[][4] = {{2, 5, 3, 3}, {1, 4, 2, 1}, {2, 3, 2, 4}, {1, 6, 3, 6}, {2, 10, 19, 4}, {1, 9, 16, 4}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int B = shapes[s][0], T = shapes[s][1], C = shapes[s][2], K = shapes[s][3];
        ConvCtx c = conv_ctx(B, T, C, K, 11 + s);
        size_t n = (size_t)B * T * C;
        real *dx = callocCheck(n, sizeof(real)), *dw = callocCheck((size_t)C * K, sizeof(real));
        real *db = callocCheck((size_t)C, sizeof(real));
        short_conv_backward(dx, dw, db, c.R, c.x, c.w, B, T, C, K);
        char what[64];
        snprintf(what, sizeof what, "short_conv K=%d dx", K);
        check_grad(what, conv_loss, &c, c.x, dx, n, 1e-6, 1e-6, 1e-9);
        snprintf(what, sizeof what, "short_conv K=%d dw", K);
        check_grad(what, conv_loss, &c, c.w, dw, (size_t)C * K, 1e-6, 1e-6, 1e-9);
        snprintf(what, sizeof what, "short_conv K=%d dbias", K);
        check_grad(what, conv_loss, &c, c.b, db, (size_t)C, 1e-6, 1e-6, 1e-9);
        free(dx), free(dw), free(db);
        conv_free(&c);
    }
}

// The definition, written out: w[c, K-1] meets the current token, inputs before t = 0 are zero,
// and sequences of a batch do not see each other.
TEST(short_conv_is_the_causal_depthwise_convolution) {
    int B = 2, T = 5, C = 3, K = 3;
    ConvCtx c = conv_ctx(B, T, C, K, 5);
    conv_loss(&c);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int ch = 0; ch < C; ch++) {
                double want = c.b[ch];
                for (int j = 0; j < K; j++)  // j steps back
                    if (t - j >= 0) want += c.w[ch * K + (K - 1 - j)] * c.x[((size_t)b * T + t - j) * C + ch];
                CHECK_CLOSE(c.out[((size_t)b * T + t) * C + ch], want, 1e-13);
            }
    conv_free(&c);
}

TEST(short_conv_step_agrees_with_forward) {
    int T = 7, C = 4;
    for (int K = 1; K <= 4; K++) {
        ConvCtx c = conv_ctx(1, T, C, K, 20 + (uint64_t)K);
        conv_loss(&c);
        real *state = callocCheck((size_t)(K > 1 ? K - 1 : 1) * C, sizeof(real)), y[4];
        for (int t = 0; t < T; t++) {
            short_conv_step(y, K > 1 ? state : NULL, c.x + (size_t)t * C, c.w, c.b, C, K);
            for (int ch = 0; ch < C; ch++) CHECK_CLOSE(y[ch], c.out[(size_t)t * C + ch], 1e-13);
        }
        free(state);
        conv_free(&c);
    }
}

TEST(short_conv_same_bits_with_1_and_2_threads) {
    int B = 3, T = 200, C = 19, K = 4;  // 600 rows: more than one row chunk of the weight sums
    ConvCtx c = conv_ctx(B, T, C, K, 31);
    size_t n = (size_t)B * T * C;
    real *out[2], *dx[2], *dw[2], *db[2];
    int saved = omp_get_max_threads();
    for (int r = 0; r < 2; r++) {
        omp_set_num_threads(r + 1);
        out[r] = callocCheck(n, sizeof(real)), dx[r] = callocCheck(n, sizeof(real));
        dw[r] = callocCheck((size_t)C * K, sizeof(real)), db[r] = callocCheck((size_t)C, sizeof(real));
        short_conv_forward(out[r], c.x, c.w, c.b, B, T, C, K);
        short_conv_backward(dx[r], dw[r], db[r], c.R, c.x, c.w, B, T, C, K);
    }
    omp_set_num_threads(saved);
    CHECK(!memcmp(out[0], out[1], n * sizeof(real)) && !memcmp(dx[0], dx[1], n * sizeof(real)));
    CHECK(!memcmp(dw[0], dw[1], (size_t)C * K * sizeof(real)) && !memcmp(db[0], db[1], (size_t)C * sizeof(real)));
    for (int r = 0; r < 2; r++) free(out[r]), free(dx[r]), free(dw[r]), free(db[r]);
    conv_free(&c);
}

// The _set form (dinp written, as the mixers' own convolutions use it) gives what accumulating
// into zeros gives, on both paths: the blocked one (19 channels, width 4) and the plain one.
TEST(short_conv_backward_set_equals_accumulating_into_zeros) {
    int shapes[][4] = {{2, 12, 19, 4}, {2, 7, 5, 3}};
    for (int s = 0; s < 2; s++) {
        int B = shapes[s][0], T = shapes[s][1], C = shapes[s][2], K = shapes[s][3];
        ConvCtx c = conv_ctx(B, T, C, K, 41 + (uint64_t)s);
        size_t n = (size_t)B * T * C;
        real *dx[2], *dw[2], *db[2];
        for (int r = 0; r < 2; r++) {
            dx[r] = callocCheck(n, sizeof(real)), dw[r] = callocCheck((size_t)C * K, sizeof(real));
            db[r] = callocCheck((size_t)C, sizeof(real));
            for (size_t i = 0; i < n; i++) dx[r][i] = r ? 0 : 123;  // _set overwrites what is there
        }
        short_conv_backward_set(dx[0], dw[0], db[0], c.R, c.x, c.w, B, T, C, K);
        short_conv_backward(dx[1], dw[1], db[1], c.R, c.x, c.w, B, T, C, K);
        int same = 1;
        for (size_t i = 0; i < n; i++) same &= dx[0][i] == dx[1][i];
        CHECK(same && !memcmp(dw[0], dw[1], (size_t)C * K * sizeof(real)) && !memcmp(db[0], db[1], (size_t)C * sizeof(real)));
        for (int r = 0; r < 2; r++) free(dx[r]), free(dw[r]), free(db[r]);
        conv_free(&c);
    }
}

// --- models -----------------------------------------------------------------------------------

// A 2-layer model whose `mixer` and `short_conv` come from cfg, with weights larger than the init
// so every path carries signal.
static Model *tiny_model(const Config *cfg, int mlp, int pos_emb, int B, int T, uint64_t seed) {
    ModelShape s = {.V = 11, .C = 8, .L = 2, .H = 2, .T = T, .mlp = mlp, .pos_emb = pos_emb};
    Model *m = model_create(&s, NULL, cfg, B, B * T);
    model_init_weights(m, seed);
    Rng rng;
    rng_seed(&rng, seed + 1);
    for (int i = 0; i < m->n_tensors; i++) {
        const TensorInfo *t = &m->tensors[i];
        real *w = m->params + t->offset;
        if (t->init == INIT_CUSTOM) continue;
        for (size_t k = 0; k < t->count; k++) w[k] += (real)(0.3 * rng_normal(&rng));
    }
    return m;
}

// Every tensor with `all`; otherwise the tensors where the composition shows (the short
// convolution, ln_1, wte: their gradients pass through both layers' mixers and the convolution),
// which keeps the Mamba and GLA cases affordable (their own tests check every mixer tensor).
static int composition_tensor(const char *name) {
    return strstr(name, "short_conv") || strstr(name, "ln_1") || !strcmp(name, "wte");
}

static void check_model_grads(const char *overrides, int mlp, int all) {
    Config cfg;
    test_config(&cfg, overrides);
    ModelRig c = {.B = 2, .T = 5};
    c.m = tiny_model(&cfg, mlp, 1, c.B, c.T, 3);
    Rng rng;
    rng_seed(&rng, 8);
    model_rig_tokens(&c, &rng, 11);
    char label[200];
    snprintf(label, sizeof label, "%s mlp=%d", overrides, mlp);
    model_rig_check_grads(&c, label, all ? NULL : composition_tensor);
    model_free(c.m);
    config_free(&cfg);
}

TEST(hybrid_and_short_conv_model_gradients_every_tensor) {
    check_model_grads("mixer=linear,softmax short_conv=4", 0, 1);
    check_model_grads("mixer=softmax short_conv=3", 1, 1);
    check_model_grads("mixer=decay short_conv=1", 1, 1);
    check_model_grads("mixer=gla,softmax", 1, 0);
    check_model_grads("mixer=mamba,linear", 0, 0);        // different scratch and map counts per layer
    check_model_grads("mixer=mamba short_conv=2", 0, 0);  // stacks with Mamba's own conv
}

// The evaluator's answer window per layer: the short convolution's width and the mixer's own
// (Mamba's d_conv: its maps act on the conv's output) compose, K1 + K2 - 1.
TEST(answer_window_composes_the_short_conv_and_the_mixer_conv) {
    struct {
        const char *args;
        int want0, want1;
    } cases[] = {
        {"mixer=softmax", 1, 1},        {"mixer=softmax short_conv=4", 4, 4},      {"mixer=mamba", 4, 4},
        {"mixer=mamba d_conv=3", 3, 3}, {"mixer=mamba,linear short_conv=2", 5, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Config cfg;
        test_config(&cfg, cases[i].args);
        Model *m = tiny_model(&cfg, 0, 1, 1, 5, 3);
        int w0 = sparsity_answer_window(m, 0), w1 = sparsity_answer_window(m, 1);
        CHECK(w0 == cases[i].want0 && w1 == cases[i].want1, "%s: windows %d, %d", cases[i].args, w0, w1);
        model_free(m);
        config_free(&cfg);
    }
}

TEST(hybrid_layers_carry_their_own_mixer_and_tensors) {
    Config cfg;
    test_config(&cfg, "mixer=linear,softmax short_conv=3");
    Model *m = tiny_model(&cfg, 0, 1, 1, 5, 3);
    CHECK(m->mixer[0] == mixer_find("linear") && m->mixer[1] == mixer_find("softmax"));
    CHECK(model_is_hybrid(m));
    // the per-layer scheme: h.<l>.ln_1, h.<l>.short_conv, then the layer's mixer tensors
    const char *names[] = {
        "wte", "wpe", "h.0.ln_1.weight", "h.0.ln_1.bias", "h.0.short_conv.weight", "h.0.short_conv.bias"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        CHECK(!strcmp(m->tensors[i].name, names[i]), "tensor %zu is %s, expected %s", i, m->tensors[i].name, names[i]);
    const TensorInfo *w = model_find_tensor(m, "h.1.short_conv.weight"), *b = model_find_tensor(m, "h.1.short_conv.bias");
    CHECK(w && w->ndim == 2 && w->shape[0] == 8 && w->shape[1] == 3 && b && b->ndim == 1 && b->shape[0] == 8);
    CHECK(model_find_tensor(m, "h.0.attn.qkv.weight") && model_find_tensor(m, "h.1.attn.qkv.weight"));
    model_free(m);
    config_free(&cfg);
    // a list naming one mixer for both layers is the same model as the single name
    Config a, b2;
    test_config(&a, "mixer=gla");
    test_config(&b2, "mixer=gla,gla");
    Model *ma = tiny_model(&a, 1, 1, 1, 5, 3), *mb = tiny_model(&b2, 1, 1, 1, 5, 3);
    CHECK(!model_is_hybrid(ma) && !model_is_hybrid(mb) && ma->n_params == mb->n_params);
    CHECK(!memcmp(ma->params, mb->params, sizeof(real) * ma->n_params));
    CHECK(!strcmp(cfg_str(&b2, "mixer"), "gla,gla"), "canonical list '%s'", cfg_str(&b2, "mixer"));
    model_free(ma), model_free(mb);
    config_free(&a), config_free(&b2);
}

// A layer list ignores cog_softmax_ends: the list says what each layer is.
TEST(hybrid_list_ignores_cog_softmax_ends) {
    Config one, list;
    test_config(&one, "mixer=cog");
    test_config(&list, "mixer=cog,cog");
    ModelShape s = {.V = 11, .C = 8, .L = 2, .H = 2, .T = 5, .mlp = 0, .pos_emb = 1};
    Model *a = model_create(&s, NULL, &one, 1, 5), *b = model_create(&s, NULL, &list, 1, 5);
    model_init_weights(a, 1);
    model_init_weights(b, 1);
    int in[5] = {1, 2, 3, 4, 5};
    model_forward(a, in, NULL, 1, 5, 0);
    model_forward(b, in, NULL, 1, 5, 0);
    // the single name keeps softmax at both ends (rows of a non-negative map); the list does not
    real *map = callocCheck(25, sizeof(real));
    int negative[2] = {0, 0};
    Model *ms[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        MixerIO io = model_mixer_io(ms[k], 0);
        ms[k]->mixer[0]->attention(ms[k]->mixer_state[0], &io, 0, 0, map);
        for (int i = 0; i < 25; i++) negative[k] |= map[i] < 0;
    }
    CHECK(!negative[0] && negative[1], "cog layer 0: negative weights %d (one name) %d (list)", negative[0], negative[1]);
    free(map);
    model_free(a), model_free(b);
    config_free(&one), config_free(&list);
}

static double rel_err(const real *a, const real *b, int V) {
    double e = 0;
    for (int v = 0; v < V; v++) {
        double d = fabs((double)a[v] - (double)b[v]) / fmax(1.0, fabs((double)b[v]));
        if (d > e) e = d;
    }
    return e;
}

// step() per layer, each with its own state size (KV cache beside a recurrent state), and the
// short convolution's state, give model_forward's logits; so does the prefix re-run.
TEST(hybrid_and_short_conv_generation_equals_forward) {
    const char *cases[] = {"mixer=linear,softmax",         "mixer=mamba,gla",          "mixer=softmax short_conv=3",
                           "mixer=gla,decay short_conv=2", "mixer=mamba short_conv=1", "mixer=linear short_conv=9"};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (int recurrent = 1; recurrent >= 0; recurrent--) {
            Config cfg;
            test_config(&cfg, cases[ci]);
            int T = 9, V = 11;
            Model *m = tiny_model(&cfg, 1, 1, 1, T, 5);
            int tokens[9];
            Rng rng;
            rng_seed(&rng, 9);
            for (int t = 0; t < T; t++) tokens[t] = (int)rng_below(&rng, (uint64_t)V);
            model_forward(m, tokens, NULL, 1, T, 0);
            real want[9][11];
            for (int t = 0; t < T; t++) model_logits_at(m, 0, t, want[t]);
            Generator *g = generator_create(m, recurrent);
            for (int rep = 0; rep < 2; rep++) {  // twice: reset clears every state
                generator_reset(g);
                for (int t = 0; t < T; t++) {
                    double e = rel_err(generator_feed(g, tokens[t]), want[t], V);
                    CHECK(e <= 1e-9, "%s %s: position %d differs by %.3g", cases[ci], recurrent ? "step()" : "prefix", t, e);
                }
            }
            // past the window: the slide re-feeds the newest half from fresh states
            for (int t = 0; t < 3; t++) generator_feed(g, tokens[t]);
            generator_free(g);
            model_free(m);
            config_free(&cfg);
        }
}

// The maps of a hybrid with a short convolution still reproduce each layer's mixer output, and
// sparsity_eval names each layer's own mixer and theory.
TEST(hybrid_short_conv_maps_reproduce_each_layer) {
    Config cfg;
    test_config(&cfg, "mixer=mamba,softmax short_conv=3");
    int T = 6, B = 2;
    Model *m = tiny_model(&cfg, 0, 1, B, T, 7);
    int in[12];
    for (int i = 0; i < 12; i++) in[i] = (i * 7) % 11;
    model_forward(m, in, NULL, B, T, 0);
    real *a = callocCheck((size_t)T * T, sizeof(real)), *v = callocCheck((size_t)T * 4 * 8, sizeof(real));
    real *o = callocCheck((size_t)T * 4 * 8, sizeof(real));
    for (int l = 0; l < 2; l++) {
        MixerIO io = model_mixer_io(m, l);
        CHECK(io.x == m->la[l].conv, "layer %d: the mixer's input is the convolution's output", l);
        const MixerKind *mk = m->mixer[l];
        if (!mk->attention) continue;  // the maps group is optional (mixer.h)
        int n_maps = mk->n_maps(m->mixer_state[l]);
        for (int b = 0; b < B; b++)
            for (int mi = 0; mi < n_maps; mi++) {
                mk->attention(m->mixer_state[l], &io, b, mi, a);
                int W = mk->attention_values(m->mixer_state[l], &io, b, mi, v, o);
                for (int i = 0; i < T; i++)
                    for (int w = 0; w < W; w++) {
                        double s = 0;
                        for (int j = 0; j <= i; j++) s += a[i * T + j] * v[j * W + w];
                        CHECK_CLOSE(o[i * W + w], s, 1e-10);
                    }
            }
    }
    free(a), free(v), free(o);
    model_free(m);
    config_free(&cfg);
}

// --- bad input --------------------------------------------------------------------------------

static void build_from_args(void *arg) {
    Config cfg;
    test_config(&cfg, arg);
    ModelShape s = {
        .V = 11, .C = 8, .L = (int)cfg_int(&cfg, "n_layer"), .H = 2, .T = (int)cfg_int(&cfg, "seq_len"), .mlp = 0, .pos_emb = 1};
    model_create(&s, NULL, &cfg, 1, 4);
}

static void expect_model_error(const char *args, const char *want) {
    char err[512];
    int st = test_fork(build_from_args, (void *)args, err, sizeof err);
    int lines = 0;
    for (const char *q = err; *q; q++) lines += *q == '\n';
    CHECK(st == 2 && strstr(err, want) && lines <= 1, "%s: exit %d: %s", args, st, err);
}

TEST(hybrid_and_short_conv_bad_input_names_the_key) {
    expect_model_error("n_layer=3 mixer=gla,softmax",
                       "mixer: expected one name or a list of n_layer = 3 names, got 2 names in 'gla,softmax'");
    expect_model_error("n_layer=1 mixer=gla,softmax", "mixer: expected one name or a list of n_layer = 1 names, got 2");
    expect_model_error("n_layer=2 mixer=gla,nope", "mixer: expected one of softmax|");
    expect_model_error("n_layer=2 seq_len=8 short_conv=9", "short_conv: expected 0 (off) to seq_len = 8, got 9");
    expect_model_error("n_layer=2 short_conv=-1", "short_conv: expected a non-negative integer, got '-1'");
    // in a config file: file:line
    char out[1024];
    const char *p = test_write_file("h.conf", "n_layer = 2\nmixer = gla, sofmax\n");
    int st = test_run(out, sizeof out, "./train %s", p);
    CHECK(st == 2 && strstr(out, "h.conf:2: mixer: expected one of softmax|") && strstr(out, "got 'sofmax' in 'gla, sofmax'"),
          "exit %d: %s", st, out);
}

// --- the programs on a hybrid ------------------------------------------------------------------

#define TINY                                                                                                           \
    "vocab_size=64 seq_len=32 mqar_kv_pairs=4 mqar_train_examples=256 mqar_test_examples=32 mqar_val_examples=32 "     \
    "d_model=16 n_head=2 batch_size=16 lr=3e-3 log_every=1 eval_every=4 save_every=4 threads=1"

TEST(hybrid_trains_resumes_evaluates_and_samples) {
    const char *conf = test_write_file("hy.conf", "mixer = linear, softmax\nshort_conv = 3\nmlp = false\n");
    const char *d = test_tmpdir();
    char out[4096];
    // 8 steps in one go, and 4 + 4 through a resume: the same losses
    int st = test_run(out, sizeof out, "./train %s " TINY " steps=8 out_dir=%s/full", conf, d);
    CHECK(st == 0, "train: %s", out);
    st = test_run(out, sizeof out, "./train %s " TINY " steps=8 stop_at_step=4 out_dir=%s/half", conf, d);
    CHECK(st == 0, "train half: %s", out);
    st = test_run(out, sizeof out, "./train %s " TINY " steps=8 out_dir=%s/half", conf, d);
    CHECK(st == 0, "resume: %s", out);
    char *a = read_file_text(test_path("full/metrics.jsonl"), NULL),
         *b = read_file_text(test_path("half/metrics.jsonl"), NULL);
    CHECK(a && b);
    const char *key = "\"type\":\"train\",\"step\":8,\"loss\":";
    const char *la = strstr(a, key), *lb = strstr(b, key);
    CHECK(la && lb && !strncmp(la, lb, strlen(key) + 12), "step 8 differs after the resume");
    free(a), free(b);
    // per-layer sparsity records name each layer's own mixer
    char *sp = read_file_text(test_path("full/sparsity.jsonl"), NULL);
    CHECK(sp && strstr(sp, "\"layer\":0,\"head\":0,\"mixer\":\"linear\"") &&
              strstr(sp, "\"layer\":1,\"head\":0,\"mixer\":\"softmax\""),
          "%.300s", sp ? sp : "(none)");
    free(sp);
    // a different layer list is refused like any model change
    st = test_run(out, sizeof out, "./train %s " TINY " steps=12 mixer=softmax,linear out_dir=%s/full", conf, d);
    CHECK(st == 2 && strstr(out, "mixer is 'linear,softmax' in the checkpoint but 'softmax,linear' now"), "exit %d: %s",
          st, out);
    // init_from a hybrid checkpoint
    st = test_run(out, sizeof out,
                  "./train %s " TINY " steps=4 init_from=%s/full/ckpt_00000008.safetensors out_dir=%s/init", conf, d, d);
    CHECK(st == 0, "init_from: %s", out);
    // ./evaluate and ./sample read the hybrid checkpoint
    st = test_run(out, sizeof out, "./evaluate %s/full", d);
    CHECK(st == 0, "evaluate: %s", out);
    st = test_run(out, sizeof out, "./sample %s/full n=5", d);
    CHECK(st == 0, "sample: %s", out);
}

// In a sweep file a hybrid value is quoted (it holds commas) and reaches ./train as one argument.
TEST(hybrid_sweep_value_is_one_quoted_argument) {
    char out[4096];
    const char *p = test_write_file("h.sweep", "mixer = \"linear, softmax\", softmax\nshort_conv = 0, 4\n");
    int st = test_run(out, sizeof out, "./sweep %s --print --out %s/sw", p, test_tmpdir());
    CHECK(st == 0 && strstr(out, "'mixer=linear, softmax' short_conv=4") && strstr(out, "mixer=softmax short_conv=0"),
          "exit %d: %s", st, out);
}
