// Focus forced or forbidden during training (model/focus.h): the maps' extra gradient
// (MixerIO.dmap) through softmax's and linear's backward against finite differences; the terms
// focus_penalty and answer_supervision through the whole model (every tensor, lambda of both
// signs, short_conv, another layer); their value against eval/sparsity.h's S; the same bits at
// 1 and 2 threads; the cross-entropy unchanged; the refusal of other mixers (exit 2).
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "data/mqar.h"
#include "eval/sparsity.h"
#include "model/model.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

// --- the mixer alone: loss = sum(y R) + sum_{b,m,i,j<=i} a_ij G_ij ------------------------------

typedef struct {
    MixerRig r;
    real *G;  // [B, n_maps, T, T]
    real *a;  // [T, T]
} MapRig;

static double map_rig_loss(void *ctx) {
    MapRig *mr = ctx;
    MixerRig *r = &mr->r;
    double s = rig_loss(r);
    MixerIO io = rig_io(r);
    int T = r->T, nm = r->kind->n_maps(r->st);
    for (int b = 0; b < r->B; b++)
        for (int m = 0; m < nm; m++) {
            r->kind->attention(r->st, &io, b, m, mr->a);
            const real *G = mr->G + ((size_t)b * nm + m) * T * T;
            for (int i = 0; i < T; i++)
                for (int j = 0; j <= i; j++) s += (double)mr->a[i * T + j] * (double)G[i * T + j];
        }
    return s;
}

// Random G on some rows only (the others zero, as in training), then every parameter and the input.
static void check_dmap(const char *mixer, int C, int H, int B, int T, uint64_t seed) {
    MapRig mr;
    rig_setup(&mr.r, mixer, NULL, C, H, B, T, 0, 1, seed);
    MixerRig *r = &mr.r;
    int nm = r->kind->n_maps(r->st);
    size_t nG = (size_t)B * nm * T * T, n = (size_t)B * T * C;
    mr.G = callocCheck(nG, sizeof(real));
    mr.a = mallocCheck(sizeof(real) * T * T);
    Rng rng;
    rng_seed(&rng, seed + 1);
    for (size_t p = 0; p < (size_t)B * nm; p++)
        for (int i = 0; i < T; i++)
            if (i % 3 != 1)
                for (int j = 0; j <= i; j++) mr.G[(p * T + i) * T + j] = (real)(3 * rng_normal(&rng));
    map_rig_loss(&mr);
    MixerIO io = rig_io(r);
    io.dy = r->R;
    io.dx = r->dx;
    io.dmap = mr.G;
    memset(r->dx, 0, sizeof(real) * n);
    for (int k = 0; k < r->n_params; k++) memset(r->g[k], 0, sizeof(real) * r->count[k]);
    r->kind->backward(r->st, &io);
    char what[96];
    snprintf(what, sizeof what, "%s dmap d(input)", mixer);
    check_grad(what, map_rig_loss, &mr, r->x, r->dx, n, 1e-6, 1e-6, 1e-8);
    for (int k = 0; k < r->n_params; k++) {
        snprintf(what, sizeof what, "%s dmap d(%s)", mixer, r->decl[k].name);
        check_grad(what, map_rig_loss, &mr, r->p[k], r->g[k], r->count[k], 1e-6, 1e-6, 1e-8);
    }
    free(mr.G), free(mr.a);
    rig_free(r);
}

TEST(focus_dmap_gradient_softmax) {
    check_dmap("softmax", 8, 2, 2, 7, 11);
    check_dmap("softmax", 4, 1, 1, 70, 12);  // past one query block of 64 rows
}

TEST(focus_dmap_gradient_linear) {
    check_dmap("linear", 8, 2, 2, 7, 13);
    check_dmap("linear", 4, 1, 1, 70, 14);  // past one chunk of 64 tokens
}

// --- the whole model --------------------------------------------------------------------------

#define FV 11  // vocabulary
#define FT 10  // length
#define FB 2   // sequences

// MQAR-shaped sequences: pairs (k, v) at (0,1), (2,3), (4,5), then keys asked again at 6..9 with
// the matching value as target at 7 and 9 (answers at 1 and 5), a target without an answer at
// 8, and every other position unlabelled.
static void mqar_tokens(ModelRig *c, Rng *rng) {
    for (int b = 0; b < c->B; b++) {
        int *x = c->inputs + b * c->T, *y = c->targets + b * c->T;
        int keys[3] = {1, 2, 3}, vals[3];
        for (int p = 0; p < 3; p++) vals[p] = 4 + (int)rng_below(rng, FV - 4);
        for (int p = 0; p < 3; p++) x[2 * p] = keys[p], x[2 * p + 1] = vals[p];
        for (int t = 6; t < c->T; t++) x[t] = (int)rng_below(rng, FV);
        x[7] = keys[0], x[9] = keys[2];
        x[8] = 0;  // 0 is no key: its target has no answer
        for (int t = 0; t < c->T; t++) y[t] = -100;
        y[7] = vals[0], y[9] = vals[2], y[8] = (int)rng_below(rng, FV);
        CHECK(mqar_value_pos(x, 7, y[7]) == 1 && mqar_value_pos(x, 9, y[9]) == 5 && mqar_value_pos(x, 8, y[8]) < 0);
    }
}

static ModelRig focus_model(const char *mixer, const Config *cfg, int C, int H, uint64_t seed) {
    ModelShape s = {.V = FV, .C = C, .L = 2, .H = H, .T = FT, .mlp = 1, .pos_emb = 1};
    ModelRig c = {.B = FB, .T = FT};
    c.m = model_create(&s, mixer_find(mixer), cfg, c.B, c.B * c.T);
    model_init_weights(c.m, seed);
    Rng rng;
    rng_seed(&rng, seed + 1);
    for (int i = 0; i < c.m->n_tensors; i++) {  // larger than the 0.02 init, so every path carries signal
        const TensorInfo *t = &c.m->tensors[i];
        real *w = c.m->params + t->offset;
        for (size_t k = 0; k < t->count; k++) w[k] += (real)(0.3 * rng_normal(&rng));
    }
    mqar_tokens(&c, &rng);
    return c;
}

static void check_model(const char *mixer, const char *opts) {
    Config cfg;
    test_config(&cfg, opts);
    ModelRig c = focus_model(mixer, &cfg, 8, 2, 5);
    CHECK(c.m->focus.on, "%s: the terms are off", opts);
    model_rig_loss(&c);  // the terms have rows to act on: 3 query rows, 2 of them with an answer, 2 heads
    CHECK(c.m->focus.rows_S == FB * 3 * 2 && c.m->focus.rows_answer == FB * 2 * 2, "%ld %ld", c.m->focus.rows_S,
          c.m->focus.rows_answer);
    char label[160];
    snprintf(label, sizeof label, "%s %s", mixer, opts);
    model_rig_check_grads(&c, label, NULL);
    model_free(c.m);
    config_free(&cfg);
}

TEST(focus_terms_model_gradients_softmax) {
    check_model("softmax", "focus_penalty=0.7");
    check_model("softmax", "focus_penalty=-0.5 answer_supervision=1.3");
    check_model("softmax", "answer_supervision=2 short_conv=3");
    check_model("softmax", "focus_penalty=-1 short_conv=2 focus_layer=0");
}

TEST(focus_terms_model_gradients_linear) {
    check_model("linear", "focus_penalty=0.7");
    check_model("linear", "focus_penalty=-0.5 answer_supervision=1.3");
    check_model("linear", "answer_supervision=2 short_conv=3");
    check_model("linear", "focus_penalty=-1 short_conv=2 focus_layer=0");
}

// S_recall is eval/sparsity.h's S of the same rows; answer_ce is -log of the answer's weight; the
// cross-entropy the forward returns does not change; the terms are lambda (1 - S) and mu CE.
TEST(focus_terms_values) {
    const char *mixers[] = {"softmax", "linear"};
    for (int k = 0; k < 2; k++) {
        Config on, off;
        test_config(&on, "focus_penalty=0.25 answer_supervision=0.5 focus_layer=0");
        test_config(&off, NULL);
        ModelRig a = focus_model(mixers[k], &on, 8, 2, 7), b = focus_model(mixers[k], &off, 8, 2, 7);
        HeadStats sa = model_forward(a.m, a.inputs, a.targets, a.B, a.T, 1);
        HeadStats sb = model_forward(b.m, b.inputs, b.targets, b.B, b.T, 1);
        CHECK(sa.loss_sum == sb.loss_sum && sa.n_counted == sb.n_counted, "%s: the cross-entropy changed", mixers[k]);
        CHECK(!b.m->focus.on && model_focus_terms(b.m) == 0);
        MixerIO io = model_mixer_io(a.m, 0);
        const MixerKind *mk = a.m->mixer[0];
        real *map = mallocCheck(sizeof(real) * FT * FT);
        double sum_S = 0, sum_ce = 0;
        int n_S = 0, n_ce = 0;
        for (int bb = 0; bb < FB; bb++)
            for (int h = 0; h < mk->n_maps(a.m->mixer_state[0]); h++) {
                mk->attention(a.m->mixer_state[0], &io, bb, h, map);
                for (int i = 0; i < FT; i++) {
                    int y = a.targets[bb * FT + i];
                    if (y < 0) continue;
                    RowStats rs;
                    CHECK(sparsity_row(map + i * FT, i + 1, &rs));
                    sum_S += rs.S, n_S++;
                    int v = mqar_value_pos(a.inputs + bb * FT, i, y);
                    if (v < 0) continue;
                    double l1 = 0;
                    for (int j = 0; j <= i; j++) l1 += fabs(map[i * FT + j]);
                    sum_ce += -log(fabs(map[i * FT + v]) / l1), n_ce++;
                }
            }
        const FocusTerms *f = &a.m->focus;
        CHECK_CLOSE(f->S_recall, sum_S / n_S, 1e-12);
        CHECK_CLOSE(f->answer_ce, sum_ce / n_ce, 1e-12);
        CHECK_CLOSE(model_focus_terms(a.m), 0.25 * (1 - sum_S / n_S) + 0.5 * sum_ce / n_ce, 1e-12);
        CHECK_CLOSE(f->penalty_term, 0.25 * (1 - sum_S / n_S), 1e-12);
        free(map);
        model_free(a.m), model_free(b.m);
        config_free(&on), config_free(&off);
    }
}

// Forward and backward with the terms give the same bits at 1 and 2 threads.
TEST(focus_terms_thread_invariant) {
    const char *mixers[] = {"softmax", "linear"};
    for (int k = 0; k < 2; k++) {
        omp_set_num_threads(2);  // the model's per-thread scratch is sized at creation
        Config cfg;
        test_config(&cfg, "focus_penalty=-0.3 answer_supervision=0.7 short_conv=2");
        ModelRig c = focus_model(mixers[k], &cfg, 8, 2, 9);
        real *g[2];
        double terms[2];
        for (int t = 1; t <= 2; t++) {
            omp_set_num_threads(t);
            model_zero_grad(c.m);
            model_forward(c.m, c.inputs, c.targets, c.B, c.T, 1);
            model_backward(c.m);
            terms[t - 1] = focus_loss(&c.m->focus);
            g[t - 1] = mallocCheck(sizeof(real) * c.m->n_params);
            memcpy(g[t - 1], c.m->grads, sizeof(real) * c.m->n_params);
        }
        CHECK(terms[0] == terms[1] && !memcmp(g[0], g[1], sizeof(real) * c.m->n_params), "%s: 1 and 2 threads differ",
              mixers[k]);
        free(g[0]), free(g[1]);
        model_free(c.m);
        config_free(&cfg);
    }
}

// --- refusals ---------------------------------------------------------------------------------

typedef struct {
    const char *mixer, *opts;
} CreateArgs;

static void create_model(void *arg) {
    const CreateArgs *a = arg;
    Config cfg;
    test_config(&cfg, a->opts);
    ModelShape s = {.V = FV, .C = 8, .L = 2, .H = 2, .T = FT, .mlp = 1, .pos_emb = 1};
    config_set(&cfg, "mixer", a->mixer, "test");
    model_create(&s, NULL, &cfg, 1, FT);
    exit(0);
}

TEST(focus_terms_refused_on_other_mixers) {
    struct {
        const char *mixer, *opts, *want;
    } cases[] = {
        {"gla", "focus_penalty=0.1",
         "focus_penalty: expected mixer softmax or linear at focus_layer 1 (the terms act on their maps), got 'gla'"},
        {"mamba", "answer_supervision=1", "answer_supervision: expected mixer softmax or linear at focus_layer 1"},
        {"softmax,cog", "focus_penalty=-0.2", "got 'cog'"},
        {"softmax,cog", "focus_penalty=-0.2 focus_layer=2", "focus_layer: expected -1 (the last layer) or a layer 0"},
        {"softmax", "focus_layer=-2", "focus_layer: expected -1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CreateArgs a = {cases[i].mixer, cases[i].opts};
        char err[1024];
        int st = test_fork(create_model, &a, err, sizeof err);
        CHECK(st == 2 && strstr(err, cases[i].want) && !strchr(strchr(err, '\n') + 1, '\n'), "%s %s: exit %d: %s",
              cases[i].mixer, cases[i].opts, st, err);
    }
    // accepted: the right mixer at the chosen layer of a hybrid stack, a zero term anywhere
    const char *ok[][2] = {{"gla,softmax", "focus_penalty=0.1"},
                           {"linear,gla", "answer_supervision=1 focus_layer=0"},
                           {"gla", "focus_penalty=0 focus_layer=1"}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        CreateArgs a = {ok[i][0], ok[i][1]};
        char err[1024];
        int st = test_fork(create_model, &a, err, sizeof err);
        CHECK(st == 0, "%s %s: exit %d: %s", ok[i][0], ok[i][1], st, err);
    }
    // ./train says it in one line before any training, exit 2
    char out[4096];
    int st = test_run(out, sizeof out,
                      "./train /dev/null mixer=gla focus_penalty=0.5 vocab_size=64 seq_len=32 mqar_kv_pairs=4 "
                      "mqar_train_examples=64 mqar_val_examples=16 mqar_test_examples=16 d_model=16 batch_size=8 "
                      "steps=1 out_dir=%s 2>&1",
                      test_path("refused"));
    CHECK(st == 2 && strstr(out, "focus_penalty: expected mixer softmax or linear at focus_layer 1") && !strstr(out, "step"),
          "exit %d: %s", st, out);
}
