// Every registered mixer, through the MixerKind interface alone: backward against finite
// differences for the input and every parameter, and the materialized attention maps against
// the outputs. Mixer-specific cases live in tests/test_<mixer>.c.
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
