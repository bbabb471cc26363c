// The README is the front door: it must document every config key and every mixer.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/keys.h"
#include "model/mixers/mixer.h"
#include "tests/test.h"

TEST(readme_documents_every_key_and_mixer) {
    char *readme = read_file_text("README.md", NULL);
    CHECK(readme, "run the tests from the repository root");
    Config c;
    config_init_all(&c);
    char want[128];
    for (int i = 0; i < c.n_keys; i++) {
        snprintf(want, sizeof want, "`%s`", c.keys[i]->name);
        CHECK(strstr(readme, want), "README.md does not document the key %s", want);
    }
    for (int i = 0; i < mixer_count(); i++) {
        snprintf(want, sizeof want, "| `%s` |", mixer_at(i)->name);
        CHECK(strstr(readme, want), "README.md's mixer table lacks %s", want);
    }
    free(readme);
}
