// Softmax attention beyond the generic checks: query blocks (T > 64) and row sums.
#include <math.h>
#include <stdlib.h>

#include "core/io.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

TEST(softmax_backward_across_query_blocks) {
    MixerRig r;
    rig_setup(&r, "softmax", NULL, 4, 1, 1, 70, 0, 2, 5);  // 70 rows: blocks of 64 and 6
    rig_check_grads(&r, 1e-6, 1e-8);
    rig_free(&r);
}

TEST(softmax_rows_are_distributions) {
    MixerRig r;
    rig_setup(&r, "softmax", NULL, 8, 2, 1, 66, 0, 2, 6);
    rig_check_attention(&r, 1e-10);
    rig_loss(&r);
    MixerIO io = rig_io(&r);
    real *a = mallocCheck(sizeof(real) * 66 * 66);
    r.kind->attention(r.st, &io, 0, 1, a);
    for (int i = 0; i < 66; i++) {
        double s = 0;
        for (int j = 0; j <= i; j++) {
            CHECK(a[i * 66 + j] >= 0);
            s += a[i * 66 + j];
        }
        CHECK_CLOSE(s, 1, 1e-12);
    }
    CHECK(a[0] == 1);
    free(a);
}
