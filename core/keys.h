// Every config key the programs know: the trainer's table (core/keys.c) plus each mixer's
// options (declared in the mixer's own file, collected through the registry).
#pragma once
#include "core/config.h"

// Declares all keys with their defaults.
void config_init_all(Config *c);
