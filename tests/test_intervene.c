// The interventions (eval/intervene.c): each kind on hand-built rows, the replacement path through
// every registered mixer's finish slot (flatten:0 reproduces the logits; hybrids and short_conv
// included), every kind on every mixer with what it must do to the measured maps, thread-count
// invariance, and the parser's refusals.
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/rng.h"
#include "data/mqar.h"
#include "eval/answer.h"
#include "eval/derived.h"
#include "eval/interval.h"
#include "eval/intervene.h"
#include "eval/sparsity.h"
#include "model/model.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

static double row_mass(const real *a, int n) {
    double r = 0;
    for (int j = 0; j < n; j++) r += fabs((double)a[j]);
    return r;
}

static double row_S(const real *a, int n) {
    RowStats st;
    CHECK(sparsity_row(a, n, &st));
    return st.S;
}

// --- each kind on hand-built rows ------------------------------------------------------------------

TEST(intervene_flatten_keeps_signs_and_mass_and_reaches_flat) {
    const real a0[6] = {0.5, -0.25, 0, 2, 0.125, -1};
    double d[12], prev = row_S(a0, 6), r = row_mass(a0, 6);
    RowContext rc = {0, -1, 1, 0};
    for (int k = 0; k <= 10; k++) {
        real a[6];
        memcpy(a, a0, sizeof a);
        Intervention iv = {IV_FLATTEN, k / 10.0, -1, -1, 0};
        CHECK(intervene_row(&iv, a, 6, &rc, d));
        CHECK_CLOSE(row_mass(a, 6), r, 1e-12);
        for (int j = 0; j < 6; j++) CHECK((a[j] < 0) == (a0[j] < 0), "eps %d: sign of %d", k, j);
        double S = row_S(a, 6);
        CHECK(S >= prev - 1e-12, "S must rise with eps: %g after %g", S, prev);
        prev = S;
        if (k == 0)
            for (int j = 0; j < 6; j++) CHECK(a[j] == a0[j]);
    }
    CHECK_CLOSE(prev, 1, 1e-12);  // eps = 1: every |a'| = r / n
    real z[4] = {0, 0, 0, 0};
    Intervention iv = {IV_FLATTEN, 1, -1, -1, 0};
    CHECK(intervene_row(&iv, z, 4, &rc, d) == 0 && z[0] == 0);  // no mass: left as it is
}

TEST(intervene_topk_sharpen_temperature) {
    const real a0[5] = {0.1, -0.4, 0.2, 0.2, 0.1};
    double d[10], r = row_mass(a0, 5);
    RowContext rc = {0, -1, 1, 0};
    real a[5];
    memcpy(a, a0, sizeof a);
    Intervention top2 = {IV_TOPK, 2, -1, -1, 0};
    CHECK(intervene_row(&top2, a, 5, &rc, d));
    // the largest |a| (-0.4) and the first of the tied 0.2s, rescaled to mass 1
    CHECK_CLOSE(a[1], -0.4 * r / 0.6, 1e-12);
    CHECK_CLOSE(a[2], 0.2 * r / 0.6, 1e-12);
    CHECK(a[0] == 0 && a[3] == 0 && a[4] == 0);
    memcpy(a, a0, sizeof a);
    Intervention sh1 = {IV_SHARPEN, 1, -1, -1, 0};
    CHECK(intervene_row(&sh1, a, 5, &rc, d));
    for (int j = 0; j < 5; j++) CHECK_CLOSE(a[j], a0[j], 1e-15);
    memcpy(a, a0, sizeof a);
    Intervention sh2 = {IV_SHARPEN, 2, -1, -1, 0};
    CHECK(intervene_row(&sh2, a, 5, &rc, d));
    double s2 = 0.01 + 0.16 + 0.04 + 0.04 + 0.01;
    for (int j = 0; j < 5; j++) CHECK_CLOSE(a[j], (a0[j] < 0 ? -1 : 1) * r * a0[j] * a0[j] / s2, 1e-14);
    // temperature on a softmax row is softmax(logits / tau)
    const double logit[4] = {0.3, -1.2, 2.0, 0.7};
    real sm[4], want[4];
    double z = 0, zt = 0, tau = 2.5;
    for (int j = 0; j < 4; j++) z += exp(logit[j]), zt += exp(logit[j] / tau);
    for (int j = 0; j < 4; j++) sm[j] = (real)(exp(logit[j]) / z), want[j] = (real)(exp(logit[j] / tau) / zt);
    Intervention t = {IV_TEMPERATURE, tau, -1, -1, 0};
    CHECK(intervene_row(&t, sm, 4, &rc, d));
    for (int j = 0; j < 4; j++) CHECK_CLOSE(sm[j], want[j], 1e-14);
}

TEST(intervene_derange_moves_every_value_weight_and_keeps_S) {
    // 4 pairs: value positions 1, 3, 5, 7; a query row at 9
    const real a0[10] = {0.01, 0.5, 0.02, 0.1, 0.03, 0.2, 0.04, 0.05, 0.02, 0.03};
    double d[20];
    for (uint64_t seed = 1; seed < 40; seed++) {
        real a[10];
        memcpy(a, a0, sizeof a);
        RowContext rc = {4, 1, 1, seed};
        Intervention iv = {IV_DERANGE, 0, -1, -1, 0};
        CHECK(intervene_row(&iv, a, 10, &rc, d));
        CHECK_CLOSE(row_S(a, 10), row_S(a0, 10), 1e-12);
        double in = 0, out = 0;
        for (int j = 0; j < 10; j++) {
            if (j % 2 == 0 || j >= 8) CHECK(a[j] == a0[j], "a non-value position moved: %d", j);
            else CHECK(a[j] != a0[j], "seed %d: the weight at %d stayed", (int)seed, j);
            if (j % 2 == 1 && j < 8) in += a0[j], out += a[j];
        }
        CHECK_CLOSE(in, out, 1e-15);
    }
    real one[3] = {0.2, 0.5, 0.3};  // one value position in the prefix: nothing to permute
    RowContext rc = {4, 1, 1, 3};
    Intervention iv = {IV_DERANGE, 0, -1, -1, 0};
    CHECK(intervene_row(&iv, one, 3, &rc, d) == 0 && one[1] == (real)0.5);
}

TEST(intervene_oracles_place_the_mass) {
    const real a0[10] = {0.1, -0.3, 0.05, 0.1, -0.2, 0.05, 0.1, -0.05, 0.02, -0.4};  // sum < 0
    double d[20], r = row_mass(a0, 10);
    real a[10];
    RowContext rc = {4, 3, 3, 0};  // the answer's value at 3, a window of 3
    Intervention o = {IV_ORACLE, 0, -1, -1, 0}, ow = {IV_ORACLE_WINDOW, 0, -1, -1, 0};
    Intervention wr = {IV_ORACLE_WRONG, 0, -1, -1, 0};
    memcpy(a, a0, sizeof a);
    CHECK(intervene_row(&o, a, 10, &rc, d));
    for (int j = 0; j < 10; j++) CHECK_CLOSE(a[j], j == 3 ? -r : 0, 1e-15);
    memcpy(a, a0, sizeof a);
    CHECK(intervene_row(&ow, a, 10, &rc, d));
    for (int j = 0; j < 10; j++) CHECK_CLOSE(a[j], j >= 3 && j <= 5 ? -r / 3 : 0, 1e-15);
    memcpy(a, a0, sizeof a);
    // pair 1's value at 3, its window 3..5: pair 2's value at 5 is in it, so pair 3's at 7
    CHECK(intervene_row(&wr, a, 10, &rc, d));
    for (int j = 0; j < 10; j++) CHECK_CLOSE(a[j], j == 7 ? -r : 0, 1e-15);
    rc.window = 1;  // no window: the next pair's, at 5
    memcpy(a, a0, sizeof a);
    CHECK(intervene_row(&wr, a, 10, &rc, d));
    CHECK_CLOSE(a[5], -r, 1e-15);
    rc.value_pos = 7;  // the last pair's: wraps to pair 0's value at 1
    memcpy(a, a0, sizeof a);
    CHECK(intervene_row(&wr, a, 10, &rc, d));
    CHECK_CLOSE(a[1], -r, 1e-15);
    rc.window = 3;
    rc.value_pos = -1;  // no answer: the row stays
    memcpy(a, a0, sizeof a);
    CHECK(intervene_row(&o, a, 10, &rc, d) == 0 && !memcmp(a, a0, sizeof a));
}

// The lag oracle (docs/interventions.md#the-lag-oracle): the mass on vp + k with the map's own
// sign there (the row sum's where it is 0); its control at lag k behind another pair's value
// whose window does not overlap the answer's; a lag outside the window, or past the row, leaves it.
TEST(intervene_lag_oracle_places_the_mass_at_its_lag) {
    const real a0[12] = {0.1, -0.3, 0.05, 0.1, -0.2, 0, 0.1, -0.05, 0.02, -0.4, 0.1, 0.1};  // sum < 0
    double d[24], r = row_mass(a0, 12);
    real a[12];
    RowContext rc = {5, 3, 3, 0};  // 5 pairs, the answer's value at 3, a window of 3 (3..5)
    Intervention lag = {IV_ORACLE_LAG, 0, -1, -1, 0}, ctl = {IV_ORACLE_LAG_CONTROL, 0, -1, -1, 0};
    const int want[3] = {3, 4, 5}, sign[3] = {1, -1, -1};  // a[3] > 0, a[4] < 0, a[5] = 0: the sum's sign
    for (int k = 0; k < 3; k++) {
        lag.strength = k;
        memcpy(a, a0, sizeof a);
        CHECK(intervene_row(&lag, a, 12, &rc, d), "lag %d", k);
        for (int j = 0; j < 12; j++) CHECK_CLOSE(a[j], j == want[k] ? sign[k] * r : 0, 1e-15);
    }
    // the control: pairs 2 (value 5) overlaps 3..5; pair 3's value at 7, window 7..9: lag 1 at 8
    ctl.strength = 1;
    memcpy(a, a0, sizeof a);
    CHECK(intervene_row(&ctl, a, 12, &rc, d));
    for (int j = 0; j < 12; j++) CHECK_CLOSE(a[j], j == 8 ? r : 0, 1e-15);  // a[8] > 0
    lag.strength = 3;                                                       // outside the window: the row stays
    memcpy(a, a0, sizeof a);
    CHECK(intervene_row(&lag, a, 12, &rc, d) == 0 && !memcmp(a, a0, sizeof a));
    lag.strength = 2;  // past the row (vp + 2 = 5 >= n = 5): stays
    memcpy(a, a0, sizeof a);
    CHECK(intervene_row(&lag, a, 5, &rc, d) == 0 && !memcmp(a, a0, sizeof a));
}

// A conv-fed toy map that reads the answer at lag 1, as Mamba-2's seeds do: each value v_j is
// the token one step back (a convolution's lag-1 tap, v_j = onehot(x_{j-1})), the readout is
// argmax o_i, and the trained map puts its weight on vp + 1 (with some spread). On MQAR sequences the lag-1
// oracle restores recall (every query right), the point oracle (lag 0) reads the key and gets
// none, and lag 1's control reads another pair's value: the probe is valid at lag 1
// (derived_lag_oracle). With a readout that ignores the values the oracle cannot beat its control:
// "not a valid probe for this map".
static double toy_acc(const Dataset *ds, int V, int k, InterventionKind kind, int blind, ExampleCounts *ex) {
    int T = ds->T, in[256], tg[256];
    real a[256];
    double d[512];
    long right = 0, all = 0;
    memset(ex, 0, sizeof *ex);
    for (long s = 0; s < ds->n; s++) {
        dataset_get(ds, s, in, tg);
        int q = 0, c = 0;
        for (int i = 0; i < T; i++) {
            if (tg[i] < 0) continue;
            int vp = answer_value_pos(in, i, tg[i]), n = i + 1;
            for (int j = 0; j < n; j++) a[j] = (real)(j == vp + 1 ? 0.8 : 0.2 / n);  // reads at lag 1
            RowContext rc = {ds->mqar_kv_pairs, vp, 2, 0};
            Intervention iv = {kind, k, -1, -1, 0};
            intervene_row(&iv, a, n, &rc, d);
            double best = -1;
            int arg = 0;
            for (int v = 0; v < V; v++) {  // o_i[v] = sum_j a_ij [x_{j-1} = v]
                double o = 0;
                for (int j = 1; j < n; j++) o += in[j - 1] == v ? (double)a[j] : 0;
                if (blind) o = v == 0;
                if (o > best) best = o, arg = v;
            }
            q++, c += arg == tg[i];
        }
        right += c, all += q;
        if (ex->n == ex->cap) {
            ex->cap = ex->cap ? 2 * ex->cap : 64;
            ex->queries = reallocCheck(ex->queries, sizeof(int) * ex->cap);
            ex->correct = reallocCheck(ex->correct, sizeof(int) * ex->cap);
            ex->cell = reallocCheck(ex->cell, sizeof(int) * ex->cap);
        }
        ex->queries[ex->n] = q, ex->correct[ex->n] = c, ex->cell[ex->n++] = 0;
    }
    return (double)right / all;
}

TEST(intervene_lag_oracle_restores_a_map_that_reads_at_lag_1) {
    MqarSpec spec = {.vocab_size = 64, .seq_len = 32, .kv_pairs = 4, .power_a = 0.01, .seed = 3, .n_examples = 200};
    Dataset ds;
    dataset_mqar(&ds, &spec);
    for (int blind = 0; blind < 2; blind++) {
        double acc[2], ctrl[2], lo[2], hi[2];
        ExampleCounts ex;
        for (int k = 0; k < 2; k++) {
            acc[k] = toy_acc(&ds, 64, k, IV_ORACLE_LAG, blind, &ex);
            examples_free(&ex);
            ctrl[k] = toy_acc(&ds, 64, k, IV_ORACLE_LAG_CONTROL, blind, &ex);
            examples_interval(&ex, 0, &lo[k], &hi[k]);
            examples_free(&ex);
        }
        LagReading r = derived_lag_oracle(acc, ctrl, lo, hi, 2);
        if (!blind) {
            CHECK(acc[1] == 1 && acc[0] == 0 && ctrl[1] < 0.05, "lag 0 %.4f, lag 1 %.4f, control %.4f", acc[0], acc[1],
                  ctrl[1]);
            CHECK(r.best == 1 && r.valid && r.acc == 1, "best %d valid %d", r.best, r.valid);
        } else CHECK(!r.valid, "a blind readout: best %d %.4f against %.4f valid", r.best, r.acc, r.control);
    }
    dataset_free(&ds);
}

// --- through the model ------------------------------------------------------------------------------

typedef struct {
    Model *m;
    Dataset ds;
    int B, T, V;
} Rig;

// A 2-layer model of `mixer` (a name or a comma list), C 8, 2 heads, on 6 MQAR sequences of 16
// tokens with 2 pairs (one batch), weights pushed off their init so the maps are not flat.
static void rig_make(Rig *r, const char *mixer, const char *opts) {
    Config cfg;
    char over[256];
    snprintf(over, sizeof over, "mixer=%s %s", mixer, opts ? opts : "");
    test_config(&cfg, over);
    MqarSpec spec = {.vocab_size = 32, .seq_len = 16, .kv_pairs = 2, .power_a = 0.01, .seed = 5, .n_examples = 6};
    dataset_mqar(&r->ds, &spec);
    r->B = 6, r->T = 16, r->V = 32;
    ModelShape s = {.V = 32, .C = 8, .L = 2, .H = 2, .T = 16, .mlp = 1, .pos_emb = 1};
    r->m = model_create(&s, NULL, &cfg, r->B, r->B * 2);
    model_init_weights(r->m, 1);
    Rng rng;
    rng_seed(&rng, 2);
    for (size_t i = 0; i < r->m->n_params; i++) r->m->params[i] += (real)(0.3 * rng_normal(&rng));
    config_free(&cfg);
}

static void rig_drop(Rig *r) {
    model_free(r->m);
    dataset_free(&r->ds);
}

// Every position's logits after the model's last forward.
static real *all_logits(Rig *r) {
    real *lg = mallocCheck(sizeof(real) * (size_t)r->B * r->T * r->V);
    for (int b = 0; b < r->B; b++)
        for (int t = 0; t < r->T; t++) model_logits_at(r->m, b, t, lg + ((size_t)b * r->T + t) * r->V);
    return lg;
}

static real *plain_logits(Rig *r) {
    int in[6 * 16], tg[6 * 16];
    for (int b = 0; b < r->B; b++) dataset_get(&r->ds, b, in + b * r->T, tg + b * r->T);
    model_forward(r->m, in, tg, r->B, r->T, 0);
    return all_logits(r);
}

static InterventionResult run(Rig *r, InterventionKind kind, double strength, int layer, int all_rows) {
    Intervention iv = {kind, strength, layer, -1, all_rows};
    InterventionResult res;
    intervene_eval(r->m, &r->ds, r->B, r->T, 0, 0, &iv, &res);
    return res;
}

static const char *g_stacks[][2] = {
    {"softmax,mamba", NULL}, {"gla,deltanet", NULL}, {"linear", "short_conv=3"}, {"mamba2", "short_conv=2"}};

TEST(intervene_flatten0_reproduces_the_logits_of_every_mixer) {
    int n = mixer_count() + (int)(sizeof g_stacks / sizeof g_stacks[0]);
    for (int i = 0; i < n; i++) {
        const char *name = i < mixer_count() ? mixer_at(i)->name : g_stacks[i - mixer_count()][0];
        const char *opts = i < mixer_count() ? NULL : g_stacks[i - mixer_count()][1];
        Rig r;
        rig_make(&r, name, opts);
        real *want = plain_logits(&r);
        run(&r, IV_FLATTEN, 0, -1, 1);  // every row of every layer through o' = a' v and finish
        real *got = all_logits(&r);
        double worst = 0, moved = 0;
        size_t N = (size_t)r.B * r.T * r.V;
        for (size_t k = 0; k < N; k++) worst = fmax(worst, fabs((double)got[k] - (double)want[k]));
        CHECK(worst < 1e-9, "%s %s: flatten:0 moved a logit by %g", name, opts ? opts : "", worst);
        free(got);
        run(&r, IV_FLATTEN, 1, -1, 1);  // the path is live: flat maps change the logits
        got = all_logits(&r);
        for (size_t k = 0; k < N; k++) moved = fmax(moved, fabs((double)got[k] - (double)want[k]));
        CHECK(moved > 1e-4, "%s: flatten:1 left the logits where they were (%g)", name, moved);
        free(got), free(want);
        rig_drop(&r);
    }
}

// Every kind on every mixer: what it must do to the maps it measures afterwards.
TEST(intervene_every_kind_on_every_mixer) {
    for (int i = 0; i < mixer_count(); i++) {
        const char *name = mixer_at(i)->name;
        Rig r;
        rig_make(&r, name, NULL);
        InterventionResult none = run(&r, IV_NONE, 0, 1, 0);
        CHECK(none.rows_recall > 0 && none.rows_answer > 0 && none.sequences == 6, "%s", name);
        for (int k = IV_FLATTEN; k < IV_N_KINDS; k++) {
            if (k == IV_TEMPERATURE && mixer_at(i)->theory != THEORY_EXP) continue;  // refused: tested below
            if (k == IV_DERANGE && sparsity_answer_window(r.m, 1) > 1) continue;     // refused: tested below
            double s = k == IV_FLATTEN ? 1 : k == IV_TOPK ? 1 : k == IV_SHARPEN ? 1 : k == IV_TEMPERATURE ? 1 : 0;
            InterventionResult x = run(&r, (InterventionKind)k, s, 1, 0);
            CHECK((x.rows_recall == none.rows_recall || k == IV_PATCH) && isfinite(val_loss(&x.stats)), "%s %s", name,
                  intervention_name(k));
            switch (k) {
            case IV_FLATTEN:
            case IV_ABLATE:  // a uniform row: every share at its chance, no margin over the other values
                CHECK_CLOSE(x.S_recall, 1, 1e-9);
                CHECK_CLOSE(x.ans_share, x.ans_chance, 1e-9);
                CHECK_CLOSE(x.contrib_share, x.contrib_chance, 1e-9);
                CHECK_CLOSE(x.contrib_window_share, x.contrib_window_chance, 1e-9);
                CHECK_CLOSE(x.ans_margin, 0, 1e-9);
                break;
            case IV_TOPK: CHECK_CLOSE(x.eff_tokens_recall, 1, 1e-9); break;
            case IV_SHARPEN:
            case IV_TEMPERATURE:  // strength 1: the map as it was
                CHECK_CLOSE(x.S_recall, none.S_recall, 1e-9);
                CHECK_CLOSE(val_loss(&x.stats), val_loss(&none.stats), 1e-9);
                break;
            case IV_DERANGE: CHECK_CLOSE(x.S_recall, none.S_recall, 1e-9); break;
            case IV_PATCH:  // shares of rows (exact cases: the hand-built models below)
                CHECK((x.patch_rows == 0 || (x.patch_follows >= 0 && x.patch_follows <= 1)) && x.patch_control >= 0 &&
                          x.patch_control <= 1,
                      "%s patch: %ld rows, follows %g, control %g", name, x.patch_rows, x.patch_follows, x.patch_control);
                break;
            case IV_DERANGE_VALUES:  // the clean maps kept: the same rows, weights and answer positions
                CHECK(x.S_recall == none.S_recall && x.ans_share == none.ans_share &&
                          x.ans_window_share == none.ans_window_share && x.rows_answer == none.rows_answer,
                      "%s derange_values: S %g against %g, share %g against %g", name, x.S_recall, none.S_recall,
                      x.ans_share, none.ans_share);
                CHECK(x.acc_permuted >= 0 && x.acc_permuted <= 1, "%s: %g", name, x.acc_permuted);
                break;
            case IV_ORACLE:  // everything on the answer: all of o_i from it, the whole weight as margin
                CHECK_CLOSE(x.ans_share, 1, 1e-12);
                CHECK_CLOSE(x.eff_tokens_recall, 1, 1e-9);
                CHECK_CLOSE(x.contrib_share, 1, 1e-12);
                CHECK_CLOSE(x.ans_margin, 1, 1e-12);
                CHECK(x.contrib_chance > 0 && x.contrib_chance < 1, "%s: contribution chance %g", name, x.contrib_chance);
                break;
            case IV_ORACLE_WINDOW: CHECK_CLOSE(x.ans_window_share, 1, 1e-12); break;
            case IV_ORACLE_LAG:  // lag 0: the point oracle with the map's own sign
                CHECK_CLOSE(x.ans_share, 1, 1e-12);
                CHECK_CLOSE(x.eff_tokens_recall, 1, 1e-9);
                break;
            case IV_ORACLE_LAG_CONTROL:  // another pair's value, where one lies outside the window
                CHECK(x.ans_window_share <= none.ans_window_share + 1e-12, "%s oracle_lag_control: %g", name,
                      x.ans_window_share);
                break;
            case IV_ORACLE_WRONG:  // 0 where another value lies outside the window (2 pairs: not always)
                CHECK(sparsity_answer_window(r.m, 1) > 1 ? x.ans_window_share < none.ans_window_share
                                                         : x.ans_window_share == 0,
                      "%s oracle_wrong: %g", name, x.ans_window_share);
                break;
            }
        }
        rig_drop(&r);
    }
}

// The lag oracle at lag 1 on every mixer: inside a window wider than one (a convolution before the
// map: Mamba's, H3's, a short_conv) all the weight lands in the window and none on the value
// position; a point-window map has no lag 1, and its maps stay as they were.
TEST(intervene_lag_oracle_on_every_mixer) {
    int n = mixer_count() + (int)(sizeof g_stacks / sizeof g_stacks[0]);
    for (int i = 0; i < n; i++) {
        const char *name = i < mixer_count() ? mixer_at(i)->name : g_stacks[i - mixer_count()][0];
        const char *opts = i < mixer_count() ? NULL : g_stacks[i - mixer_count()][1];
        Rig r;
        rig_make(&r, name, opts);
        InterventionResult none = run(&r, IV_NONE, 0, 1, 0), x = run(&r, IV_ORACLE_LAG, 1, 1, 0);
        int w = sparsity_answer_window(r.m, 1);
        if (w > 1) {
            CHECK(fabs(x.ans_window_share - 1) < 1e-12 && x.ans_share == 0, "%s %s: window %d, share %g, window share %g",
                  name, opts ? opts : "", w, x.ans_share, x.ans_window_share);
        } else
            CHECK(x.S_recall == none.S_recall && val_loss(&x.stats) == val_loss(&none.stats),
                  "%s: lag 1 changed a point map", name);
        CHECK(x.acc_lo <= val_acc(&x.stats) && val_acc(&x.stats) <= x.acc_hi, "%s: [%g, %g] around %g", name, x.acc_lo,
              x.acc_hi, val_acc(&x.stats));
        rig_drop(&r);
    }
}

TEST(intervene_is_identical_for_any_thread_count) {
    omp_set_num_threads(3);  // before the model sizes its per-thread scratch
    Rig r;
    rig_make(&r, "softmax,mamba", NULL);
    for (int k = IV_FLATTEN; k < IV_N_KINDS; k++) {
        if (k == IV_TEMPERATURE) continue;
        // derange: the softmax layer (Mamba's window refuses it); derange_values: one layer's query rows
        int layer = k == IV_DERANGE                   ? 0
            : k == IV_DERANGE_VALUES || k == IV_PATCH ? 1
                                                      : -1,
            all = k != IV_DERANGE_VALUES;
        omp_set_num_threads(1);
        InterventionResult a = run(&r, (InterventionKind)k, k == IV_TOPK ? 2 : 0.5, layer, all);
        omp_set_num_threads(3);
        InterventionResult b = run(&r, (InterventionKind)k, k == IV_TOPK ? 2 : 0.5, layer, all);
        CHECK(!memcmp(&a, &b, sizeof a), "%s: threads change the result", intervention_name(k));
    }
    rig_drop(&r);
}

static void parse_case(void *arg) {
    InterventionKind k;
    double s[INTERVENTION_MAX_STRENGTHS];
    intervention_parse(arg, &k, s);
}

static void temperature_case(void *arg) {
    (void)arg;
    Rig r;
    rig_make(&r, "softmax,linear", NULL);
    run(&r, IV_TEMPERATURE, 2, -1, 0);
}

static void derange_window_case(void *arg) {
    (void)arg;
    Rig r;
    rig_make(&r, "softmax,mamba", NULL);
    run(&r, IV_DERANGE, 0, 1, 0);
}

static void derange_values_all_layers_case(void *arg) {
    (void)arg;
    Rig r;
    rig_make(&r, "softmax", NULL);
    run(&r, IV_DERANGE_VALUES, 0, -1, 0);
}

TEST(intervene_parses_kinds_and_refuses_bad_ones) {
    InterventionKind k;
    double s[INTERVENTION_MAX_STRENGTHS];
    CHECK(intervention_parse("flatten", &k, s) == 11 && k == IV_FLATTEN && s[10] == 1);
    CHECK(intervention_parse("topk:1,3", &k, s) == 2 && k == IV_TOPK && s[1] == 3);
    CHECK(intervention_parse("oracle_window", &k, s) == 1 && k == IV_ORACLE_WINDOW);
    const char *bad[][2] = {
        {"blur", "intervene: expected flatten, topk"},
        {"flatten:1.5", "intervene: flatten: expected a number in [0, 1], got '1.5'"},
        {"topk:2.5", "intervene: topk: expected an integer >= 1, got '2.5'"},
        {"sharpen:0", "intervene: sharpen: expected a number > 0, got '0'"},
        {"flatten:0.1,x", "intervene: flatten: expected a number, got 'x'"},
        {"derange:2", "intervene: derange takes no strengths"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[512];
        CHECK(test_fork(parse_case, (void *)bad[i][0], err, sizeof err) == 2, "%s", bad[i][0]);
        CHECK(strstr(err, bad[i][1]), "%s: '%s'", bad[i][0], err);
    }
    char err[512];
    CHECK(test_fork(temperature_case, NULL, err, sizeof err) == 2);
    CHECK(strstr(err, "layer 1's mixer 'linear' has none"), "'%s'", err);
    // map-space derange behind a window is refused (derange_values is the probe there)
    CHECK(test_fork(derange_window_case, NULL, err, sizeof err) == 2);
    CHECK(strstr(err,
                 "intervene: derange moves weights between value positions, and layer 1's answer window of 4 spans "
                 "the neighbouring pairs ('mamba'): use derange_values"),
          "'%s'", err);
    CHECK(test_fork(derange_values_all_layers_case, NULL, err, sizeof err) == 2);
    CHECK(strstr(err, "derange_values keeps one layer's maps: give layer=L or layer=causal"), "'%s'", err);
    CHECK(intervention_parse("oracle_lag", &k, s) == 16 && k == IV_ORACLE_LAG && s[15] == 15);
    CHECK(intervention_parse("derange_values", &k, s) == 1 && k == IV_DERANGE_VALUES);
}

// derange_values's input: every pair's value moves to another pair (a derangement), keys and
// fillers stay, and each query's label becomes the value its key now holds; one pair: unchanged.
TEST(intervene_permute_values_moves_every_value_and_its_answers) {
    MqarSpec spec = {.vocab_size = 64, .seq_len = 32, .kv_pairs = 4, .power_a = 0.01, .seed = 9, .n_examples = 20};
    Dataset ds;
    dataset_mqar(&ds, &spec);
    for (long e = 0; e < ds.n; e++) {
        int in[32], tg[32], orig[32], tp[32];
        dataset_get(&ds, e, in, tg);
        memcpy(orig, in, sizeof in);
        intervene_permute_values(in, tg, tp, 32, 4, (uint64_t)e);
        int moved = 0, seen[64] = {0};
        for (int p = 0; p < 4; p++) {
            moved += in[2 * p + 1] != orig[2 * p + 1];
            seen[in[2 * p + 1]]++;
            CHECK(in[2 * p] == orig[2 * p]);
        }
        for (int p = 0; p < 4; p++) CHECK(seen[orig[2 * p + 1]] == 1, "example %ld: a value lost", e);
        CHECK(moved == 4, "example %ld: %d of 4 values moved", e, moved);
        for (int i = 8; i < 32; i++) {
            CHECK(in[i] == orig[i]);
            if (tg[i] < 0) CHECK(tp[i] == tg[i]);
            else CHECK(tp[i] != tg[i] && answer_value_pos(in, i, tp[i]) >= 0, "example %ld query %d", e, i);
        }
    }
    dataset_free(&ds);
}

// Activation patching on hand-built 2-layer models whose answer passes through one layer: every
// mixer tensor of the other layer zeroed (its output y is 0 on any input, so the difference
// between A and A' reaches the prediction only through the live layer). Patching the live
// layer's y at the changed query moves that prediction to A''s on every row where they differ;
// patching the dead layer moves nothing; no other query row moves. Softmax and Mamba-2 (a
// convolution before its map), each way round.
static void zero_layer_mixer(Model *m, int l) {
    for (int t = 0; t < m->n_tensors; t++)
        if (m->tensors[t].layer == l && m->tensors[t].mixer_slot >= 0)
            memset(m->params + m->tensors[t].offset, 0, sizeof(real) * m->tensors[t].count);
}

TEST(intervene_patch_finds_the_layer_the_answer_passes_through) {
    const char *mixers[] = {"softmax", "mamba2"};
    for (int k = 0; k < 2; k++)
        for (int dead = 0; dead < 2; dead++) {
            Rig r;
            rig_make(&r, mixers[k], "mlp=false");
            zero_layer_mixer(r.m, dead);
            MqarSpec spec = {.vocab_size = 32, .seq_len = 16, .kv_pairs = 2, .power_a = 0.01, .seed = 7, .n_examples = 300};
            Dataset ds;
            dataset_mqar(&ds, &spec);
            InterventionResult live, off;
            Intervention iv = {IV_PATCH, 0, 1 - dead, -1, 0};
            intervene_eval(r.m, &ds, r.B, r.T, 0, 0, &iv, &live);
            iv.layer = dead;
            intervene_eval(r.m, &ds, r.B, r.T, 0, 0, &iv, &off);
            dataset_free(&ds);
            CHECK(live.patch_rows > 0 && live.patch_follows == 1 && live.patch_control == 0,
                  "%s, layer %d dead: patching the live layer: %ld rows, follows %g, control %g", mixers[k], dead,
                  live.patch_rows, live.patch_follows, live.patch_control);
            CHECK(off.patch_follows == 0 && off.patch_control == 0, "%s: patching the dead layer %d: follows %g, control %g",
                  mixers[k], dead, off.patch_follows, off.patch_control);
            rig_drop(&r);
        }
}
