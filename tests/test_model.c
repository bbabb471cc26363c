// The whole model: loss gradients for every parameter tensor against finite differences (every
// registered mixer, with and without MLP and position embedding), the cross-entropy value with
// ignored positions, the optimizers against hand-computed updates, and the shared training step.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/model.h"
#include "trainer/optim.h"
#include "trainer/step.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

static ModelRig tiny_model(const char *mixer, int mlp, int pos_emb, Config *cfg) {
    ModelShape s = {.V = 11, .C = 8, .L = 2, .H = 2, .T = 5, .mlp = mlp, .pos_emb = pos_emb};
    ModelRig c = {.B = 2, .T = 5};
    c.m = model_create(&s, mixer_find(mixer), cfg, c.B, c.B * c.T);
    model_init_weights(c.m, 3);
    // Larger weights than the 0.02 init so that every path carries signal.
    Rng rng;
    rng_seed(&rng, 4);
    for (int i = 0; i < c.m->n_tensors; i++) {
        const TensorInfo *t = &c.m->tensors[i];
        real *w = c.m->params + t->offset;
        if (t->init == INIT_CUSTOM) continue;
        for (size_t k = 0; k < t->count; k++) w[k] += (real)(0.3 * rng_normal(&rng));
    }
    model_rig_tokens(&c, &rng, 11);
    return c;
}

static void check_model_grads(const char *mixer, int mlp, int pos_emb, const char *opts) {
    Config cfg;
    test_config(&cfg, opts);
    ModelRig c = tiny_model(mixer, mlp, pos_emb, &cfg);
    char label[160];
    snprintf(label, sizeof label, "%s %s mlp=%d pos=%d", mixer, opts ? opts : "", mlp, pos_emb);
    model_rig_check_grads(&c, label, NULL);
    model_free(c.m);
}

TEST(model_gradients_every_mixer_every_tensor) {
    for (int i = 0; i < mixer_count(); i++) check_model_grads(mixer_at(i)->name, 1, 1, NULL);
}

// Paths a single-layer check cannot tell apart from stale scratch: the layers share their scratch,
// so a backward that skipped rebuilding what its forward built would read the last layer's.
TEST(model_gradients_h3_by_fft) { check_model_grads("h3", 1, 1, "h3_conv=fft"); }

TEST(model_gradients_without_mlp_and_position_embedding) {
    check_model_grads("softmax", 0, 0, NULL);
    check_model_grads("softmax", 0, 1, NULL);
    check_model_grads("softmax", 1, 0, NULL);
}

TEST(model_tensor_names_follow_design) {
    Config cfg;
    test_config(&cfg, NULL);
    ModelRig c = tiny_model("softmax", 1, 1, &cfg);
    // clang-format off
    const char *names[] = {"wte", "wpe", "h.0.ln_1.weight", "h.0.ln_1.bias", "h.0.attn.qkv.weight",
                           "h.0.attn.qkv.bias", "h.0.attn.proj.weight", "h.0.attn.proj.bias",
                           "h.0.ln_2.weight", "h.0.ln_2.bias", "h.0.mlp.fc.weight", "h.0.mlp.fc.bias",
                           "h.0.mlp.proj.weight", "h.0.mlp.proj.bias", "h.1.ln_1.weight"};
    // clang-format on
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        CHECK(!strcmp(c.m->tensors[i].name, names[i]), "tensor %zu is %s, expected %s", i, c.m->tensors[i].name, names[i]);
    }
    CHECK(!strcmp(c.m->tensors[c.m->n_tensors - 2].name, "ln_f.weight"));
    const TensorInfo *qkv = model_find_tensor(c.m, "h.1.attn.qkv.weight");
    CHECK(qkv && qkv->shape[0] == 24 && qkv->shape[1] == 8);
    const TensorInfo *fc = model_find_tensor(c.m, "h.1.mlp.fc.weight");
    CHECK(fc && fc->shape[0] == 32 && fc->shape[1] == 8 && fc->decay);
    CHECK(!model_find_tensor(c.m, "h.1.mlp.fc.bias")->decay);
    model_free(c.m);
}

TEST(cross_entropy_counts_only_labelled_positions) {
    Config cfg;
    test_config(&cfg, NULL);
    ModelRig c = tiny_model("softmax", 1, 1, &cfg);
    HeadStats s = model_forward(c.m, c.inputs, c.targets, c.B, c.T, 0);
    int V = 11, C = 8;
    double loss = 0;
    long counted = 0, correct = 0;
    for (int i = 0; i < c.B * c.T; i++) {
        if (c.targets[i] < 0) continue;
        const real *h = c.m->lnf + (size_t)i * C;
        double z[11], mx = -1e300;
        int arg = 0;
        for (int v = 0; v < V; v++) {
            z[v] = 0;
            for (int k = 0; k < C; k++) z[v] += h[k] * c.m->wte[v * C + k];
            if (z[v] > mx) mx = z[v], arg = v;
        }
        double se = 0;
        for (int v = 0; v < V; v++) se += exp(z[v] - mx);
        loss += mx + log(se) - z[c.targets[i]];
        counted++;
        correct += arg == c.targets[i];
    }
    CHECK(s.n_counted == counted && counted == 7, "counted %ld", s.n_counted);
    CHECK(s.n_correct == correct);
    CHECK_CLOSE(s.loss_sum, loss, 1e-12);
    // logits at one position agree with the head
    real logits[11];
    model_logits_at(c.m, 1, 2, logits);
    const real *h = c.m->lnf + (size_t)(1 * 5 + 2) * C;
    double z3 = 0;
    for (int k = 0; k < C; k++) z3 += h[k] * c.m->wte[3 * C + k];
    CHECK_CLOSE(logits[3], z3, 1e-12);
    model_free(c.m);
}

TEST(forward_with_smaller_batch_and_length_matches_prefix) {
    // A model built for B=2, T=5 run on B=1, T=3 gives the first row's first 3 positions' loss.
    Config cfg;
    test_config(&cfg, NULL);
    ModelRig c = tiny_model("softmax", 1, 1, &cfg);
    int in[3], tg[3];
    for (int t = 0; t < 3; t++) in[t] = c.inputs[t], tg[t] = c.targets[t];
    HeadStats small = model_forward(c.m, in, tg, 1, 3, 0);
    for (int t = 3; t < 10; t++) c.targets[t] = -1;
    HeadStats full = model_forward(c.m, c.inputs, c.targets, 2, 5, 0);
    CHECK(small.n_counted == full.n_counted);
    CHECK_CLOSE(small.loss_sum, full.loss_sum, 1e-12);  // causal: the suffix does not matter
    model_free(c.m);
}

// --- optimizers -------------------------------------------------------------------------------

TEST(adamw_matches_hand_computed_update) {
    Config cfg;
    test_config(&cfg, NULL);
    ModelRig c = tiny_model("softmax", 1, 1, &cfg);
    Model *m = c.m;
    Optimizer o;
    double lr = 0.01, b1 = 0.9, b2 = 0.99, eps = 1e-8, wd = 0.1;
    optim_init(&o, OPT_ADAMW, m->n_params, b1, b2, eps, wd);
    const TensorInfo *w = model_find_tensor(m, "h.0.mlp.fc.weight"), *b = model_find_tensor(m, "h.0.mlp.fc.bias");
    size_t iw = w->offset + 3, ib = b->offset + 1;
    double pw = m->params[iw], pb = m->params[ib], mw = 0, vw = 0, mb = 0, vb = 0;
    double gs[2][2] = {{0.5, -0.25}, {-1.5, 2.0}};
    for (int step = 1; step <= 2; step++) {
        memset(m->grads, 0, sizeof(real) * m->n_params);
        m->grads[iw] = (real)gs[step - 1][0];
        m->grads[ib] = (real)gs[step - 1][1];
        optim_step(&o, m, lr);
        double bc1 = 1 - pow(b1, step), bc2 = 1 - pow(b2, step);
        double g = gs[step - 1][0];
        mw = b1 * mw + (1 - b1) * g, vw = b2 * vw + (1 - b2) * g * g;
        pw = pw * (1 - lr * wd) - lr * (mw / bc1) / (sqrt(vw / bc2) + eps);  // decayed: 2-D weight
        g = gs[step - 1][1];
        mb = b1 * mb + (1 - b1) * g, vb = b2 * vb + (1 - b2) * g * g;
        pb = pb - lr * (mb / bc1) / (sqrt(vb / bc2) + eps);  // bias: no decay
        CHECK_CLOSE(m->params[iw], pw, 1e-12);
        CHECK_CLOSE(m->params[ib], pb, 1e-12);
    }
    optim_free(&o);
    model_free(m);
}

TEST(sgd_matches_hand_computed_update) {
    Config cfg;
    test_config(&cfg, NULL);
    ModelRig c = tiny_model("softmax", 1, 1, &cfg);
    Model *m = c.m;
    Optimizer o;
    optim_init(&o, OPT_SGD, m->n_params, 0.9, 0.999, 1e-8, 0.5);
    size_t iw = model_find_tensor(m, "wte")->offset + 5, ib = model_find_tensor(m, "ln_f.bias")->offset;
    double pw = m->params[iw], pb = m->params[ib];
    memset(m->grads, 0, sizeof(real) * m->n_params);
    m->grads[iw] = 2, m->grads[ib] = -3;
    optim_step(&o, m, 0.1);
    CHECK_CLOSE(m->params[iw], pw - 0.1 * (2 + 0.5 * pw), 1e-12);
    CHECK_CLOSE(m->params[ib], pb - 0.1 * -3, 1e-12);
    optim_free(&o);
    model_free(m);
}

TEST(grad_clip_and_norm) {
    real g[5000];
    double ss = 0;
    for (int i = 0; i < 5000; i++) g[i] = (real)((i % 13) - 6) * 0.01, ss += (double)g[i] * g[i];
    double n = grad_global_norm(g, 5000);
    CHECK_CLOSE(n, sqrt(ss), 1e-12);
    grad_clip(g, 5000, n, 1.0);
    CHECK_CLOSE(grad_global_norm(g, 5000), n > 1 ? 1 / (n + 1e-6) * n : n, 1e-9);
}

TEST(lr_schedules) {
    CHECK_CLOSE(lr_at(LR_COSINE, 0, 100, 10, 1.0, 0.1), 0.1, 1e-15);  // warmup 1/10
    CHECK_CLOSE(lr_at(LR_COSINE, 9, 100, 10, 1.0, 0.1), 1.0, 1e-15);
    CHECK_CLOSE(lr_at(LR_COSINE, 10, 100, 10, 1.0, 0.1), 1.0, 1e-15);
    CHECK_CLOSE(lr_at(LR_COSINE, 55, 100, 10, 1.0, 0.1), 0.55, 1e-12);  // half way
    CHECK_CLOSE(lr_at(LR_COSINE, 100, 100, 10, 1.0, 0.1), 0.1, 1e-12);
    CHECK_CLOSE(lr_at(LR_LINEAR, 55, 100, 10, 1.0, 0.1), 0.55, 1e-12);
    CHECK_CLOSE(lr_at(LR_LINEAR, 10, 100, 10, 1.0, 0.0), 1.0, 1e-12);
    CHECK_CLOSE(lr_at(LR_CONSTANT, 99, 100, 0, 0.3, 0.0), 0.3, 1e-15);
}

// --- the training step ----------------------------------------------------------------------------

// train_step (trainer/step.h), which ./train and the bench share, is forward, backward, norm, clip
// and update in that order: the same bits as those calls by hand. On a non-finite loss it updates
// nothing, not even the optimizer's step count.
TEST(train_step_is_the_calls_by_hand_and_skips_a_non_finite_loss) {
    Config cfg;
    test_config(&cfg, NULL);
    ModelRig a = tiny_model("softmax", 1, 1, &cfg), b = tiny_model("softmax", 1, 1, &cfg);
    Optimizer oa, ob;
    optim_init(&oa, OPT_ADAMW, a.m->n_params, 0.9, 0.99, 1e-8, 0.1);
    optim_init(&ob, OPT_ADAMW, b.m->n_params, 0.9, 0.99, 1e-8, 0.1);
    size_t bytes = sizeof(real) * a.m->n_params;
    StepStats r;
    for (int step = 0; step < 2; step++) {
        CHECK(train_step(a.m, &oa, a.inputs, a.targets, a.B, a.T, 0.01, 0.5, &r) == 1);
        model_zero_grad(b.m);
        HeadStats s = model_forward(b.m, b.inputs, b.targets, b.B, b.T, 1);
        model_backward(b.m);
        double norm = grad_global_norm(b.m->grads, b.m->n_params);
        CHECK(norm > 0.5, "the clip is not exercised: norm %g", norm);
        grad_clip(b.m->grads, b.m->n_params, norm, 0.5);
        optim_step(&ob, b.m, 0.01);
        CHECK(r.loss == s.loss_sum / (double)s.n_counted && r.norm == norm && r.lr == 0.01, "%g %g", r.loss, r.norm);
        CHECK(r.acc == (double)s.n_correct / (double)s.n_counted);
        CHECK(!memcmp(a.m->params, b.m->params, bytes) && !memcmp(oa.v, ob.v, bytes));
    }
    a.m->params[model_find_tensor(a.m, "ln_f.weight")->offset] = NAN;
    real *before = mallocCheck(bytes);
    memcpy(before, a.m->params, bytes);
    CHECK(train_step(a.m, &oa, a.inputs, a.targets, a.B, a.T, 0.01, 0.5, &r) == 0 && isnan(r.loss));
    CHECK(!memcmp(before, a.m->params, bytes) && oa.t == 2);
    free(before);
    optim_free(&oa), optim_free(&ob);
    model_free(a.m), model_free(b.m);
}

// The activation arena's allocation: zeroed, whole, and on Linux from 2 MB on aligned to 2 MB
// (the huge pages madvise asks for need it); small requests as callocCheck's.
TEST(activation_arena_allocation_is_zeroed_and_aligned) {
    size_t n = ((size_t)3 << 20) / sizeof(real) + 5;
    real *p = callocArena(n, sizeof(real));
    size_t nonzero = 0;
    for (size_t i = 0; i < n; i++) nonzero += p[i] != 0;
    CHECK(nonzero == 0, "%zu of %zu reals not zero", nonzero, n);
#if defined(__linux__)
    CHECK((uintptr_t)p % ((size_t)2 << 20) == 0, "arena at %p: not 2 MB aligned", (void *)p);
#endif
    p[n - 1] = 1;  // the whole of it is ours (make asan checks the bound)
    free(p);
    real *q = callocArena(10, sizeof(real));
    for (int i = 0; i < 10; i++) CHECK(q[i] == 0, "small arena [%d] = %g", i, (double)q[i]);
    free(q);
}
