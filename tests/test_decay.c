// Fixed-decay linear attention beyond the generic checks: the chunk kernel (model/mixers/linear_chunk.c,
// shared with identity and cosformer) against the plain sum and finite differences for several
// decays and lengths, the mixer across several chunks (finite differences, maps, step), the
// per-head gammas and the option, and the closed form of docs/sparsity.md#closed-forms when q.k is
// constant.
#include <math.h>
#include <stdlib.h>

#include "core/io.h"
#include "eval/sparsity.h"
#include "model/mixers/linear_chunk.h"
#include "model/mixers/linear_naive.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

typedef struct {
    int T, K, W;
    real g, scale;
    real *Q, *Kt, *V, *O, *R, *work;
} Kernel;

// sum(O * R) of the kernel's output.
static double kernel_loss(void *ctx) {
    Kernel *k = ctx;
    lin_chunk_forward(k->T, k->K, k->W, k->g, k->scale, k->Q, k->K, k->Kt, k->K, k->V, k->W, k->O, k->W, k->work);
    double s = 0;
    for (int i = 0; i < k->T * k->W; i++) s += (double)k->O[i] * k->R[i];
    return s;
}

TEST(linear_chunk_matches_plain_sum_and_finite_differences) {
    const int lengths[] = {1, 63, 64, 65, 150};
    const double decays[] = {1, 0.96875, 0.5};
    Rng rng;
    rng_seed(&rng, 20);
    for (int li = 0; li < 5; li++)
        for (int gi = 0; gi < 3; gi++) {
            int T = lengths[li], K = 3, W = 2;
            Kernel k = {T, K, W, (real)decays[gi], (real)0.7, NULL, NULL, NULL, NULL, NULL, NULL};
            k.Q = mallocCheck(sizeof(real) * T * K), k.Kt = mallocCheck(sizeof(real) * T * K);
            k.V = mallocCheck(sizeof(real) * T * W), k.O = mallocCheck(sizeof(real) * T * W);
            k.R = mallocCheck(sizeof(real) * T * W);
            k.work = mallocCheck(sizeof(real) * lin_chunk_work(K, W));
            fill_normal(k.Q, (size_t)T * K, &rng, 1), fill_normal(k.Kt, (size_t)T * K, &rng, 1);
            fill_normal(k.V, (size_t)T * W, &rng, 1), fill_normal(k.R, (size_t)T * W, &rng, 1);
            kernel_loss(&k);
            double *want = mallocCheck(sizeof(double) * T * W);
            lin_decay_naive(T, K, W, decays[gi], 0.7, k.Q, k.Kt, k.V, want);
            for (int i = 0; i < T * W; i++) CHECK_CLOSE(k.O[i], want[i], 1e-12);
            free(want);
            real *dQ = callocCheck((size_t)T * K, sizeof(real)), *dK = callocCheck((size_t)T * K, sizeof(real));
            real *dV = callocCheck((size_t)T * W, sizeof(real));
            lin_chunk_backward(T, K, W, k.g, k.scale, k.Q, K, k.Kt, K, k.V, W, k.R, W, dQ, dK, dV, k.work);
            // The loss is linear in each single entry, so a large step has no truncation error
            // and keeps the roundoff of 150-row sums (~eps * 3000 / h) far below the tolerance.
            check_grad("dQ", kernel_loss, &k, k.Q, dQ, (size_t)T * K, 1e-3, 1e-6, 1e-8);
            check_grad("dK", kernel_loss, &k, k.Kt, dK, (size_t)T * K, 1e-3, 1e-6, 1e-8);
            check_grad("dV", kernel_loss, &k, k.V, dV, (size_t)T * W, 1e-3, 1e-6, 1e-8);
            free(k.Q), free(k.Kt), free(k.V), free(k.O), free(k.R), free(k.work), free(dQ), free(dK), free(dV);
        }
}

TEST(decay_chunked_form_across_chunks) {
    rig_check_all("decay", NULL, 4, 2, 1, 150, 0, 2, 21);  // chunks of 64, 64 and 22 rows
    // fast decay: g^63 ~ 1e-19 inside a chunk
    rig_check_all("decay", "decay_gamma=0.5", 4, 2, 2, 130, 1, 3, 22);
}

TEST(decay_gamma_per_head_and_option) {
    MixerRig r;
    rig_setup(&r, "decay", NULL, 8, 4, 1, 5, 0, 2, 23);
    CHECK(r.kind->theory == THEORY_DECAY);
    for (int h = 0; h < 4; h++) CHECK(r.kind->decay_rate(r.st, h) == 1 - ldexp(1, -5 - h));
    CHECK_CLOSE(r.kind->decay_rate(r.st, 0), 0.96875, 0);
    rig_free(&r);
    rig_setup(&r, "decay", "decay_gamma=0.9", 8, 4, 1, 5, 0, 2, 23);
    for (int h = 0; h < 4; h++) CHECK(r.kind->decay_rate(r.st, h) == 0.9);
    rig_free(&r);
}

// q_t = k_t = c at every position (W_q = W_k = 0, equal biases), so q_i.k_j is one constant and
// a_ij = const * gamma^(i-j): S of row i must be the closed form with n = i + 1.
static void check_closed_form(const char *opts, int H, int T) {
    MixerRig r;
    int C = 8;
    rig_setup(&r, "decay", opts, C, H, 1, T, 0, 2, 24);
    real *w = rig_param(&r, "attn.qkv.weight"), *b = rig_param(&r, "attn.qkv.bias");
    for (int i = 0; i < 2 * C * C; i++) w[i] = 0;
    for (int c = 0; c < C; c++) b[C + c] = b[c];
    rig_loss(&r);
    MixerIO io = rig_io(&r);
    real *a = mallocCheck(sizeof(real) * T * T);
    for (int h = 0; h < H; h++) {
        r.kind->attention(r.st, &io, 0, h, a);
        double l = r.kind->decay_rate(r.st, h);
        for (int i = 0; i < T; i++) {
            int n = i + 1;
            double l1 = 0, l2 = 0;
            for (int j = 0; j <= i; j++) l1 += fabs((double)a[i * T + j]), l2 += (double)a[i * T + j] * a[i * T + j];
            double S = (l1 / n) / sqrt(l2 / n);
            double want = sqrt((1 - pow(l, n)) / (n * (1 - l)) * (1 + l) / (1 + pow(l, n)));
            CHECK(fabs(S - want) <= 1e-9, "gamma %g n %d: S %.15g, closed form %.15g", l, n, S, want);
            RowStats st;  // the evaluator's S and its prediction agree too
            CHECK(sparsity_row(a + i * T, n, &st));
            CHECK(fabs(st.S - want) <= 1e-9 && fabs(theory_decay_S(l, n) - want) <= 1e-12);
        }
    }
    free(a);
    rig_free(&r);
}

TEST(decay_sparsity_matches_closed_form_when_qk_is_constant) {
    check_closed_form(NULL, 4, 100);
    check_closed_form("decay_gamma=0.5", 1, 40);
}
