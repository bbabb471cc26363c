// The mixer registry: adding a mixer is one line in MIXER_LIST (the rest of the checklist:
// docs/mixers.md#adding-a-mixer). Every entry is checked by mixer_validate on the registry's
// first use, so a mixer missing a required slot stops every program and the test runner at
// once, naming the mixer and the slot.
#include <stdio.h>
#include <string.h>

#include "core/io.h"
#include "model/mixers/mixer.h"

#define MIXER_LIST(X)                                                                                                  \
    X(mixer_softmax)                                                                                                   \
    X(mixer_linear)                                                                                                    \
    X(mixer_gla)                                                                                                       \
    X(mixer_mamba)                                                                                                     \
    X(mixer_decay)                                                                                                     \
    X(mixer_identity)                                                                                                  \
    X(mixer_relu2)                                                                                                     \
    X(mixer_cog)                                                                                                       \
    X(mixer_cosformer)                                                                                                 \
    X(mixer_gpam)                                                                                                      \
    X(mixer_h3)                                                                                                        \
    X(mixer_deltanet)                                                                                                  \
    X(mixer_gated_deltanet)                                                                                            \
    X(mixer_based)                                                                                                     \
    X(mixer_mamba2)

#define DECLARE(m) extern const MixerKind m;
MIXER_LIST(DECLARE)
#define ENTRY(m) &m,
static const MixerKind *const g_mixers[] = {MIXER_LIST(ENTRY)};

#define N_MIXERS ((int)(sizeof g_mixers / sizeof g_mixers[0]))

// Names the first missing slot of an all-or-none group: `what` says which group.
static int group(int present, int filled, const char *slot, const char *what, char *err, size_t errlen) {
    if (!present || filled) return 0;
    snprintf(err, errlen, "optional slot '%s' is NULL while %s", slot, what);
    return -1;
}

int mixer_validate(const MixerKind *k, char *err, size_t errlen) {
    const struct {
        const char *slot;
        int set;
    } required[] = {
        {"name", k->name && *k->name}, {"summary", k->summary && *k->summary},
        {"create", !!k->create},       {"destroy", !!k->destroy},
        {"params", !!k->params},       {"buffers", !!k->buffers},
        {"forward", !!k->forward},     {"backward", !!k->backward},
    };
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!required[i].set) {
            snprintf(err, errlen, "required slot '%s' is NULL", required[i].slot);
            return -1;
        }
    int maps = k->n_maps || k->attention || k->attention_values || k->finish;
    const char *maps_why = "another slot of the maps group (n_maps, attention, attention_values, finish) is set";
    if (group(maps, !!k->n_maps, "n_maps", maps_why, err, errlen) ||
        group(maps, !!k->attention, "attention", maps_why, err, errlen) ||
        group(maps, !!k->attention_values, "attention_values", maps_why, err, errlen) ||
        group(maps, !!k->finish, "finish", maps_why, err, errlen) ||
        group(!!k->value_window, !!k->attention, "attention", "value_window is set", err, errlen) ||
        group(k->theory != THEORY_NONE, !!k->attention, "attention", "theory is not THEORY_NONE", err, errlen) ||
        group(!!k->attention_qk, !!k->attention, "attention", "attention_qk is set", err, errlen) ||
        group(!!k->qk_width, !!k->attention_qk, "attention_qk", "qk_width is set", err, errlen))
        return -1;
    int needs_qk = k->theory == THEORY_EXP || k->theory == THEORY_LINEAR || k->theory == THEORY_RELU2;
    if (group(needs_qk, !!k->attention_qk, "attention_qk", "theory is EXP, LINEAR or RELU2", err, errlen) ||
        group(k->theory == THEORY_DECAY, !!k->decay_rate, "decay_rate", "theory is THEORY_DECAY", err, errlen))
        return -1;
    int gen = k->state_size || k->step;
    const char *gen_why = "another slot of the generation group (state_size, step) is set";
    if (group(gen, !!k->state_size, "state_size", gen_why, err, errlen) || group(gen, !!k->step, "step", gen_why, err, errlen))
        return -1;
    return 0;
}

// The table, validated once (the first call comes from the single-threaded start of a program).
static const MixerKind *const *registry(void) {
    static int checked;
    if (!checked) {
        char err[160];
        for (int i = 0; i < N_MIXERS; i++)
            if (mixer_validate(g_mixers[i], err, sizeof err))
                die("internal error: mixer '%s' (entry %d of MIXER_LIST): %s",
                    g_mixers[i]->name ? g_mixers[i]->name : "?", i + 1, err);
        checked = 1;
    }
    return g_mixers;
}

int mixer_count(void) { return N_MIXERS; }

const MixerKind *mixer_at(int i) { return registry()[i]; }

const MixerKind *mixer_find(const char *name) {
    for (int i = 0; i < N_MIXERS; i++)
        if (strcmp(registry()[i]->name, name) == 0) return registry()[i];
    return NULL;
}

const char *mixer_choices(void) {
    static char buf[512];
    if (!buf[0])
        for (int i = 0; i < mixer_count(); i++) {
            if (i) strcat(buf, "|");
            strcat(buf, mixer_at(i)->name);
        }
    return buf;
}

void mixer_put_outputs(real *out, size_t ld, int B, int T, int n_maps, int W, const real *o) {
#pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++)
        for (int m = 0; m < n_maps; m++)
            for (int t = 0; t < T; t++)
                memcpy(out + ((size_t)b * T + t) * ld + (size_t)m * W, o + (((size_t)b * n_maps + m) * T + t) * W,
                       sizeof(real) * W);
}
