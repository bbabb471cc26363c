// Every registered mixer, through the MixerKind interface alone: backward against finite
// differences for the input and every parameter, and the materialized attention maps against
// the outputs. Mixer-specific cases live in tests/test_<mixer>.c.
#include <string.h>
#include <omp.h>

#include "model/mixers/mixer.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

TEST(every_mixer_backward_matches_finite_differences) {
    Config cfg;
    test_config(&cfg, NULL);
    for (int i = 0; i < mixer_count(); i++) {
        MixerRig r;
        // T = 7: not a multiple of any block or chunk size
        rig_init(&r, mixer_at(i)->name, &cfg, 8, 2, 2, 7, 1, 3, 11);
        rig_check_grads(&r, 1e-6, 1e-8);
        rig_free(&r);
    }
}

TEST(every_mixer_attention_maps_reproduce_outputs) {
    Config cfg;
    test_config(&cfg, NULL);
    for (int i = 0; i < mixer_count(); i++) {
        MixerRig r;
        rig_init(&r, mixer_at(i)->name, &cfg, 8, 2, 2, 9, 1, 3, 12);
        rig_check_attention(&r, 1e-9);
        rig_free(&r);
    }
}

TEST(every_mixer_step_reproduces_forward) {
    Config cfg;
    test_config(&cfg, NULL);
    for (int i = 0; i < mixer_count(); i++) {
        MixerRig r;
        rig_init(&r, mixer_at(i)->name, &cfg, 8, 2, 2, 9, 1, 3, 13);
        rig_check_step(&r, 1e-10);
        rig_free(&r);
    }
}

// The state size each mixer reports (Zoology's x axis), against its formula written out here at
// d_model C = 8, 2 heads of D = 4, seq_len T = 9 and every option at its default. A new mixer
// fails until its formula is added.
TEST(every_mixer_state_floats_match_their_formula) {
    const int C = 8, H = 2, D = 4, T = 9;
    const struct {
        const char *name;
        size_t floats;
    } want[] = {
        {"softmax", 2 * T * C}, {"cog", 2 * T * C}, {"relu2", 2 * T * C}, {"gpam", 2 * T * C},  // K and V caches
        {"linear", H * D * (D + 1)},                      // S [D, D] and z [D] per head
        {"cosformer", H * 2 * D * (D + 1)},               // the same for the cos and the sin half
        {"identity", H * D * D}, {"decay", H * D * D},    // S [D, D] per head
        {"gla", H * (C / 2 / H) * (C / H)},               // S [dk, dv] per head, dk = C/2/H, dv = C/H
        {"mamba", (4 - 1) * (2 * C) + (2 * C) * 16},      // conv window (d_conv - 1) x E, h [E, d_state]
        {"h3", C * 64 + C * 1 * 64},                      // shift window [C, N], diagonal states [C, P, N]
    };
    Config cfg;
    test_config(&cfg, NULL);
    for (int i = 0; i < mixer_count(); i++) {
        const MixerKind *mk = mixer_at(i);
        int found = -1;
        for (int k = 0; k < (int)(sizeof want / sizeof want[0]); k++)
            if (!strcmp(want[k].name, mk->name)) found = k;
        CHECK(found >= 0, "mixer '%s' has no state-size formula in this test", mk->name);
        CHECK(mk->state_floats, "mixer '%s' declares no state_floats", mk->name);
        if (found < 0 || !mk->state_floats) continue;
        MixerRig r;
        rig_init(&r, mk->name, &cfg, C, H, 1, T, 1, 3, 16);
        size_t got = mk->state_floats(r.st);
        CHECK(got == want[found].floats, "%s: state_floats %zu, formula %zu", mk->name, got, want[found].floats);
        rig_free(&r);
    }
}

TEST(every_mixer_theory_queries_and_keys_reproduce_maps) {
    Config cfg;
    test_config(&cfg, NULL);
    for (int i = 0; i < mixer_count(); i++) {
        MixerRig r;
        rig_init(&r, mixer_at(i)->name, &cfg, 8, 2, 2, 9, 1, 3, 14);
        rig_check_qk(&r, 1e-10);
        rig_free(&r);
    }
}

// No sum is split differently for another thread count: forward and backward give the same bits.
TEST(every_mixer_bit_identical_for_one_and_two_threads) {
    Config cfg;
    test_config(&cfg, "cog_softmax_ends=false");
    for (int i = 0; i < mixer_count(); i++) {
        MixerRig r;
        omp_set_num_threads(2);  // before the rig sizes its buffers for the thread count
        // T = 70: past one 64-token chunk or query block; B = 3: an odd split over 2 threads
        rig_init(&r, mixer_at(i)->name, &cfg, 8, 2, 3, 70, 0, 2, 15);
        rig_check_thread_invariance(&r);
        rig_free(&r);
    }
}
