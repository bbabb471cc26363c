// What the q/k/v mixers of model/mixers/qkv_common.c (decay, identity, relu2, cog, cosformer; gpam
// and h3 check their own names in their tests) share:
// the tensor names and shapes of docs/design.md#tensor-names, bit-identical results for 1 and 2 threads, and the whole
// model's gradients with a signed Cog layer (tests/test_model.c runs cog with its default
// softmax ends, which at 2 layers are every layer).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/model.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

static const char *const g_names[] = {"decay", "identity", "relu2", "cog", "cosformer"};

TEST(qkv_mixers_tensor_names_and_shapes) {
    for (int k = 0; k < 5; k++) {
        MixerRig r;
        int C = 12, H = 3, D = 4;
        rig_setup(&r, g_names[k], NULL, C, H, 1, 3, 0, 2, 70);
        int norm = !strcmp(g_names[k], "decay") || !strcmp(g_names[k], "identity");
        CHECK(r.n_params == 4 + norm, "%s: %d tensors", g_names[k], r.n_params);
        const ParamDecl want[] = {
            {"attn.qkv.weight", 2, {3 * C, C}, INIT_NORMAL, 0, 0},  {"attn.qkv.bias", 1, {3 * C}, INIT_ZERO, 0, 0},
            {"attn.proj.weight", 2, {C, C}, INIT_NORMAL_OUT, 0, 0}, {"attn.proj.bias", 1, {C}, INIT_ZERO, 0, 0},
            {"attn.norm.weight", 1, {D}, INIT_ONE, 0, 0},
        };
        for (int i = 0; i < r.n_params; i++) {
            const ParamDecl *d = &r.decl[i];
            CHECK(!strcmp(d->name, want[i].name) && d->ndim == want[i].ndim && d->init == want[i].init,
                  "%s: tensor %d is %s", g_names[k], i, d->name);
            for (int j = 0; j < d->ndim; j++) CHECK(d->shape[j] == want[i].shape[j]);
        }
        CHECK(r.kind->n_maps && r.kind->n_maps(r.st) == H && r.kind->step && r.kind->attention_values);
        rig_free(&r);
    }
}

TEST(model_gradients_with_signed_cog_layers) {
    Config cfg;
    test_config(&cfg, "cog_softmax_ends=false");
    ModelShape s = {.V = 11, .C = 8, .L = 2, .H = 2, .T = 5, .mlp = 1, .pos_emb = 1};
    ModelRig c = {.B = 2, .T = 5};
    c.m = model_create(&s, mixer_find("cog"), &cfg, 2, 10);
    model_init_weights(c.m, 3);
    Rng rng;
    rng_seed(&rng, 4);
    for (size_t i = 0; i < c.m->n_params; i++) c.m->params[i] += (real)(0.3 * rng_normal(&rng));
    model_rig_tokens(&c, &rng, 11);
    model_rig_check_grads(&c, "", NULL);
    model_free(c.m);
}
