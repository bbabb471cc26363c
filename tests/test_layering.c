// The sources keep their layers (docs/design.md#layers): tests/layers.sh over the #include lines.
#include <string.h>

#include "tests/test.h"

TEST(layers_includes_follow_the_folders_order_and_modules_do_not_cycle) {
    char out[16384];
    int rc = test_run(out, sizeof out, "sh tests/layers.sh");
    CHECK(rc == 0, "tests/layers.sh (exit %d):\n%s", rc, out);
    CHECK(strstr(out, "layers.sh: ") != NULL, "%s", out);
}
