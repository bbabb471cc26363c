// The Mamba block beyond the generic checks: finite differences with non-default options, several
// scan chunks and channel blocks, both softplus branches and extreme step sizes; its per-channel
// alpha_ij rebuilding the whole block's output; mamba_simple's init; bit-identical results for
// 1 and 2 threads; the activation budget; the float exp and softplus of the scan.
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/kernels/vmath.h"
#include "model/mixers/mamba_scan.h"
#include "model/mixers/mamba_scan_naive.h"
#include "model/model.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

static size_t param_count(MixerRig *r, const char *name) {
    for (int i = 0; i < r->n_params; i++)
        if (!strcmp(r->decl[i].name, name)) return r->count[i];
    return 0;
}

// A rig with C = 12 (E = 24: a full block of 16 channels and a partial one), T = 37 (two full
// scan chunks and a partial one), A_log spread away from its deterministic init.
static void mamba_rig(MixerRig *r, Config *cfg, const char *opts, int C, int B, int T, uint64_t seed) {
    test_config(cfg, opts);
    rig_init(r, "mamba", cfg, C, 2, B, T, 0, 2, seed);
    Rng rng;
    rng_seed(&rng, seed + 100);
    real *A_log = rig_param(r, "mamba.A_log");
    for (size_t i = 0; i < param_count(r, "mamba.A_log"); i++) A_log[i] += (real)(0.5 * rng_normal(&rng));
}

TEST(mamba_backward_options_chunks_and_blocks) {
    Config cfg;
    MixerRig r;
    mamba_rig(&r, &cfg, "d_state=3 d_conv=3 dt_rank=2", 12, 2, 37, 21);
    rig_check_grads(&r, 1e-6, 1e-8);
    rig_free(&r);
    mamba_rig(&r, &cfg, "d_state=5 d_conv=1 expand=1 dt_rank=1", 4, 1, 18, 22);
    rig_check_grads(&r, 1e-6, 1e-8);
    rig_free(&r);
}

// Half the channels with delta's argument far above 20 (softplus is the identity there), half
// in log1p(exp()); checked by finite differences, including the dt bias itself.
TEST(mamba_backward_both_softplus_branches) {
    Config cfg;
    MixerRig r;
    mamba_rig(&r, &cfg, "d_state=4 d_conv=2", 8, 1, 21, 23);
    real *bias = rig_param(&r, "mamba.dt_proj.bias");
    int E = (int)param_count(&r, "mamba.D");
    for (int e = 0; e < E; e++) bias[e] = e % 2 ? 40 : -1;
    rig_loss(&r);
    const real *dt = rig_act(&r, "dt");
    int above = 0, below = 0;
    for (int i = 0; i < r.B * r.T * E; i++) {
        CHECK(fabs(dt[i] - 20) > 1e-3, "delta's argument %g sits on the threshold", (double)dt[i]);
        above += dt[i] > 20, below += dt[i] <= 20;
    }
    CHECK(above > 0 && below > 0);
    rig_check_grads_h(&r, 1e-5, 1e-6, 1e-7);
    rig_free(&r);
}

static int all_finite(const real *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

// Large steps (dt bias 10: exp(delta A) underflows towards 0, the state forgets at once) and tiny
// ones (dt bias -10: delta ~ 5e-5, the state barely moves): finite outputs and gradients that
// still match finite differences, at a step of 1e-5: the outputs are ~40x larger and the roundoff
// of a 1e-6 step (~eps |loss| / h) would exceed the tolerance.
TEST(mamba_extreme_step_sizes) {
    double biases[] = {10, -10};
    for (int k = 0; k < 2; k++) {
        Config cfg;
        MixerRig r;
        mamba_rig(&r, &cfg, "d_state=4", 8, 1, 20, 24 + k);
        real *bias = rig_param(&r, "mamba.dt_proj.bias");
        for (size_t e = 0; e < param_count(&r, "mamba.dt_proj.bias"); e++) bias[e] = (real)biases[k];
        rig_check_grads_h(&r, 1e-5, 1e-6, 1e-7);
        size_t n = (size_t)r.B * r.T * r.dims.C;
        CHECK(all_finite(r.y, n) && all_finite(r.dx, n), "dt bias %g", biases[k]);
        for (int i = 0; i < r.n_params; i++)
            CHECK(all_finite(r.g[i], r.count[i]), "dt bias %g: d(%s)", biases[k], r.decl[i].name);
        rig_free(&r);
    }
}

// Per channel, sum_j alpha_ij u_j + D u_i is the scan output with the D skip; gated by SiLU(z)
// and projected by out_proj it must give the block's output.
TEST(mamba_alpha_plus_D_rebuilds_block_output) {
    Config cfg;
    MixerRig r;
    mamba_rig(&r, &cfg, "d_state=4 d_conv=3", 8, 2, 40, 26);
    rig_loss(&r);
    MixerIO io = rig_io(&r);
    int T = r.T, C = r.dims.C, E = r.kind->n_maps(r.st);
    CHECK(E == 16, "one map per channel: %d", E);
    const real *xz = rig_act(&r, "xz"), *D = rig_param(&r, "mamba.D");
    const real *W_out = rig_param(&r, "mamba.out_proj.weight");
    real *a = mallocCheck(sizeof(real) * T * T), *u = mallocCheck(sizeof(real) * T);
    real *ys = mallocCheck(sizeof(real) * T), *g = mallocCheck(sizeof(real) * T * E);
    for (int b = 0; b < r.B; b++) {
        for (int e = 0; e < E; e++) {
            r.kind->attention(r.st, &io, b, e, a);
            CHECK(r.kind->attention_values(r.st, &io, b, e, u, ys) == 1);
            for (int i = 0; i < T; i++) {
                double y = D[e] * u[i];
                for (int j = 0; j <= i; j++) y += a[i * T + j] * u[j];
                double z = xz[((size_t)b * T + i) * 2 * E + E + e];
                g[i * E + e] = (real)(y * z / (1 + exp(-z)));
            }
        }
        for (int i = 0; i < T; i++)
            for (int c = 0; c < C; c++) {
                double out = 0;
                for (int e = 0; e < E; e++) out += g[i * E + e] * W_out[c * E + e];
                double want = r.y[((size_t)b * T + i) * C + c];
                CHECK(fabs(out - want) <= 1e-9 * (1 + fabs(want)), "b %d t %d c %d: %.15g vs %.15g", b, i, c, out, want);
            }
    }
    free(a), free(u), free(ys), free(g);
    rig_free(&r);
}

TEST(mamba_step_matches_forward_with_options) {
    const char *opts[] = {"d_state=3 d_conv=1", "d_state=2 d_conv=5 expand=3 dt_rank=3"};
    for (int k = 0; k < 2; k++) {
        Config cfg;
        MixerRig r;
        mamba_rig(&r, &cfg, opts[k], 4, 2, 20, 27 + k);
        rig_check_step(&r, 1e-10);
        rig_free(&r);
    }
}

// Forward and backward give the same bits with 1 and 2 threads (no sum is split across threads).
TEST(mamba_bit_identical_for_one_and_two_threads) {
    Config cfg;
    MixerRig r;
    omp_set_num_threads(2);
    mamba_rig(&r, &cfg, "d_state=3", 12, 3, 37, 29);
    rig_check_thread_invariance(&r);
    rig_free(&r);
}

// mamba_simple's init (docs/mixers.md#mamba) and the names and shapes of
// docs/design.md#tensor-names.
TEST(mamba_init_and_tensor_names) {
    Config cfg;
    test_config(&cfg, "mixer=mamba mlp=false");
    ModelShape s = {.V = 16, .C = 32, .L = 2, .H = 2, .T = 8, .mlp = 0, .pos_emb = 1};
    Model *m = model_create(&s, mixer_find("mamba"), &cfg, 2, 16);
    model_init_weights(m, 5);
    struct {
        const char *name;
        int ndim, s0, s1, decay;
    } want[] = {
        {"h.1.mamba.in_proj.weight", 2, 128, 32, 1}, {"h.1.mamba.conv.weight", 2, 64, 4, 1},
        {"h.1.mamba.conv.bias", 1, 64, 0, 0},        {"h.1.mamba.x_proj.weight", 2, 2 + 32, 64, 1},
        {"h.1.mamba.dt_proj.weight", 2, 64, 2, 1},   {"h.1.mamba.dt_proj.bias", 1, 64, 0, 0},
        {"h.1.mamba.A_log", 2, 64, 16, 0},           {"h.1.mamba.D", 1, 64, 0, 0},
        {"h.1.mamba.out_proj.weight", 2, 32, 64, 1},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const TensorInfo *t = model_find_tensor(m, want[i].name);
        CHECK(t, "no tensor %s", want[i].name);
        CHECK(t->ndim == want[i].ndim && t->shape[0] == want[i].s0 && (t->ndim == 1 || t->shape[1] == want[i].s1),
              "%s has the wrong shape", want[i].name);
        CHECK(t->decay == want[i].decay, "%s: weight decay %d", want[i].name, t->decay);
    }
    const real *P = m->params;
    const real *A_log = P + model_find_tensor(m, "h.0.mamba.A_log")->offset;
    const real *dtb = P + model_find_tensor(m, "h.0.mamba.dt_proj.bias")->offset;
    const real *D = P + model_find_tensor(m, "h.0.mamba.D")->offset;
    for (int e = 0; e < 64; e++) {
        for (int n = 0; n < 16; n++) CHECK_CLOSE(A_log[e * 16 + n], log(n + 1.0), 1e-15);
        double dt = log1p(exp(dtb[e]));  // softplus undoes the inverse softplus
        CHECK(dt >= 1e-3 * (1 - 1e-12) && dt <= 1e-1 * (1 + 1e-12), "dt %g", dt);
        CHECK(D[e] == 1);
    }
    // clang-format off
    struct { const char *name; double bound; } uni[] = {
        {"h.0.mamba.in_proj.weight", 1 / sqrt(32.0)}, {"h.0.mamba.conv.weight", 0.5},
        {"h.0.mamba.conv.bias", 0.5}, {"h.0.mamba.x_proj.weight", 1 / sqrt(64.0)},
        {"h.0.mamba.dt_proj.weight", 1 / sqrt(2.0)},
        {"h.0.mamba.out_proj.weight", 1 / sqrt(64.0) / sqrt(2.0)},  // / sqrt(n_layer), no MLP
    };
    // clang-format on
    for (size_t i = 0; i < sizeof uni / sizeof uni[0]; i++) {
        const TensorInfo *t = model_find_tensor(m, uni[i].name);
        double mx = 0;
        for (size_t k = 0; k < t->count; k++) mx = fmax(mx, fabs(P[t->offset + k]));
        // uniform on (-bound, bound): the largest draw is close to the bound
        CHECK(mx <= uni[i].bound && mx > 0.8 * uni[i].bound, "%s: max |w| %g, bound %g", uni[i].name, mx, uni[i].bound);
    }
    model_free(m);
}

// The training shape of the issue: 2 layers, d_model 64, T = 1024, batch 16 (MQAR vocabulary)
// holds less than 1 GiB of activations in float (the arena is allocated, not touched).
TEST(mamba_activations_fit_1GiB_at_T1024_B16) {
    Config cfg;
    test_config(&cfg, "mixer=mamba");
    ModelShape s = {.V = 8192, .C = 64, .L = 2, .H = 1, .T = 1024, .mlp = 0, .pos_emb = 1};
    Model *m = model_create(&s, mixer_find("mamba"), &cfg, 16, 16 * 1024);
    double gib = (double)m->n_acts * sizeof(float) / (1 << 30);
    CHECK(gib < 1, "%.3f GiB of activations", gib);
    model_free(m);
}

static void bad_d_state(void *arg) {
    Config cfg;
    test_config(&cfg, arg);
    MixerDims d = {8, 1, 4, 1, 0, 1, &cfg, PRECISION_FP32};
    mixer_find("mamba")->create(&d);
}

TEST(mamba_rejects_bad_options) {
    char err[512];
    CHECK(test_fork(bad_d_state, "d_state=5000", err, sizeof err) == 2);
    CHECK(strstr(err, "d_state"), "%s", err);
    CHECK(test_fork(bad_d_state, "d_conv=0", err, sizeof err) == 2);
    CHECK(strstr(err, "d_conv"), "%s", err);
}

// The blocked scan (channels in SIMD lanes, states saved every MAMBA_CHUNK tokens, transposing
// lane sums) against the plain recurrence, forward and every backward output, on shapes with a
// partial channel block, a partial group of blocks, a partial chunk and d_state below, at and
// above 16.
static void scan_vs_naive(int B, int T, int E, int N, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    size_t BT = (size_t)B * T;
    int ld = 3 + 2 * N, nb = mamba_n_groups(E);
    real *u = mallocCheck(sizeof(real) * BT * E), *delta = mallocCheck(sizeof(real) * BT * E);
    real *raw = mallocCheck(sizeof(real) * BT * E), *dy = mallocCheck(sizeof(real) * BT * E);
    real *bc = mallocCheck(sizeof(real) * BT * ld), *A = mallocCheck(sizeof(real) * E * N);
    real *D = mallocCheck(sizeof(real) * E);
    for (size_t i = 0; i < BT * E; i++) {
        u[i] = (real)rng_normal(&rng), dy[i] = (real)rng_normal(&rng);
        raw[i] = (real)(rng_uniform(&rng) < 0.1 ? 21 + rng_uniform(&rng) : 3 * rng_normal(&rng) - 2);
        delta[i] = raw[i] <= 20 ? (real)log1p(exp(raw[i])) : raw[i];
    }
    for (size_t i = 0; i < BT * ld; i++) bc[i] = (real)rng_normal(&rng);
    for (int i = 0; i < E * N; i++) A[i] = (real)-exp(rng_normal(&rng));
    for (int e = 0; e < E; e++) D[e] = (real)rng_normal(&rng);
    MambaScan s = {.B = B, .T = T, .E = E, .N = N, .u = u, .delta = delta, .bc = bc + 3, .ld = ld, .A = A};
    real *ys = mallocCheck(sizeof(real) * BT * E), *ys0 = mallocCheck(sizeof(real) * BT * E);
    real *hs = mallocCheck(sizeof(real) * mamba_states_size(B, T, E, N));
    real *work = mallocCheck(sizeof(real) * omp_get_max_threads() * mamba_scan_work(E, N));
    real *du = mallocCheck(sizeof(real) * BT * E), *ddt = mallocCheck(sizeof(real) * BT * E);
    real *dbc = mallocCheck(sizeof(real) * BT * nb * 2 * N), *dA = mallocCheck(sizeof(real) * B * E * N);
    real *dD = mallocCheck(sizeof(real) * B * E);
    real *du0 = mallocCheck(sizeof(real) * BT * E), *ddt0 = mallocCheck(sizeof(real) * BT * E);
    real *dbc0 = mallocCheck(sizeof(real) * BT * 2 * N), *dA0 = mallocCheck(sizeof(real) * E * N);
    real *dD0 = mallocCheck(sizeof(real) * E);
    mamba_scan_forward(&s, ys, hs, work);
    mamba_scan_forward_naive(&s, ys0);
    mamba_scan_backward(&s, hs, raw, D, dy, du, ddt, dbc, dA, dD, work);
    mamba_scan_backward_naive(&s, raw, D, dy, du0, ddt0, dbc0, dA0, dD0);
#define CLOSE(got, want, what, i)                                                                                      \
    CHECK(fabs((double)(got) - (double)(want)) <= 1e-11 * (1 + fabs((double)(want))),                                  \
          "B%d T%d E%d N%d: %s[%zu] %.15g vs %.15g", B, T, E, N, what, (size_t)(i), (double)(got), (double)(want))
    for (size_t i = 0; i < BT * E; i++) {
        CLOSE(ys[i], ys0[i], "ys", i);
        CLOSE(du[i], du0[i], "du", i);
        CLOSE(ddt[i], ddt0[i], "ddt", i);
    }
    for (size_t r = 0; r < BT; r++)
        for (int j = 0; j < 2 * N; j++) {
            double acc = 0;
            for (int blk = 0; blk < nb; blk++) acc += dbc[(r * nb + blk) * 2 * N + j];
            CLOSE(acc, dbc0[r * 2 * N + j], "dBC", r * 2 * N + j);
        }
    for (int i = 0; i < E * N; i++) {
        double acc = 0;
        for (int b = 0; b < B; b++) acc += dA[(size_t)b * E * N + i];
        CLOSE(acc, dA0[i], "dA", i);
    }
    for (int e = 0; e < E; e++) {
        double acc = 0;
        for (int b = 0; b < B; b++) acc += dD[(size_t)b * E + e];
        CLOSE(acc, dD0[e], "dD", e);
    }
#undef CLOSE
    free(u), free(delta), free(raw), free(dy), free(bc), free(A), free(D), free(ys), free(ys0), free(hs);
    free(work), free(du), free(ddt), free(dbc), free(dA), free(dD), free(du0), free(ddt0), free(dbc0);
    free(dA0), free(dD0);
}

TEST(mamba_scan_matches_plain_recurrence) {
    scan_vs_naive(2, 37, 24, 16, 40);  // a partial block, a partial chunk, the default d_state
    scan_vs_naive(3, 16, 5, 5, 41);    // one chunk exactly, one narrow block
    scan_vs_naive(1, 50, 40, 20, 42);  // d_state past 16: two groups of lane sums
    scan_vs_naive(2, 1, 16, 3, 43);    // a single token
    scan_vs_naive(2, 20, 300, 4, 44);  // two groups of blocks, the second partial
}

// Channel maps (the evaluator's): the blocked kernel (sixteen j per transposing tree) against the
// plain triple product, on lengths below, at and past 16 and d_state below, at and past 16.
static void map_vs_naive(int B, int T, int E, int N, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    size_t BT = (size_t)B * T;
    int ld = 3 + 2 * N;
    real *delta = mallocCheck(sizeof(real) * BT * E), *bc = mallocCheck(sizeof(real) * BT * ld);
    real *A = mallocCheck(sizeof(real) * E * N);
    for (size_t i = 0; i < BT * E; i++) delta[i] = (real)log1p(exp(2 * rng_normal(&rng) - 2));
    for (size_t i = 0; i < BT * ld; i++) bc[i] = (real)rng_normal(&rng);
    for (int i = 0; i < E * N; i++) A[i] = (real)-exp(rng_normal(&rng));
    MambaScan s = {.B = B, .T = T, .E = E, .N = N, .delta = delta, .bc = bc + 3, .ld = ld, .A = A};
    real *att = mallocCheck(sizeof(real) * T * T), *att0 = mallocCheck(sizeof(real) * T * T);
    real *work = mallocCheck(sizeof(real) * mamba_map_work(T, N));
    for (int b = 0; b < B; b++)
        for (int e = 0; e < E; e++) {
            for (int i = 0; i < T * T; i++) att[i] = (real)NAN;  // every entry written, above the diagonal 0
            mamba_scan_map(&s, b, e, att, work);
            mamba_scan_map_naive(&s, b, e, att0);
            for (int i = 0; i < T * T; i++)
                CHECK(fabs((double)att[i] - (double)att0[i]) <= 1e-11 * (1 + fabs((double)att0[i])),
                      "T%d N%d b%d e%d: att[%d] %.15g vs %.15g", T, N, b, e, i, (double)att[i], (double)att0[i]);
        }
    free(delta), free(bc), free(A), free(att), free(att0), free(work);
}

TEST(mamba_map_matches_plain_product) {
    map_vs_naive(2, 37, 3, 16, 50);  // rows past 16 and 32: three blocks of j
    map_vs_naive(1, 16, 2, 5, 51);   // one block exactly, narrow state
    map_vs_naive(2, 9, 2, 20, 52);   // d_state past 16: two state vectors
    map_vs_naive(1, 1, 1, 3, 53);    // a single token
}

// The float build's log (vlogf, the evaluator's entropy): within 2.5e-7 relative of log over the
// normal floats; finite at 0 and on subnormals (x log x is then 0 or negligible).
TEST(float_log_accuracy) {
    double worst = 0;
    for (int e = -126; e < 128; e++)
        for (int i = 0; i < 4096; i++) {
            float x = ldexpf(1.0f + i / 4096.0f, e);
            double want = log((double)x), got = vlogf(x);
            double err = fabs(got - want) / (fabs(want) > 1e-3 ? fabs(want) : 1e-3);
            if (err > worst) worst = err;
        }
    CHECK(worst < 2.5e-7, "max relative error %g", worst);  // 1.7e-7 with or without FMA contraction
    CHECK(vlogf(1) == 0);
    CHECK(isfinite(vlogf(0)) && 0 * vlogf(0) == 0 && isfinite(vlogf(1e-40f)) && fabs(1e-40f * vlogf(1e-40f)) < 1e-36);
}

// The float build's exp (vexpf, the project's one): within 2 ulp of exp on its range, exactly
// 1 at 0, 0 far below, +inf above ln(FLT_MAX), NaN kept.
TEST(float_exp_accuracy) {
    double worst = 0;
    for (int i = 0; i <= 2000000; i++) {
        float x = (float)(-86.0 + 174.5 * i / 2000000);
        double want = exp((double)x), got = vexpf(x);
        double err = fabs(got - want) / want;
        if (err > worst) worst = err;
    }
    CHECK(worst < 2.4e-7, "max relative error %g", worst);
    CHECK(vexpf(0) == 1);
    CHECK(vexpf(-100) == 0 && vexpf(-1e30f) == 0);
    CHECK(isinf(vexpf(100)) && isnan(vexpf(NAN)));
}

#ifdef __AVX512F__
// Outside AddressSanitizer: its fake stack (detect_stack_use_after_return) gives frames 32-byte
// alignment, and GCC 12 spills an __m512 there with an aligned 64-byte store, which faults.
__attribute__((noinline, no_sanitize_address)) static void exp16_nonpos(float out[16], const float in[16]) {
    _mm512_storeu_ps(out, vexp16f_nonpos(_mm512_loadu_ps(in)));
}

// The 16-lane exp of Mamba's scan (AVX-512) gives vexpf_nonpos's bits: every float from -100 to 0
// in steps of 2^-16, and some of each binade down to the smallest normal.
TEST(float_exp_16_lanes_same_bits) {
    long mismatches = 0, n = 0;
    float xs[16];
    for (long i = 0; i <= 100L * 65536; i += 16) {
        for (int l = 0; l < 16; l++) xs[l] = -(float)(i + l) / 65536.0f;
        float got[16];
        exp16_nonpos(got, xs);
        for (int l = 0; l < 16; l++, n++) {
            float want = vexpf_nonpos(xs[l]);
            if (memcmp(&got[l], &want, sizeof want)) mismatches++;
        }
    }
    for (int e = -126; e < 8; e++) {
        for (int l = 0; l < 16; l++) xs[l] = -ldexpf(1.0f + l / 16.0f, e);
        float got[16];
        exp16_nonpos(got, xs);
        for (int l = 0; l < 16; l++, n++) {
            float want = vexpf_nonpos(xs[l]);
            if (memcmp(&got[l], &want, sizeof want)) mismatches++;
        }
    }
    CHECK(mismatches == 0, "%ld of %ld differ", mismatches, n);
}
#endif

// The float build's softplus (vsoftplusf) against log1p(exp(r)) in double.
TEST(float_softplus_accuracy) {
    double worst = 0;
    for (int i = 0; i <= 1000000; i++) {
        float r = (float)(-80.0 + 160.0 * i / 1000000);
        double want = log1p(exp((double)r)), got = vsoftplusf(r);
        double err = fabs(got - want) / want;
        if (err > worst) worst = err;
    }
    CHECK(worst < 3e-7, "max relative error %g", worst);
}

// The float build's sigmoid and SiLU (vsigmoidf, vsiluf): the same bits as 1 / (1 + vexpf(-x))
// and x / (1 + vexpf(-x)) from x = -88.7 up (past 86.5 both give exactly 1 and x); below it, where
// vexpf(-x) is inf, a subnormal that the trainer's flush of denormals makes the same 0; accurate
// against double; NaN stays NaN.
TEST(float_sigmoid_and_silu_match_vexpf_forms) {
    long differ = 0, big = 0;
    double worst = 0;
    for (int i = 0; i <= 400000; i++) {
        float x = (float)(-100.0 + 200.0 * i / 400000);
        float s = vsigmoidf(x), s0 = 1 / (1 + vexpf(-x)), u = vsiluf(x), u0 = x / (1 + vexpf(-x));
        if (x >= -88.7f) differ += memcmp(&s, &s0, sizeof s) != 0 || memcmp(&u, &u0, sizeof u) != 0;
        else big += !(s < 1.2e-38f && fabsf(u) < 1.2e-36f);
        double want = 1 / (1 + exp(-(double)x));
        if (want > 1e-30) worst = fmax(worst, fabs(s - want) / want);
    }
    CHECK(differ == 0, "%ld of the points from -88.7 on differ from the vexpf forms", differ);
    CHECK(big == 0, "%ld points below -88.7 are not subnormal or 0", big);
    CHECK(worst < 3e-7, "sigmoid: max relative error %g", worst);
    CHECK(isnan(vsigmoidf(NAN)) && isnan(vsiluf(NAN)), "NaN lost: %g %g", vsigmoidf(NAN), vsiluf(NAN));
}
