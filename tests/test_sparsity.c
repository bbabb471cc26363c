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

// exp(-sigma^2 |q|^2 / 2) against softmax over n = 4096 Gaussian keys at sigma |q| = 0.5, 16 rows.
TEST(softmax_prediction_matches_monte_carlo) {
    enum { T = 4096, K = 16, ROWS = 16 };
    real *q = mallocCheck(sizeof(real) * T * K), *k = mallocCheck(sizeof(real) * T * K), *a = mallocCheck(sizeof(real) * T);
    double *pred = mallocCheck(sizeof(double) * T);
    Rng rng;
    rng_seed(&rng, 2024);
    double sigma = 1.3, meas = 0, predicted = 0;
    for (int r = 0; r < ROWS; r++) {
        double mu[K], qv[K], qn = 0;
        for (int d = 0; d < K; d++) mu[d] = rng_normal(&rng), qv[d] = rng_normal(&rng), qn += qv[d] * qv[d];
        for (int d = 0; d < K; d++) qv[d] *= 0.5 / sigma / sqrt(qn);  // sigma |q| = 0.5
        for (int t = 0; t < T; t++)
            for (int d = 0; d < K; d++) {
                k[t * K + d] = (real)(mu[d] + sigma * rng_normal(&rng));
                q[t * K + d] = (real)qv[d];
            }
        theory_exp_rows(q, k, T, K, pred);
        // the last row sees all n = 4096 keys
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < T; j++) {
            double s = 0;
            for (int d = 0; d < K; d++) s += qv[d] * (double)k[j * K + d];
            a[j] = (real)s;
            mx = s > mx ? s : mx;
        }
        for (int j = 0; j < T; j++) sum += a[j] = (real)exp((double)a[j] - mx);
        for (int j = 0; j < T; j++) a[j] = (real)((double)a[j] / sum);
        RowStats st;
        CHECK(sparsity_row(a, T, &st));
        meas += st.S / ROWS;
        predicted += pred[T - 1] / ROWS;
    }
    CHECK(fabs(predicted - exp(-0.125)) < 0.01, "prediction %g vs exp(-1/8) = %g", predicted, exp(-0.125));
    CHECK(fabs(meas / predicted - 1) < 0.02, "measured S %g, predicted %g", meas, predicted);
    free(q);
    free(k);
    free(a);
    free(pred);
}

// The incremental prefix statistics against a direct two-pass computation per row.
TEST(theory_rows_match_direct_prefix_statistics) {
    enum { T = 23, K = 5 };
    real q[T * K], k[T * K];
    double pe[T], pl[T];
    Rng rng;
    rng_seed(&rng, 7);
    for (int i = 0; i < T * K; i++) q[i] = (real)rng_normal(&rng), k[i] = (real)(1 + 0.5 * rng_normal(&rng));
    theory_exp_rows(q, k, T, K, pe);
    real q0[T * K];
    memcpy(q0, q, sizeof q);
    for (int i = 0; i < T * K; i++) q[i] = (real)fabs((double)q[i]) + (real)0.1;
    theory_linear_rows(q, k, T, K, pl);
    for (int i = 0; i < T; i++) {
        int n = i + 1;
        double mean[K] = {0}, var = 0, q2 = 0;
        for (int j = 0; j < n; j++)
            for (int d = 0; d < K; d++) mean[d] += (double)k[j * K + d] / n;
        for (int j = 0; j < n; j++)
            for (int d = 0; d < K; d++) var += pow((double)k[j * K + d] - mean[d], 2) / n / K;
        for (int d = 0; d < K; d++) q2 += (double)q0[i * K + d] * (double)q0[i * K + d];
        CHECK_CLOSE(pe[i], exp(-var * q2 / 2), 1e-12);
        // linear: q' Sigma q / (q' mu)^2 with the prefix covariance
        double qmu = 0, qSq = 0;
        for (int d = 0; d < K; d++) qmu += (double)q[i * K + d] * mean[d];
        for (int j = 0; j < n; j++) {
            double proj = 0;
            for (int d = 0; d < K; d++) proj += (double)q[i * K + d] * ((double)k[j * K + d] - mean[d]);
            qSq += proj * proj / n;
        }
        CHECK_CLOSE(pl[i], 1 / sqrt(1 + qSq / (qmu * qmu)), 1e-12);
    }
}

// For non-negative linear attention a_ij = phi(q_i).phi(k_j) / sum_l phi(q_i).phi(k_l), the
// prefix prediction is an identity: it equals the measured S of every row.
TEST(linear_prediction_is_exact_for_positive_features) {
    enum { T = 40, K = 6 };
    real q[T * K], k[T * K], a[T];
    double pred[T];
    Rng rng;
    rng_seed(&rng, 11);
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

// S per (layer, head) by brute force: each sequence alone, softmax of the theory's q.k, over the
// flat rows marked in chosen[n_seq * T] (NULL: all rows).
static void brute_force(Rig *r, long n_seq, const unsigned char *chosen, double *S, double *S_recall, long *rows,
                        long *rows_recall, double *pred) {
    Model *m = r->m;
    int T = r->T, L = m->s.L, H = m->s.H, D = m->s.C / H;
    int in[16], tg[16];
    real q[16 * 64], k[16 * 64];
    double p[16];
    memset(S, 0, sizeof(double) * L * H);
    memset(S_recall, 0, sizeof(double) * L * H);
    memset(pred, 0, sizeof(double) * L * H);
    memset(rows, 0, sizeof(long) * L * H);
    memset(rows_recall, 0, sizeof(long) * L * H);
    for (long s = 0; s < n_seq; s++) {
        dataset_get(&r->ds, s, in, tg);
        model_forward(m, in, tg, 1, T, 0);
        for (int l = 0; l < L; l++) {
            MixerIO io = model_mixer_io(m, l);
            for (int h = 0; h < H; h++) {
                int K = m->mixer[l]->attention_qk(m->mixer_state[l], &io, 0, h, q, k);
                CHECK(K == D);
                theory_exp_rows(q, k, T, K, p);
                for (int i = 0; i < T; i++) {
                    if (chosen && !chosen[s * T + i]) continue;
                    real a[16];
                    double mx = -INFINITY, z = 0;
                    for (int j = 0; j <= i; j++) {
                        double d = 0;
                        for (int e = 0; e < K; e++) d += (double)q[i * K + e] * (double)k[j * K + e];
                        a[j] = (real)d;
                        mx = d > mx ? d : mx;
                    }
                    for (int j = 0; j <= i; j++) z += a[j] = (real)exp((double)a[j] - mx);
                    for (int j = 0; j <= i; j++) a[j] = (real)((double)a[j] / z);
                    RowStats st;
                    CHECK(sparsity_row(a, i + 1, &st));
                    S[l * H + h] += st.S;
                    pred[l * H + h] += p[i];
                    rows[l * H + h]++;
                    if (tg[i] >= 0) S_recall[l * H + h] += st.S, rows_recall[l * H + h]++;
                }
            }
        }
    }
    for (int i = 0; i < L * H; i++) {
        S[i] /= rows[i];
        pred[i] /= rows[i];
        S_recall[i] = rows_recall[i] ? S_recall[i] / rows_recall[i] : NAN;
    }
}

TEST(sparsity_pass_matches_brute_force) {
    Rig r;
    rig_make(&r, 4, 11);  // batches of 4, 4, 3
    SparsityResult res = {0};
    sparsity_eval(r.m, &r.ds, r.B, r.T, 0, 0, &res);
    CHECK(res.L == 2 && res.H == 2 && res.sequences == 11 && res.theory[0] == THEORY_EXP && res.theory[1] == THEORY_EXP);
    double S[4], Sr[4], pred[4];
    long rows[4], rows_r[4];
    brute_force(&r, 11, NULL, S, Sr, rows, rows_r, pred);
    for (int i = 0; i < 4; i++) {
        const HeadSparsity *h = &res.heads[i];
        CHECK(h->rows == 11 * 16 && h->rows == rows[i], "rows %ld", h->rows);
        CHECK(h->rows_recall == 11 * 2 && h->rows_recall == rows_r[i], "rows_recall %ld", h->rows_recall);
        CHECK_CLOSE(h->S, S[i], 1e-10);
        CHECK_CLOSE(h->S_recall, Sr[i], 1e-10);
        CHECK_CLOSE(h->S_pred, pred[i], 1e-10);
        CHECK(h->rows_pred == h->rows);
        CHECK(h->S > 0.2 && h->S < 1 && h->entropy > 0 && h->entropy < 1, "S %g entropy %g", h->S, h->entropy);
        CHECK(h->max_weight > 0 && h->max_weight <= 1 && h->neg_mass == 0);
        double floor_s = 0;  // every row of every sequence: mean of 1/sqrt(n), n = 1..16
        for (int n = 1; n <= 16; n++) floor_s += 1 / sqrt((double)n) / 16;
        CHECK_CLOSE(h->S_onehot, floor_s, 1e-12);
        CHECK(h->S_recall_onehot > 0 && h->S_recall_onehot < 1 && h->S >= h->S_onehot);
    }
    // loss and accuracy of the same forward passes: val_eval's numbers
    HeadStats v = val_eval(r.m, &r.ds, r.B, r.T, 0);
    CHECK(res.stats.loss_sum == v.loss_sum, "%.17g vs %.17g", res.stats.loss_sum, v.loss_sum);  // bit-identical
    CHECK(res.stats.n_counted == 22 && v.n_counted == 22 && res.stats.n_correct == v.n_correct);
    // eval_batches = 2: the first 8 sequences
    sparsity_eval(r.m, &r.ds, r.B, r.T, 2, 0, &res);
    brute_force(&r, 8, NULL, S, Sr, rows, rows_r, pred);
    CHECK(res.sequences == 8 && res.heads[0].rows == 8 * 16);
    for (int i = 0; i < 4; i++) CHECK_CLOSE(res.heads[i].S, S[i], 1e-10);
    v = val_eval(r.m, &r.ds, r.B, r.T, 2);
    CHECK(v.n_counted == 16);
    sparsity_result_free(&res);
    rig_free_all(&r);
}

TEST(sparsity_rows_subset_is_evenly_spaced) {
    Rig r;
    rig_make(&r, 4, 11);
    long R = 11 * 16, N = 13;
    unsigned char chosen[11 * 16] = {0};
    for (long k = 0; k < N; k++) chosen[k * R / N] = 1;
    SparsityResult res = {0};
    sparsity_eval(r.m, &r.ds, r.B, r.T, 0, N, &res);
    double S[4], Sr[4], pred[4];
    long rows[4], rows_r[4];
    brute_force(&r, 11, chosen, S, Sr, rows, rows_r, pred);
    for (int i = 0; i < 4; i++) {
        CHECK(res.heads[i].rows == N, "rows %ld", res.heads[i].rows);
        CHECK(res.heads[i].rows_recall == rows_r[i]);
        CHECK_CLOSE(res.heads[i].S, S[i], 1e-10);
        if (rows_r[i]) CHECK_CLOSE(res.heads[i].S_recall, Sr[i], 1e-10);
    }
    // more rows than there are: all of them
    sparsity_eval(r.m, &r.ds, r.B, r.T, 0, 100000, &res);
    CHECK(res.heads[0].rows == R);
    sparsity_result_free(&res);
    rig_free_all(&r);
}

TEST(sparsity_pass_is_identical_for_any_thread_count_and_batch_size) {
    Rig r;
    rig_make(&r, 4, 11);
    SparsityResult a = {0}, b = {0};
    omp_set_num_threads(1);
    sparsity_eval(r.m, &r.ds, r.B, r.T, 0, 0, &a);
    omp_set_num_threads(3);
    sparsity_eval(r.m, &r.ds, r.B, r.T, 0, 0, &b);
    for (int i = 0; i < 4; i++) {
        CHECK(a.heads[i].S == b.heads[i].S && a.heads[i].S_recall == b.heads[i].S_recall, "threads change head %d", i);
        CHECK(a.heads[i].entropy == b.heads[i].entropy && a.heads[i].S_pred == b.heads[i].S_pred);
    }
    sparsity_eval(r.m, &r.ds, 3, r.T, 0, 0, &b);  // batches of 3 (the model holds up to 4)
    for (int i = 0; i < 4; i++) CHECK_CLOSE(a.heads[i].S, b.heads[i].S, 1e-12);
    sparsity_result_free(&a);
    sparsity_result_free(&b);
    rig_free_all(&r);
}

TEST(sparsity_records_follow_design) {
    HeadSparsity heads[2] = {
        {.rows = 64, .rows_recall = 8, .S = 0.5, .S_recall = 0.25, .entropy = 0.4, .max_weight = 0.3, .rows_pred = 64,
         .S_pred = 0.4, .S_meas_pred = 0.5, .S_recall_pred = 0.5, .S_recall_meas_pred = 0.25},
        {.rows = 64, .rows_recall = 0, .S = 0.75, .S_recall = NAN, .entropy = 0.9, .max_weight = 0.1},
    };
    SparsityResult r = {.L = 2, .H = 1, .theory = {THEORY_EXP, THEORY_EXP}, .heads = heads};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sparsity_write_jsonl(f, 100, "softmax", &r);
    fclose(f);
    const char *want = "{\"step\":100,\"layer\":0,\"head\":0,\"mixer\":\"softmax\",\"S\":0.5,\"S_recall\":0.25,\"rows\":64,";
    CHECK(!strncmp(buf, want, strlen(want)), "%s", buf);
    char *second = strchr(buf, '\n') + 1;
    CHECK(strchr(second, '\n') && !strchr(second, '\n')[1], "two lines expected: %s", buf);
    char err[128];
    JsonValue *v = json_parse(buf, (size_t)(second - buf - 1), err, sizeof err);
    CHECK(v, "%s", err);
    CHECK(json_get(v, "S_pred")->number == 0.4 && json_get(v, "S_pred_ratio")->number == 1.25);
    CHECK(json_get(v, "S_recall_pred_ratio")->number == 0.5);
    CHECK(!strcmp(json_get(v, "theory")->string, "exp") && json_get(v, "entropy")->number == 0.4);
    json_free(v);
    v = json_parse(second, strlen(second), err, sizeof err);
    CHECK(v, "%s", err);
    CHECK(json_get(v, "layer")->number == 1 && json_get(v, "S_recall")->type == JSON_NULL);
    CHECK(!json_get(v, "S_pred") && !json_get(v, "S_pred_ratio"), "no prediction without rows: %s", second);
    json_free(v);
    free(buf);
}
