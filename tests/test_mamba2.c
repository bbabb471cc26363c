// Mamba-2 beyond the generic checks: the chunked SSD (model/mixers/mamba2_ssd.c) against the plain
// recurrence (model/mixers/mamba2_ssd_naive.c) across chunk boundaries, and its backward against
// finite differences at 3 chunks + 5 tokens; the layer against finite differences for every input
// and parameter at the same length (chunk 4, T = 17), against a plain fp64 transcription of its
// definition, its map against the recurrence run on one-hot values, step() across chunks, thread
// invariance across chunks, its tensors, and its refusals of bad options.
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/mixers/mamba2_ssd.h"
#include "model/mixers/mamba2_ssd_naive.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

// ---------------------------------------------------------------------------------------------
// The kernel on one head.

typedef struct {
    int T, P, N, L;
    real A;
    real *X, *dt, *B, *C, *Y, *R, *states, *work;
} Kern;

// X, B, C, R ~ N(0, 1), dt uniform in (0.05, 0.55), A = -1.3 (decays from 0.5 to 0.93 a token).
static void kern_alloc(Kern *s, int T, int P, int N, int L, Rng *rng) {
    *s = (Kern){T, P, N, L, -1.3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    size_t nx = (size_t)T * P, nb = (size_t)T * N;
    s->X = mallocCheck(sizeof(real) * nx), s->Y = mallocCheck(sizeof(real) * nx), s->R = mallocCheck(sizeof(real) * nx);
    s->B = mallocCheck(sizeof(real) * nb), s->C = mallocCheck(sizeof(real) * nb), s->dt = mallocCheck(sizeof(real) * T);
    s->states = mallocCheck(sizeof(real) * (size_t)ssd_n_states(T, L) * N * P);
    s->work = mallocCheck(sizeof(real) * ssd_work(P, N, L));
    fill_normal(s->X, nx, rng, 1), fill_normal(s->R, nx, rng, 1);
    fill_normal(s->B, nb, rng, 1), fill_normal(s->C, nb, rng, 1);
    for (int t = 0; t < T; t++) s->dt[t] = (real)(0.05 + 0.5 * rng_uniform(rng));
}

static void kern_free(Kern *s) {
    free(s->X), free(s->Y), free(s->R), free(s->B), free(s->C), free(s->dt), free(s->states), free(s->work);
}

static double kern_loss(void *ctx) {
    Kern *s = ctx;
    ssd_forward(s->T, s->P, s->N, s->L, s->X, s->P, s->dt, 1, s->A, s->B, s->N, s->C, s->N, s->Y, s->P, s->states, s->work);
    double l = 0;
    for (int i = 0; i < s->T * s->P; i++) l += (double)s->Y[i] * s->R[i];
    return l;
}

// dX [T, P], ddt [T], dB, dC [T, N] (interleaved as [T, 2N]: B's at 0, C's at N), dA, of
// sum(Y * R), in one array.
static real *kern_grads(Kern *s) {
    int T = s->T, P = s->P, N = s->N;
    real *d = callocCheck((size_t)T * (P + 1 + 2 * N) + 1, sizeof(real));
    kern_loss(s);
    real *dbc = d + (size_t)T * (P + 1);
    ssd_backward(T, P, N, s->L, s->X, P, s->dt, 1, s->A, s->B, N, s->C, N, s->states, s->R, P, d, d + (size_t)T * P,
                 dbc, dbc + N, 2 * N, d + (size_t)T * (P + 1 + 2 * N), s->work);
    return d;
}

static double *to_double(const real *x, size_t n) {
    double *y = mallocCheck(sizeof(double) * n);
    for (size_t i = 0; i < n; i++) y[i] = x[i];
    return y;
}

TEST(mamba2_chunked_ssd_matches_recurrence) {
    const int lengths[] = {1, 5, 17, 63, 64, 65, 150};
    const int chunks[] = {1, 4, 16, 64};
    Rng rng;
    rng_seed(&rng, 80);
    double worst_y = 0, worst_g = 0;
    for (int li = 0; li < 7; li++)
        for (int ci = 0; ci < 4; ci++) {
            int T = lengths[li], P = 3, N = 2;
            Kern a;
            kern_alloc(&a, T, P, N, chunks[ci], &rng);
            real *da = kern_grads(&a);
            // the same inputs in one chunk of the whole length: the backward's reference
            Kern b = a;
            b.L = T;
            b.Y = mallocCheck(sizeof(real) * T * P);
            b.states = mallocCheck(sizeof(real) * N * P);
            b.work = mallocCheck(sizeof(real) * ssd_work(P, N, T));
            real *db = kern_grads(&b);
            double *x = to_double(a.X, (size_t)T * P), *dt = to_double(a.dt, T);
            double *B = to_double(a.B, (size_t)T * N), *C = to_double(a.C, (size_t)T * N);
            double *y = mallocCheck(sizeof(double) * T * P);
            ssd_naive(T, P, N, x, dt, a.A, B, C, y);
            for (int i = 0; i < T * P; i++) {
                CHECK_CLOSE(a.Y[i], y[i], 1e-12);
                worst_y = fmax(worst_y, fabs(a.Y[i] - y[i]));
            }
            for (int i = 0; i < T * (P + 1 + 2 * N) + 1; i++) {
                CHECK_CLOSE(da[i], db[i], 1e-11);
                worst_g = fmax(worst_g, fabs(da[i] - db[i]));
            }
            free(x), free(dt), free(B), free(C), free(y), free(da), free(db);
            free(b.Y), free(b.states), free(b.work);
            kern_free(&a);
        }
    printf("chunked vs recurrence: max |y diff| %.3g, chunked vs one-chunk gradients %.3g\n", worst_y, worst_g);
}

// Dec_ij is made as exp(cum_i - cum_0) exp(cum_0 - cum_j) when a chunk's decay spans at most 40,
// else entry by entry. One chunk of 64 tokens: at A = -1.3 it spans about 25 (the product), at
// A = -2.5 about 47 (entry by entry) while its halves span under 40 (the product), at A = -20
// about 380 (entry by entry, most entries underflowing to 0). Each against the recurrence, and
// the whole chunk against its two halves (the forward and every gradient).
TEST(mamba2_ssd_decay_forms_match_recurrence) {
    const real As[] = {-1.3, -2.5, -20};
    Rng rng;
    rng_seed(&rng, 82);
    for (int ai = 0; ai < 3; ai++) {
        int T = 64, P = 3, N = 2;
        Kern a;
        kern_alloc(&a, T, P, N, 64, &rng);
        a.A = As[ai];
        double span = 0, h1 = 0, h2 = 0;  // cum_0 - cum_63 over the chunk, and over each half
        for (int t = 1; t < T; t++) span -= a.A * a.dt[t];
        for (int t = 1; t < 32; t++) h1 -= a.A * a.dt[t];
        for (int t = 33; t < 64; t++) h2 -= a.A * a.dt[t];
        double half = fmax(h1, h2);
        if (ai == 0) CHECK(span < 40, "A = %g: span %g, expected the product form", (double)a.A, span);
        if (ai == 1) CHECK(span > 40 && half < 40, "A = %g: span %g, halves %g", (double)a.A, span, half);
        if (ai == 2) CHECK(half > 40, "A = %g: halves span %g", (double)a.A, half);
        real *da = kern_grads(&a);
        double *x = to_double(a.X, (size_t)T * P), *dt = to_double(a.dt, T);
        double *B = to_double(a.B, (size_t)T * N), *C = to_double(a.C, (size_t)T * N);
        double *y = mallocCheck(sizeof(double) * T * P);
        ssd_naive(T, P, N, x, dt, a.A, B, C, y);
        for (int i = 0; i < T * P; i++) CHECK_CLOSE(a.Y[i], y[i], 1e-12);
        Kern b = a;  // the same tokens in two chunks of 32
        b.L = 32;
        b.Y = mallocCheck(sizeof(real) * T * P);
        b.states = mallocCheck(sizeof(real) * 2 * N * P);
        b.work = mallocCheck(sizeof(real) * ssd_work(P, N, 32));
        real *db = kern_grads(&b);
        for (int i = 0; i < T * P; i++) CHECK_CLOSE(b.Y[i], y[i], 1e-12);
        for (int i = 0; i < T * (P + 1 + 2 * N) + 1; i++) CHECK_CLOSE(da[i], db[i], 1e-11);
        free(x), free(dt), free(B), free(C), free(y), free(da), free(db);
        free(b.Y), free(b.states), free(b.work);
        kern_free(&a);
    }
}

// T = 17 in chunks of 4: four full chunks and one of a single token, so every gradient crosses
// the inter-chunk path (the states and dS) three times and more.
TEST(mamba2_ssd_backward_matches_finite_differences) {
    Rng rng;
    rng_seed(&rng, 81);
    int T = 17, P = 3, N = 2;
    Kern s;
    kern_alloc(&s, T, P, N, 4, &rng);
    real *d = kern_grads(&s);
    real *dbc = d + (size_t)T * (P + 1), *dB = mallocCheck(sizeof(real) * T * N), *dC = mallocCheck(sizeof(real) * T * N);
    for (int t = 0; t < T; t++)
        for (int n = 0; n < N; n++) dB[t * N + n] = dbc[t * 2 * N + n], dC[t * N + n] = dbc[t * 2 * N + N + n];
    check_grad("dX", kern_loss, &s, s.X, d, (size_t)T * P, 1e-6, 1e-8, 1e-10);
    check_grad("ddt", kern_loss, &s, s.dt, d + T * P, (size_t)T, 1e-6, 1e-8, 1e-10);
    check_grad("dB", kern_loss, &s, s.B, dB, (size_t)T * N, 1e-6, 1e-8, 1e-10);
    check_grad("dC", kern_loss, &s, s.C, dC, (size_t)T * N, 1e-6, 1e-8, 1e-10);
    check_grad("dA", kern_loss, &s, &s.A, d + (size_t)T * (P + 1 + 2 * N), 1, 1e-6, 1e-8, 1e-10);
    free(d), free(dB), free(dC);
    kern_free(&s);
}

// ---------------------------------------------------------------------------------------------
// The layer.

// Every input and parameter against finite differences, the maps and step(), at 3 chunks + 5
// tokens with chunk 4 (T = 17): 4 heads over 2 of n_head, then 2 heads of 8 over 1 with another
// d_state and expand, then the default chunk at a short length, then 2 heads of 16 with d_state 8
// (the conv's register path, 16 channels a block, on xs and on B and C).
TEST(mamba2_layer_gradients_maps_and_step_across_chunks) {
    rig_check_all("mamba2", "mamba2_chunk=4", 8, 2, 2, 17, 0, 2, 82);
    rig_check_all("mamba2", "mamba2_chunk=4 mamba2_head_dim=3 mamba2_d_state=5 mamba2_expand=1", 6, 1, 1, 17, 1, 2, 83);
    rig_check_all("mamba2", "mamba2_head_dim=8", 4, 1, 1, 9, 0, 1, 84);
    rig_check_all("mamba2", "mamba2_chunk=4 mamba2_head_dim=16 mamba2_d_state=8", 16, 1, 1, 17, 0, 1, 91);
}

// The default chunk of 64 at 3 chunks + 5 tokens: the maps and step (finite differences at this
// length are the chunk-4 case's job).
TEST(mamba2_default_chunk_maps_and_step_at_197) {
    MixerRig r;
    rig_setup(&r, "mamba2", NULL, 4, 1, 1, 3 * MAMBA2_CHUNK + 5, 0, 1, 85);
    rig_check_attention(&r, 1e-9);
    rig_check_step(&r, 1e-10);
    rig_free(&r);
}

static double silu(double x) { return x / (1 + exp(-x)); }
static double softplus(double x) { return x > 20 ? x : log1p(exp(x)); }

// The definition, plainly in fp64: in_proj, conv + bias, SiLU, softplus, the recurrence per head,
// the D skip, the gate, RMSNorm, out_proj; against forward() at chunk 4 and T = 17.
TEST(mamba2_layer_matches_its_definition) {
    const int C = 6, H = 1, B = 2, T = 17, K = 4, P = 3, N = 5, E = 2 * C, NH = E / P, XW = E + 2 * N;
    MixerRig r;
    rig_setup(&r, "mamba2", "mamba2_chunk=4 mamba2_head_dim=3 mamba2_d_state=5", C, H, B, T, 0, 2, 86);
    rig_loss(&r);
    const real *Win = rig_param(&r, "mamba2.in_proj.weight"), *Wc = rig_param(&r, "mamba2.conv.weight");
    const real *bc = rig_param(&r, "mamba2.conv.bias"), *dtb = rig_param(&r, "mamba2.dt_bias");
    const real *Alog = rig_param(&r, "mamba2.A_log"), *Dp = rig_param(&r, "mamba2.D");
    const real *w = rig_param(&r, "mamba2.norm.weight"), *Wo = rig_param(&r, "mamba2.out_proj.weight");
    int R = 2 * E + 2 * N + NH;
    double *pre = mallocCheck(sizeof(double) * T * R), *f = mallocCheck(sizeof(double) * T * XW);
    double *xs = mallocCheck(sizeof(double) * T * P), *dt = mallocCheck(sizeof(double) * T);
    double *Bm = mallocCheck(sizeof(double) * T * N), *Cm = mallocCheck(sizeof(double) * T * N);
    double *ys = mallocCheck(sizeof(double) * T * P), *u = mallocCheck(sizeof(double) * T * E), worst = 0;
    for (int b = 0; b < B; b++) {
        const real *x = r.x + (size_t)b * T * C;
        for (int t = 0; t < T; t++)
            for (int j = 0; j < R; j++) {
                double s = 0;
                for (int c = 0; c < C; c++) s += (double)Win[j * C + c] * x[t * C + c];
                pre[t * R + j] = s;
            }
        for (int t = 0; t < T; t++)  // causal conv on xBC (rows E.. of in_proj): w[j, K-1] meets token t
            for (int j = 0; j < XW; j++) {
                double s = bc[j];
                for (int i = 0; i < K; i++)
                    if (t - (K - 1) + i >= 0) s += (double)Wc[j * K + i] * pre[(t - (K - 1) + i) * R + E + j];
                f[t * XW + j] = silu(s);
            }
        for (int t = 0; t < T; t++)
            for (int n = 0; n < N; n++) Bm[t * N + n] = f[t * XW + E + n], Cm[t * N + n] = f[t * XW + E + N + n];
        for (int h = 0; h < NH; h++) {
            for (int t = 0; t < T; t++) {
                for (int p = 0; p < P; p++) xs[t * P + p] = f[t * XW + h * P + p];
                dt[t] = softplus(pre[t * R + E + XW + h] + dtb[h]);
            }
            ssd_naive(T, P, N, xs, dt, -exp((double)Alog[h]), Bm, Cm, ys);
            for (int t = 0; t < T; t++)
                for (int p = 0; p < P; p++) {
                    double z = pre[t * R + h * P + p];
                    u[t * E + h * P + p] = (ys[t * P + p] + Dp[h] * xs[t * P + p]) * silu(z);
                }
        }
        for (int t = 0; t < T; t++) {
            double ss = 0;
            for (int e = 0; e < E; e++) ss += u[t * E + e] * u[t * E + e];
            for (int e = 0; e < E; e++) u[t * E + e] *= w[e] / sqrt(ss / E + 1e-5);
            for (int c = 0; c < C; c++) {
                double s = 0;
                for (int e = 0; e < E; e++) s += (double)Wo[c * E + e] * u[t * E + e];
                double got = r.y[((size_t)b * T + t) * C + c];
                CHECK_CLOSE(got, s, 1e-11);
                worst = fmax(worst, fabs(got - s));
            }
        }
    }
    printf("layer vs its fp64 definition: max |y diff| %.3g\n", worst);
    free(pre), free(f), free(xs), free(dt), free(Bm), free(Cm), free(ys), free(u);
    rig_free(&r);
}

// The map, independently of the chunked kernel: the recurrence run on one-hot values (P = T, x_j
// = e_j) outputs y_i = sum_j a_ij e_j, row i of the map. Against attention() from the saved dt,
// B and C, for the chunk-4 layer at T = 17 and the default chunk at T = 70.
static void map_vs_one_hot(const char *opts, int C, int H, int B, int T, uint64_t seed) {
    MixerRig r;
    rig_setup(&r, "mamba2", opts, C, H, B, T, 0, 2, seed);
    rig_loss(&r);
    MixerIO io = rig_io(&r);
    int NH = r.kind->n_maps(r.st), N = 16, E = 2 * C, XW = E + 2 * N;
    const real *xbc = rig_act(&r, "xbc"), *dts = rig_act(&r, "dt"), *Alog = rig_param(&r, "mamba2.A_log");
    real *a = mallocCheck(sizeof(real) * T * T);
    double *Bm = mallocCheck(sizeof(double) * T * N), *Cm = mallocCheck(sizeof(double) * T * N);
    double *eye = callocCheck((size_t)T * T, sizeof(double)), *A = mallocCheck(sizeof(double) * T * T);
    double *dt = mallocCheck(sizeof(double) * T), worst = 0;
    for (int i = 0; i < T; i++) eye[i * T + i] = 1;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            for (int t = 0; t < T; t++) {
                for (int n = 0; n < N; n++) {
                    Bm[t * N + n] = xbc[((size_t)b * T + t) * XW + E + n];
                    Cm[t * N + n] = xbc[((size_t)b * T + t) * XW + E + N + n];
                }
                dt[t] = dts[((size_t)b * T + t) * NH + h];
            }
            ssd_naive(T, T, N, eye, dt, -exp((double)Alog[h]), Bm, Cm, A);
            r.kind->attention(r.st, &io, b, h, a);
            for (int i = 0; i < T * T; i++) {
                CHECK(fabs(a[i] - A[i]) <= 1e-12 * (1 + fabs(A[i])),
                      "b %d h %d a[%d][%d] %.15g, one-hot recurrence %.15g", b, h, i / T, i % T, (double)a[i], A[i]);
                worst = fmax(worst, fabs(a[i] - A[i]));
            }
        }
    printf("map vs one-hot recurrence (T %d): max |a diff| %.3g\n", T, worst);
    free(a), free(Bm), free(Cm), free(eye), free(A), free(dt);
    rig_free(&r);
}

TEST(mamba2_map_equals_recurrence_on_one_hot_values) {
    map_vs_one_hot("mamba2_chunk=4", 8, 2, 2, 17, 87);
    map_vs_one_hot(NULL, 8, 1, 1, 70, 88);
}

TEST(mamba2_bit_identical_for_one_and_two_threads_across_chunks) {
    Config cfg;
    test_config(&cfg, "mamba2_chunk=4");
    MixerRig r;
    omp_set_num_threads(2);
    rig_init(&r, "mamba2", &cfg, 8, 2, 3, 17, 0, 2, 89);
    rig_check_thread_invariance(&r);
    rig_free(&r);
    config_free(&cfg);
}

// 40 sequences of two heads: one thread takes a task per sequence (40 >= 4 blocks of 8 a thread),
// two take a task per (sequence, head) with the per-sequence steps in passes (40 < 64): the same
// bits.
TEST(mamba2_sequence_and_head_tasks_bit_identical) {
    Config cfg;
    test_config(&cfg, "mamba2_chunk=4");
    MixerRig r;
    omp_set_num_threads(2);
    rig_init(&r, "mamba2", &cfg, 8, 2, 40, 13, 0, 2, 91);
    rig_check_thread_invariance(&r);
    rig_free(&r);
    config_free(&cfg);
}

// The tensors at the MQAR cell's width with fla's head of 64: d_model 64, d_inner 128, 2 heads.
TEST(mamba2_tensor_names_shapes_and_window) {
    MixerRig r;
    int C = 64, E = 128, N = 16, NH = 2;
    rig_setup(&r, "mamba2", "mamba2_head_dim=64", C, 1, 1, 3, 0, 2, 90);
    const ParamDecl want[] = {
        {"mamba2.in_proj.weight", 2, {2 * E + 2 * N + NH, C}, INIT_UNIFORM, 0, 0},
        {"mamba2.conv.weight", 2, {E + 2 * N, 4}, INIT_UNIFORM, 0, 0},
        {"mamba2.conv.bias", 1, {E + 2 * N}, INIT_UNIFORM, 0, 0},
        {"mamba2.dt_bias", 1, {NH}, INIT_CUSTOM, 0, 1},
        {"mamba2.A_log", 1, {NH}, INIT_CUSTOM, 0, 1},
        {"mamba2.D", 1, {NH}, INIT_ONE, 0, 1},
        {"mamba2.norm.weight", 1, {E}, INIT_ONE, 0, 0},
        {"mamba2.out_proj.weight", 2, {C, E}, INIT_UNIFORM, 0, 0},
    };
    CHECK(r.n_params == 8, "%d tensors", r.n_params);
    for (int i = 0; i < 8 && i < r.n_params; i++) {
        const ParamDecl *d = &r.decl[i];
        CHECK(!strcmp(d->name, want[i].name) && d->ndim == want[i].ndim && d->init == want[i].init &&
                  d->no_decay == want[i].no_decay,
              "tensor %d is %s", i, d->name);
        for (int j = 0; j < d->ndim; j++) CHECK(d->shape[j] == want[i].shape[j]);
    }
    CHECK(r.kind->n_maps(r.st) == NH && r.kind->value_window(r.st) == 4 && r.kind->flops && !r.kind->length_bound);
    CHECK(r.kind->state_floats(r.st) == (size_t)E * N + 3 * (E + 2 * N));  // S: Zoology's 2 d N = E N
    // the custom init: A in [1, 16], dt = softplus(dt_bias) in [1e-3, 0.1] (D = 1 is INIT_ONE above)
    const real *Alog = rig_param(&r, "mamba2.A_log"), *dtb = rig_param(&r, "mamba2.dt_bias");
    for (int h = 0; h < NH; h++) {
        double A = exp((double)Alog[h]), dt = log1p(exp((double)dtb[h]));
        CHECK(A >= 1 && A <= 16, "A %g", A);
        CHECK(dt >= 1e-3 * (1 - 1e-9) && dt <= 0.1 * (1 + 1e-9), "dt %g", dt);
    }
    rig_free(&r);
}

// Each refusal: exit status 2 and one line naming the key.
static void refused(const char *opts, int C, int H, const char *key) {
    char err[512];
    int rc = rig_create_status("mamba2", opts, C, H, 8, err, sizeof err);
    CHECK(rc == 2, "%s: exit %d", opts, rc);
    CHECK(strstr(err, key), "%s: '%s'", opts, err);
    const char *nl = strchr(err, '\n');
    CHECK(!nl || !nl[1], "%s: more than one line: '%s'", opts, err);
}

TEST(mamba2_rejects_bad_options) {
    refused("mamba2_head_dim=64", 8, 1, "mamba2_head_dim");  // fla's 64 at d_model 8: d_inner 16
    refused("mamba2_head_dim=3", 8, 1, "mamba2_head_dim");   // 16 channels in heads of 3
    refused("mamba2_head_dim=8", 8, 4, "n_head");            // 2 heads over 4 of n_head
    refused("mamba2_head_dim=0", 8, 1, "mamba2_head_dim");
    refused("mamba2_expand=0", 8, 1, "mamba2_expand");
    refused("mamba2_expand=65", 8, 1, "mamba2_expand");
    refused("mamba2_d_state=0", 8, 1, "mamba2_d_state");
    refused("mamba2_d_state=1025", 8, 1, "mamba2_d_state");
    refused("mamba2_chunk=0", 8, 1, "mamba2_chunk");
    refused("mamba2_chunk=5000", 8, 1, "mamba2_chunk");
    refused("mamba2_chunk=x", 8, 1, "mamba2_chunk");
}
