// Based beyond the generic checks: the chunked Taylor linear attention (model/mixers/based_chunk.c)
// against the plain quadratic reference (model/mixers/based_naive.c) across chunk boundaries, and
// its backward against finite differences at 3 chunks + 5 tokens; the layer against finite
// differences for every input and parameter at the same length (chunk 4, T = 17), against a
// plain fp64 transcription of its definition through the explicit features phi, its map and
// step() across chunks, thread invariance across chunks, its tensors, the width of its theory
// features and the evaluator sized by it, and its refusals of bad options.
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "eval/sparsity.h"
#include "model/mixers/based_chunk.h"
#include "model/mixers/based_naive.h"
#include "model/model.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

// ---------------------------------------------------------------------------------------------
// The kernel on one head.

typedef struct {
    int T, d, Dv, L;
    real *Q, *K, *V, *O, *R, *den, *work;
} Kern;

// q, k ~ N(0, 1) (s = q.k / sqrt(d) ~ N(0, 1): weights from near 1/2 to several), v, R ~ N(0, 1).
static void kern_alloc(Kern *s, int T, int d, int Dv, int L, Rng *rng) {
    *s = (Kern){T, d, Dv, L, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    s->Q = mallocCheck(sizeof(real) * T * d), s->K = mallocCheck(sizeof(real) * T * d);
    s->V = mallocCheck(sizeof(real) * T * Dv), s->O = mallocCheck(sizeof(real) * T * Dv);
    s->R = mallocCheck(sizeof(real) * T * Dv), s->den = mallocCheck(sizeof(real) * T);
    s->work = mallocCheck(sizeof(real) * based_chunk_work(T, d, Dv, L));
    fill_normal(s->Q, (size_t)T * d, rng, 1), fill_normal(s->K, (size_t)T * d, rng, 1);
    fill_normal(s->V, (size_t)T * Dv, rng, 1), fill_normal(s->R, (size_t)T * Dv, rng, 1);
}

static void kern_free(Kern *s) {
    free(s->Q), free(s->K), free(s->V), free(s->O), free(s->R), free(s->den), free(s->work);
}

static double kern_loss(void *ctx) {
    Kern *s = ctx;
    based_chunk_forward(s->T, s->d, s->Dv, s->L, s->Q, s->d, s->K, s->d, s->V, s->Dv, s->O, s->Dv, s->den, s->work);
    double l = 0;
    for (int i = 0; i < s->T * s->Dv; i++) l += (double)s->O[i] * s->R[i];
    return l;
}

// dQ, dK [T, d] and dV [T, Dv] of sum(O * R), in one array.
static real *kern_grads(Kern *s) {
    int T = s->T, d = s->d, Dv = s->Dv;
    real *g = callocCheck((size_t)T * (2 * d + Dv), sizeof(real));
    kern_loss(s);
    based_chunk_backward(T, d, Dv, s->L, s->Q, d, s->K, d, s->V, Dv, s->O, Dv, s->den, s->R, Dv, g, g + T * d,
                         g + 2 * T * d, s->work);
    return g;
}

static double *to_double(const real *x, size_t n) {
    double *y = mallocCheck(sizeof(double) * n);
    for (size_t i = 0; i < n; i++) y[i] = x[i];
    return y;
}

TEST(based_chunked_form_matches_quadratic_reference) {
    const int lengths[] = {1, 5, 17, 63, 64, 65, 150};
    const int chunks[] = {1, 4, 16, 64};
    Rng rng;
    rng_seed(&rng, 80);
    double worst_o = 0, worst_g = 0;
    for (int li = 0; li < 7; li++)
        for (int ci = 0; ci < 4; ci++) {
            int T = lengths[li], d = 3, Dv = 4;
            Kern a;
            kern_alloc(&a, T, d, Dv, chunks[ci], &rng);
            real *ga = kern_grads(&a);
            // the same inputs in one chunk of the whole length: the backward's reference
            Kern b = a;
            b.L = T;
            b.O = mallocCheck(sizeof(real) * T * Dv), b.den = mallocCheck(sizeof(real) * T);
            b.work = mallocCheck(sizeof(real) * based_chunk_work(T, d, Dv, T));
            real *gb = kern_grads(&b);
            double *q = to_double(a.Q, (size_t)T * d), *k = to_double(a.K, (size_t)T * d);
            double *v = to_double(a.V, (size_t)T * Dv), *o = mallocCheck(sizeof(double) * T * Dv);
            double *den = mallocCheck(sizeof(double) * T);
            based_naive(T, d, Dv, q, k, v, o, den);
            for (int i = 0; i < T * Dv; i++) {
                CHECK_CLOSE(a.O[i], o[i], 1e-12);
                worst_o = fmax(worst_o, fabs(a.O[i] - o[i]));
            }
            for (int i = 0; i < T; i++) CHECK(fabs(a.den[i] - den[i]) <= 1e-12 * den[i], "den %d", i);
            for (int i = 0; i < T * (2 * d + Dv); i++) {
                CHECK_CLOSE(ga[i], gb[i], 1e-11);
                worst_g = fmax(worst_g, fabs(ga[i] - gb[i]));
            }
            free(q), free(k), free(v), free(o), free(den), free(ga), free(gb);
            free(b.O), free(b.den), free(b.work);
            kern_free(&a);
        }
    printf("chunked vs quadratic: max |o diff| %.3g, chunked vs one-chunk gradients %.3g\n", worst_o, worst_g);
}

// T = 17 in chunks of 4: four full chunks and one of a single token, so every gradient crosses
// the inter-chunk path (the state and G) three times and more.
TEST(based_chunk_backward_matches_finite_differences) {
    Rng rng;
    rng_seed(&rng, 81);
    int T = 17, d = 3, Dv = 2;
    Kern s;
    kern_alloc(&s, T, d, Dv, 4, &rng);
    real *g = kern_grads(&s);
    check_grad("dQ", kern_loss, &s, s.Q, g, (size_t)T * d, 1e-6, 1e-8, 1e-10);
    check_grad("dK", kern_loss, &s, s.K, g + T * d, (size_t)T * d, 1e-6, 1e-8, 1e-10);
    check_grad("dV", kern_loss, &s, s.V, g + 2 * T * d, (size_t)T * Dv, 1e-6, 1e-8, 1e-10);
    free(g);
    kern_free(&s);
}

// phi(q).phi(k) = 1 + s + s^2 / 2 with s = q.k / sqrt(d), and phi's backward against differences.
TEST(based_feature_map_is_the_taylor_expansion) {
    Rng rng;
    rng_seed(&rng, 82);
    for (int d = 1; d <= 16; d += 5) {
        int F = based_phi_width(d);
        CHECK(F == 1 + d + d * d);
        real q[16], k[16], fq[273], fk[273], dq[16] = {0}, g[273];
        fill_normal(q, d, &rng, 1), fill_normal(k, d, &rng, 1), fill_normal(g, F, &rng, 1);
        based_phi(d, q, fq), based_phi(d, k, fk);
        double dot = 0, s = 0;
        for (int f = 0; f < F; f++) dot += (double)fq[f] * fk[f];
        for (int c = 0; c < d; c++) s += (double)q[c] * k[c];
        s /= sqrt((double)d);
        CHECK_CLOSE(dot, 1 + s + s * s / 2, 1e-13);
        CHECK_CLOSE(based_weight(d, q, k), 1 + s + s * s / 2, 1e-13);
        based_phi_backward(d, q, g, dq);
        for (int c = 0; c < d; c++) {  // d (g . phi(q)) / d q_c, central differences
            double h = 1e-6, keep = q[c], up = 0, dn = 0;
            q[c] = (real)(keep + h), based_phi(d, q, fq);
            for (int f = 0; f < F; f++) up += (double)g[f] * fq[f];
            q[c] = (real)(keep - h), based_phi(d, q, fq);
            for (int f = 0; f < F; f++) dn += (double)g[f] * fq[f];
            q[c] = (real)keep;
            CHECK_CLOSE(dq[c], (up - dn) / (2 * h), 1e-8);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The layer.

// Every input and parameter against finite differences, the maps and step(), at 3 chunks + 5
// tokens with chunk 4 (T = 17): a small feature dim, the default 16 (F = 273), and another shape.
TEST(based_layer_gradients_maps_and_step_across_chunks) {
    rig_check_all("based", "based_chunk=4 based_feature_dim=3", 8, 2, 2, 17, 0, 2, 83);
    rig_check_all("based", "based_chunk=4", 8, 2, 1, 17, 1, 2, 84);
    rig_check_all("based", "based_chunk=4 based_feature_dim=2", 6, 3, 1, 17, 0, 1, 85);
}

// The default chunk of 64 at 3 chunks + 5 tokens: the maps, the theory's features and step.
TEST(based_default_chunk_maps_and_step_at_197) {
    MixerRig r;
    rig_setup(&r, "based", "based_feature_dim=4", 4, 1, 1, 3 * BASED_CHUNK + 5, 0, 1, 86);
    rig_check_attention(&r, 1e-9);
    rig_check_qk(&r, 1e-10);
    rig_check_step(&r, 1e-10);
    rig_free(&r);
}

// The definition, plainly in fp64 through the explicit features phi (not the 1 + s + s^2/2 the
// kernel uses): projections, phi, the running sums of phi(k) v^T and phi(k), the normaliser, the
// output projection; against forward() at chunk 4 and T = 17.
TEST(based_layer_matches_its_definition) {
    const int C = 6, H = 2, Dv = C / H, d = 3, F = 1 + d + d * d, B = 2, T = 17, P = 2 * H * d + C;
    MixerRig r;
    rig_setup(&r, "based", "based_chunk=4 based_feature_dim=3", C, H, B, T, 0, 2, 87);
    rig_loss(&r);
    const real *Wqkv = rig_param(&r, "based.qkv.weight"), *Wo = rig_param(&r, "based.o.weight");
    double *pre = mallocCheck(sizeof(double) * T * P), *o = mallocCheck(sizeof(double) * T * C);
    double pq[13], pk[13], S[13 * 3], z[13], worst = 0;
    for (int b = 0; b < B; b++) {
        const real *x = r.x + (size_t)b * T * C;
        for (int t = 0; t < T; t++)
            for (int j = 0; j < P; j++) {
                double s = 0;
                for (int c = 0; c < C; c++) s += (double)Wqkv[j * C + c] * x[t * C + c];
                pre[t * P + j] = s;
            }
        for (int h = 0; h < H; h++) {
            memset(S, 0, sizeof S), memset(z, 0, sizeof z);
            for (int t = 0; t < T; t++) {
                const double *q = pre + t * P + h * d, *k = pre + t * P + H * d + h * d;
                const double *v = pre + t * P + 2 * H * d + h * Dv;
                double *fs[2] = {pq, pk};
                const double *xs[2] = {q, k};
                for (int w = 0; w < 2; w++) {  // phi(x) = [1, x / d^(1/4), vec(x x^T) / (sqrt 2 sqrt d)]
                    fs[w][0] = 1;
                    for (int a = 0; a < d; a++) fs[w][1 + a] = xs[w][a] / pow(d, 0.25);
                    for (int a = 0; a < d; a++)
                        for (int c = 0; c < d; c++)
                            fs[w][1 + d + a * d + c] = xs[w][a] * xs[w][c] / (sqrt(2.0) * sqrt(d));
                }
                double den = 1e-12;
                for (int f = 0; f < F; f++) {
                    z[f] += pk[f];
                    den += pq[f] * z[f];
                    for (int c = 0; c < Dv; c++) S[f * Dv + c] += pk[f] * v[c];
                }
                for (int c = 0; c < Dv; c++) {
                    double num = 0;
                    for (int f = 0; f < F; f++) num += S[f * Dv + c] * pq[f];
                    o[t * C + h * Dv + c] = num / den;
                }
            }
        }
        for (int t = 0; t < T; t++)
            for (int c = 0; c < C; c++) {
                double s = 0;
                for (int j = 0; j < C; j++) s += (double)Wo[c * C + j] * o[t * C + j];
                double got = r.y[((size_t)b * T + t) * C + c];
                CHECK_CLOSE(got, s, 1e-11);
                worst = fmax(worst, fabs(got - s));
            }
    }
    printf("layer vs its fp64 definition: max |y diff| %.3g\n", worst);
    free(pre), free(o);
    rig_free(&r);
}

TEST(based_bit_identical_for_one_and_two_threads_across_chunks) {
    Config cfg;
    test_config(&cfg, "based_chunk=4");
    MixerRig r;
    omp_set_num_threads(2);
    rig_init(&r, "based", &cfg, 8, 2, 3, 17, 0, 2, 88);
    rig_check_thread_invariance(&r);
    rig_free(&r);
    config_free(&cfg);
}

TEST(based_tensor_names_shapes_and_feature_width) {
    MixerRig r;
    int C = 12, H = 3, d = 16;
    rig_setup(&r, "based", NULL, C, H, 1, 3, 0, 2, 89);
    const ParamDecl want[] = {
        {"based.qkv.weight", 2, {2 * H * d + C, C}, INIT_NORMAL, 0, 0},
        {"based.o.weight", 2, {C, C}, INIT_NORMAL_OUT, 0, 0},
    };
    CHECK(r.n_params == 2, "%d tensors", r.n_params);
    for (int i = 0; i < 2 && i < r.n_params; i++) {
        const ParamDecl *p = &r.decl[i];
        CHECK(!strcmp(p->name, want[i].name) && p->ndim == want[i].ndim && p->init == want[i].init, "tensor %d is %s",
              i, p->name);
        for (int j = 0; j < p->ndim; j++) CHECK(p->shape[j] == want[i].shape[j]);
    }
    CHECK(r.kind->n_maps(r.st) == H && !r.kind->value_window && r.kind->flops && !r.kind->length_bound);
    CHECK(r.kind->theory == THEORY_LINEAR && r.kind->qk_width(r.st) == 273 && mixer_qk_width(r.kind, r.st, C) == 273);
    CHECK(r.kind->state_floats(r.st) == (size_t)H * 273 * (C / H + 1));
    rig_free(&r);
    rig_setup(&r, "based", "based_feature_dim=8", C, H, 1, 3, 0, 2, 89);
    CHECK(r.kind->qk_width(r.st) == 1 + 8 + 64 && r.decl[0].shape[0] == 2 * H * 8 + C);
    rig_free(&r);
    // a mixer without the slot: 4 C, what the evaluator allocated before the slot existed
    rig_setup(&r, "linear", NULL, C, H, 1, 3, 0, 2, 89);
    CHECK(mixer_qk_width(r.kind, r.st, C) == 4 * C);
    rig_free(&r);
    // qk_width belongs to the theory group: without attention_qk, mixer_validate names it
    MixerKind k = *mixer_find("based");
    k.theory = THEORY_NONE, k.attention_qk = NULL;
    char err[160] = "";
    CHECK(mixer_validate(&k, err, sizeof err) == -1 && strstr(err, "'attention_qk'") && strstr(err, "qk_width"), "'%s'", err);
}

// The evaluator sizes its theory buffers by the width: on a 2-layer model of d_model 8 (4 C =
// 32 < F = 273) the pass runs, and THEORY_LINEAR's prefix prediction, an identity for a
// non-negative linear map, equals the measured S of every head (as it does for `linear`).
TEST(based_sparsity_pass_sizes_theory_features_by_qk_width) {
    Config cfg;
    test_config(&cfg, NULL);
    Dataset ds;
    MqarSpec spec = {.vocab_size = 32, .seq_len = 16, .kv_pairs = 2, .power_a = 0.01, .seed = 5, .n_examples = 6};
    dataset_mqar(&ds, &spec);
    ModelShape s = {.V = 32, .C = 8, .L = 2, .H = 2, .T = 16, .mlp = 1, .pos_emb = 1};
    Model *m = model_create(&s, mixer_find("based"), &cfg, 4, 8);
    model_init_weights(m, 1);
    Rng rng;
    rng_seed(&rng, 90);
    for (size_t i = 0; i < m->n_params; i++) m->params[i] += (real)(0.5 * rng_normal(&rng));
    SparsityResult res = {0};
    sparsity_eval(m, &ds, 4, 16, 0, 0, &res);
    CHECK(res.L == 2 && res.H == 2 && res.theory[0] == THEORY_LINEAR && res.theory[1] == THEORY_LINEAR);
    for (int i = 0; i < 4; i++) {
        const HeadSparsity *h = &res.heads[i];
        CHECK(h->rows == 6 * 16 && h->rows_pred == h->rows, "rows %ld, predicted %ld", h->rows, h->rows_pred);
        CHECK(h->S > 0 && h->S < 1 && h->neg_mass == 0, "S %g", h->S);
        CHECK_CLOSE(h->S_pred, h->S, 1e-10);
    }
    sparsity_result_free(&res);
    model_free(m);
    dataset_free(&ds);
    config_free(&cfg);
}

// Each refusal: exit status 2 and one line naming the key.
static void refused(const char *opts, int C, int H, const char *key) {
    char err[512];
    int rc = rig_create_status("based", opts, C, H, 8, err, sizeof err);
    CHECK(rc == 2, "%s: exit %d", opts, rc);
    CHECK(strstr(err, key), "%s: '%s'", opts, err);
    const char *nl = strchr(err, '\n');
    CHECK(!nl || !nl[1], "%s: more than one line: '%s'", opts, err);
}

TEST(based_rejects_bad_options) {
    refused("based_feature_dim=0", 8, 2, "based_feature_dim");
    refused("based_feature_dim=65", 8, 2, "based_feature_dim");
    refused("based_feature_dim=x", 8, 2, "based_feature_dim");
    refused("based_chunk=0", 8, 2, "based_chunk");
    refused("based_chunk=5000", 8, 2, "based_chunk");
    refused(NULL, 8, 3, "n_head");
}
