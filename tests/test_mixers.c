// Every registered mixer, through the MixerKind interface alone: backward against finite
// differences for the input and every parameter, and the materialized attention maps against
// the outputs. Mixer-specific cases live in tests/test_<mixer>.c.
#include <math.h>
#include <string.h>
#include <omp.h>

#include "model/mixers/mixer.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

// --- the interface itself (mixer.h's REQUIRED and OPTIONAL slots) -------------------------------

TEST(every_registered_mixer_passes_mixer_validate) {
    char err[160];
    for (int i = 0; i < mixer_count(); i++)
        CHECK(mixer_validate(mixer_at(i), err, sizeof err) == 0, "mixer '%s': %s", mixer_at(i)->name, err);
}

// Softmax with one slot taken away: mixer_validate refuses it naming that slot.
#define CHECK_MISSING(slot, base)                                                                                      \
    do {                                                                                                               \
        MixerKind k_ = *mixer_find(base);                                                                              \
        k_.slot = NULL;                                                                                                \
        char err_[160] = "";                                                                                           \
        CHECK(mixer_validate(&k_, err_, sizeof err_) == -1 && strstr(err_, "'" #slot "'"),                             \
              "%s without " #slot ": '%s'", base, err_);                                                               \
    } while (0)

TEST(mixer_validate_names_a_missing_required_slot) {
    CHECK_MISSING(name, "softmax");
    CHECK_MISSING(summary, "softmax");
    CHECK_MISSING(create, "softmax");
    CHECK_MISSING(destroy, "softmax");
    CHECK_MISSING(params, "softmax");
    CHECK_MISSING(buffers, "softmax");
    CHECK_MISSING(forward, "softmax");
    CHECK_MISSING(backward, "softmax");
    char err[160];
    MixerKind k = *mixer_find("softmax");
    k.backward = NULL;
    CHECK(mixer_validate(&k, err, sizeof err) == -1 && !strcmp(err, "required slot 'backward' is NULL"), "'%s'", err);
}

// An optional group is all or nothing; a kind with every optional slot NULL is complete.
TEST(mixer_validate_takes_optional_groups_whole) {
    CHECK_MISSING(n_maps, "softmax");
    CHECK_MISSING(attention, "softmax");
    CHECK_MISSING(attention_values, "softmax");
    CHECK_MISSING(finish, "softmax");
    CHECK_MISSING(attention_qk, "softmax");  // THEORY_EXP needs it
    CHECK_MISSING(decay_rate, "decay");      // THEORY_DECAY needs it
    CHECK_MISSING(state_size, "softmax");
    CHECK_MISSING(step, "softmax");
    const MixerKind *s = mixer_find("softmax");
    // clang-format off
    MixerKind bare = {.name = s->name, .summary = s->summary, .create = s->create, .destroy = s->destroy,
                      .params = s->params, .buffers = s->buffers, .forward = s->forward, .backward = s->backward};
    // clang-format on
    char err[160] = "";
    CHECK(mixer_validate(&bare, err, sizeof err) == 0, "the required slots alone: '%s'", err);
}

// --- every registered mixer, through the interface --------------------------------------------

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

TEST(every_mixer_finish_reproduces_forward_from_its_maps) {
    Config cfg;
    test_config(&cfg, NULL);
    for (int i = 0; i < mixer_count(); i++) {
        MixerRig r;
        rig_init(&r, mixer_at(i)->name, &cfg, 8, 2, 2, 9, 1, 3, 16);
        rig_check_finish(&r, 1e-10);
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
        {"softmax", 2 * T * C},
        {"cog", 2 * T * C},
        {"relu2", 2 * T * C},
        {"gpam", 2 * T * C},                 // K and V caches
        {"linear", H * D * (D + 1)},         // S [D, D] and z [D] per head
        {"cosformer", H * 2 * D * (D + 1)},  // the same for the cos and the sin half
        {"identity", H * D * D},
        {"decay", H * D * D},                             // S [D, D] per head
        {"gla", H * (C / 2 / H) * (C / H)},               // S [dk, dv] per head, dk = C/2/H, dv = C/H
        {"mamba", (4 - 1) * (2 * C) + (2 * C) * 16},      // conv window (d_conv - 1) x E, h [E, d_state]
        {"h3", C * 64 + C * 2 * 64},                      // shift window [C, N], diagonal states [C, P, N], P = 2
        {"deltanet", H * D * D + (4 - 1) * 3 * C},        // S [D, D] per head (Zoology's count), conv window [3, 3C]
        {"gated_deltanet", H * D * D + (4 - 1) * 3 * C},  // the same: the decay and the gate add no state
        {"based", H * (1 + 16 + 16 * 16) * (D + 1)},      // S [1 + d + d^2, D + 1] per head, d = 16 (normaliser last)
        {"mamba2", (2 * C) * 16 + (4 - 1) * (2 * C + 2 * 16)},  // S [N, P] per head = E N (Zoology's 2 d N), conv window
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

// MixerKind.length_bound is the truth about each mixer: built for seq_len 12 and run on 9
// tokens, a mixer computes what the same mixer built for seq_len 9 computes, unless it declares
// a constant fixed to seq_len (./evaluate then refuses longer test cells for it). A new mixer
// whose function depends on seq_len fails here until it declares length_bound.
TEST(every_mixer_declares_length_bound_iff_seq_len_changes_its_function) {
    Config cfg;
    test_config(&cfg, NULL);
    const int C = 8, H = 2, B = 2, T = 9, T_long = 12;
    for (int i = 0; i < mixer_count(); i++) {
        const MixerKind *mk = mixer_at(i);
        MixerRig a, b;
        rig_init(&a, mk->name, &cfg, C, H, B, T, 1, 3, 17);
        rig_init(&b, mk->name, &cfg, C, H, B, T_long, 1, 3, 17);
        CHECK(a.n_params == b.n_params, "%s: parameters depend on seq_len", mk->name);
        for (int k = 0; k < a.n_params; k++) {  // the same draws: the shapes do not depend on seq_len
            CHECK(a.count[k] == b.count[k], "%s: %s depends on seq_len", mk->name, a.decl[k].name);
            memcpy(b.p[k], a.p[k], sizeof(real) * a.count[k]);
        }
        rig_loss(&a);
        MixerIO io = rig_io(&b);
        io.T = T;
        io.x = a.x;
        mk->forward(b.st, &io);
        double diff = 0;
        for (int e = 0; e < B * T * C; e++) diff = fmax(diff, fabs((double)io.y[e] - (double)a.y[e]));
        if (mk->length_bound)
            CHECK(diff > 1e-6, "%s declares length_bound '%s', yet seq_len 12 computes seq_len 9's function (diff %g)",
                  mk->name, mk->length_bound, diff);
        else
            CHECK(diff < 1e-12, "%s: seq_len 12 changes its outputs on 9 tokens by %g: declare MixerKind.length_bound",
                  mk->name, diff);
        rig_free(&a), rig_free(&b);
    }
    config_free(&cfg);
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
