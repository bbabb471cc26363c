// GPAM beyond the generic checks: query blocks (T > 64), the map against its definition from the
// parameters (two softmaxes, rows summing to 1, negative weights once lambda is large), lambda's
// initial value, softmax attention recovered as lambda -> 0, tensor names.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

// 70 rows: blocks of 64 and 6. The losses here are ~30 over 280 to 560 outputs, so a step of 1e-6
// leaves ~1e-5 relative roundoff in the finite differences (measured: 1.8e-5 at 1e-6, 1.5e-6 at
// 1e-5, falling with the step as roundoff does); 1e-5 keeps truncation and roundoff both small.
static void check_blocks(int C, int H, uint64_t seed, double rho0, double rho1) {
    MixerRig r;
    rig_setup(&r, "gpam", NULL, C, H, 1, 70, 0, 2, seed);
    real *rho = rig_param(&r, "attn.lambda_rho");
    if (rho0 != 0) rho[0] = rho0, rho[H - 1] = rho1;
    rig_check_grads_h(&r, 1e-5, 1e-6, 1e-8);
    rig_check_attention(&r, 1e-9);
    rig_check_step(&r, 1e-10);
    rig_free(&r);
}

TEST(gpam_backward_across_query_blocks) {
    check_blocks(4, 1, 71, 0, 0);     // lambda 0.1 (init)
    check_blocks(8, 2, 72, 1.5, -1);  // lambda 1.70 and 0.31: strongly signed rows
}

TEST(gpam_weights_are_the_affine_combination_of_two_softmaxes) {
    MixerRig r;
    int C = 8, H = 2, D = 4, T = 12;
    rig_setup(&r, "gpam", NULL, C, H, 1, T, 0, 2, 73);
    real *rho = rig_param(&r, "attn.lambda_rho");
    for (int h = 0; h < H; h++) CHECK_CLOSE(log1p(exp(rho[h])), 0.1, 1e-12);  // lambda at init
    rho[0] = 1, rho[1] = 2;
    rig_loss(&r);
    MixerIO io = rig_io(&r);
    const real *wn = rig_param(&r, "attn.q_neg.weight"), *bn = rig_param(&r, "attn.q_neg.bias");
    real *a = mallocCheck(sizeof(real) * T * T);
    int neg = 0;
    for (int h = 0; h < H; h++) {
        double lam = log1p(exp(rho[h]));
        r.kind->attention(r.st, &io, 0, h, a);
        for (int i = 0; i < T; i++) {
            double q[4], k[4], v[4], qn[4], sp[12], sn[12], zp = 0, zn = 0, sum = 0;
            rig_qkv(&r, 0, i, h, q, k, v);
            for (int d = 0; d < D; d++) {
                qn[d] = bn[h * D + d];
                for (int c = 0; c < C; c++) qn[d] += (double)wn[(h * D + d) * C + c] * r.x[i * C + c];
            }
            for (int j = 0; j <= i; j++) {
                double qj[4], kj[4], vj[4];
                rig_qkv(&r, 0, j, h, qj, kj, vj);
                sp[j] = sn[j] = 0;
                for (int d = 0; d < D; d++) sp[j] += q[d] * kj[d] / 2, sn[j] += qn[d] * kj[d] / 2;
                zp += exp(sp[j]), zn += exp(sn[j]);
            }
            for (int j = 0; j <= i; j++) {
                double want = (1 + lam) * exp(sp[j]) / zp - lam * exp(sn[j]) / zn;
                CHECK_CLOSE(a[i * T + j], want, 1e-12);
                sum += a[i * T + j];
                neg += a[i * T + j] < 0;
            }
            CHECK_CLOSE(sum, 1, 1e-12);
        }
    }
    CHECK(neg > 10, "only %d negative weights", neg);
    free(a);
    rig_free(&r);
}

// With lambda ~ 1e-13 GPAM is softmax attention with the same q/k/v and output tensors.
TEST(gpam_is_softmax_as_lambda_goes_to_zero) {
    MixerRig g, s;
    int C = 8, H = 2, B = 2, T = 70;
    rig_setup(&g, "gpam", NULL, C, H, B, T, 0, 2, 74);
    rig_setup(&s, "softmax", NULL, C, H, B, T, 0, 2, 74);  // same seed: the same first 4 tensors
    for (int i = 0; i < 4; i++) CHECK(!memcmp(g.p[i], s.p[i], sizeof(real) * g.count[i]));
    memcpy(s.x, g.x, sizeof(real) * B * T * C);
    real *rho = rig_param(&g, "attn.lambda_rho");
    rho[0] = rho[1] = -30;
    rig_loss(&g);
    rig_loss(&s);
    for (int i = 0; i < B * T * C; i++) CHECK_CLOSE(g.y[i], s.y[i], 1e-11);
    rig_free(&g), rig_free(&s);
}

TEST(gpam_tensor_names_and_shapes) {
    MixerRig r;
    int C = 12, H = 3;
    rig_setup(&r, "gpam", NULL, C, H, 1, 3, 0, 2, 75);
    const char *names[] = {"attn.qkv.weight",   "attn.qkv.bias",   "attn.proj.weight", "attn.proj.bias",
                           "attn.q_neg.weight", "attn.q_neg.bias", "attn.lambda_rho"};
    const int rows[] = {3 * C, 3 * C, C, C, C, C, H};
    CHECK(r.n_params == 7, "%d tensors", r.n_params);
    for (int i = 0; i < 7; i++)
        CHECK(!strcmp(r.decl[i].name, names[i]) && r.decl[i].shape[0] == rows[i], "tensor %d is %s", i, r.decl[i].name);
    CHECK(r.decl[6].no_decay && r.kind->n_maps && r.kind->n_maps(r.st) == H && r.kind->step && r.kind->flops);
    rig_free(&r);
}
