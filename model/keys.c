#include "model/keys.h"

#include "core/keys.h"
#include "model/mixers/mixer.h"

void config_init_all(Config *c) {
    keys_set_choices("mixer", mixer_choices());
    config_init(c);
    keys_add(c);
    for (int i = 0; i < mixer_count(); i++)
        if (mixer_at(i)->options) config_add_keys(c, mixer_at(i)->options);
}
