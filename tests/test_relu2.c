// relu^2 attention beyond the generic checks: query blocks (T > 64), exact zeros wherever
// q.k / n + b <= 0, the bias option, and n = the configured seq_len whatever the call's length.
#include <math.h>
#include <stdlib.h>

#include "core/io.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

TEST(relu2_backward_across_query_blocks) {
    rig_check_all("relu2", NULL, 4, 1, 1, 70, 0, 2, 41);  // 70 rows: blocks of 64 and 6
}

// Head h's score q_i.k_j of a B = 1 rig, from its parameters.
static double score(MixerRig *r, int h, int i, int j) {
    double qi[8], ki[8], vi[8], qj[8], kj[8], vj[8], s = 0;
    rig_qkv(r, 0, i, h, qi, ki, vi);
    rig_qkv(r, 0, j, h, qj, kj, vj);
    for (int d = 0; d < r->dims.C / r->dims.H; d++) s += qi[d] * kj[d];
    return s;
}

// Every weight is relu(score / n + b)^2: exactly 0 where that is <= 0 or j > i.
static void check_weights(const char *opts, double bias, int *zeros, int *positive) {
    MixerRig r;
    int T = 12, H = 2;
    rig_setup(&r, "relu2", opts, 8, H, 1, T, 0, 2, 42);
    rig_loss(&r);
    MixerIO io = rig_io(&r);
    real *a = mallocCheck(sizeof(real) * T * T);
    *zeros = *positive = 0;
    for (int h = 0; h < H; h++) {
        r.kind->attention(r.st, &io, 0, h, a);
        for (int i = 0; i < T; i++)
            for (int j = 0; j < T; j++) {
                double s = j <= i ? score(&r, h, i, j) / T + bias : -1;
                if (s <= 0) {
                    CHECK(a[i * T + j] == 0, "a[%d][%d] = %g for score %g", i, j, (double)a[i * T + j], s);
                    *zeros += j <= i;
                } else {
                    CHECK_CLOSE(a[i * T + j], s * s, 1e-12);
                    CHECK(a[i * T + j] > 0);
                    (*positive)++;
                }
            }
    }
    free(a);
    rig_free(&r);
}

TEST(relu2_exact_zeros_and_bias) {
    int zeros, positive;
    check_weights(NULL, 0, &zeros, &positive);
    CHECK(zeros > 10 && positive > 10, "zeros %d, positive %d", zeros, positive);
    check_weights("relu2_bias=-0.3", -0.3, &zeros, &positive);
    CHECK(zeros > 10 && positive > 0, "zeros %d, positive %d", zeros, positive);
    check_weights("relu2_bias=100", 100, &zeros, &positive);
    CHECK(zeros == 0);
    check_weights("relu2_bias=-100", -100, &zeros, &positive);
    CHECK(positive == 0);
}

TEST(relu2_divides_by_the_configured_seq_len) {
    MixerRig r;
    int C = 8, T = 12, t = 5;
    rig_setup(&r, "relu2", NULL, C, 2, 1, T, 0, 2, 43);
    rig_loss(&r);
    real *y = mallocCheck(sizeof(real) * T * C);
    for (int i = 0; i < T * C; i++) y[i] = r.y[i];
    MixerIO io = rig_io(&r);
    io.T = t;  // a shorter call: the same n = 12, so the same first rows (causal)
    r.kind->forward(r.st, &io);
    for (int i = 0; i < t * C; i++) CHECK(r.y[i] == y[i], "row %d: %g vs %g", i / C, (double)r.y[i], (double)y[i]);
    real *a = mallocCheck(sizeof(real) * t * t);
    r.kind->attention(r.st, &io, 0, 1, a);
    CHECK_CLOSE(a[(t - 1) * t], fmax(score(&r, 1, t - 1, 0) / T, 0) * fmax(score(&r, 1, t - 1, 0) / T, 0), 1e-12);
    free(a), free(y);
    rig_free(&r);
}
