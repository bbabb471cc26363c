// Generation: for every registered mixer, the step-by-step logits (the mixer's step() on its KV
// cache or recurrent state) and the prefix re-run equal model_forward's at every position; the
// window slides as documented; the sampling rule; the trainer's sample hook.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/json.h"
#include "model/generate.h"
#include "tests/gradcheck.h"
#include "tests/test.h"
#include "tokenizer/bpe_train.h"
#include "tokenizer/chunks.h"
#include "model/sample.h"
#include "trainer/sample_every.h"

static Model *tiny_model(const char *mixer, int mlp, int pos_emb, int T, const Config *cfg, uint64_t seed) {
    ModelShape s = {.V = 13, .C = 8, .L = 2, .H = 2, .T = T, .mlp = mlp, .pos_emb = pos_emb};
    Model *m = model_create(&s, mixer_find(mixer), cfg, 1, T);
    model_init_weights(m, seed);
    Rng rng;
    rng_seed(&rng, seed + 1);
    for (int i = 0; i < m->n_tensors; i++) {  // larger than the init so every path matters
        const TensorInfo *t = &m->tensors[i];
        if (t->init == INIT_CUSTOM) continue;
        real *w = m->params + t->offset;
        for (size_t k = 0; k < t->count; k++) w[k] += (real)(0.3 * rng_normal(&rng));
    }
    return m;
}

// max over v of |a - b| / max(1, |b|)
static double rel_err(const real *a, const real *b, int V) {
    double e = 0;
    for (int v = 0; v < V; v++) {
        double d = fabs((double)a[v] - (double)b[v]) / fmax(1.0, fabs((double)b[v]));
        if (d > e) e = d;
    }
    return e;
}

static void check_generation(const char *mixer, int mlp, int pos_emb, int recurrent) {
    Config cfg;
    test_config(&cfg, NULL);
    int T = 9, V = 13;
    Model *m = tiny_model(mixer, mlp, pos_emb, T, &cfg, 5);
    int tokens[9];
    Rng rng;
    rng_seed(&rng, 9);
    for (int t = 0; t < T; t++) tokens[t] = (int)rng_below(&rng, (uint64_t)V);
    model_forward(m, tokens, NULL, 1, T, 0);
    real want[9][13];
    for (int t = 0; t < T; t++) model_logits_at(m, 0, t, want[t]);
    Generator *g = generator_create(m, recurrent);
    for (int rep = 0; rep < 2; rep++) {  // twice: reset must clear every state
        generator_reset(g);
        for (int t = 0; t < T; t++) {
            const real *got = generator_feed(g, tokens[t]);
            double e = rel_err(got, want[t], V);
            CHECK(e <= 1e-6, "%s mlp=%d pos=%d %s: position %d: logits differ from model_forward by %.3g (relative)",
                  mixer, mlp, pos_emb, g->recurrent ? "step()" : "prefix", t, e);
        }
    }
    generator_free(g);
    model_free(m);
    config_free(&cfg);
}

TEST(generate_step_logits_equal_forward_every_mixer) {
    for (int i = 0; i < mixer_count(); i++) {
        const MixerKind *mk = mixer_at(i);
        int modes[2] = {1, 0};  // step() when the mixer has it, then the prefix fallback
        for (int k = mk->step ? 0 : 1; k < 2; k++) {
            check_generation(mk->name, 1, 1, modes[k]);
            check_generation(mk->name, 0, 0, modes[k]);
        }
    }
}

TEST(generate_window_slides_to_the_newest_half) {
    Config cfg;
    test_config(&cfg, NULL);
    int T = 6, V = 13;
    for (int i = 0; i < mixer_count(); i++) {
        const char *mixer = mixer_at(i)->name;
        Model *m = tiny_model(mixer, 1, 1, T, &cfg, 21);
        Generator *g = generator_create(m, -1);
        int win[6], n = 0;  // the window as documented
        Rng rng;
        rng_seed(&rng, 4);
        for (int k = 0; k < 17; k++) {
            int tok = (int)rng_below(&rng, (uint64_t)V);
            if (n == T) {
                memmove(win, win + T - T / 2, sizeof(int) * (size_t)(T / 2));
                n = T / 2;
            }
            win[n++] = tok;
            real got[13], want[13];
            memcpy(got, generator_feed(g, tok), sizeof got);
            model_forward(m, win, NULL, 1, n, 0);
            model_logits_at(m, 0, n - 1, want);
            double e = rel_err(got, want, V);
            CHECK(e <= 1e-6, "%s: token %d (window of %d): %.3g", mixer, k, n, e);
        }
        generator_free(g);
        model_free(m);
    }
    config_free(&cfg);
}

TEST(sample_next_greedy_top_k_and_temperature) {
    real logits[6] = {0.5, 2.0, 2.0, -1.0, (real)log(3.0) + 2, 9.0};
    Rng rng;
    rng_seed(&rng, 1);
    // limit 5 excludes id 5; greedy and top_k = 1 take the argmax
    CHECK(sample_next(logits, 5, 0, 40, &rng) == 4);
    CHECK(sample_next(logits, 5, 1.0, 1, &rng) == 4);
    CHECK(sample_next(logits, 6, 0, 0, &rng) == 5);
    // top_k = 2 over {4: log 3 + 2, 1: 2 (the lower id of the tie)}: probabilities 3/4 and 1/4
    long count[6] = {0};
    int N = 40000;
    for (int i = 0; i < N; i++) count[sample_next(logits, 5, 1.0, 2, &rng)]++;
    CHECK(count[0] == 0 && count[2] == 0 && count[3] == 0 && count[5] == 0);
    CHECK(fabs(count[4] / (double)N - 0.75) < 0.01, "%ld", count[4]);
    // temperature 2 flattens: p4/p1 = sqrt(3)
    long c4 = 0, c1 = 0;
    for (int i = 0; i < N; i++) {
        int t = sample_next(logits, 5, 2.0, 2, &rng);
        c4 += t == 4, c1 += t == 1;
    }
    CHECK(fabs(c4 / (double)c1 - sqrt(3.0)) < 0.06, "%g", c4 / (double)c1);
    // same seed, same draws
    Rng a, b;
    rng_seed(&a, 7);
    rng_seed(&b, 7);
    for (int i = 0; i < 100; i++) CHECK(sample_next(logits, 6, 0.8, 0, &a) == sample_next(logits, 6, 0.8, 0, &b));
}

static void add_chunk(void *ctx, const uint8_t *c, int len) { bpe_trainer_add_chunk(ctx, c, len); }

typedef struct {
    Model *m;
    Config *cfg;
    FILE *log;
} HookArgs;

static void run_hook(void *p) {
    HookArgs *h = p;
    sample_during_training(h->m, h->cfg, 100, h->log);
}

TEST(sample_during_training_prints_and_logs_a_sample) {
    const char *text = "the cat sat on the mat. the dog sat on the log.\n";
    BpeTrainer *t = bpe_trainer_create();
    chunks_of((const uint8_t *)text, strlen(text), add_chunk, t);
    Bpe *b = bpe_trainer_run(t, 270, 0);
    bpe_trainer_free(t);
    const char *tok = test_path("t.bpe");
    bpe_save(b, tok);
    char over[512];
    snprintf(over, sizeof over, "tokenizer=%s sample_tokens=12 sample_prompt=the\\x20", tok);
    Config cfg;
    test_config(&cfg, over);
    ModelShape s = {.V = b->vocab_size, .C = 8, .L = 1, .H = 2, .T = 16, .mlp = 1, .pos_emb = 1};
    Model *m = model_create(&s, mixer_find("softmax"), &cfg, 1, 16);
    model_init_weights(m, 1);
    const char *log_path = test_path("metrics.jsonl");
    FILE *log = fopenCheck(log_path, "w");
    sample_during_training(m, &cfg, 100, log);
    sample_during_training(m, &cfg, 100, log);  // the same step draws the same sample
    fclose(log);
    char *lines = read_file_text(log_path, NULL);
    char *second = strchr(lines, '\n') + 1;
    CHECK(!strcmp(strchr(second, '\n'), "\n") && !strncmp(lines, second, (size_t)(second - lines)), "%s", lines);
    char err[256];
    JsonValue *v = json_parse(lines, (size_t)(second - lines - 1), err, sizeof err);
    CHECK(v, "%s: %s", err, lines);
    CHECK(!strcmp(json_get(v, "type")->string, "sample") && json_get(v, "step")->integer == 100);
    CHECK(!strcmp(json_get(v, "prompt")->string, "the "), "%s", json_get(v, "prompt")->string);
    CHECK(json_get(v, "text")->type == JSON_STRING);
    json_free(v);
    free(lines);

    // without a tokenizer (MQAR): token ids
    Config ids;
    test_config(&ids, "sample_tokens=5 sample_prompt=3,7");
    log = fopenCheck(log_path, "w");
    sample_during_training(m, &ids, 7, log);
    fclose(log);
    lines = read_file_text(log_path, NULL);
    v = json_parse(lines, strlen(lines), err, sizeof err);
    CHECK(v, "%s", err);
    const char *ptxt = json_get(v, "prompt")->string, *gtxt = json_get(v, "text")->string;
    CHECK(!strcmp(ptxt, "3 7"), "prompt '%s'", ptxt);
    int n = 0;
    for (char *p = (char *)gtxt, *end;; p = end) {
        long id = strtol(p, &end, 10);
        if (end == p) break;
        CHECK(id >= 0 && id < s.V);
        n++;
    }
    CHECK(n == 5, "'%s'", gtxt);
    json_free(v);
    free(lines);

    // a missing tokenizer stops the run: one line, exit 2
    Config bad;
    test_config(&bad, "tokenizer=/nonexistent/t.bpe");
    HookArgs h = {m, &bad, NULL};
    char msg[512];
    int st = test_fork(run_hook, &h, msg, sizeof msg);
    CHECK(st == 2 && strstr(msg, "/nonexistent/t.bpe") && strchr(msg, '\n') == msg + strlen(msg) - 1, "exit %d: %s", st, msg);
    model_free(m);
    bpe_free(b);
    config_free(&cfg);
    config_free(&ids);
    config_free(&bad);
}
