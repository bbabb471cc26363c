// DeltaNet beyond the generic checks: the chunked delta rule (model/mixers/delta_chunk.c) against
// the plain recurrence (model/mixers/delta_naive.c) across chunk boundaries, and its backward
// against finite differences at 3 chunks + 5 tokens; the layer against finite differences for
// every input and parameter at the same length (chunk 4, T = 17), against a plain fp64
// transcription of its definition, its map against the recurrence run on one-hot values, step()
// across chunks, thread invariance across chunks, its tensors, and its refusals of bad options.
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

TEST(deltanet_chunked_form_matches_recurrence) {
    const int lengths[] = {1, 5, 17, 63, 64, 65, 150};
    const int chunks[] = {1, 4, 16, 64};
    Rng rng;
    rng_seed(&rng, 60);
    double worst_o = 0, worst_g = 0;
    for (int li = 0; li < 7; li++)
        for (int ci = 0; ci < 4; ci++) {
            int T = lengths[li], D = 4;
            DeltaKern a;
            dkern_alloc(&a, T, D, chunks[ci], -1, &rng);
            real *da = dkern_grads(&a);
            // the same inputs in one chunk of the whole length: the backward's reference
            DeltaKern b = a;
            b.L = T;
            b.O = mallocCheck(sizeof(real) * T * D);
            b.states = mallocCheck(sizeof(real) * D * D);
            b.work = mallocCheck(sizeof(real) * delta_chunk_work(D, T));
            real *db = dkern_grads(&b);
            double *q = dkern_to_double(a.Q, (size_t)T * D), *k = dkern_to_double(a.K, (size_t)T * D);
            double *v = dkern_to_double(a.V, (size_t)T * D), *beta = dkern_to_double(a.beta, T);
            double *o = mallocCheck(sizeof(double) * T * D);
            delta_rule_naive(T, D, D, q, k, v, beta, o);
            for (int i = 0; i < T * D; i++) {
                CHECK_CLOSE(a.O[i], o[i], 1e-12);
                worst_o = fmax(worst_o, fabs(a.O[i] - o[i]));
            }
            for (int i = 0; i < T * (3 * D + 1); i++) {
                CHECK_CLOSE(da[i], db[i], 1e-11);
                worst_g = fmax(worst_g, fabs(da[i] - db[i]));
            }
            free(q), free(k), free(v), free(beta), free(o), free(da), free(db);
            free(b.O), free(b.states), free(b.work);
            dkern_free(&a);
        }
    printf("chunked vs recurrence: max |o diff| %.3g, chunked vs one-chunk gradients %.3g\n", worst_o, worst_g);
}

// T = 17 in chunks of 4: four full chunks and one of a single token, so every gradient crosses
// the inter-chunk path (the states and dS) three times and more.
TEST(deltanet_chunk_backward_matches_finite_differences) {
    Rng rng;
    rng_seed(&rng, 61);
    int T = 17, D = 3;
    DeltaKern s;
    dkern_alloc(&s, T, D, 4, -1, &rng);
    real *d = dkern_grads(&s);
    check_grad("dQ", dkern_loss, &s, s.Q, d, (size_t)T * D, 1e-6, 1e-8, 1e-10);
    check_grad("dK", dkern_loss, &s, s.K, d + T * D, (size_t)T * D, 1e-6, 1e-8, 1e-10);
    check_grad("dV", dkern_loss, &s, s.V, d + 2 * T * D, (size_t)T * D, 1e-6, 1e-8, 1e-10);
    check_grad("dbeta", dkern_loss, &s, s.beta, d + 3 * T * D, (size_t)T, 1e-6, 1e-8, 1e-10);
    free(d);
    dkern_free(&s);
}

// ---------------------------------------------------------------------------------------------
// The layer.

// Every input and parameter against finite differences, the maps and step(), at 3 chunks + 5
// tokens with chunk 4 (T = 17), with the default conv and with another width and short_conv; at
// a head width of 16 the conv takes its register path (width 4, 16 channels a block) away from a
// sequence's first and last 3 tokens.
TEST(deltanet_layer_gradients_maps_and_step_across_chunks) {
    rig_check_all("deltanet", "deltanet_chunk=4", 8, 2, 2, 17, 0, 2, 62);
    rig_check_all("deltanet", "deltanet_chunk=4", 32, 2, 1, 17, 0, 1, 71);
    rig_check_all("deltanet", "deltanet_chunk=4 deltanet_conv=2", 6, 3, 1, 17, 1, 2, 63);
    rig_check_all("deltanet", "deltanet_conv=1", 4, 1, 1, 9, 0, 1, 64);
}

// The default chunk of 64 at 3 chunks + 5 tokens: the maps and step (finite differences at this
// length are the chunk-4 case's job).
TEST(deltanet_default_chunk_maps_and_step_at_197) {
    MixerRig r;
    rig_setup(&r, "deltanet", NULL, 4, 1, 1, 3 * DELTA_CHUNK + 5, 0, 1, 65);
    rig_check_attention(&r, 1e-9);
    rig_check_step(&r, 1e-10);
    rig_free(&r);
}

static double silu(double x) { return x / (1 + exp(-x)); }

// The definition, plainly in fp64: projections, conv, SiLU, L2 norms, beta, the recurrence,
// RMSNorm, projection; against forward() at chunk 4 and T = 17.
TEST(deltanet_layer_matches_its_definition) {
    const int C = 6, H = 2, D = C / H, B = 2, T = 17, K = 4;
    MixerRig r;
    rig_setup(&r, "deltanet", "deltanet_chunk=4", C, H, B, T, 0, 2, 66);
    rig_loss(&r);
    const real *Wqkv = rig_param(&r, "deltanet.qkv.weight"), *Wc = rig_param(&r, "deltanet.conv.weight");
    const real *Wb = rig_param(&r, "deltanet.b.weight"), *w = rig_param(&r, "deltanet.norm.weight");
    const real *Wo = rig_param(&r, "deltanet.o.weight");
    double *pre = mallocCheck(sizeof(double) * T * 3 * C), *f = mallocCheck(sizeof(double) * T * 3 * C);
    double *q = mallocCheck(sizeof(double) * T * D), *k = mallocCheck(sizeof(double) * T * D);
    double *v = mallocCheck(sizeof(double) * T * D), *beta = mallocCheck(sizeof(double) * T);
    double *o = mallocCheck(sizeof(double) * T * D), *u = mallocCheck(sizeof(double) * T * C);
    double worst = 0;
    for (int b = 0; b < B; b++) {
        const real *x = r.x + (size_t)b * T * C;
        for (int t = 0; t < T; t++)
            for (int j = 0; j < 3 * C; j++) {
                double s = 0;
                for (int c = 0; c < C; c++) s += (double)Wqkv[j * C + c] * x[t * C + c];
                pre[t * 3 * C + j] = s;
            }
        for (int t = 0; t < T; t++)  // causal conv: w[j, K-1] meets the current token
            for (int j = 0; j < 3 * C; j++) {
                double s = 0;
                for (int i = 0; i < K; i++)
                    if (t - (K - 1) + i >= 0) s += (double)Wc[j * K + i] * pre[(t - (K - 1) + i) * 3 * C + j];
                f[t * 3 * C + j] = silu(s);
            }
        for (int h = 0; h < H; h++) {
            for (int t = 0; t < T; t++) {
                double nq = 0, nk = 0, z = 0;
                for (int d = 0; d < D; d++) {
                    q[t * D + d] = f[t * 3 * C + h * D + d], k[t * D + d] = f[t * 3 * C + C + h * D + d];
                    v[t * D + d] = f[t * 3 * C + 2 * C + h * D + d];
                    nq += q[t * D + d] * q[t * D + d], nk += k[t * D + d] * k[t * D + d];
                }
                for (int d = 0; d < D; d++) q[t * D + d] /= sqrt(nq + 1e-6) * sqrt(D), k[t * D + d] /= sqrt(nk + 1e-6);
                for (int c = 0; c < C; c++) z += (double)Wb[h * C + c] * x[t * C + c];
                beta[t] = 1 / (1 + exp(-z));
            }
            delta_rule_naive(T, D, D, q, k, v, beta, o);
            for (int t = 0; t < T; t++) {
                double ss = 0;
                for (int d = 0; d < D; d++) ss += o[t * D + d] * o[t * D + d];
                for (int d = 0; d < D; d++) u[t * C + h * D + d] = o[t * D + d] / sqrt(ss / D + 1e-5) * w[d];
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
    printf("layer vs its fp64 definition: max |y diff| %.3g\n", worst);
    free(pre), free(f), free(q), free(k), free(v), free(beta), free(o), free(u);
    rig_free(&r);
}

// The map, independently of the chunked kernel: the recurrence run on one-hot values (V = I,
// v_j = e_j in R^T) outputs o_i = sum_j a_ij e_j, row i of A. Against attention() from the
// saved q, k, beta, for both the chunk-4 layer at T = 17 and the default chunk at T = 70.
static void map_vs_one_hot(const char *opts, int C, int H, int B, int T, uint64_t seed) {
    MixerRig r;
    rig_setup(&r, "deltanet", opts, C, H, B, T, 0, 2, seed);
    rig_loss(&r);
    MixerIO io = rig_io(&r);
    int D = C / H;
    const real *qkv = rig_act(&r, "qkv"), *bt = rig_act(&r, "beta");
    real *a = mallocCheck(sizeof(real) * T * T);
    double *q = mallocCheck(sizeof(double) * T * D), *k = mallocCheck(sizeof(double) * T * D);
    double *eye = callocCheck((size_t)T * T, sizeof(double)), *A = mallocCheck(sizeof(double) * T * T);
    double *beta = mallocCheck(sizeof(double) * T), worst = 0;
    for (int i = 0; i < T; i++) eye[i * T + i] = 1;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            for (int t = 0; t < T; t++) {
                for (int d = 0; d < D; d++) {
                    q[t * D + d] = qkv[((size_t)b * T + t) * 3 * C + h * D + d];
                    k[t * D + d] = qkv[((size_t)b * T + t) * 3 * C + C + h * D + d];
                }
                beta[t] = bt[((size_t)b * T + t) * H + h];
            }
            delta_rule_naive(T, D, T, q, k, eye, beta, A);
            r.kind->attention(r.st, &io, b, h, a);
            for (int i = 0; i < T * T; i++) {
                CHECK(fabs(a[i] - A[i]) <= 1e-12 * (1 + fabs(A[i])),
                      "b %d h %d a[%d][%d] %.15g, one-hot recurrence %.15g", b, h, i / T, i % T, (double)a[i], A[i]);
                worst = fmax(worst, fabs(a[i] - A[i]));
            }
        }
    printf("map vs one-hot recurrence (T %d): max |a diff| %.3g\n", T, worst);
    free(a), free(q), free(k), free(eye), free(A), free(beta);
    rig_free(&r);
}

TEST(deltanet_map_equals_recurrence_on_one_hot_values) {
    map_vs_one_hot("deltanet_chunk=4", 8, 2, 2, 17, 67);
    map_vs_one_hot(NULL, 8, 2, 1, 70, 68);
}

TEST(deltanet_bit_identical_for_one_and_two_threads_across_chunks) {
    Config cfg;
    test_config(&cfg, "deltanet_chunk=4");
    MixerRig r;
    omp_set_num_threads(2);
    rig_init(&r, "deltanet", &cfg, 8, 2, 3, 17, 0, 2, 69);
    rig_check_thread_invariance(&r);
    rig_free(&r);
    config_free(&cfg);
}

TEST(deltanet_tensor_names_shapes_and_window) {
    MixerRig r;
    int C = 12, H = 3;
    rig_setup(&r, "deltanet", NULL, C, H, 1, 3, 0, 2, 70);
    const ParamDecl want[] = {
        {"deltanet.qkv.weight", 2, {3 * C, C}, INIT_NORMAL, 0, 0},
        {"deltanet.conv.weight", 2, {3 * C, 4}, INIT_NORMAL, 0, 0},
        {"deltanet.b.weight", 2, {H, C}, INIT_NORMAL, 0, 0},
        {"deltanet.norm.weight", 1, {C / H}, INIT_ONE, 0, 0},
        {"deltanet.o.weight", 2, {C, C}, INIT_NORMAL_OUT, 0, 0},
    };
    CHECK(r.n_params == 5, "%d tensors", r.n_params);
    for (int i = 0; i < 5 && i < r.n_params; i++) {
        const ParamDecl *d = &r.decl[i];
        CHECK(!strcmp(d->name, want[i].name) && d->ndim == want[i].ndim && d->init == want[i].init, "tensor %d is %s",
              i, d->name);
        for (int j = 0; j < d->ndim; j++) CHECK(d->shape[j] == want[i].shape[j]);
    }
    CHECK(r.kind->n_maps(r.st) == H && r.kind->value_window(r.st) == 4 && r.kind->flops && !r.kind->length_bound);
    rig_free(&r);
    rig_setup(&r, "deltanet", "deltanet_conv=2", C, H, 1, 3, 0, 2, 70);
    CHECK(r.kind->value_window(r.st) == 2);
    rig_free(&r);
}

// Each refusal: exit status 2 and one line naming the key.
static void refused(const char *opts, int C, int H, const char *key) {
    char err[512];
    int rc = rig_create_status("deltanet", opts, C, H, 8, err, sizeof err);
    CHECK(rc == 2, "%s: exit %d", opts, rc);
    CHECK(strstr(err, key), "%s: '%s'", opts, err);
    const char *nl = strchr(err, '\n');
    CHECK(!nl || !nl[1], "%s: more than one line: '%s'", opts, err);
}

TEST(deltanet_rejects_bad_options) {
    refused("deltanet_chunk=0", 8, 2, "deltanet_chunk");
    refused("deltanet_chunk=5000", 8, 2, "deltanet_chunk");
    refused("deltanet_conv=0", 8, 2, "deltanet_conv");
    refused("deltanet_conv=65", 8, 2, "deltanet_conv");
    refused("deltanet_conv=x", 8, 2, "deltanet_conv");
    refused(NULL, 8, 3, "n_head");
}
