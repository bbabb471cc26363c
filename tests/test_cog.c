// Cog attention beyond the generic checks (which run a middle, signed layer): the plain softmax
// of the first and last layers picked by the layer index, signed weights with sum_j |a_ij| = 1
// against a direct computation, and query blocks (T > 64) in both modes.
#include <math.h>
#include <stdlib.h>

#include "core/io.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

TEST(cog_backward_across_query_blocks) {
    for (int layer = 0; layer < 2; layer++) {  // layer 0 of 3: softmax; layer 1: signed
        MixerRig r;
        rig_setup(&r, "cog", NULL, 4, 1, 1, 70, layer, 3, 51);  // 70 rows: blocks of 64 and 6
        // atol 3e-8: in softmax mode the key bias's gradient is exactly 0 (a shift of every key
        // leaves each row's softmax unchanged) and its finite difference is roundoff, ~1e-8 here
        rig_check_grads(&r, 1e-6, 3e-8);
        rig_check_attention(&r, 1e-9);
        rig_check_step(&r, 1e-10);
        rig_free(&r);
    }
}

// Cog at `layer` of 3 against softmax with the same parameters and inputs: identical outputs
// and maps when `softmax` says so, else different outputs and some negative weights.
static void check_layer(const char *opts, int layer, int softmax) {
    MixerRig c, s;
    int C = 8, H = 2, B = 2, T = 9;
    rig_setup(&c, "cog", opts, C, H, B, T, layer, 3, 52);
    rig_setup(&s, "softmax", opts, C, H, B, T, layer, 3, 52);
    rig_loss(&c);
    rig_loss(&s);
    double diff = 0;
    for (int i = 0; i < B * T * C; i++) diff = fmax(diff, fabs((double)c.y[i] - s.y[i]));
    MixerIO ci = rig_io(&c), si = rig_io(&s);
    real *a = mallocCheck(sizeof(real) * T * T), *p = mallocCheck(sizeof(real) * T * T);
    int neg = 0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            c.kind->attention(c.st, &ci, b, h, a);
            s.kind->attention(s.st, &si, b, h, p);
            for (int i = 0; i < T * T; i++) {
                if (softmax) CHECK_CLOSE(a[i], p[i], 1e-13);
                neg += a[i] < 0;
            }
        }
    if (softmax)
        CHECK(diff < 1e-13 && neg == 0, "layer %d: outputs differ by %g, %d negative weights", layer, diff, neg);
    else CHECK(diff > 1e-3 && neg > 0, "layer %d: outputs differ by %g, %d negative weights", layer, diff, neg);
    free(a), free(p);
    rig_free(&c), rig_free(&s);
}

TEST(cog_softmax_in_the_first_and_last_layer) {
    check_layer(NULL, 0, 1);
    check_layer(NULL, 1, 0);
    check_layer(NULL, 2, 1);
    check_layer("cog_softmax_ends=false", 0, 0);
    check_layer("cog_softmax_ends=false", 2, 0);
    // a `mixer` list says what each layer is: its Cog layers are signed, ends included
    check_layer("mixer=cog,cog,cog", 0, 0);
    check_layer("mixer=softmax,cog,cog", 2, 0);
    check_layer("mixer=cog", 0, 1);
}

TEST(cog_weights_are_signed_with_unit_absolute_sum) {
    MixerRig r;
    int H = 2, D = 4, T = 12;
    rig_setup(&r, "cog", NULL, 8, H, 1, T, 1, 3, 53);
    rig_loss(&r);
    MixerIO io = rig_io(&r);
    real *a = mallocCheck(sizeof(real) * T * T);
    double p[16];
    int neg = 0;
    for (int h = 0; h < H; h++) {
        r.kind->attention(r.st, &io, 0, h, a);
        for (int i = 0; i < T; i++) {
            double z = 0, abs_sum = 0, q[4], k[4], v[4], qj[4];
            rig_qkv(&r, 0, i, h, q, k, v);
            for (int j = 0; j <= i; j++) {  // p_ij = q_i.k_j / sqrt(D), from the parameters
                rig_qkv(&r, 0, j, h, qj, k, v);
                p[j] = 0;
                for (int d = 0; d < D; d++) p[j] += q[d] * k[d] / 2;
                z += exp(fabs(p[j]));
            }
            for (int j = 0; j <= i; j++) {
                CHECK_CLOSE(a[i * T + j], (p[j] > 0 ? 1 : -1) * exp(fabs(p[j])) / z, 1e-12);
                abs_sum += fabs((double)a[i * T + j]);
                neg += a[i * T + j] < 0;
            }
            CHECK_CLOSE(abs_sum, 1, 1e-12);
        }
    }
    CHECK(neg > 10, "only %d negative weights", neg);
    free(a);
    rig_free(&r);
}
