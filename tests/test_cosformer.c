// cosFormer beyond the generic checks: the O(T) sin/cos form against the materialised map across
// several chunks, the map against its definition (rows sum to 1, M = the configured seq_len), and
// the clamp of the denominator at 1e-6 (no gradient through a clamped denominator).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

TEST(cosformer_linear_form_matches_map_across_chunks) {
    MixerRig r;
    // T = 70 (chunks of 64 and 6) for finite differences: every row after a change moves, so
    // their roundoff grows with T; maps and step over three chunks.
    rig_setup(&r, "cosformer", NULL, 8, 2, 1, 70, 0, 2, 61);
    rig_check_grads(&r, 1e-6, 1e-8);
    rig_free(&r);
    rig_setup(&r, "cosformer", NULL, 4, 2, 2, 150, 0, 2, 62);
    rig_check_attention(&r, 1e-9);
    rig_check_step(&r, 1e-10);
    rig_free(&r);
}

// Head h's relu(q_i) . relu(k_j) of a B = 1 rig, from its parameters.
static double relu_score(MixerRig *r, int h, int i, int j) {
    double qi[8], ki[8], vi[8], qj[8], kj[8], vj[8], s = 0;
    rig_qkv(r, 0, i, h, qi, ki, vi);
    rig_qkv(r, 0, j, h, qj, kj, vj);
    for (int d = 0; d < r->dims.C / r->dims.H; d++) s += fmax(qi[d], 0) * fmax(kj[d], 0);
    return s;
}

TEST(cosformer_map_is_the_reweighted_normalised_relu_kernel) {
    MixerRig r;
    int C = 8, H = 2, M = 12;
    rig_setup(&r, "cosformer", NULL, C, H, 1, M, 0, 2, 63);
    real *a = mallocCheck(sizeof(real) * M * M);
    for (int T = M; T >= 7; T -= 5) {  // a shorter call keeps M = seq_len = 12
        MixerIO io = rig_io(&r);
        io.T = T;
        r.kind->forward(r.st, &io);
        for (int h = 0; h < H; h++) {
            r.kind->attention(r.st, &io, 0, h, a);
            for (int i = 0; i < T; i++) {
                double den = 0, sum = 0;
                for (int j = 0; j <= i; j++) den += relu_score(&r, h, i, j) * cos(M_PI * (i - j) / (2 * M));
                if (den < 1e-6) continue;
                for (int j = 0; j <= i; j++) {
                    CHECK_CLOSE(a[i * T + j], relu_score(&r, h, i, j) * cos(M_PI * (i - j) / (2 * M)) / den, 1e-12);
                    CHECK(a[i * T + j] >= 0);
                    sum += a[i * T + j];
                }
                CHECK_CLOSE(sum, 1, 1e-12);
            }
        }
    }
    free(a);
    rig_free(&r);
}

// Keys ~3e-8 (and positive), so the denominators straddle the clamp: rows with den < 1e-6 give
// o = num / 1e-6 and no gradient through den. Finite differences on the key rows use a step of
// 1e-13, far below the keys themselves (the outputs depend on them through ~1/1e-6).
TEST(cosformer_clamped_denominator) {
    MixerRig r;
    int C = 8, H = 2, T = 9;
    rig_setup(&r, "cosformer", NULL, C, H, 1, T, 0, 2, 64);
    real *w = rig_param(&r, "attn.qkv.weight"), *b = rig_param(&r, "attn.qkv.bias");
    for (int i = C * C; i < 2 * C * C; i++) w[i] *= 3e-8;
    for (int i = C; i < 2 * C; i++) b[i] = (real)(3e-8 * (4 + fabs(b[i])));
    rig_loss(&r);
    MixerIO io = rig_io(&r);
    real *a = mallocCheck(sizeof(real) * T * T);
    int clamped = 0, normal = 0;
    for (int h = 0; h < H; h++) {
        r.kind->attention(r.st, &io, 0, h, a);
        for (int i = 0; i < T; i++) {
            double sum = 0;
            for (int j = 0; j <= i; j++) sum += a[i * T + j];
            if (sum < 1 - 1e-9) clamped++;
            else if (fabs(sum - 1) < 1e-12) normal++;
        }
    }
    CHECK(clamped >= 3 && normal >= 3, "%d clamped rows, %d normal ones", clamped, normal);
    rig_check_attention(&r, 1e-9);
    rig_check_step(&r, 1e-10);

    size_t n = (size_t)T * C;
    io.dy = r.R;
    io.dx = r.dx;
    memset(r.dx, 0, sizeof(real) * n);
    for (int k = 0; k < r.n_params; k++) memset(r.g[k], 0, sizeof(real) * r.count[k]);
    r.kind->backward(r.st, &io);
    real *gw = r.g[0], *gb = r.g[1];
    check_grad("d(input)", rig_loss, &r, r.x, r.dx, n, 1e-6, 1e-6, 1e-8);
    check_grad("d(q weight)", rig_loss, &r, w, gw, (size_t)C * C, 1e-6, 1e-6, 1e-8);
    check_grad("d(k weight)", rig_loss, &r, w + C * C, gw + C * C, (size_t)C * C, 1e-13, 1e-6, 1e-8);
    check_grad("d(v weight)", rig_loss, &r, w + 2 * C * C, gw + 2 * C * C, (size_t)C * C, 1e-6, 1e-6, 1e-8);
    check_grad("d(q bias)", rig_loss, &r, b, gb, C, 1e-6, 1e-6, 1e-8);
    check_grad("d(k bias)", rig_loss, &r, b + C, gb + C, C, 1e-13, 1e-6, 1e-8);
    check_grad("d(v bias)", rig_loss, &r, b + 2 * C, gb + 2 * C, C, 1e-6, 1e-6, 1e-8);
    for (int k = 2; k < r.n_params; k++)
        check_grad(r.decl[k].name, rig_loss, &r, r.p[k], r.g[k], r.count[k], 1e-6, 1e-6, 1e-8);
    free(a);
    rig_free(&r);
}
