// GLA beyond the generic checks: the scan kernel (model/mixers/gla_scan.c) chunked against the plain
// recurrence and the plain sum over a_ij (model/mixers/gla_scan_naive.c), with strong and weak decays and a mix of chunked and
// recurrent chunks, and against finite differences for every input including the log gates; the
// layer against a naive fp64 transcription of its definition, across chunks with options, its
// names and shapes, thread-count independence, and the gate normaliser at 0.1 and 10 at T = 1024
// (the double build here, the float build through ./train).
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/keys.h"
#include "model/mixers/gla_scan.h"
#include "model/mixers/gla_scan_naive.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

// ---------------------------------------------------------------------------------------------
// The scan kernel on one head.

typedef struct {
    int T, K, V, L;
    real max_range, scale;
    real *Q, *Kt, *Vv, *G, *O, *R, *states, *work;
} Scan;

static void scan_alloc(Scan *s, int T, int K, int V, int L, double max_range) {
    *s = (Scan){T,    K,    V,    L,   (real)max_range, (real)(1 / sqrt((double)K)), NULL, NULL, NULL, NULL,
                NULL, NULL, NULL, NULL};
    s->Q = mallocCheck(sizeof(real) * T * K), s->Kt = mallocCheck(sizeof(real) * T * K);
    s->G = mallocCheck(sizeof(real) * T * K);
    s->Vv = mallocCheck(sizeof(real) * T * V), s->O = mallocCheck(sizeof(real) * T * V);
    s->R = mallocCheck(sizeof(real) * T * V);
    s->states = mallocCheck(sizeof(real) * ((size_t)gla_n_states(T, L) * K * V + 1));
    s->work = mallocCheck(sizeof(real) * gla_scan_work(K, V));
}

static void scan_free(Scan *s) {
    free(s->Q), free(s->Kt), free(s->G), free(s->Vv), free(s->O), free(s->R), free(s->states), free(s->work);
}

// q, k, v, R ~ N(0, 1); g = logsigmoid(N(0, 1)) / norm (fla's test gates, normaliser 0.1..10).
static void scan_fill(Scan *s, Rng *rng, double norm) {
    fill_normal(s->Q, (size_t)s->T * s->K, rng, 1), fill_normal(s->Kt, (size_t)s->T * s->K, rng, 1);
    fill_normal(s->Vv, (size_t)s->T * s->V, rng, 1), fill_normal(s->R, (size_t)s->T * s->V, rng, 1);
    for (int i = 0; i < s->T * s->K; i++) {
        double x = rng_normal(rng);
        s->G[i] = (real)((fmin(x, 0) - log1p(exp(-fabs(x)))) / norm);
    }
}

static double scan_loss(void *ctx) {
    Scan *s = ctx;
    gla_scan_forward(s->T, s->K, s->V, s->L, s->max_range, s->scale, s->Q, s->K, s->Kt, s->K, s->Vv, s->V, s->G, s->K,
                     s->O, s->V, s->states, s->work);
    double l = 0;
    for (int i = 0; i < s->T * s->V; i++) l += (double)s->O[i] * s->R[i];
    return l;
}

// dQ, dK, dG, dV of sum(O * R), in that order in one array of T*(3K+V).
static real *scan_grads(Scan *s) {
    int T = s->T, K = s->K, V = s->V;
    real *d = callocCheck((size_t)T * (3 * K + V), sizeof(real));
    scan_loss(s);
    gla_scan_backward(T, K, V, s->L, s->max_range, s->scale, s->Q, K, s->Kt, K, s->Vv, V, s->G, K, s->R, V, s->states,
                      d, d + T * K, d + 3 * T * K, d + 2 * T * K, s->work);
    return d;
}

TEST(gla_scan_chunked_matches_recurrence_and_plain_sum) {
    const int lengths[] = {1, 5, 63, 64, 65, 150};
    const int chunks[] = {4, 16, 64};
    const double norms[] = {0.1, 1, 10};
    Rng rng;
    rng_seed(&rng, 40);
    int n_rec = 0, n_chunked = 0;
    for (int li = 0; li < 6; li++)
        for (int ci = 0; ci < 3; ci++)
            for (int ni = 0; ni < 3; ni++) {
                int T = lengths[li], K = 3, V = 2;
                Scan a, b;
                scan_alloc(&a, T, K, V, chunks[ci], 40);  // the layer's choice
                scan_alloc(&b, T, K, V, chunks[ci], -1);  // the recurrence in every chunk
                scan_fill(&a, &rng, norms[ni]);
                memcpy(b.Q, a.Q, sizeof(real) * T * K), memcpy(b.Kt, a.Kt, sizeof(real) * T * K);
                memcpy(b.G, a.G, sizeof(real) * T * K), memcpy(b.Vv, a.Vv, sizeof(real) * T * V);
                memcpy(b.R, a.R, sizeof(real) * T * V);
                real *da = scan_grads(&a), *db = scan_grads(&b);
                double *O = mallocCheck(sizeof(double) * T * V);
                gla_scan_naive(T, K, V, a.scale, a.Q, a.Kt, a.G, a.Vv, O);
                for (int i = 0; i < T * V; i++) {
                    CHECK_CLOSE(a.O[i], O[i], 1e-12);
                    CHECK_CLOSE(b.O[i], O[i], 1e-12);
                }
                for (int i = 0; i < T * (3 * K + V); i++) CHECK_CLOSE(da[i], db[i], 1e-12);
                // which path ran: the chunk's gate range against 40
                for (int t0 = 0; t0 < T; t0 += chunks[ci]) {
                    double lo = 0;
                    for (int c = 0; c < K; c++) {
                        double sum = 0;
                        for (int t = t0; t < T && t < t0 + chunks[ci]; t++) sum += a.G[t * K + c];
                        lo = fmin(lo, sum);
                    }
                    if (-lo > 40) n_rec++;
                    else n_chunked++;
                }
                free(O), free(da), free(db);
                scan_free(&a), scan_free(&b);
            }
    CHECK(n_rec > 10 && n_chunked > 10, "%d recurrent and %d chunked chunks", n_rec, n_chunked);
}

TEST(gla_scan_backward_matches_finite_differences) {
    Rng rng;
    rng_seed(&rng, 41);
    // T = 11 in chunks of 4: chunked everywhere, recurrent everywhere, and mixed (the middle
    // chunk's gates are strong: range ~12 > max_range 5).
    const double max_range[] = {1e30, -1, 5};
    for (int mode = 0; mode < 3; mode++) {
        int T = 11, K = 3, V = 2;
        Scan s;
        scan_alloc(&s, T, K, V, 4, max_range[mode]);
        scan_fill(&s, &rng, 2);
        if (mode == 2)
            for (int i = 4 * K; i < 8 * K; i++) s.G[i] -= 3;
        real *d = scan_grads(&s);
        check_grad("dQ", scan_loss, &s, s.Q, d, (size_t)T * K, 1e-6, 1e-7, 1e-9);
        check_grad("dK", scan_loss, &s, s.Kt, d + T * K, (size_t)T * K, 1e-6, 1e-7, 1e-9);
        check_grad("dG", scan_loss, &s, s.G, d + 2 * T * K, (size_t)T * K, 1e-6, 1e-7, 1e-9);
        check_grad("dV", scan_loss, &s, s.Vv, d + 3 * T * K, (size_t)T * V, 1e-6, 1e-7, 1e-9);
        free(d);
        scan_free(&s);
    }
}

// Strong decay over long chunks: every exponent the chunked form would need is far out of range
// (gate sums ~ -450 per chunk of 64), the recurrence takes over and stays finite, and agrees with
// the plain sum.
TEST(gla_scan_strong_decay_stays_finite) {
    Rng rng;
    rng_seed(&rng, 42);
    int T = 300, K = 4, V = 3;
    Scan s;
    scan_alloc(&s, T, K, V, 64, 40);
    scan_fill(&s, &rng, 0.1);
    real *d = scan_grads(&s);
    double *O = mallocCheck(sizeof(double) * T * V);
    gla_scan_naive(s.T, s.K, s.V, s.scale, s.Q, s.Kt, s.G, s.Vv, O);
    for (int i = 0; i < T * V; i++) {
        CHECK(isfinite(s.O[i]));
        CHECK_CLOSE(s.O[i], O[i], 1e-12);
    }
    for (int i = 0; i < T * (3 * K + V); i++) CHECK(isfinite(d[i]));
    free(O), free(d);
    scan_free(&s);
}

// ---------------------------------------------------------------------------------------------
// The layer.

TEST(gla_layer_across_chunks_with_options) {
    Config cfg;
    test_config(&cfg, "gla_gate_rank=3 gla_gate_norm=2.5");
    MixerRig r;
    // T = 70: chunks of 64 and 6 (the generic tests run T = 7, one chunk)
    rig_init(&r, "gla", &cfg, 8, 2, 1, 70, 0, 2, 43);
    CHECK(r.count[3] == 3 * 8 && r.count[4] == 4 * 3, "gate rank 3: %zu, %zu", r.count[3], r.count[4]);
    // h = 1e-5: at 70 tokens the roundoff of h = 1e-6 (~eps |loss| / h) is ~1e-5; check_grad's
    // five-point fallback (at 1e-4) keeps the truncation error small
    rig_check_grads_h(&r, 1e-5, 1e-6, 1e-8);
    rig_free(&r);
    rig_init(&r, "gla", &cfg, 8, 2, 2, 150, 0, 2, 44);  // three chunks
    rig_check_attention(&r, 1e-9);
    rig_check_step(&r, 1e-10);
    rig_free(&r);
}

// x W^T for one token (W [out, in], PyTorch layout).
static void lin1(const real *W, const real *x, int out, int in, double *y) {
    for (int o = 0; o < out; o++) {
        y[o] = 0;
        for (int i = 0; i < in; i++) y[o] += (double)W[o * in + i] * x[i];
    }
}

// docs/mixers.md#gla transcribed in fp64 for a B = 1 rig: checks y and every map entry.
TEST(gla_layer_matches_its_definition) {
    Config cfg;
    test_config(&cfg, "gla_gate_norm=3");
    MixerRig r;
    int C = 8, H = 2, T = 9, Kd = 4, Vd = 8, dk = 2, dv = 4, R = 16;
    rig_init(&r, "gla", &cfg, C, H, 1, T, 0, 2, 45);
    rig_loss(&r);
    const real *Wq = rig_param(&r, "gla.q.weight"), *Wk = rig_param(&r, "gla.k.weight");
    const real *Wv = rig_param(&r, "gla.v.weight"), *W1 = rig_param(&r, "gla.gk1.weight");
    const real *W2 = rig_param(&r, "gla.gk2.weight"), *b2 = rig_param(&r, "gla.gk2.bias");
    const real *Wg = rig_param(&r, "gla.g.weight"), *wn = rig_param(&r, "gla.norm.weight");
    const real *Wo = rig_param(&r, "gla.o.weight");
    double q[9][4], k[9][4], v[9][8], g[9][4], rr[9][8], gl[16], S[2][2][4] = {{{0}}};
    for (int t = 0; t < T; t++) {
        const real *x = r.x + t * C;
        lin1(Wq, x, Kd, C, q[t]), lin1(Wk, x, Kd, C, k[t]), lin1(Wv, x, Vd, C, v[t]);
        lin1(Wg, x, Vd, C, rr[t]), lin1(W1, x, R, C, gl);
        for (int c = 0; c < Kd; c++) {
            double gk = b2[c];
            for (int i = 0; i < R; i++) gk += W2[c * R + i] * gl[i];
            g[t][c] = -log1p(exp(-gk)) / 3;  // logsigmoid / gate_norm
        }
    }
    MixerIO io = rig_io(&r);
    real *a = mallocCheck(sizeof(real) * T * T);
    for (int h = 0; h < H; h++) {
        r.kind->attention(r.st, &io, 0, h, a);
        for (int i = 0; i < T; i++)
            for (int j = 0; j <= i; j++) {
                double s = 0;
                for (int c = 0; c < dk; c++) {
                    double gs = 0;
                    for (int t = j + 1; t <= i; t++) gs += g[t][h * dk + c];
                    s += q[i][h * dk + c] * k[j][h * dk + c] * exp(gs);
                }
                CHECK_CLOSE(a[i * T + j], s / sqrt(dk), 1e-12);
            }
    }
    for (int t = 0; t < T; t++) {
        double u[8], y[8];
        for (int h = 0; h < H; h++) {
            double o[4] = {0}, ss = 0;
            for (int c = 0; c < dk; c++)
                for (int w = 0; w < dv; w++) {
                    S[h][c][w] = exp(g[t][h * dk + c]) * S[h][c][w] + k[t][h * dk + c] * v[t][h * dv + w];
                    o[w] += S[h][c][w] * q[t][h * dk + c] / sqrt(dk);
                }
            for (int w = 0; w < dv; w++) ss += o[w] * o[w];
            for (int w = 0; w < dv; w++) {
                double z = rr[t][h * dv + w];
                u[h * dv + w] = o[w] / sqrt(ss / dv + 1e-5) * wn[w] * z / (1 + exp(-z));
            }
        }
        for (int c = 0; c < C; c++) {
            y[c] = 0;
            for (int i = 0; i < Vd; i++) y[c] += Wo[c * Vd + i] * u[i];
            CHECK_CLOSE(r.y[t * C + c], y[c], 1e-12);
        }
    }
    free(a);
    rig_free(&r);
}

// The gate normaliser of fla's tests at both ends, T = 1024: 0.1 (g ~ -7 per token, every chunk
// far beyond the chunked form's range) and 10 (slow decay): finite, and the maps still rebuild o.
TEST(gla_strong_and_weak_decay_at_T1024) {
    const char *opts[] = {"gla_gate_norm=0.1", "gla_gate_norm=10"};
    for (int k = 0; k < 2; k++) {
        Config cfg;
        test_config(&cfg, opts[k]);
        MixerRig r;
        int C = 8, T = 1024;
        rig_init(&r, "gla", &cfg, C, 2, 1, T, 0, 2, 46 + k);
        rig_loss(&r);
        MixerIO io = rig_io(&r);
        io.dy = r.R;
        io.dx = r.dx;
        memset(r.dx, 0, sizeof(real) * T * C);
        r.kind->backward(r.st, &io);
        for (int i = 0; i < T * C; i++) CHECK(isfinite(r.y[i]) && isfinite(r.dx[i]), "%s: row %d", opts[k], i / C);
        for (int p = 0; p < r.n_params; p++)
            for (size_t i = 0; i < r.count[p]; i++) CHECK(isfinite(r.g[p][i]), "%s: %s", opts[k], r.decl[p].name);
        rig_check_attention(&r, 1e-9);
        rig_free(&r);
    }
}

// The same in float: ./train (the float build) for two steps at T = 1024 with nan_policy = stop.
TEST(gla_float_training_step_at_T1024_strong_and_weak_decay) {
    const char *conf = test_write_file("gla.conf", "mixer = gla\nmlp = false\n");
    const double norms[] = {0.1, 10};
    for (int k = 0; k < 2; k++) {
        char out[4096];
        int st = test_run(out, sizeof out,
                          "./train %s vocab_size=2048 seq_len=1024 mqar_kv_pairs=8 mqar_train_examples=8 "
                          "mqar_test_examples=4 mqar_val_examples=4 d_model=32 n_head=2 batch_size=4 steps=2 log_every=1 "
                          "eval_every=2 sparsity_every=0 save_every=0 nan_policy=stop gla_gate_norm=%g "
                          "threads=1 out_dir=%s/r%d",
                          conf, norms[k], test_tmpdir(), k);
        CHECK(st == 0, "gla_gate_norm=%g: exit %d: %s", norms[k], st, out);
    }
}

TEST(gla_tensor_names_shapes_and_init) {
    Config cfg;
    test_config(&cfg, NULL);
    MixerRig r;
    int C = 16, H = 2, Kd = 8, Vd = 16;
    rig_init(&r, "gla", &cfg, C, H, 1, 3, 0, 2, 48);
    const ParamDecl want[] = {
        {"gla.q.weight", 2, {Kd, C}, INIT_NORMAL, 0, 0},     {"gla.k.weight", 2, {Kd, C}, INIT_NORMAL, 0, 0},
        {"gla.v.weight", 2, {Vd, C}, INIT_NORMAL, 0, 0},     {"gla.gk1.weight", 2, {16, C}, INIT_NORMAL, 0, 0},
        {"gla.gk2.weight", 2, {Kd, 16}, INIT_NORMAL, 0, 0},  {"gla.gk2.bias", 1, {Kd}, INIT_ZERO, 0, 0},
        {"gla.g.weight", 2, {Vd, C}, INIT_NORMAL, 0, 0},     {"gla.norm.weight", 1, {Vd / H}, INIT_ONE, 0, 0},
        {"gla.o.weight", 2, {C, Vd}, INIT_NORMAL_OUT, 0, 0},
    };
    CHECK(r.n_params == 9, "%d tensors", r.n_params);
    for (int i = 0; i < 9; i++) {
        const ParamDecl *d = &r.decl[i];
        CHECK(!strcmp(d->name, want[i].name) && d->ndim == want[i].ndim && d->init == want[i].init, "tensor %d is %s",
              i, d->name);
        for (int j = 0; j < d->ndim; j++) CHECK(d->shape[j] == want[i].shape[j], "%s dim %d", d->name, j);
    }
    CHECK(r.kind->n_maps && r.kind->n_maps(r.st) == H && r.kind->step && r.kind->attention_values && r.kind->flops);
    rig_free(&r);
}

static void bad_gla(void *arg) {
    Config cfg;
    test_config(&cfg, arg);
    MixerDims d = {12, 4, 4, 1, 0, 1, &cfg, PRECISION_FP32};  // Kd = 6 does not divide over 4 heads
    mixer_find("gla")->create(&d);
}

TEST(gla_rejects_bad_shapes_and_options) {
    char err[512];
    CHECK(test_fork(bad_gla, NULL, err, sizeof err) == 2);
    CHECK(strstr(err, "n_head"), "%s", err);
    Config cfg;
    config_init_all(&cfg);
    CHECK(config_find(&cfg, "gla_gate_rank") && config_find(&cfg, "gla_gate_norm"));
    char out[1024];
    int st = test_run(out, sizeof out, "./train %s gla_gate_norm=0", test_write_file("g.conf", "mixer = gla\n"));
    CHECK(st == 2 && strstr(out, "gla_gate_norm"), "exit %d: %s", st, out);
}

// Forward and backward give the same bits with 1 and 2 threads.
TEST(gla_bit_identical_for_one_and_two_threads) {
    Config cfg;
    test_config(&cfg, NULL);
    MixerRig r;
    omp_set_num_threads(2);
    rig_init(&r, "gla", &cfg, 8, 2, 3, 140, 0, 2, 49);  // T = 140: three chunks, the last short
    rig_check_thread_invariance(&r);
    rig_free(&r);
}
