// The sparsity evaluator (eval/sparsity.c): S of known rows, the closed forms against direct
// computation and a Monte-Carlo measurement, the pass over a dataset against a brute-force
// recomputation, row subsets, batching and thread-count invariance, and the jsonl records.
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/json.h"
#include "core/rng.h"
#include "eval/answer.h"
#include "eval/maps.h"
#include "eval/sparsity.h"
#include "eval/val_eval.h"
#include "model/model.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

TEST(sparsity_of_known_rows) {
    real a[512];
    RowStats st;
    for (int n = 1; n <= 512; n += 37) {
        // one-hot anywhere in the row: 1/sqrt(n), entropy 0, max weight 1
        memset(a, 0, sizeof a);
        a[n / 2] = (real)0.7;
        CHECK(sparsity_row(a, n, &st));
        CHECK_CLOSE(st.S, 1 / sqrt((double)n), 1e-12);
        CHECK_CLOSE(st.max_weight, 1, 1e-12);
        if (n > 1) CHECK_CLOSE(st.entropy, 0, 1e-12);
        // flat: 1, entropy 1, max weight 1/n (any scale)
        for (int j = 0; j < n; j++) a[j] = (real)3.5;
        CHECK(sparsity_row(a, n, &st));
        CHECK_CLOSE(st.S, 1, 1e-12);
        CHECK_CLOSE(st.entropy, 1, 1e-12);
        CHECK_CLOSE(st.max_weight, 1.0 / n, 1e-12);
        CHECK_CLOSE(st.neg_mass, 0, 0);
    }
    // geometric decay a_ij = lambda^(i-j): the closed form of docs/sparsity.md#closed-forms
    const double lambdas[] = {0, 0.3, 0.9, 0.99, 0.999, 1};
    const int ns[] = {1, 2, 7, 64, 500};
    for (int li = 0; li < 6; li++)
        for (int ni = 0; ni < 5; ni++) {
            int n = ns[ni];
            double lam = lambdas[li];
            for (int j = 0; j < n; j++) a[j] = (real)pow(lam, n - 1 - j);
            CHECK(sparsity_row(a, n, &st));
            CHECK(fabs(st.S - theory_decay_S(lam, n)) < 1e-12, "lambda %g n %d: S %.17g closed form %.17g", lam, n,
                  st.S, theory_decay_S(lam, n));
        }
    // a two-level row by hand: weights (2, 1, 1, 0): S = (4/4)/sqrt(6/4)
    real b[4] = {2, -1, 1, 0};
    CHECK(sparsity_row(b, 4, &st));
    CHECK_CLOSE(st.S, 1 / sqrt(1.5), 1e-12);
    CHECK_CLOSE(st.max_weight, 0.5, 1e-12);
    CHECK_CLOSE(st.neg_mass, 0.25, 1e-12);  // signed mixers: |negative| share of the mass
    CHECK_CLOSE(st.entropy, -(0.5 * log(0.5) + 2 * 0.25 * log(0.25)) / log(4.0), 1e-12);
    // an all-zero row is skipped
    memset(a, 0, sizeof a);
    CHECK(!sparsity_row(a, 10, &st));
}

// Effective tokens n S^2: 1 for a one-hot row at any length, n for a flat one, k for k equal
// weights: the number of tokens a row with that S spreads over.
TEST(sparsity_effective_tokens_of_known_rows) {
    real a[300];
    RowStats st;
    for (int n = 1; n <= 300; n += 23) {
        memset(a, 0, sizeof a);
        a[n - 1] = (real)-2;
        CHECK(sparsity_row(a, n, &st));
        CHECK_CLOSE(n * st.S * st.S, 1, 1e-12);
        for (int j = 0; j < n; j++) a[j] = (real)0.25;
        CHECK(sparsity_row(a, n, &st));
        CHECK_CLOSE(n * st.S * st.S, n, 1e-9);
        int k = (n + 2) / 3;
        memset(a, 0, sizeof a);
        for (int j = 0; j < k; j++) a[n - 1 - j] = (real)1.5;
        CHECK(sparsity_row(a, n, &st));
        CHECK_CLOSE(n * st.S * st.S, k, 1e-9);
    }
}

// S of a softmax row over n keys drawn N(mu, Sigma) with an anisotropic Sigma, averaged over rows.
// Each row draws q, mu and a diagonal-plus-rank-one Sigma; the keys are mu + A z with A A' = Sigma.
static double softmax_row_S(const double *x, int n, real *a) {
    double mx = -INFINITY;
    for (int j = 0; j < n; j++) mx = x[j] > mx ? x[j] : mx;
    for (int j = 0; j < n; j++) a[j] = (real)exp(x[j] - mx);  // unnormalised: S is scale-free
    RowStats st;
    CHECK(sparsity_row(a, n, &st));
    return st.S;
}

// Keys with full covariance: the scores' moments from the keys give gamma^2 = q' Sigma q, and
// S_inf = exp(-gamma^2 / 2) matches softmax over n = 4096 such keys; S_n matches at n = 4096 too.
TEST(softmax_Sinf_uses_the_full_covariance) {
    enum { T = 4096, K = 8, ROWS = 24 };
    real *q = mallocCheck(sizeof(real) * T * K), *k = mallocCheck(sizeof(real) * T * K), *a = mallocCheck(sizeof(real) * T);
    double *beta = mallocCheck(sizeof(double) * T), *g2 = mallocCheck(sizeof(double) * T),
           *x = mallocCheck(sizeof(double) * T);
    Rng rng;
    rng_seed(&rng, 2024);
    double meas = 0, pinf = 0, pn = 0, exact = 0;
    for (int r = 0; r < ROWS; r++) {
        double mu[K], qv[K], u[K], diag[K];
        for (int d = 0; d < K; d++)
            mu[d] = rng_normal(&rng), qv[d] = rng_normal(&rng), u[d] = rng_normal(&rng), diag[d] = 0.2 + d * 0.3;
        // Sigma = diag^2 + u u'; scale q so that q' Sigma q = 0.6
        double qs = 0, qu = 0;
        for (int d = 0; d < K; d++) qs += qv[d] * qv[d] * diag[d] * diag[d], qu += qv[d] * u[d];
        double scale = sqrt(0.6 / (qs + qu * qu));
        for (int d = 0; d < K; d++) qv[d] *= scale;
        for (int t = 0; t < T; t++) {
            double c = rng_normal(&rng);
            for (int d = 0; d < K; d++) {
                k[t * K + d] = (real)(mu[d] + diag[d] * rng_normal(&rng) + u[d] * c);
                q[t * K + d] = (real)qv[d];
            }
        }
        theory_score_moments(q, k, T, K, beta, g2);
        for (int j = 0; j < T; j++) {
            double s = 0;
            for (int d = 0; d < K; d++) s += qv[d] * (double)k[j * K + d];
            x[j] = s;
        }
        meas += softmax_row_S(x, T, a) / ROWS;  // the last row sees all n = 4096 keys
        pinf += theory_softmax_Sinf(g2[T - 1]) / ROWS;
        pn += theory_softmax_Sn(T, sqrt(g2[T - 1])) / ROWS;
        exact += exp(-0.3) / ROWS;
    }
    CHECK(fabs(pinf / exact - 1) < 0.01, "S_inf from the keys %g vs exp(-0.6/2) = %g", pinf, exact);
    CHECK(fabs(meas / pinf - 1) < 0.01, "measured S %g, S_inf %g", meas, pinf);
    CHECK(fabs(meas / pn - 1) < 0.01, "measured S %g, S_n %g", meas, pn);
    free(q), free(k), free(a), free(beta), free(g2), free(x);
}

// S_n against an independent Monte Carlo (another generator, 100000 rows) at short lengths, where
// it is far above the n -> infinity limit: within 1%. Its stated standard error is small.
TEST(softmax_Sn_matches_an_independent_monte_carlo) {
    const int ns[] = {2, 5, 17, 64, 100};  // 100: between the tables of 90 and 108
    const double gammas[] = {0.3, 1.0, 2.0, 3.7, 7.3, 11.3};
    real a[100];
    double x[100];
    Rng rng;
    rng_seed(&rng, 99);
    for (int ni = 0; ni < 5; ni++)
        for (int gi = 0; gi < 6; gi++) {
            int n = ns[ni];
            double g = gammas[gi], mc = 0;
            enum { M = 100000 };
            for (int s = 0; s < M; s++) {
                for (int j = 0; j < n; j++) x[j] = g * rng_normal(&rng);
                mc += softmax_row_S(x, n, a) / M;
            }
            double sn = theory_softmax_Sn(n, g), se = theory_softmax_Sn_se(n, g);
            CHECK(fabs(sn / mc - 1) < 0.01, "n %d gamma %g: S_n %g vs Monte Carlo %g", n, g, sn, mc);
            CHECK(se < 0.003, "n %d gamma %g: standard error %g", n, g, se);
            if (n == 17 && g == 2.0) CHECK(sn > 0.4 && theory_softmax_Sinf(4) < 0.14, "n 17, gamma^2 4: %g", sn);
        }
    // n = 1 is one weight: S = 1; above the grid (gamma > 32) the last point, within 6% of one-hot
    CHECK(theory_softmax_Sn(1, 3) == 1);
    CHECK(theory_softmax_Sn(64, 40) == theory_softmax_Sn(64, 32) && theory_softmax_Sn(64, 40) * 8 - 1 < 0.06 &&
              theory_softmax_Sn(64, 40) > 0.125,
          "%g", theory_softmax_Sn(64, 40));
    // deterministic: the same value whatever was asked before
    CHECK(theory_softmax_Sn(17, 1.23) == theory_softmax_Sn(17, 1.23));
}

// relu^2 and identity: the closed forms against a Monte Carlo of their own assumption (scores
// N(beta, gamma^2), S = mean|a| / sqrt(mean a^2) over 400000 draws): within 1%.
TEST(relu2_and_identity_closed_forms_match_monte_carlo) {
    const double cases[][2] = {{0, 1}, {0.5, 1}, {-0.5, 1}, {2, 0.7}, {-1.2, 1}, {0.01, 0.002}, {1, 0.05}};
    Rng rng;
    rng_seed(&rng, 3);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        double beta = cases[c][0], gamma = cases[c][1];
        double r1 = 0, r2 = 0, i1 = 0, i2 = 0;
        enum { M = 400000 };
        for (int s = 0; s < M; s++) {
            double x = beta + gamma * rng_normal(&rng), r = x > 0 ? x * x : 0;
            r1 += r, r2 += r * r, i1 += fabs(x), i2 += x * x;
        }
        double relu_mc = (r1 / M) / sqrt(r2 / M), id_mc = (i1 / M) / sqrt(i2 / M);
        CHECK(fabs(theory_relu2_S(beta, gamma) / relu_mc - 1) < 0.01, "relu2 beta %g gamma %g: %g vs %g", beta, gamma,
              theory_relu2_S(beta, gamma), relu_mc);
        CHECK(fabs(theory_identity_S(beta, gamma) / id_mc - 1) < 0.01, "identity beta %g gamma %g: %g vs %g", beta,
              gamma, theory_identity_S(beta, gamma), id_mc);
    }
    CHECK_CLOSE(theory_identity_S(0, 1), sqrt(2 / M_PI), 1e-12);  // the seed's minimum
    CHECK(theory_relu2_S(1, 0) == 1 && isnan(theory_relu2_S(-1, 0)));
}

// The per-row score moments against a direct two-pass computation.
TEST(theory_score_moments_match_direct_prefix_statistics) {
    enum { T = 23, K = 5 };
    real q[T * K], k[T * K];
    double beta[T], g2[T];
    Rng rng;
    rng_seed(&rng, 7);
    for (int i = 0; i < T * K; i++) q[i] = (real)rng_normal(&rng), k[i] = (real)(1 + 0.5 * rng_normal(&rng));
    theory_score_moments(q, k, T, K, beta, g2);
    for (int i = 0; i < T; i++) {
        int n = i + 1;
        double x[T], mean = 0, var = 0;
        for (int j = 0; j < n; j++) {
            x[j] = 0;
            for (int d = 0; d < K; d++) x[j] += (double)q[i * K + d] * (double)k[j * K + d];
            mean += x[j] / n;
        }
        for (int j = 0; j < n; j++) var += (x[j] - mean) * (x[j] - mean) / n;
        CHECK_CLOSE(beta[i], mean, 1e-12);
        CHECK_CLOSE(g2[i], var, 1e-10);
    }
}

// For non-negative linear attention a_ij = phi(q_i).phi(k_j) / sum_l phi(q_i).phi(k_l), the
// prefix form is an identity (a consistency check): it equals the measured S of every row, in
// both of its forms: the prefix covariance (T = 40 rows of K = 6) and the scores' moments (T = 12
// of K = 30, more features than half the rows).
static void check_linear_rows_exact(int T, int K, uint64_t seed) {
    real *q = malloc(sizeof(real) * T * K), *k = malloc(sizeof(real) * T * K), *a = malloc(sizeof(real) * T);
    double *pred = malloc(sizeof(double) * T);
    Rng rng;
    rng_seed(&rng, seed);
    for (int i = 0; i < T * K; i++) q[i] = (real)exp(rng_normal(&rng)), k[i] = (real)exp(rng_normal(&rng));
    theory_linear_rows(q, k, T, K, pred);
    for (int i = 0; i < T; i++) {
        double z = 0;
        for (int j = 0; j <= i; j++) {
            double s = 0;
            for (int d = 0; d < K; d++) s += (double)q[i * K + d] * (double)k[j * K + d];
            a[j] = (real)s;
            z += s;
        }
        for (int j = 0; j <= i; j++) a[j] = (real)((double)a[j] / z);
        RowStats st;
        CHECK(sparsity_row(a, i + 1, &st));
        CHECK_CLOSE(pred[i], st.S, 1e-12);
    }
    free(q), free(k), free(a), free(pred);
}

TEST(linear_check_is_exact_for_positive_features) {
    check_linear_rows_exact(40, 6, 11);   // T K^2: the prefix covariance
    check_linear_rows_exact(12, 30, 12);  // T^2 K / 2: the scores' moments
}

// --- where the weight lands ----------------------------------------------------------------------

TEST(answer_metrics_of_hand_built_rows) {
    // an MQAR sequence: pairs (5,40) (7,41) (9,42), filler, then the query 7 at position 8
    int in[10] = {5, 40, 7, 41, 9, 42, 0, 0, 7, 0};
    CHECK(answer_value_pos(in, 8, 41) == 3);
    CHECK(answer_value_pos(in, 8, 42) == -1);  // the query's key is not followed by that value
    CHECK(answer_value_pos(in, 2, 41) == -1);  // nothing before the pair itself
    double w[16];
    AnswerStats st;
    // one-hot on the answer
    real onehot[9] = {0, 0, 0, 2.5, 0, 0, 0, 0, 0};
    CHECK(answer_row(onehot, 9, 3, 1, w, &st));
    CHECK(st.ans_share == 1 && st.key_share == 0 && st.hit == 1 && st.rank == 1 && st.top1 == 1 && st.top4 == 1 &&
          st.n90 == 1);
    CHECK(st.key_pos == 2 && st.value_pos == 3);
    // signed weights: |a| counts; the key holds the most
    real row[9] = {0.1, 0, -0.5, 0.3, 0.1, 0, 0, 0, 0};  // sum |a| = 1.0
    CHECK(answer_row(row, 9, 3, 1, w, &st));
    CHECK_CLOSE(st.ans_share, 0.3, 1e-6);
    CHECK_CLOSE(st.key_share, 0.5, 1e-6);
    CHECK(st.hit == 0 && st.rank == 2);
    CHECK_CLOSE(st.top1, 0.5, 1e-6);
    CHECK_CLOSE(st.top4, 1.0, 1e-6);
    CHECK(st.n90 == 3, "n90 %d", st.n90);  // 0.5 + 0.3 + 0.1
    // flat over 10: share 0.1, rank 1 (nothing holds more), hit (the first maximum is position 0,
    // so not the answer at 3), n90 = 9
    real flat[10];
    for (int j = 0; j < 10; j++) flat[j] = (real)0.1;
    CHECK(answer_row(flat, 10, 3, 1, w, &st));
    CHECK_CLOSE(st.ans_share, 0.1, 1e-6);
    CHECK(st.rank == 1 && st.hit == 0 && st.n90 == 9, "rank %d hit %d n90 %d", st.rank, st.hit, st.n90);
    CHECK_CLOSE(st.top4, 0.4, 1e-6);
    real zero[4] = {0};
    CHECK(!answer_row(zero, 4, 1, 1, w, &st));
    // the same statistics on a row of 64 (insertion sort) and of 100 (qsort): weights j + 1 in a
    // scrambled order, so top1 = n / S, top4 = (4n - 6) / S with S = n (n + 1) / 2
    for (int n = 64; n <= 100; n += 36) {
        real big[100];
        double wb[100];
        for (int j = 0; j < n; j++) big[j] = (real)((j * 37) % n + 1);
        CHECK(answer_row(big, n, 5, 1, wb, &st));
        double S = n * (n + 1) / 2.0;
        CHECK_CLOSE(st.top1, n / S, 1e-12);
        CHECK_CLOSE(st.top4, (4.0 * n - 6) / S, 1e-12);
        double cum = 0;
        int n90 = 0;
        while (cum < 0.9 * S - 1e-9) cum += n - n90++;
        CHECK(st.n90 == n90, "n %d: n90 %d, expected %d", n, st.n90, n90);
    }
    // without a short convolution the answer window is the value position alone
    CHECK(answer_row(row, 9, 3, 1, w, &st) && st.window_share == st.ans_share && st.window_hit == st.hit);
    // behind a convolution of width 4 the window is positions 3..6: a row one-hot two after the
    // value is in it (the position whose window holds key and value), one at 7 is not
    real shifted[9] = {0, 0, 0, 0, 0, 1.5, 0, 0, 0};
    CHECK(answer_row(shifted, 9, 3, 4, w, &st));
    CHECK(st.ans_share == 0 && st.hit == 0 && st.window_share == 1 && st.window_hit == 1);
    real past[9] = {0, 0, 0, 0.25, 0, 0, 0, 0.75, 0};
    CHECK(answer_row(past, 9, 3, 4, w, &st));
    CHECK(st.window_hit == 0);
    CHECK_CLOSE(st.window_share, 0.25, 1e-12);
    CHECK(answer_row(shifted, 6, 3, 4, w, &st) && st.window_share == 1);  // a window cut at the row's end
}

// --- the pass over a dataset -------------------------------------------------------------------------

typedef struct {
    Model *m;
    Dataset ds;
    int B, T;
} Rig;

static void rig_make(Rig *r, int B, long n_examples) {
    Config cfg;
    test_config(&cfg, NULL);
    MqarSpec spec = {.vocab_size = 32, .seq_len = 16, .kv_pairs = 2, .power_a = 0.01, .seed = 5, .n_examples = n_examples};
    dataset_mqar(&r->ds, &spec);
    r->B = B;
    r->T = 16;
    ModelShape s = {.V = 32, .C = 8, .L = 2, .H = 2, .T = 16, .mlp = 1, .pos_emb = 1};
    r->m = model_create(&s, mixer_find("softmax"), &cfg, B, B * 2);
    model_init_weights(r->m, 1);
    Rng rng;
    rng_seed(&rng, 2);
    for (size_t i = 0; i < r->m->n_params; i++) r->m->params[i] += (real)(0.5 * rng_normal(&rng));  // sharper maps
}

static void rig_free_all(Rig *r) {
    model_free(r->m);
    dataset_free(&r->ds);
}

// Per (layer, head) by brute force: each sequence alone, softmax of the theory's q.k, over the
// sequences listed in seq[n_seq]: the means of S over every row, the query, key-value and other
// rows, S_norm, the prediction S_n and the answer share.
typedef struct {
    double S[4], S_recall[4], S_kv[4], S_other[4], S_norm[4], pred[4], inf[4], ans[4], hit[4];
    long rows[4], rows_recall[4], rows_kv[4], rows_answer[4];
} Brute;

static void brute_force(Rig *r, long n_seq, const long *seq, Brute *o) {
    Model *m = r->m;
    int T = r->T, L = m->s.L, H = m->s.H, D = m->s.C / H;
    int in[16], tg[16];
    real q[16 * 64], k[16 * 64];
    double beta[16], g2[16], rows_o[4] = {0}, rows_n2[4] = {0};
    memset(o, 0, sizeof *o);
    for (long si = 0; si < n_seq; si++) {
        dataset_get(&r->ds, seq ? seq[si] : si, in, tg);
        model_forward(m, in, tg, 1, T, 0);
        for (int l = 0; l < L; l++) {
            MixerIO io = model_mixer_io(m, l);
            for (int h = 0; h < H; h++) {
                int K = m->mixer[l]->attention_qk(m->mixer_state[l], &io, 0, h, q, k), c = l * H + h;
                CHECK(K == D);
                theory_score_moments(q, k, T, K, beta, g2);
                for (int i = 0; i < T; i++) {
                    double x[16];
                    real a[16];
                    for (int j = 0; j <= i; j++) {
                        x[j] = 0;
                        for (int e = 0; e < K; e++) x[j] += (double)q[i * K + e] * (double)k[j * K + e];
                    }
                    double S = softmax_row_S(x, i + 1, a), z = 0;
                    for (int j = 0; j <= i; j++) z += (double)a[j];
                    o->S[c] += S;
                    o->pred[c] += theory_softmax_Sn(i + 1, sqrt(g2[i]));
                    o->inf[c] += exp(-g2[i] / 2);
                    o->rows[c]++;
                    if (i > 0) o->S_norm[c] += (S - 1 / sqrt(i + 1.0)) / (1 - 1 / sqrt(i + 1.0)), rows_n2[c]++;
                    if (tg[i] >= 0) {
                        o->S_recall[c] += S, o->rows_recall[c]++;
                        // the value position by hand: the pair whose key is the query token
                        for (int p = 0; p < 2; p++)
                            if (in[2 * p] == in[i]) {
                                o->ans[c] += (double)a[2 * p + 1] / z;
                                int best = 0;
                                for (int j = 1; j <= i; j++) best = a[j] > a[best] ? j : best;
                                o->hit[c] += best == 2 * p + 1;
                                o->rows_answer[c]++;
                            }
                    } else if (i < 4) o->S_kv[c] += S, o->rows_kv[c]++;
                    else o->S_other[c] += S, rows_o[c]++;
                }
            }
        }
    }
    for (int i = 0; i < L * H; i++) {
        o->S[i] /= o->rows[i];
        o->pred[i] /= o->rows[i];
        o->inf[i] /= o->rows[i];
        o->S_norm[i] /= rows_n2[i];
        o->S_recall[i] = o->rows_recall[i] ? o->S_recall[i] / o->rows_recall[i] : NAN;
        o->S_kv[i] /= o->rows_kv[i];
        o->S_other[i] /= rows_o[i];
        o->ans[i] /= o->rows_answer[i];
        o->hit[i] /= o->rows_answer[i];
    }
}

TEST(sparsity_pass_matches_brute_force) {
    Rig r;
    rig_make(&r, 4, 11);  // batches of 4, 4, 3
    SparsityResult res = {0};
    sparsity_eval(r.m, &r.ds, r.B, r.T, 0, 0, &res);
    CHECK(res.L == 2 && res.H == 2 && res.sequences == 11 && res.theory[0] == THEORY_EXP &&
          res.theory[1] == THEORY_EXP && res.kv_pairs == 2);
    CHECK(res.n_bins == 16 && res.bin_width == 1);
    Brute b;
    brute_force(&r, 11, NULL, &b);
    for (int i = 0; i < 4; i++) {
        const HeadSparsity *h = &res.heads[i];
        CHECK(h->rows == 11 * 16 && h->rows == b.rows[i], "rows %ld", h->rows);
        CHECK(h->rows_recall == 11 * 2 && h->rows_recall == b.rows_recall[i], "rows_recall %ld", h->rows_recall);
        CHECK(h->rows_kv == 11 * 4 && h->rows_kv == b.rows_kv[i] && h->rows_other == 11 * 10);
        CHECK_CLOSE(h->S, b.S[i], 1e-10);
        CHECK_CLOSE(h->S_recall, b.S_recall[i], 1e-10);
        CHECK_CLOSE(h->S_kv, b.S_kv[i], 1e-10);
        CHECK_CLOSE(h->S_other, b.S_other[i], 1e-10);
        CHECK_CLOSE(h->S_norm, b.S_norm[i], 1e-10);
        CHECK_CLOSE(h->S_pred, b.pred[i], 1e-10);
        CHECK_CLOSE(h->S_inf, b.inf[i], 1e-10);
        CHECK(h->rows_answer == 22 && b.rows_answer[i] == 22, "rows_answer %ld", h->rows_answer);
        CHECK_CLOSE(h->ans_share, b.ans[i], 1e-10);
        CHECK_CLOSE(h->ans_hit, b.hit[i], 1e-12);
        CHECK(h->top1 >= h->ans_share && h->top4 >= h->top1 && h->n90 >= 1 && h->ans_rank >= 1);
        CHECK(h->rows_pred == h->rows);
        CHECK(isfinite(h->S_pred_ratio_median) && h->S_pred_spearman >= -1 && h->S_pred_spearman <= 1);
        CHECK(h->S > 0.2 && h->S < 1 && h->entropy > 0 && h->entropy < 1, "S %g entropy %g", h->S, h->entropy);
        CHECK(h->max_weight > 0 && h->max_weight <= 1 && h->neg_mass == 0);
        double floor_s = 0;  // every row of every sequence: mean of 1/sqrt(n), n = 1..16
        for (int n = 1; n <= 16; n++) floor_s += 1 / sqrt((double)n) / 16;
        CHECK_CLOSE(h->S_onehot, floor_s, 1e-12);
        CHECK(h->S_recall_onehot > 0 && h->S_recall_onehot < 1 && h->S >= h->S_onehot);
        // by position: bin 0 is the first row (S = 1), every bin has 11 rows
        CHECK(h->bin_rows[0] == 11 && h->bin_rows[15] == 11 && h->bin_S[0] == 1);
    }
    // loss and accuracy of the same forward passes: val_eval's numbers
    ValStats v = val_eval(r.m, &r.ds, r.B, r.T, 0);
    CHECK(res.stats.all.loss_sum == v.all.loss_sum, "%.17g vs %.17g", res.stats.all.loss_sum, v.all.loss_sum);  // bit-identical
    CHECK(res.stats.all.n_counted == 22 && v.all.n_counted == 22 && res.stats.all.n_correct == v.all.n_correct);
    // eval_batches = 2: the first 8 sequences
    sparsity_eval(r.m, &r.ds, r.B, r.T, 2, 0, &res);
    brute_force(&r, 8, NULL, &b);
    CHECK(res.sequences == 8 && res.heads[0].rows == 8 * 16);
    for (int i = 0; i < 4; i++) CHECK_CLOSE(res.heads[i].S, b.S[i], 1e-10);
    v = val_eval(r.m, &r.ds, r.B, r.T, 2);
    CHECK(v.all.n_counted == 16);
    sparsity_result_free(&res);
    rig_free_all(&r);
}

// sparsity_rows = N: every row of ceil(N / T) sequences at an even stride, so every position is
// measured equally often (a flat-index stride that is a multiple of T would only see one).
TEST(sparsity_rows_subset_covers_every_position) {
    Rig r;
    rig_make(&r, 4, 11);
    SparsityResult res = {0};
    long *seq;
    // at least 6 query rows: 3 sequences of 2 pairs (16 rows each)
    long m = sparsity_sequences(&r.ds, r.B, r.T, 0, 6, &seq);
    CHECK(m == 3 && seq[0] == 0 && seq[1] == 3 && seq[2] == 7, "%ld: %ld %ld %ld", m, seq[0], seq[1], seq[2]);
    sparsity_eval(r.m, &r.ds, r.B, r.T, 0, 6, &res);
    Brute b;
    brute_force(&r, m, seq, &b);
    for (int i = 0; i < 4; i++) {
        CHECK(res.heads[i].rows == 48, "rows %ld", res.heads[i].rows);
        CHECK(res.heads[i].rows_recall == b.rows_recall[i]);
        CHECK_CLOSE(res.heads[i].S, b.S[i], 1e-10);
        CHECK_CLOSE(res.heads[i].S_recall, b.S_recall[i], 1e-10);
        for (int p = 0; p < 16; p++)
            CHECK(res.heads[i].bin_rows[p] == 3, "position %d: %ld rows", p, res.heads[i].bin_rows[p]);
    }
    free(seq);
    // 5 sequences: every position as often (the old flat stride aliased N = 176 onto one position)
    sparsity_eval(r.m, &r.ds, r.B, r.T, 0, 2 * 5, &res);
    for (int p = 0; p < 16; p++) CHECK(res.heads[0].bin_rows[p] == 5);
    // more rows than there are: all of them
    sparsity_eval(r.m, &r.ds, r.B, r.T, 0, 100000, &res);
    CHECK(res.heads[0].rows == 11 * 16);
    sparsity_result_free(&res);
    rig_free_all(&r);
}

// A uniform map (softmax with zero queries and keys: every causal weight 1/n) puts exactly the
// chance level on the value position and on the answer window, with a lift of 1, and spreads over
// every position: effective tokens n. Behind a short convolution (window 3) as well.
TEST(sparsity_uniform_map_shares_equal_their_chance) {
    for (int conv = 1; conv <= 3; conv += 2) {
        Rig r;
        rig_make(&r, 4, 24);
        if (conv > 1) {  // rebuilt with a short convolution of width 3
            model_free(r.m);
            Config cfg;
            test_config(&cfg, "short_conv=3");
            ModelShape s = {.V = 32, .C = 8, .L = 2, .H = 2, .T = 16, .mlp = 1, .pos_emb = 1};
            r.m = model_create(&s, mixer_find("softmax"), &cfg, r.B, r.B * 2);
            model_init_weights(r.m, 1);
        }
        for (int l = 0; l < 2; l++) {
            char name[64];
            snprintf(name, sizeof name, "h.%d.attn.qkv.weight", l);
            const TensorInfo *t = model_find_tensor(r.m, name);
            CHECK(t, "%s", name);
            // rows [0, 2C) are q and k: zero scores, a flat softmax
            memset(r.m->params + t->offset, 0, sizeof(real) * 2 * 8 * 8);
        }
        SparsityResult res = {0};
        sparsity_eval(r.m, &r.ds, r.B, r.T, 0, 0, &res);
        for (int i = 0; i < 4; i++) {
            const HeadSparsity *h = &res.heads[i];
            CHECK(h->rows_answer > 0 && res.answer_window[i / 2] == conv);
            CHECK_CLOSE(h->ans_share, h->ans_chance, 1e-12);
            CHECK_CLOSE(h->ans_window_share, h->ans_window_chance, 1e-12);
            CHECK(conv == 1 ? h->ans_window_chance == h->ans_chance : h->ans_window_chance > 2 * h->ans_chance,
                  "conv %d: %g %g", conv, h->ans_window_chance, h->ans_chance);
            CHECK_CLOSE(h->S_recall, 1, 1e-12);
            CHECK(h->eff_tokens_recall > 2 && h->rows_right + h->rows_wrong == h->rows_answer);
        }
        sparsity_result_free(&res);
        rig_free_all(&r);
    }
}

TEST(sparsity_pass_is_identical_for_any_thread_count_and_batch_size) {
    Rig r;
    omp_set_num_threads(3);  // before the model sizes its per-thread scratch
    rig_make(&r, 4, 11);
    SparsityResult a = {0}, b = {0};
    omp_set_num_threads(1);
    sparsity_eval(r.m, &r.ds, r.B, r.T, 0, 0, &a);
    omp_set_num_threads(3);
    sparsity_eval(r.m, &r.ds, r.B, r.T, 0, 0, &b);
    for (int i = 0; i < 4; i++)
        CHECK(!memcmp(&a.heads[i], &b.heads[i], sizeof(HeadSparsity)), "threads change head %d", i);
    sparsity_eval(r.m, &r.ds, 3, r.T, 0, 0, &b);  // batches of 3 (the model holds up to 4)
    for (int i = 0; i < 4; i++) CHECK_CLOSE(a.heads[i].S, b.heads[i].S, 1e-12);
    sparsity_result_free(&a);
    sparsity_result_free(&b);
    rig_free_all(&r);
}

TEST(sparsity_records_follow_design) {
    HeadSparsity heads[2] = {
        // clang-format off
        {.rows = 64, .rows_recall = 8, .S = 0.5, .S_recall = 0.25, .entropy = 0.4, .max_weight = 0.3, .rows_pred = 64,
         .S_pred = 0.4, .S_meas_pred = 0.5, .S_recall_pred = 0.5, .S_recall_meas_pred = 0.25, .S_pred_ratio_median = 1.5,
         .S_pred_spearman = 0.7, .S_recall_pred_ratio_median = 0.4, .S_recall_pred_spearman = NAN, .S_inf = 0.1,
         .rows_answer = 8, .ans_share = 0.8, .key_share = 0.1, .ans_hit = 0.875, .ans_rank = 1.25, .top1 = 0.8,
         .top4 = 0.95, .n90 = 3, .ans_window_share = 0.8, .ans_window_hit = 0.875, .S_kv = 0.6, .S_other = 0.7, .rows_kv = 16, .rows_other = 40, .S_norm = 0.3,
         .bin_S = {1, 0.5}, .bin_pred = {1, NAN}, .rows_zero = 3, .rows_recall_zero = 1, .eff_tokens_recall = 1.5,
         .ans_chance = 0.061, .ans_window_chance = 0.061},
        // clang-format on
        {.rows = 64,
         .rows_recall = 0,
         .S = 0.75,
         .S_recall = NAN,
         .entropy = 0.9,
         .max_weight = 0.1,
         .eff_tokens_recall = NAN,
         .ans_window_chance = NAN},
    };
    SparsityResult r = {
        .L = 2, .H = 1, .theory = {THEORY_EXP, THEORY_EXP}, .heads = heads, .kv_pairs = 4, .n_bins = 2, .bin_width = 32};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sparsity_write_records(f, 100, "softmax", NULL, NULL, &r);
    fclose(f);
    const char *want = "{\"type\":\"sparsity\",\"step\":100,\"layer\":0,\"head\":0,\"mixer\":\"softmax\",\"split\":\"val\","
                       "\"recall_layer\":0,\"S\":0.5,\"S_recall\":0.25,\"rows\":64,";
    CHECK(!strncmp(buf, want, strlen(want)), "%s", buf);
    char *second = strchr(buf, '\n') + 1;
    CHECK(strchr(second, '\n') && !strchr(second, '\n')[1], "two lines expected: %s", buf);
    char err[128];
    JsonValue *v = json_parse(buf, (size_t)(second - buf - 1), err, sizeof err);
    CHECK(v, "%s", err);
    CHECK(json_get(v, "S_pred")->number == 0.4 && json_get(v, "S_pred_ratio")->number == 1.25);
    CHECK(json_get(v, "S_recall_pred_ratio")->number == 0.5 && json_get(v, "S_pred_ratio_median")->number == 1.5);
    CHECK(json_get(v, "S_pred_spearman")->number == 0.7 && !json_get(v, "S_recall_pred_spearman"));
    CHECK(json_get(v, "S_inf")->number == 0.1 && json_get(v, "S_pred_measured")->number == 0.5);
    CHECK(!strcmp(json_get(v, "theory")->string, "softmax") && json_get(v, "entropy")->number == 0.4);
    CHECK(json_get(v, "ans_share")->number == 0.8 && json_get(v, "ans_hit")->number == 0.875 &&
          json_get(v, "n90")->number == 3 && json_get(v, "rows_answer")->number == 8 && json_get(v, "top4")->number == 0.95);
    CHECK(json_get(v, "S_kv")->number == 0.6 && json_get(v, "S_other")->number == 0.7 && json_get(v, "S_norm")->number == 0.3);
    const JsonValue *bins = json_get(v, "S_pred_by_pos");
    CHECK(bins && bins->type == JSON_ARRAY && json_get(v, "pos_bin_width")->number == 32);
    CHECK(strstr(buf, "\"rows_recall\":8,\"rows_zero\":3,\"rows_recall_zero\":1,"), "%s", buf);
    CHECK(!strstr(strchr(buf, '\n'), "rows_zero"), "left out when 0: %s", buf);
    CHECK(strstr(buf, "\"S_by_pos\":[1,0.5]") && strstr(buf, "\"S_pred_by_pos\":[1,null]"), "%s", buf);
    json_free(v);
    v = json_parse(second, strlen(second), err, sizeof err);
    CHECK(v, "%s", err);
    CHECK(json_get(v, "layer")->number == 1 && json_get(v, "S_recall")->type == JSON_NULL);
    CHECK(!json_get(v, "S_pred") && !json_get(v, "S_pred_ratio") && !json_get(v, "ans_share"),
          "no prediction without rows: %s", second);
    json_free(v);
    free(buf);
    // the training log: one line per layer, the recall layer (largest answer share) starred
    buf = NULL;
    f = open_memstream(&buf, &len);
    heads[1].ans_share = heads[1].ans_window_share = NAN;
    sparsity_print_layers(f, 100, &r);
    fclose(f);
    CHECK(!strcmp(buf,
                  "step    100 | L0* S_recall 0.250 | tokens 1.5 | answer share 0.800 (chance 0.061)\n"
                  "step    100 | L1  S_recall   -  | tokens - | answer share   - \n"),
          "%s", buf);
    CHECK(sparsity_recall_layer(&r) == 0);
    free(buf);
    // behind a short convolution the records add the answer window's share and hit
    r.answer_window[0] = r.answer_window[1] = 4;
    buf = NULL;
    f = open_memstream(&buf, &len);
    sparsity_write_records(f, 100, "softmax", NULL, NULL, &r);
    fclose(f);
    CHECK(strstr(buf, "\"n90\":3,\"answer_window\":4,\"ans_window_share\":0.8,\"ans_window_hit\":0.875"), "%s", buf);
    free(buf);
}

// --- attention maps of one sequence ---------------------------------------------------------------

typedef struct {
    Rig *r;
    long seq;
    int layer, head;
} MapCase;

static void extract_case(void *arg) {
    MapCase *c = arg;
    AttentionMaps am;
    maps_extract(c->r->m, &c->r->ds, c->r->T, c->seq, c->layer, c->head, &am);
    maps_free(&am);
}

TEST(maps_hold_the_extractor_rows_and_refuse_bad_choices) {
    Rig r;
    rig_make(&r, 4, 11);
    AttentionMaps am;
    maps_extract(r.m, &r.ds, r.T, 5, -1, -1, &am);
    CHECK(am.n == 4 && am.T == 16 && am.has_answers && !am.signed_maps);
    int in[16], tg[16];
    dataset_get(&r.ds, 5, in, tg);
    int queries = 0;
    for (int i = 0; i < 16; i++) {
        CHECK(am.inputs[i] == in[i] && am.targets[i] == tg[i]);
        if (tg[i] >= 0) {
            queries++;
            CHECK(am.answer[i] >= 1 && am.answer[i] < 4 && in[am.answer[i]] == tg[i] && in[am.answer[i] - 1] == in[i]);
        } else CHECK(am.answer[i] == -1);
    }
    CHECK(queries == 2);
    // the same rows as the extractor after a forward of that sequence alone
    model_forward(r.m, in, tg, 1, 16, 0);
    real a[256];
    for (int k = 0; k < am.n; k++) {
        MixerIO io = model_mixer_io(r.m, am.layer[k]);
        r.m->mixer[am.layer[k]]->attention(r.m->mixer_state[am.layer[k]], &io, 0, am.head[k], a);
        for (int e = 0; e < 256; e++) CHECK(fabs((double)am.a[k * 256 + e] - (double)a[e]) < 1e-6);
    }
    maps_free(&am);
    maps_extract(r.m, &r.ds, r.T, 0, 1, 0, &am);  // one layer, one head
    CHECK(am.n == 1 && am.layer[0] == 1 && am.head[0] == 0);
    maps_free(&am);
    // bad choices: one line, exit 2, naming the key
    struct {
        long seq;
        int layer, head;
        const char *says;
    } bad[] = {
        {11, -1, -1, "map_seq: 11 is out of range"},
        {0, 2, -1, "map_layer: 2 is out of range"},
        {0, -1, 2, "map_head: 2 is out of range"},
        {0, -2, 0, "map_layer"},
    };
    for (int i = 0; i < 4; i++) {
        MapCase c = {&r, bad[i].seq, bad[i].layer, bad[i].head};
        char err[512];
        CHECK(test_fork(extract_case, &c, err, sizeof err) == 2, "case %d: %s", i, err);
        CHECK(strstr(err, bad[i].says) && strchr(err, '\n') == err + strlen(err) - 1, "case %d: %s", i, err);
    }
    // a mixer without an extractor
    MixerKind none = *r.m->mixer[0];
    none.attention = NULL;
    r.m->mixer[0] = &none;
    MapCase c = {&r, 0, -1, -1};
    char err[512];
    CHECK(test_fork(extract_case, &c, err, sizeof err) == 2 && strstr(err, "has no attention extractor"), "%s", err);
    rig_free_all(&r);
}
