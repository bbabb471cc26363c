// Gated DeltaNet beyond the generic checks, at the lengths DeltaNet's tests use
// (tests/test_deltanet.c): the chunked gated delta rule (model/mixers/delta_chunk.c with
// log-decays g) against the plain gated recurrence (model/mixers/delta_naive.c) across chunk
// boundaries, its backward (g included) against finite differences at 3 chunks + 5 tokens, no
// overflow however long the chunk and strong the decay; the layer against finite differences for
// every input and parameter (A_log and dt_bias included) at chunk 4 and T = 17 with and without
// the gate, against a plain fp64 transcription of its definition, its map against the recurrence
// run on one-hot values, step() across chunks, thread invariance, its tensors and init, and its
// refusals of bad options.
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/mixers/delta_chunk.h"
#include "model/mixers/delta_naive.h"
#include "tests/delta_kern.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

// ---------------------------------------------------------------------------------------------
// The kernel on one head.

// Max |O - the fp64 recurrence| over the kernel's last forward.
static double vs_recurrence(const DeltaKern *a) {
    int T = a->T, D = a->D;
    double *q = dkern_to_double(a->Q, (size_t)T * D), *k = dkern_to_double(a->K, (size_t)T * D);
    double *v = dkern_to_double(a->V, (size_t)T * D), *beta = dkern_to_double(a->beta, T), *g = dkern_to_double(a->g, T);
    double *o = mallocCheck(sizeof(double) * T * D), worst = 0;
    gated_delta_rule_naive(T, D, D, q, k, v, beta, g, o);
    for (int i = 0; i < T * D; i++) {
        CHECK(isfinite(a->O[i]) && fabs(a->O[i] - o[i]) <= 1e-12, "o[%d] %.17g, recurrence %.17g", i, (double)a->O[i], o[i]);
        worst = fmax(worst, fabs(a->O[i] - o[i]));
    }
    free(q), free(k), free(v), free(beta), free(g), free(o);
    return worst;
}

TEST(gated_deltanet_chunked_form_matches_recurrence) {
    const int lengths[] = {1, 5, 17, 63, 64, 65, 150};
    const int chunks[] = {1, 4, 16, 64};
    Rng rng;
    rng_seed(&rng, 160);
    double worst_o = 0, worst_g = 0;
    for (int li = 0; li < 7; li++)
        for (int ci = 0; ci < 4; ci++) {
            int T = lengths[li], D = 4;
            DeltaKern a;
            dkern_alloc(&a, T, D, chunks[ci], 1, &rng);
            real *da = dkern_grads(&a);
            worst_o = fmax(worst_o, vs_recurrence(&a));
            // the same inputs in one chunk of the whole length: the backward's reference
            DeltaKern b = a;
            b.L = T;
            b.O = mallocCheck(sizeof(real) * T * D);
            b.states = mallocCheck(sizeof(real) * D * D);
            b.work = mallocCheck(sizeof(real) * delta_chunk_work(D, T));
            real *db = dkern_grads(&b);
            for (int i = 0; i < T * (3 * D + 2); i++) {
                CHECK_CLOSE(da[i], db[i], 1e-11);
                worst_g = fmax(worst_g, fabs(da[i] - db[i]));
            }
            free(da), free(db), free(b.O), free(b.states), free(b.work);
            dkern_free(&a);
        }
    printf("gated chunked vs recurrence: max |o diff| %.3g, chunked vs one-chunk gradients %.3g\n", worst_o, worst_g);
}

// T = 17 in chunks of 4: four full chunks and one of a single token, so every gradient (the
// log-decays' too) crosses the inter-chunk path three times and more.
TEST(gated_deltanet_chunk_backward_matches_finite_differences) {
    Rng rng;
    rng_seed(&rng, 161);
    int T = 17, D = 3;
    DeltaKern s;
    dkern_alloc(&s, T, D, 4, 1, &rng);
    real *d = dkern_grads(&s);
    check_grad("dQ", dkern_loss, &s, s.Q, d, (size_t)T * D, 1e-6, 1e-8, 1e-10);
    check_grad("dK", dkern_loss, &s, s.K, d + T * D, (size_t)T * D, 1e-6, 1e-8, 1e-10);
    check_grad("dV", dkern_loss, &s, s.V, d + 2 * T * D, (size_t)T * D, 1e-6, 1e-8, 1e-10);
    check_grad("dbeta", dkern_loss, &s, s.beta, d + 3 * T * D, (size_t)T, 1e-6, 1e-8, 1e-10);
    check_grad("dg", dkern_loss, &s, s.g, d + 3 * T * D + T, (size_t)T, 1e-6, 1e-8, 1e-10);
    free(d);
    dkern_free(&s);
}

// The decays are segment sums from each chunk's start and every exponent is <= 0: strong decays
// (g down to -40, so a chunk's cumulative log-decay reaches -10^4 and exp() underflows to 0) over
// 600 tokens in chunks of 64 and in one chunk of all 600 stay finite and equal the recurrence,
// gradients included.
TEST(gated_deltanet_no_overflow_at_any_length) {
    Rng rng;
    rng_seed(&rng, 162);
    const int chunks[] = {64, 600};
    for (int ci = 0; ci < 2; ci++) {
        DeltaKern a;
        dkern_alloc(&a, 600, 4, chunks[ci], 40, &rng);
        real *d = dkern_grads(&a);
        double worst = vs_recurrence(&a);
        for (int i = 0; i < 600 * (3 * 4 + 2); i++) CHECK(isfinite(d[i]), "gradient %d is %g", i, (double)d[i]);
        printf("g down to -40, T 600, chunk %d: max |o diff| %.3g\n", chunks[ci], worst);
        free(d);
        dkern_free(&a);
    }
}

// ---------------------------------------------------------------------------------------------
// The layer.

// Every input and parameter against finite differences, the maps and step(), at 3 chunks + 5
// tokens with chunk 4 (T = 17), with the gate and the default conv, without the gate with another
// width and short_conv, and with a conv of 1; at a head width of 16 the conv takes its register
// path (width 4, 16 channels a block) away from a sequence's first and last 3 tokens.
TEST(gated_deltanet_layer_gradients_maps_and_step_across_chunks) {
    rig_check_all("gated_deltanet", "gdn_chunk=4", 8, 2, 2, 17, 0, 2, 162);
    rig_check_all("gated_deltanet", "gdn_chunk=4", 32, 2, 1, 17, 0, 1, 175);
    rig_check_all("gated_deltanet", "gdn_chunk=4 gdn_conv=2 gdn_gate=false", 6, 3, 1, 17, 1, 2, 163);
    rig_check_all("gated_deltanet", "gdn_conv=1", 4, 1, 1, 9, 0, 1, 164);
}

// The default chunk of 64 at 3 chunks + 5 tokens: the maps and step.
TEST(gated_deltanet_default_chunk_maps_and_step_at_197) {
    MixerRig r;
    rig_setup(&r, "gated_deltanet", NULL, 4, 1, 1, 3 * DELTA_CHUNK + 5, 0, 1, 165);
    rig_check_attention(&r, 1e-9);
    rig_check_step(&r, 1e-10);
    rig_free(&r);
}

static double silu(double x) { return x / (1 + exp(-x)); }
static double dot_row(const real *W, const real *x, int C) {
    double s = 0;
    for (int c = 0; c < C; c++) s += (double)W[c] * x[c];
    return s;
}

// The definition, plainly in fp64: projections, conv, SiLU, L2 norms, beta, the decay g =
// -exp(A_log) softplus(x Wa^T + dt_bias), the gated recurrence, RMSNorm, the gate SiLU(x Wg^T),
// projection; against forward() at chunk 4 and T = 17, with the gate and without.
static void layer_vs_definition(int gate, uint64_t seed) {
    const int C = 6, H = 2, D = C / H, B = 2, T = 17, K = 4;
    MixerRig r;
    rig_setup(&r, "gated_deltanet", gate ? "gdn_chunk=4" : "gdn_chunk=4 gdn_gate=false", C, H, B, T, 0, 2, seed);
    rig_loss(&r);
    const real *Wqkv = rig_param(&r, "gdn.qkv.weight"), *Wc = rig_param(&r, "gdn.conv.weight");
    const real *Wb = rig_param(&r, "gdn.b.weight"), *w = rig_param(&r, "gdn.norm.weight");
    const real *Wo = rig_param(&r, "gdn.o.weight"), *Wa = rig_param(&r, "gdn.a.weight");
    const real *A_log = rig_param(&r, "gdn.A_log"), *dt_bias = rig_param(&r, "gdn.dt_bias");
    const real *Wg = gate ? rig_param(&r, "gdn.g.weight") : NULL;
    double *pre = mallocCheck(sizeof(double) * T * 3 * C), *f = mallocCheck(sizeof(double) * T * 3 * C);
    double *q = mallocCheck(sizeof(double) * T * D), *k = mallocCheck(sizeof(double) * T * D);
    double *v = mallocCheck(sizeof(double) * T * D), *beta = mallocCheck(sizeof(double) * T);
    double *g = mallocCheck(sizeof(double) * T);
    double *o = mallocCheck(sizeof(double) * T * D), *u = mallocCheck(sizeof(double) * T * C);
    double worst = 0;
    for (int b = 0; b < B; b++) {
        const real *x = r.x + (size_t)b * T * C;
        for (int t = 0; t < T; t++)
            for (int j = 0; j < 3 * C; j++) pre[t * 3 * C + j] = dot_row(Wqkv + j * C, x + t * C, C);
        for (int t = 0; t < T; t++)  // causal conv: w[j, K-1] meets the current token
            for (int j = 0; j < 3 * C; j++) {
                double s = 0;
                for (int i = 0; i < K; i++)
                    if (t - (K - 1) + i >= 0) s += (double)Wc[j * K + i] * pre[(t - (K - 1) + i) * 3 * C + j];
                f[t * 3 * C + j] = silu(s);
            }
        for (int h = 0; h < H; h++) {
            for (int t = 0; t < T; t++) {
                double nq = 0, nk = 0;
                for (int d = 0; d < D; d++) {
                    q[t * D + d] = f[t * 3 * C + h * D + d], k[t * D + d] = f[t * 3 * C + C + h * D + d];
                    v[t * D + d] = f[t * 3 * C + 2 * C + h * D + d];
                    nq += q[t * D + d] * q[t * D + d], nk += k[t * D + d] * k[t * D + d];
                }
                for (int d = 0; d < D; d++) q[t * D + d] /= sqrt(nq + 1e-6) * sqrt(D), k[t * D + d] /= sqrt(nk + 1e-6);
                beta[t] = 1 / (1 + exp(-dot_row(Wb + h * C, x + t * C, C)));
                double z = dot_row(Wa + h * C, x + t * C, C) + dt_bias[h];
                g[t] = -exp((double)A_log[h]) * (z > 20 ? z : log1p(exp(z)));
            }
            gated_delta_rule_naive(T, D, D, q, k, v, beta, g, o);
            for (int t = 0; t < T; t++) {
                double ss = 0;
                for (int d = 0; d < D; d++) ss += o[t * D + d] * o[t * D + d];
                for (int d = 0; d < D; d++) {
                    int c = h * D + d;
                    u[t * C + c] = o[t * D + d] / sqrt(ss / D + 1e-5) * w[d];
                    if (gate) u[t * C + c] *= silu(dot_row(Wg + c * C, x + t * C, C));
                }
            }
        }
        for (int t = 0; t < T; t++)
            for (int c = 0; c < C; c++) {
                double s = 0;
                for (int j = 0; j < C; j++) s += (double)Wo[c * C + j] * u[t * C + j];
                double got = r.y[((size_t)b * T + t) * C + c];
                CHECK_CLOSE(got, s, 1e-11);
                worst = fmax(worst, fabs(got - s));
            }
    }
    printf("gated layer (gate %d) vs its fp64 definition: max |y diff| %.3g\n", gate, worst);
    free(pre), free(f), free(q), free(k), free(v), free(beta), free(g), free(o), free(u);
    rig_free(&r);
}

TEST(gated_deltanet_layer_matches_its_definition) {
    layer_vs_definition(1, 166);
    layer_vs_definition(0, 167);
}

// The map, independently of the chunked kernel: the gated recurrence run on one-hot values (V =
// I, v_j = e_j in R^T) outputs o_i = sum_j a_ij e_j, row i of A. Against attention() from the
// saved q, k, beta, g, for the chunk-4 layer at T = 17 and the default chunk at T = 70.
static void map_vs_one_hot(const char *opts, int C, int H, int B, int T, uint64_t seed) {
    MixerRig r;
    rig_setup(&r, "gated_deltanet", opts, C, H, B, T, 0, 2, seed);
    rig_loss(&r);
    MixerIO io = rig_io(&r);
    int D = C / H;
    const real *qkv = rig_act(&r, "qkv"), *bt = rig_act(&r, "beta"), *gl = rig_act(&r, "g");
    real *a = mallocCheck(sizeof(real) * T * T);
    double *q = mallocCheck(sizeof(double) * T * D), *k = mallocCheck(sizeof(double) * T * D);
    double *eye = callocCheck((size_t)T * T, sizeof(double)), *A = mallocCheck(sizeof(double) * T * T);
    double *beta = mallocCheck(sizeof(double) * T), *g = mallocCheck(sizeof(double) * T), worst = 0, gmin = 0;
    for (int i = 0; i < T; i++) eye[i * T + i] = 1;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            for (int t = 0; t < T; t++) {
                for (int d = 0; d < D; d++) {
                    q[t * D + d] = qkv[((size_t)b * T + t) * 3 * C + h * D + d];
                    k[t * D + d] = qkv[((size_t)b * T + t) * 3 * C + C + h * D + d];
                }
                beta[t] = bt[((size_t)b * T + t) * H + h], g[t] = gl[((size_t)b * T + t) * H + h];
                gmin = fmin(gmin, g[t]);
            }
            gated_delta_rule_naive(T, D, T, q, k, eye, beta, g, A);
            r.kind->attention(r.st, &io, b, h, a);
            for (int i = 0; i < T * T; i++) {
                CHECK(fabs(a[i] - A[i]) <= 1e-12 * (1 + fabs(A[i])),
                      "b %d h %d a[%d][%d] %.15g, one-hot recurrence %.15g", b, h, i / T, i % T, (double)a[i], A[i]);
                worst = fmax(worst, fabs(a[i] - A[i]));
            }
        }
    CHECK(gmin < -1e-3, "the decay barely acts (min g %g): the test would not see it", gmin);
    printf("gated map vs one-hot recurrence (T %d, min g %.3g): max |a diff| %.3g\n", T, gmin, worst);
    free(a), free(q), free(k), free(eye), free(A), free(beta), free(g);
    rig_free(&r);
}

TEST(gated_deltanet_map_equals_recurrence_on_one_hot_values) {
    map_vs_one_hot("gdn_chunk=4", 8, 2, 2, 17, 168);
    map_vs_one_hot(NULL, 8, 2, 1, 70, 169);
}

TEST(gated_deltanet_bit_identical_for_one_and_two_threads_across_chunks) {
    const char *opts[] = {"gdn_chunk=4", "gdn_chunk=4 gdn_gate=false"};
    for (int i = 0; i < 2; i++) {
        Config cfg;
        test_config(&cfg, opts[i]);
        MixerRig r;
        omp_set_num_threads(2);
        rig_init(&r, "gated_deltanet", &cfg, 8, 2, 3, 17, 0, 2, 170);
        rig_check_thread_invariance(&r);
        rig_free(&r);
        config_free(&cfg);
    }
}

// Tensors as fla's GatedDeltaNet (d_v = d_k: expand_v 1), A_log and dt_bias out of weight decay,
// their init (A = exp(A_log) in (0, 16), dt = softplus(dt_bias) in [1e-3, 0.1]), the window, and
// flops that count the gate.
TEST(gated_deltanet_tensor_names_shapes_init_and_window) {
    MixerRig r;
    int C = 12, H = 3;
    rig_setup(&r, "gated_deltanet", NULL, C, H, 1, 3, 0, 2, 171);
    const ParamDecl want[] = {
        {"gdn.qkv.weight", 2, {3 * C, C}, INIT_NORMAL, 0, 0},
        {"gdn.conv.weight", 2, {3 * C, 4}, INIT_NORMAL, 0, 0},
        {"gdn.b.weight", 2, {H, C}, INIT_NORMAL, 0, 0},
        {"gdn.norm.weight", 1, {C / H}, INIT_ONE, 0, 0},
        {"gdn.o.weight", 2, {C, C}, INIT_NORMAL_OUT, 0, 0},
        {"gdn.a.weight", 2, {H, C}, INIT_NORMAL, 0, 0},
        {"gdn.A_log", 1, {H}, INIT_CUSTOM, 0, 1},
        {"gdn.dt_bias", 1, {H}, INIT_CUSTOM, 0, 1},
        {"gdn.g.weight", 2, {C, C}, INIT_NORMAL, 0, 0},
    };
    CHECK(r.n_params == 9, "%d tensors", r.n_params);
    for (int i = 0; i < 9 && i < r.n_params; i++) {
        const ParamDecl *d = &r.decl[i];
        CHECK(!strcmp(d->name, want[i].name) && d->ndim == want[i].ndim && d->init == want[i].init &&
                  d->no_decay == want[i].no_decay,
              "tensor %d is %s", i, d->name);
        for (int j = 0; j < d->ndim; j++) CHECK(d->shape[j] == want[i].shape[j]);
    }
    const real *A_log = rig_param(&r, "gdn.A_log"), *dt_bias = rig_param(&r, "gdn.dt_bias");
    for (int h = 0; h < H; h++) {
        double A = exp(A_log[h]), dt = log1p(exp(dt_bias[h]));
        CHECK(A > 0 && A < 16, "A %g", A);
        CHECK(dt > 1e-3 * (1 - 1e-9) && dt < 0.1 * (1 + 1e-9), "dt %g", dt);
    }
    CHECK(r.kind->n_maps(r.st) == H && r.kind->value_window(r.st) == 4 && !r.kind->length_bound);
    double f1, b1, f0, b0;
    r.kind->flops(r.st, 2, 64, &f1, &b1);
    rig_free(&r);
    rig_setup(&r, "gated_deltanet", "gdn_gate=false gdn_conv=2", C, H, 1, 3, 0, 2, 171);
    CHECK(r.n_params == 8 && r.kind->value_window(r.st) == 2);
    r.kind->flops(r.st, 2, 64, &f0, &b0);
    CHECK(f1 - f0 >= 2.0 * 2 * 64 * C * C && b1 > b0, "flops %g with the gate, %g without", f1, f0);
    rig_free(&r);
}

// Each refusal: exit status 2 and one line naming the key.
static void refused(const char *opts, int C, int H, const char *key) {
    char err[512];
    int rc = rig_create_status("gated_deltanet", opts, C, H, 8, err, sizeof err);
    CHECK(rc == 2, "%s: exit %d", opts, rc);
    CHECK(strstr(err, key), "%s: '%s'", opts, err);
    const char *nl = strchr(err, '\n');
    CHECK(!nl || !nl[1], "%s: more than one line: '%s'", opts, err);
}

TEST(gated_deltanet_rejects_bad_options) {
    refused("gdn_chunk=0", 8, 2, "gdn_chunk");
    refused("gdn_chunk=5000", 8, 2, "gdn_chunk");
    refused("gdn_conv=0", 8, 2, "gdn_conv");
    refused("gdn_conv=65", 8, 2, "gdn_conv");
    refused("gdn_conv=x", 8, 2, "gdn_conv");
    refused("gdn_gate=maybe", 8, 2, "gdn_gate");
    refused(NULL, 8, 3, "n_head");
}
