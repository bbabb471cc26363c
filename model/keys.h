// Every config key the programs know: core/keys.c's table, its `mixer` key's choices from the
// registry, plus each mixer's options (declared in the mixer's own file, collected through the
// registry).
#pragma once
#include "core/config.h"

// Declares all keys with their defaults.
void config_init_all(Config *c);
