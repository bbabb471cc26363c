// The mixer registry: adding a mixer is one line in MIXER_LIST.
#include <string.h>

#include "core/io.h"
#include "model/mixers/mixer.h"

#define MIXER_LIST(X) \
    X(mixer_softmax) \
    X(mixer_linear) \
    X(mixer_gla) \
    X(mixer_mamba) \
    X(mixer_decay) \
    X(mixer_identity) \
    X(mixer_relu2) \
    X(mixer_cog) \
    X(mixer_cosformer) \
    X(mixer_gpam) \
    X(mixer_h3)

#define DECLARE(m) extern const MixerKind m;
MIXER_LIST(DECLARE)
#define ENTRY(m) &m,
static const MixerKind *const g_mixers[] = {MIXER_LIST(ENTRY)};

int mixer_count(void) { return (int)(sizeof g_mixers / sizeof g_mixers[0]); }

const MixerKind *mixer_at(int i) { return g_mixers[i]; }

const MixerKind *mixer_find(const char *name) {
    for (int i = 0; i < mixer_count(); i++)
        if (strcmp(g_mixers[i]->name, name) == 0) return g_mixers[i];
    return NULL;
}

const char *mixer_choices(void) {
    static char buf[512];
    if (!buf[0])
        for (int i = 0; i < mixer_count(); i++) {
            if (i) strcat(buf, "|");
            strcat(buf, g_mixers[i]->name);
        }
    return buf;
}
