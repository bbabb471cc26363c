// Fuzz target: config files (core/config.c). The input is a config file (includes resolve next
// to it, so `include = in.conf` nests itself); an input starting with byte 0x01 is instead a list
// of command-line `key=value` arguments, one a line. Properties: bad input exits 2 with one line
// (tests/fuzz/harness.c); a config that loads writes an effective config text that loads again
// to the same value for every key.
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "model/keys.h"
#include "tests/fuzz/fuzz.h"

static int g_stage;  // 1 while reloading the effective config: no error may happen there

static void check_round_trip(Config *a) {
    char *text = config_to_text(a);
    Config b;
    config_init_all(&b);
    g_stage = 1;
    config_load_text(&b, text, "effective config");
    g_stage = 0;
    for (int i = 0; i < a->n_keys; i++)
        if (strcmp(a->value[i], b.value[i]))
            fuzz_fail("key %s is '%s' but '%s' after writing and reloading", a->keys[i]->name, a->value[i], b.value[i]);
    free(text);
    config_free(&b);
}

static void load_file(void *path) {
    Config c;
    config_init_all(&c);
    config_load_file(&c, path);
    check_round_trip(&c);
    config_free(&c);
}

typedef struct {
    const char *data;
    size_t size;
} Input;

static void load_args(void *arg) {
    const Input *in = arg;
    char *text = malloc(in->size + 1);
    memcpy(text, in->data, in->size);
    text[in->size] = 0;
    char *argv[64];
    int argc = 0;
    for (char *s = text, *nl; s && argc < 64; s = nl) {
        nl = strchr(s, '\n');
        if (nl) *nl++ = 0;
        argv[argc++] = s;
    }
    Config c;
    config_init_all(&c);
    config_apply_args(&c, argc, argv);
    check_round_trip(&c);
    config_free(&c);
    free(text);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    g_stage = 0;
    int st;
    if (size > 0 && data[0] == 1) {
        Input in = {(const char *)data + 1, size - 1};
        st = fuzz_call(load_args, &in);
    } else {
        st = fuzz_call(load_file, (void *)fuzz_file("in.conf", data, size));
    }
    if (st == 2 && g_stage == 1) fuzz_fail("the effective config does not load again: %s", fuzz_message());
    return 0;
}
