// The programs' config keys: the trainer's table (core/keys.c). Core knows no mixer: the `mixer`
// key's choices are the registered mixers, set from the model layer (model/keys.h:
// config_init_all, which also adds each mixer's own options).
#pragma once
#include "core/config.h"

// Sets the choices ("a|b|c") of the table's KEY_ENUM key `name` (a name not in it is a bug: exits).
void keys_set_choices(const char *name, const char *choices);
// Adds the table's keys to c; every KEY_ENUM key must have its choices by then (else exits).
void keys_add(Config *c);
