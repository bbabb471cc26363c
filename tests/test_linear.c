// elu+1 linear attention beyond the generic checks: the chunked O(T) form against a plain fp64
// recurrence over several chunks (also where the 1e-6 in the denominator dominates), finite
// differences across chunks, the map and THEORY_LINEAR's phi(q), phi(k) against their
// definitions, the names and shapes of docs/design.md#tensor-names, and thread-count independence.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/mixers/linear_naive.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

static double phi(double x) { return x > 0 ? x + 1 : exp(x); }

// The plain recurrence (linear_elu1_naive) in fp64 against the chunked form's o (the
// attention_values outputs) and y = o Wproj^T + b. Head 1's queries are pushed to ~-25, so
// phi(q).z ~ 1e-9 and the 1e-6 dominates its denominators.
TEST(linear_chunked_form_matches_recurrence) {
    MixerRig r;
    int C = 8, H = 2, D = 4, B = 2, T = 150;  // chunks of 64, 64 and 22
    rig_setup(&r, "linear", NULL, C, H, B, T, 0, 2, 50);
    real *bias = rig_param(&r, "attn.qkv.bias");
    for (int d = 0; d < D; d++) bias[D + d] = -25;
    rig_loss(&r);
    MixerIO io = rig_io(&r);
    real *v = mallocCheck(sizeof(real) * T * 4 * C), *o = mallocCheck(sizeof(real) * T * 4 * C);
    double *att = mallocCheck(sizeof(double) * T * C);
    double *q = mallocCheck(sizeof(double) * T * D), *k = mallocCheck(sizeof(double) * T * D);
    double *vv = mallocCheck(sizeof(double) * T * D), *want = mallocCheck(sizeof(double) * T * D);
    double *mag = mallocCheck(sizeof(double) * T * D);
    int eps_dominated = 0;
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            CHECK(r.kind->attention_values(r.st, &io, b, h, v, o) == D);
            for (int t = 0; t < T; t++) rig_qkv(&r, b, t, h, q + t * D, k + t * D, vv + t * D);
            linear_elu1_naive(T, D, q, k, vv, want, mag);
            for (int t = 0; t < T; t++) {
                double den = 1e-6;  // the denominator, to count the rows the 1e-6 dominates
                for (int c = 0; c < D; c++) {
                    double z = 0;
                    for (int j = 0; j <= t; j++) z += phi(k[j * D + c]);
                    den += phi(q[t * D + c]) * z;
                }
                eps_dominated += den < 2e-6;
                for (int w = 0; w < D; w++) {
                    att[t * C + h * D + w] = want[t * D + w];
                    // relative to sum_j |a_ij v_j|: o can be tiny by cancellation
                    CHECK(fabs(o[t * D + w] - want[t * D + w]) <= 1e-13 * mag[t * D + w],
                          "b %d h %d t %d: %.17g vs %.17g", b, h, t, (double)o[t * D + w], want[t * D + w]);
                }
            }
        }
        const real *wp = rig_param(&r, "attn.proj.weight"), *bp = rig_param(&r, "attn.proj.bias");
        for (int t = 0; t < T; t++)
            for (int c = 0; c < C; c++) {
                double y = bp[c];
                for (int i = 0; i < C; i++) y += wp[c * C + i] * att[t * C + i];
                CHECK_CLOSE(r.y[((size_t)b * T + t) * C + c], y, 1e-12);
            }
    }
    CHECK(eps_dominated > T, "%d rows with the 1e-6 dominating", eps_dominated);
    rig_check_attention(&r, 1e-9);
    rig_check_step(&r, 1e-10);
    free(v), free(o), free(att), free(q), free(k), free(vv), free(want), free(mag);
    rig_free(&r);
}

TEST(linear_backward_across_chunks) {
    MixerRig r;
    // T = 70: chunks of 64 and 6 (the generic tests run T = 7, one chunk)
    rig_setup(&r, "linear", NULL, 8, 2, 1, 70, 0, 2, 51);
    rig_check_grads(&r, 1e-6, 1e-8);
    rig_free(&r);
}

// a_ij = phi(q_i).phi(k_j) / (phi(q_i).z_i + 1e-6): non-negative, rows summing to 1 - 1e-6/den_i;
// attention_qk's phi(q), phi(k) give the same rows up to that scale (what S(a) sees).
TEST(linear_map_and_theory_queries_and_keys) {
    MixerRig r;
    int C = 8, H = 2, D = 4, T = 12;
    rig_setup(&r, "linear", NULL, C, H, 1, T, 0, 2, 52);
    CHECK(r.kind->theory == THEORY_LINEAR && r.kind->attention_qk);
    rig_loss(&r);
    MixerIO io = rig_io(&r);
    real *a = mallocCheck(sizeof(real) * T * T);
    real *pq = mallocCheck(sizeof(real) * T * 4 * C), *pk = mallocCheck(sizeof(real) * T * 4 * C);
    for (int h = 0; h < H; h++) {
        r.kind->attention(r.st, &io, 0, h, a);
        CHECK(r.kind->attention_qk(r.st, &io, 0, h, pq, pk) == D);
        double z[4] = {0};
        for (int i = 0; i < T; i++) {
            double q[4], k[4], v[4], den = 1e-6, sum = 0, qk_sum = 0;
            rig_qkv(&r, 0, i, h, q, k, v);
            for (int d = 0; d < D; d++) {
                z[d] += phi(k[d]);
                den += phi(q[d]) * z[d];
                CHECK_CLOSE(pq[i * D + d], phi(q[d]), 1e-14);
                CHECK_CLOSE(pk[i * D + d], phi(k[d]), 1e-14);
            }
            for (int j = 0; j <= i; j++) {
                double qj[4], kj[4], vj[4], s = 0, sq = 0;
                rig_qkv(&r, 0, j, h, qj, kj, vj);
                for (int d = 0; d < D; d++) {
                    s += phi(q[d]) * phi(kj[d]);
                    sq += (double)pq[i * D + d] * pk[j * D + d];
                }
                CHECK_CLOSE(a[i * T + j], s / den, 1e-13);
                CHECK(a[i * T + j] > 0);
                sum += a[i * T + j];
                qk_sum += sq;
            }
            CHECK_CLOSE(sum, 1 - 1e-6 / den, 1e-13);
            for (int j = 0; j <= i; j++) {
                double sq = 0;
                for (int d = 0; d < D; d++) sq += (double)pq[i * D + d] * pk[j * D + d];
                CHECK_CLOSE(sq / qk_sum, a[i * T + j] / sum, 1e-13);
            }
        }
    }
    free(a), free(pq), free(pk);
    rig_free(&r);
}

TEST(linear_tensor_names_and_shapes) {
    MixerRig r;
    int C = 12, H = 3;
    rig_setup(&r, "linear", NULL, C, H, 1, 3, 0, 2, 53);
    const ParamDecl want[] = {
        {"attn.qkv.weight", 2, {3 * C, C}, INIT_NORMAL, 0, 0},
        {"attn.qkv.bias", 1, {3 * C}, INIT_ZERO, 0, 0},
        {"attn.proj.weight", 2, {C, C}, INIT_NORMAL_OUT, 0, 0},
        {"attn.proj.bias", 1, {C}, INIT_ZERO, 0, 0},
    };
    CHECK(r.n_params == 4, "%d tensors", r.n_params);
    for (int i = 0; i < 4; i++) {
        const ParamDecl *d = &r.decl[i];
        CHECK(!strcmp(d->name, want[i].name) && d->ndim == want[i].ndim && d->init == want[i].init, "tensor %d is %s",
              i, d->name);
        for (int j = 0; j < d->ndim; j++) CHECK(d->shape[j] == want[i].shape[j]);
    }
    CHECK(r.kind->n_maps && r.kind->n_maps(r.st) == H && r.kind->step && r.kind->attention_values && r.kind->flops);
    rig_free(&r);
}
