// Linear attention without a feature map beyond the generic checks: the chunked form across
// several chunks, and the map being the plain signed scores q_i.k_j / sqrt(D).
#include <math.h>
#include <stdlib.h>

#include "core/io.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

TEST(identity_chunked_form_across_chunks) {
    MixerRig r;
    // T = 70: chunks of 64 and 6 rows. (Without decay a change at row t moves every later
    // output, so the roundoff of the finite differences grows with T; the kernel itself is checked
    // across three chunks in tests/test_decay.c.) D = 8: the RMSNorm of short vectors near zero
    // (rstd ~ 300 at D = 2) is as hard on them.
    rig_check_all("identity", NULL, 8, 1, 1, 70, 0, 2, 31);
    rig_setup(&r, "identity", NULL, 4, 2, 2, 150, 0, 2, 33);  // three chunks: maps and step
    rig_check_attention(&r, 1e-9);
    rig_check_step(&r, 1e-10);
    rig_free(&r);
}

TEST(identity_map_is_the_scaled_signed_scores) {
    MixerRig r;
    int H = 2, D = 4, T = 12;
    rig_setup(&r, "identity", NULL, 8, H, 1, T, 0, 2, 32);
    rig_loss(&r);
    MixerIO io = rig_io(&r);
    real *a = mallocCheck(sizeof(real) * T * T);
    int neg = 0;
    for (int h = 0; h < H; h++) {
        r.kind->attention(r.st, &io, 0, h, a);
        for (int i = 0; i < T; i++)
            for (int j = 0; j <= i; j++) {
                double q[4], k[4], v[4], qj[4], s = 0;
                rig_qkv(&r, 0, i, h, q, k, v);
                rig_qkv(&r, 0, j, h, qj, k, v);
                for (int d = 0; d < D; d++) s += q[d] * k[d];
                CHECK_CLOSE(a[i * T + j], s / 2, 1e-12);
                neg += a[i * T + j] < 0;
            }
    }
    CHECK(neg > 0, "signed: some weights are negative");
    free(a);
    rig_free(&r);
}
