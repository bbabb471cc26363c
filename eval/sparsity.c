#include "eval/sparsity.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/progress.h"
#include "core/json.h"
#include "core/runlog.h"
#include "eval/answer.h"
#include "eval/derived.h"
#include "model/kernels/vmath.h"

// --- one row -------------------------------------------------------------------------------------

// A row is read in pieces of ROW_PIECE weights (zero-padded at the end, zeros add nothing): one
// vectorizable loop takes |a|, the negative part and |a| log |a| (a fast float log; the entropy is
// log l1 - sum |a| log |a| / l1, so no division per weight), and the sums run in
// ROW_LANES independent double partial sums combined by a fixed tree. A single running sum is a
// chain of dependent adds the compiler cannot vectorize; fixed lanes give the same bits whatever
// the vector width.
#define ROW_PIECE 64
#define ROW_LANES 8

// |a| log |a| for |a| >= 0. In the float build without a select at 0: vlogf(0) is finite, so the
// product is 0 (a select there cost the row loop a third of its speed).
#ifdef REAL_DOUBLE
static inline real row_xlogx(real x) { return x > 0 ? x * log(x) : 0; }
#else
static inline real row_xlogx(real x) { return x * vlogf(x); }
#endif

static double lanes_sum(double *v) {
    for (int w = ROW_LANES / 2; w > 0; w /= 2)
        for (int k = 0; k < w; k++) v[k] += v[k + w];
    return v[0];
}

// sum |a| log |a| in double with libm, for rows whose weights are all tiny or one is huge: the
// fast path's log is not accurate on subnormals and its float product overflows past 3e36.
static double xlogx_exact(const real *a, int n) {
    double xl = 0;
    for (int j = 0; j < n; j++) {
        double av = fabs((double)a[j]);
        if (av > 0) xl += av * log(av);
    }
    return xl;
}

int sparsity_row(const real *a, int n, RowStats *st) {
    double l1v[ROW_LANES] = {0}, l2v[ROW_LANES] = {0}, negv[ROW_LANES] = {0}, xlv[ROW_LANES] = {0};
    real mxv[ROW_LANES] = {0};
    real x[ROW_PIECE], ax[ROW_PIECE], ng[ROW_PIECE], xl[ROW_PIECE];
    for (int j0 = 0; j0 < n; j0 += ROW_PIECE) {
        int w = n - j0 < ROW_PIECE ? n - j0 : ROW_PIECE, wl = (w + ROW_LANES - 1) / ROW_LANES * ROW_LANES;
        memcpy(x, a + j0, sizeof(real) * (size_t)w);
        if (w < wl) memset(x + w, 0, sizeof(real) * (size_t)(wl - w));
#pragma omp simd
        for (int k = 0; k < wl; k++) {
            real v = x[k], av = v < 0 ? -v : v;
            ax[k] = av;
            ng[k] = v < 0 ? av : 0;
            xl[k] = row_xlogx(av);
        }
        for (int q = 0; q < w; q += ROW_LANES)  // whole groups of lanes (the padding adds 0)
#pragma omp simd
            for (int k = 0; k < ROW_LANES; k++) {
                double av = (double)ax[q + k];
                l1v[k] += av;
                l2v[k] += av * av;
                negv[k] += (double)ng[q + k];
                xlv[k] += (double)xl[q + k];
                mxv[k] = ax[q + k] > mxv[k] ? ax[q + k] : mxv[k];
            }
    }
    double l1 = lanes_sum(l1v), l2 = lanes_sum(l2v), neg = lanes_sum(negv), xlsum = lanes_sum(xlv), mx = 0;
    for (int k = 0; k < ROW_LANES; k++) mx = mxv[k] > mx ? mxv[k] : mx;
    if (l1 == 0) return 0;
    if (l1 < 1e-30 || mx > 1e30) xlsum = xlogx_exact(a, n);
    double ent = log(l1) - xlsum / l1;       // -sum w log w with w = |a| / l1
    ent = n > 1 ? ent / log((double)n) : 1;  // one weight: flat and one-hot at once, like S = 1
    st->S = (l1 / n) / sqrt(l2 / n);
    st->entropy = ent < 0 ? 0 : ent > 1 ? 1 : ent;  // rounding just past one-hot or flat
    st->max_weight = mx / l1;
    st->neg_mass = neg / l1;
    return 1;
}

const char *theory_name(Theory t) {
    switch (t) {
    case THEORY_EXP: return "softmax";
    case THEORY_RELU2: return "relu2";
    case THEORY_IDENTITY: return "identity";
    case THEORY_LINEAR: return "linear_check";
    case THEORY_DECAY: return "decay";
    default: return "none";
    }
}

// --- sums of one (sequence, map) -------------------------------------------------------------------

// Every sum is a double (counts too: exact far beyond any row count), so adding two is one loop.
enum {
    // clang-format off
    F_ROWS, F_S, F_ENT, F_MAXW, F_NEG, F_ONEHOT,
    F_ROWS_Q, F_S_Q, F_ONEHOT_Q,
    F_ROWS_KV, F_S_KV, F_ROWS_O, F_S_O,
    F_ROWS_N2, F_NORM, F_ROWS_N2_Q, F_NORM_Q,
    F_ROWS_P, F_PRED, F_MEASP, F_INF, F_ROWS_PQ, F_PRED_Q, F_MEASP_Q, F_INF_Q,
    F_ZERO, F_ZERO_Q,
    F_ROWS_A, F_ANS, F_KEY, F_HIT, F_RANK, F_TOP1, F_TOP4, F_N90, F_WIN, F_WIN_HIT,
    F_EFF, F_EFF_Q, F_CH_ANS, F_CH_WIN,
    F_ROWS_R, F_S_R, F_WIN_R, F_WHIT_R, F_ROWS_W, F_S_W, F_WIN_W, F_WHIT_W,
    // clang-format on
    F_BIN_ROWS,
    F_BIN_S = F_BIN_ROWS + SPARSITY_POS_BINS,
    F_BIN_PROWS = F_BIN_S + SPARSITY_POS_BINS,
    F_BIN_PRED = F_BIN_PROWS + SPARSITY_POS_BINS,
    F_COUNT = F_BIN_PRED + SPARSITY_POS_BINS,
};

typedef struct {
    double v[F_COUNT];
} MapSums;

static void sums_add(MapSums *a, const MapSums *b) {
    for (int i = 0; i < F_COUNT; i++) a->v[i] += b->v[i];
}

// One row's measured and predicted S, for the per-row median ratio and rank correlation.
typedef struct {
    double S, pred;
    int flags;  // ROW_PRED: has a prediction; ROW_QUERY: a query row
} RowPair;
enum { ROW_PRED = 1, ROW_QUERY = 2 };

typedef struct {
    RowPair *v;
    long n, cap;
} PairList;

typedef struct {                             // per-thread scratch
    real *a;                                 // [T*T] one map
    real *q, *k;                             // [T*K] theory queries and keys (mixer_qk_width)
    double *pred, *inf, *beta, *gamma2, *w;  // [T]
} Scratch;

// What one map measurement needs to know about the pass.
typedef struct {
    const Model *m;
    int l, T, kv_pairs, bin_width;
    const int *inputs, *targets;  // [B*T] of this batch
    const signed char *right;     // [B*T] query rows: 1 answered right, 0 wrong (-1: no target)
    int window;                   // layer l's answer window (sparsity_answer_window)
} MapCtx;

// Per-row predictions of map mi of batch row b into s->pred (and s->inf for softmax); 0 when the
// mixer has no theory.
static int predict_rows(const MapCtx *c, const MixerIO *io, int b, int mi, Scratch *s) {
    const MixerKind *mk = c->m->mixer[c->l];
    const void *st = c->m->mixer_state[c->l];
    int T = c->T;
    switch (mk->theory) {
    case THEORY_EXP:
    case THEORY_RELU2: {
        if (!mk->attention_qk) return 0;
        int K = mk->attention_qk(st, io, b, mi, s->q, s->k);
        theory_score_moments(s->q, s->k, T, K, s->beta, s->gamma2);
        for (int i = 0; i < T; i++) {
            double g = sqrt(s->gamma2[i]);
            if (mk->theory == THEORY_EXP) {
                s->pred[i] = theory_softmax_Sn(i + 1, g);
                s->inf[i] = theory_softmax_Sinf(s->gamma2[i]);
            } else s->pred[i] = theory_relu2_S(s->beta[i], g);
        }
        return 1;
    }
    case THEORY_IDENTITY:  // the map is the score: the row's own mean and variance
        for (int i = 0; i < T; i++) {
            const real *row = s->a + (size_t)i * T;
            double mean = 0, m2 = 0;
            for (int j = 0; j <= i; j++) {
                double x = (double)row[j], delta = x - mean;
                mean += delta / (j + 1);
                m2 += delta * (x - mean);
            }
            s->pred[i] = theory_identity_S(mean, sqrt(m2 / (i + 1)));
        }
        return 1;
    case THEORY_LINEAR:
        if (!mk->attention_qk) return 0;
        {
            int K = mk->attention_qk(st, io, b, mi, s->q, s->k);
            theory_linear_rows(s->q, s->k, T, K, s->pred);
        }
        return 1;
    case THEORY_DECAY:
        if (!mk->decay_rate) return 0;
        {
            double lambda = mk->decay_rate(st, mi);
            for (int i = 0; i < T; i++) s->pred[i] = theory_decay_S(lambda, i + 1);
        }
        return 1;
    default: return 0;
    }
}

// Measures map mi of batch row b: sums into out, one RowPair per row into pairs[T] (when not NULL).
static void measure_map(const MapCtx *c, const MixerIO *io, int b, int mi, Scratch *s, MapSums *out, RowPair *pairs) {
    const MixerKind *mk = c->m->mixer[c->l];
    int T = c->T;
    memset(out, 0, sizeof *out);
    mk->attention(c->m->mixer_state[c->l], io, b, mi, s->a);
    int have_pred = predict_rows(c, io, b, mi, s);
    int is_exp = mk->theory == THEORY_EXP;
    const int *in = c->inputs + (size_t)b * T, *tg = c->targets + (size_t)b * T;
    double *v = out->v;
    for (int i = 0; i < T; i++) {
        if (pairs) pairs[i].flags = 0;
        const real *row = s->a + (size_t)i * T;
        RowStats rs;
        int n = i + 1, query = tg[i] >= 0;
        if (!sparsity_row(row, n, &rs)) {  // no weight at all: counted, not measured
            v[F_ZERO]++;
            if (query) v[F_ZERO_Q]++;
            continue;
        }
        double onehot = 1 / sqrt((double)n), eff = n * rs.S * rs.S;  // effective tokens: n S^2
        v[F_ROWS]++;
        v[F_S] += rs.S;
        v[F_EFF] += eff;
        v[F_ENT] += rs.entropy;
        v[F_MAXW] += rs.max_weight;
        v[F_NEG] += rs.neg_mass;
        v[F_ONEHOT] += onehot;
        if (query) {
            v[F_ROWS_Q]++;
            v[F_S_Q] += rs.S;
            v[F_EFF_Q] += eff;
            v[F_ONEHOT_Q] += onehot;
        } else if (i < 2 * c->kv_pairs) {
            v[F_ROWS_KV]++;
            v[F_S_KV] += rs.S;
        } else {
            v[F_ROWS_O]++;
            v[F_S_O] += rs.S;
        }
        if (n >= 2) {
            double norm = (rs.S - onehot) / (1 - onehot);
            v[F_ROWS_N2]++;
            v[F_NORM] += norm;
            if (query) v[F_ROWS_N2_Q]++, v[F_NORM_Q] += norm;
        }
        int bin = i / c->bin_width;
        v[F_BIN_ROWS + bin]++;
        v[F_BIN_S + bin] += rs.S;
        if (have_pred && isfinite(s->pred[i])) {
            double inf = is_exp ? s->inf[i] : 0;
            v[F_ROWS_P]++;
            v[F_PRED] += s->pred[i];
            v[F_MEASP] += rs.S;
            v[F_INF] += inf;
            v[F_BIN_PROWS + bin]++;
            v[F_BIN_PRED + bin] += s->pred[i];
            if (query) {
                v[F_ROWS_PQ]++;
                v[F_PRED_Q] += s->pred[i];
                v[F_MEASP_Q] += rs.S;
                v[F_INF_Q] += inf;
            }
            if (pairs) pairs[i] = (RowPair){rs.S, s->pred[i], ROW_PRED | (query ? ROW_QUERY : 0)};
        }
        if (query && c->kv_pairs > 0) {
            int vp = answer_value_pos(in, i, tg[i]);
            AnswerStats as;
            if (vp >= 0 && answer_row(row, n, vp, c->window, s->w, &as)) {
                v[F_ROWS_A]++;
                v[F_ANS] += as.ans_share;
                v[F_KEY] += as.key_share;
                v[F_HIT] += as.hit;
                v[F_RANK] += as.rank;
                v[F_TOP1] += as.top1;
                v[F_TOP4] += as.top4;
                v[F_N90] += as.n90;
                v[F_WIN] += as.window_share;
                v[F_WIN_HIT] += as.window_hit;
                // a uniform row's share: 1/n per causal position, the window clipped at the row
                v[F_CH_ANS] += 1.0 / n;
                v[F_CH_WIN] += answer_window_positions(n, vp, c->window) / (double)n;
                int right = c->right[(size_t)b * T + i] == 1, base = right ? F_ROWS_R : F_ROWS_W;
                v[base]++;
                v[base + 1] += rs.S;
                v[base + 2] += as.window_share;
                v[base + 3] += as.window_hit;
            }
        }
    }
}

// --- per-row comparison of measured and predicted ----------------------------------------------

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *x, long n) {
    if (n == 0) return NAN;
    qsort(x, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

typedef struct {
    double v;
    long i;
} Ranked;

static int cmp_ranked(const void *a, const void *b) {
    const Ranked *x = a, *y = b;
    if (x->v != y->v) return (x->v > y->v) - (x->v < y->v);
    return (x->i > y->i) - (x->i < y->i);
}

// Ranks of x[n] into r[n] (1-based, ties share their mean rank).
static void ranks(const double *x, long n, double *r) {
    Ranked *t = mallocCheck(sizeof(Ranked) * (size_t)(n + 1));
    for (long i = 0; i < n; i++) t[i] = (Ranked){x[i], i};
    qsort(t, (size_t)n, sizeof(Ranked), cmp_ranked);
    for (long i = 0; i < n;) {
        long j = i;
        while (j + 1 < n && t[j + 1].v == t[i].v) j++;
        for (long k = i; k <= j; k++) r[t[k].i] = (i + j) / 2.0 + 1;
        i = j + 1;
    }
    free(t);
}

// Spearman's rank correlation (Pearson's r of the ranks); NAN with fewer than 3 rows or no spread.
static double spearman(const double *x, const double *y, long n) {
    if (n < 3) return NAN;
    double *rx = mallocCheck(sizeof(double) * (size_t)n), *ry = mallocCheck(sizeof(double) * (size_t)n);
    ranks(x, n, rx);
    ranks(y, n, ry);
    double mean = (n + 1) / 2.0, sxy = 0, sxx = 0, syy = 0;
    for (long i = 0; i < n; i++) {
        double a = rx[i] - mean, b = ry[i] - mean;
        sxy += a * b, sxx += a * a, syy += b * b;
    }
    free(rx);
    free(ry);
    return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : NAN;
}

// Median ratio and rank correlation over the pairs with flag `want` set.
static void compare_rows(const PairList *p, int want, double *ratio_median, double *rho) {
    double *ratio = mallocCheck(sizeof(double) * (size_t)(p->n + 1));
    double *x = mallocCheck(sizeof(double) * (size_t)(p->n + 1)), *y = mallocCheck(sizeof(double) * (size_t)(p->n + 1));
    long n = 0, nr = 0;
    for (long i = 0; i < p->n; i++) {
        const RowPair *r = &p->v[i];
        if ((r->flags & want) != want) continue;
        x[n] = r->S, y[n] = r->pred, n++;
        if (r->pred > 0) ratio[nr++] = r->S / r->pred;
    }
    *rho = spearman(x, y, n);
    *ratio_median = median(ratio, nr);
    free(ratio);
    free(x);
    free(y);
}

// --- the pass over the validation set ----------------------------------------------------------

void sparsity_result_free(SparsityResult *r) {
    free(r->heads);
    free(r->cell_heads);
    memset(r, 0, sizeof *r);
}

int sparsity_supported(const Model *m) {
    for (int l = 0; l < m->s.L; l++)
        if (!m->mixer[l]->attention || !m->mixer[l]->n_maps) return 0;
    return 1;
}

long sparsity_sequences(const Dataset *val, int B, int T, long eval_batches, long sparsity_rows, long **seq) {
    long n_seq = eval_batches > 0 && eval_batches * B < val->n ? eval_batches * B : val->n;
    long m = n_seq;
    if (sparsity_rows > 0) {  // at least sparsity_rows query rows: K of an MQAR sequence, else T
        long per_seq = val->mqar_kv_pairs > 0 ? val->mqar_kv_pairs : T;
        long want = (sparsity_rows + per_seq - 1) / per_seq;
        if (want < m) m = want;
    }
    *seq = mallocCheck(sizeof(long) * (size_t)(m + 1));
    for (long k = 0; k < m; k++)
        (*seq)[k] = (long)((unsigned __int128)k * (unsigned long long)n_seq / (unsigned long long)m);
    return m;
}

static HeadSparsity head_means(const MapSums *s, int per_head) {
    const double *v = s->v;
#define MEAN(sum, cnt) (v[cnt] > 0 ? v[sum] / v[cnt] : NAN)
    HeadSparsity h = {
        .rows = (long)v[F_ROWS] / per_head,
        .rows_recall = (long)v[F_ROWS_Q] / per_head,
        .rows_kv = (long)v[F_ROWS_KV] / per_head,
        .rows_other = (long)v[F_ROWS_O] / per_head,
        .rows_zero = (long)v[F_ZERO] / per_head,
        .rows_recall_zero = (long)v[F_ZERO_Q] / per_head,
        .S = MEAN(F_S, F_ROWS),
        .S_recall = MEAN(F_S_Q, F_ROWS_Q),
        .S_kv = MEAN(F_S_KV, F_ROWS_KV),
        .S_other = MEAN(F_S_O, F_ROWS_O),
        .S_norm = MEAN(F_NORM, F_ROWS_N2),
        .S_recall_norm = MEAN(F_NORM_Q, F_ROWS_N2_Q),
        .entropy = MEAN(F_ENT, F_ROWS),
        .max_weight = MEAN(F_MAXW, F_ROWS),
        .neg_mass = MEAN(F_NEG, F_ROWS),
        .S_onehot = MEAN(F_ONEHOT, F_ROWS),
        .S_recall_onehot = MEAN(F_ONEHOT_Q, F_ROWS_Q),
        .rows_pred = (long)v[F_ROWS_P] / per_head,
        .rows_recall_pred = (long)v[F_ROWS_PQ] / per_head,
        .S_pred = MEAN(F_PRED, F_ROWS_P),
        .S_recall_pred = MEAN(F_PRED_Q, F_ROWS_PQ),
        .S_meas_pred = MEAN(F_MEASP, F_ROWS_P),
        .S_recall_meas_pred = MEAN(F_MEASP_Q, F_ROWS_PQ),
        .S_inf = MEAN(F_INF, F_ROWS_P),
        .S_recall_inf = MEAN(F_INF_Q, F_ROWS_PQ),
        .rows_answer = (long)v[F_ROWS_A] / per_head,
        .ans_share = MEAN(F_ANS, F_ROWS_A),
        .key_share = MEAN(F_KEY, F_ROWS_A),
        .ans_hit = MEAN(F_HIT, F_ROWS_A),
        .ans_rank = MEAN(F_RANK, F_ROWS_A),
        .top1 = MEAN(F_TOP1, F_ROWS_A),
        .top4 = MEAN(F_TOP4, F_ROWS_A),
        .n90 = MEAN(F_N90, F_ROWS_A),
        .ans_window_share = MEAN(F_WIN, F_ROWS_A),
        .ans_window_hit = MEAN(F_WIN_HIT, F_ROWS_A),
        .eff_tokens = MEAN(F_EFF, F_ROWS),
        .eff_tokens_recall = MEAN(F_EFF_Q, F_ROWS_Q),
        .ans_chance = MEAN(F_CH_ANS, F_ROWS_A),
        .ans_window_chance = MEAN(F_CH_WIN, F_ROWS_A),
        .rows_right = (long)v[F_ROWS_R] / per_head,
        .rows_wrong = (long)v[F_ROWS_W] / per_head,
        .S_recall_right = MEAN(F_S_R, F_ROWS_R),
        .S_recall_wrong = MEAN(F_S_W, F_ROWS_W),
        .window_share_right = MEAN(F_WIN_R, F_ROWS_R),
        .window_share_wrong = MEAN(F_WIN_W, F_ROWS_W),
        .window_hit_right = MEAN(F_WHIT_R, F_ROWS_R),
        .window_hit_wrong = MEAN(F_WHIT_W, F_ROWS_W),
        .S_pred_ratio_median = NAN,
        .S_recall_pred_ratio_median = NAN,
        .S_pred_spearman = NAN,
        .S_recall_pred_spearman = NAN,
    };
    for (int b = 0; b < SPARSITY_POS_BINS; b++) {
        h.bin_rows[b] = (long)v[F_BIN_ROWS + b] / per_head;
        h.bin_rows_pred[b] = (long)v[F_BIN_PROWS + b] / per_head;
        h.bin_S[b] = MEAN(F_BIN_S + b, F_BIN_ROWS + b);
        h.bin_pred[b] = MEAN(F_BIN_PRED + b, F_BIN_PROWS + b);
    }
#undef MEAN
    return h;
}

// The buffers of one pass: sums per head (and per cell and head on a mixture), the per-row pairs
// of the theory comparison, one batch's inputs and per-thread scratch.
typedef struct {
    Model *m;
    int B, T, L, H;
    int n_maps[MAX_LAYERS];
    MapSums *head_sums;     // [L * H]
    MapSums *cell_sums;     // [n_cells * L * H] on a mixture, else NULL
    PairList *head_pairs;   // [L * H]
    MapSums *map_sums;      // [B * most maps of a layer]
    RowPair *map_pairs;     // [B * most maps * T], NULL when no layer has a theory
    int *inputs, *targets;  // [B * T]
    signed char *right;     // [B * T] query rows answered right (1) or wrong (0); -1 elsewhere
    Scratch *scr;           // [threads]
    int n_threads;
} Pass;

static void pass_init(Pass *p, Model *m, int B, int T) {
    memset(p, 0, sizeof *p);
    int L = m->s.L, H = m->s.H, C = m->s.C, n_maps_max = 0, any_theory = 0, qk = 0;
    *p = (Pass){.m = m, .B = B, .T = T, .L = L, .H = H};
    // a hybrid stack's layers have their own mixers: their own map counts and theories
    for (int l = 0; l < L; l++) {
        const MixerKind *mk = m->mixer[l];
        p->n_maps[l] = mk->n_maps(m->mixer_state[l]);
        if (p->n_maps[l] % H) die("internal error: mixer '%s' has %d maps for %d heads", mk->name, p->n_maps[l], H);
        if (p->n_maps[l] > n_maps_max) n_maps_max = p->n_maps[l];
        any_theory |= mk->theory != THEORY_NONE;
        int w = mixer_qk_width(mk, m->mixer_state[l], C);  // attention_qk's width (Based: 1 + d + d^2)
        qk = w > qk ? w : qk;
    }
    p->head_sums = callocCheck((size_t)L * H, sizeof(MapSums));
    p->head_pairs = callocCheck((size_t)L * H, sizeof(PairList));
    p->map_sums = mallocCheck(sizeof(MapSums) * (size_t)B * n_maps_max);
    // per-row pairs only when there is a theory (Mamba's channel maps have none and are many)
    p->map_pairs = any_theory ? mallocCheck(sizeof(RowPair) * (size_t)B * n_maps_max * T) : NULL;
    p->inputs = mallocCheck(sizeof(int) * (size_t)B * T);
    p->targets = mallocCheck(sizeof(int) * (size_t)B * T);
    p->right = mallocCheck((size_t)B * T);
    p->n_threads = omp_get_max_threads();
    p->scr = mallocCheck(sizeof(Scratch) * p->n_threads);
    for (int t = 0; t < p->n_threads; t++) {
        Scratch *s = &p->scr[t];
        s->a = mallocCheck(sizeof(real) * (size_t)T * T);
        s->q = mallocCheck(sizeof(real) * (size_t)T * qk);
        s->k = mallocCheck(sizeof(real) * (size_t)T * qk);
        s->pred = mallocCheck(sizeof(double) * T * 5);
        s->inf = s->pred + T;
        s->beta = s->inf + T;
        s->gamma2 = s->beta + T;
        s->w = s->gamma2 + T;
    }
}

static void pass_free(Pass *p) {
    for (int t = 0; t < p->n_threads; t++) {
        free(p->scr[t].a);
        free(p->scr[t].q);
        free(p->scr[t].k);
        free(p->scr[t].pred);
    }
    for (int i = 0; i < p->L * p->H; i++) free(p->head_pairs[i].v);
    free(p->scr), free(p->inputs), free(p->targets), free(p->right), free(p->map_sums), free(p->map_pairs);
    free(p->head_pairs), free(p->head_sums), free(p->cell_sums);
}

// Measures every map of every layer of the b sequences of len tokens in p->inputs after their
// forward pass (key-value rows below 2 kv_pairs); sums into the heads (and cell `cell`).
static void measure_batch(Pass *p, const SparsityResult *out, int b, int kv_pairs, int len, int cell) {
    int L = p->L, H = p->H, T = len;  // the batch ran at the cell's length
    for (int l = 0; l < L; l++) {
        MixerIO io = model_mixer_io(p->m, l);
        MapCtx ctx = {
            p->m, l, T, kv_pairs, out->bin_width, p->inputs, p->targets, p->right, sparsity_answer_window(p->m, l)};
        int n_maps = p->n_maps[l], per_head = n_maps / H;
        RowPair *pairs = out->theory[l] != THEORY_NONE ? p->map_pairs : NULL;
#pragma omp parallel for schedule(dynamic, 1)
        for (int task = 0; task < b * n_maps; task++)
            measure_map(&ctx, &io, task / n_maps, task % n_maps, &p->scr[omp_get_thread_num()], &p->map_sums[task],
                        pairs ? pairs + (size_t)task * T : NULL);
        for (int task = 0; task < b * n_maps; task++) {  // added in a fixed order: any thread count
            int hd = l * H + (task % n_maps) / per_head;
            sums_add(&p->head_sums[hd], &p->map_sums[task]);
            if (p->cell_sums) sums_add(&p->cell_sums[(size_t)cell * L * H + hd], &p->map_sums[task]);
            PairList *pl = &p->head_pairs[hd];
            for (int i = 0; pairs && i < T; i++) {
                const RowPair *rp = &pairs[(size_t)task * T + i];
                if (!(rp->flags & ROW_PRED)) continue;
                if (pl->n == pl->cap)
                    pl->v = reallocCheck(pl->v, sizeof(RowPair) * (size_t)(pl->cap = pl->cap ? 2 * pl->cap : 1024));
                pl->v[pl->n++] = *rp;
            }
        }
    }
}

// The result's header: layers, heads, each layer's mixer and theory, the cells, the bins.
static void result_init(SparsityResult *out, const Model *m, const Dataset *val, int T) {
    int L = m->s.L, H = m->s.H;
    free(out->heads);
    free(out->cell_heads);
    memset(out, 0, sizeof *out);
    out->L = L;
    out->H = H;
    for (int l = 0; l < L; l++) {
        out->theory[l] = m->mixer[l]->theory;
        out->mixer[l] = m->mixer[l]->name;
        out->hybrid |= m->mixer[l] != m->mixer[0];
    }
    out->kv_pairs = val->mqar_kv_pairs;
    for (int l = 0; l < L; l++) out->answer_window[l] = sparsity_answer_window(m, l);
    out->bin_width = (T + SPARSITY_POS_BINS - 1) / SPARSITY_POS_BINS;
    out->n_bins = (T + out->bin_width - 1) / out->bin_width;
    out->heads = callocCheck((size_t)L * H, sizeof(HeadSparsity));
    out->stats.n_cells = val->n_cells;
    memcpy(out->stats.cells, val->cells, sizeof out->stats.cells);
    if (val->n_cells > 1) {
        out->n_cells = val->n_cells;
        memcpy(out->cells, val->cells, sizeof out->cells);
        out->cell_heads = callocCheck((size_t)out->n_cells * L * H, sizeof(HeadSparsity));
    }
}

void sparsity_eval(Model *m, const Dataset *val, int B, int T, long eval_batches, long sparsity_rows, SparsityResult *out) {
    if (!sparsity_supported(m)) die("sparsity: a layer's mixer has no attention extractor");
    result_init(out, m, val, T);
    Pass p;
    pass_init(&p, m, B, T);
    int L = p.L, H = p.H, n_cells = val->n_cells ? val->n_cells : 1;
    if (out->n_cells) p.cell_sums = callocCheck((size_t)n_cells * L * H, sizeof(MapSums));
    for (int cell = 0; cell < n_cells; cell++) {
        // each MQAR cell on its own: its pairs decide the key-value rows, its length the rows measured
        Dataset part = val->n_cells ? dataset_cell(val, cell) : *val;
        int len = val->n_cells ? val->cells[cell].seq_len : T;
        long *seq, n_seq = sparsity_sequences(&part, B, len, eval_batches, sparsity_rows, &seq);
        for (long i0 = 0; i0 < n_seq && !progress_stopped(); i0 += B) {  // a signal: the caller drops the pass
            int b = (int)(n_seq - i0 < B ? n_seq - i0 : B);
            for (int r = 0; r < b; r++)
                dataset_get_prefix(&part, seq[i0 + r], len, p.inputs + (size_t)r * len, p.targets + (size_t)r * len);
            HeadStats hs = model_forward(m, p.inputs, p.targets, b, len, 0);
            val_stats_add(&out->stats, cell, &hs);
            memset(p.right, -1, (size_t)b * len);
            for (int r = 0; r < m->n_rows; r++) p.right[m->rows[r]] = m->row_hit[r] != 0;
            out->sequences += b;
            measure_batch(&p, out, b, part.mqar_kv_pairs, len, cell);
        }
        free(seq);
    }
    for (int i = 0; i < L * H; i++) {
        out->heads[i] = head_means(&p.head_sums[i], p.n_maps[i / H] / H);
        HeadSparsity *h = &out->heads[i];
        compare_rows(&p.head_pairs[i], ROW_PRED, &h->S_pred_ratio_median, &h->S_pred_spearman);
        compare_rows(&p.head_pairs[i], ROW_PRED | ROW_QUERY, &h->S_recall_pred_ratio_median, &h->S_recall_pred_spearman);
    }
    for (int i = 0; p.cell_sums && i < n_cells * L * H; i++)
        out->cell_heads[i] = head_means(&p.cell_sums[i], p.n_maps[(i / H) % L] / H);
    pass_free(&p);
}

// --- records ---------------------------------------------------------------------------------------

void sparsity_write_records(FILE *f, long step, const char *mixer, const char *split, const char *options,
                            const SparsityResult *r) {
    int recall = sparsity_recall_layer(r);  // computed once, at full precision, and recorded
    for (int l = 0; l < r->L; l++)
        for (int hd = 0; hd < r->H; hd++) {
            const HeadSparsity *h = &r->heads[l * r->H + hd];
            RunlogLine w;
            runlog_begin(&w, f, RUNLOG_SPARSITY, step);
            runlog_put_int(&w, "layer", l);
            runlog_put_int(&w, "head", hd);
            runlog_put_str(&w, "mixer", r->hybrid ? r->mixer[l] : mixer);  // a hybrid's layer: its own
            runlog_put_str(&w, "split", split ? split : "val");
            if (recall >= 0) runlog_put_int(&w, "recall_layer", recall);
            runlog_put_num_or_null(&w, "S", h->S);
            runlog_put_num_or_null(&w, "S_recall", h->S_recall);
            runlog_put_int(&w, "rows", h->rows);
            runlog_put_int(&w, "rows_recall", h->rows_recall);
            if (h->rows_zero) {
                runlog_put_int(&w, "rows_zero", h->rows_zero);
                runlog_put_int(&w, "rows_recall_zero", h->rows_recall_zero);
            }
            if (r->kv_pairs > 0) {
                runlog_put_int(&w, "rows_kv", h->rows_kv);
                runlog_put_int(&w, "rows_other", h->rows_other);
                runlog_put_num(&w, "S_kv", h->S_kv);
                runlog_put_num(&w, "S_other", h->S_other);
            }
            runlog_put_num(&w, "S_norm", h->S_norm);
            runlog_put_num(&w, "S_recall_norm", h->S_recall_norm);
            runlog_put_num(&w, "entropy", h->entropy);
            runlog_put_num(&w, "max_weight", h->max_weight);
            runlog_put_num(&w, "neg_mass", h->neg_mass);
            runlog_put_num(&w, "S_onehot", h->S_onehot);
            runlog_put_num(&w, "S_recall_onehot", h->S_recall_onehot);
            runlog_put_num(&w, "eff_tokens", h->eff_tokens);
            runlog_put_num(&w, "eff_tokens_recall", h->eff_tokens_recall);
            runlog_put_str(&w, "theory", theory_name(r->theory[l]));
            if (h->rows_pred > 0) {
                runlog_put_int(&w, "rows_pred", h->rows_pred);
                runlog_put_num(&w, "S_pred", h->S_pred);
                runlog_put_num(&w, "S_pred_measured", h->S_meas_pred);
                runlog_put_num(&w, "S_pred_ratio", h->S_meas_pred / h->S_pred);
                runlog_put_num(&w, "S_pred_ratio_median", h->S_pred_ratio_median);
                runlog_put_num(&w, "S_pred_spearman", h->S_pred_spearman);
                if (r->theory[l] == THEORY_EXP) runlog_put_num(&w, "S_inf", h->S_inf);
                runlog_put_num(&w, "S_recall_pred", h->S_recall_pred);
                runlog_put_num(&w, "S_recall_pred_measured", h->S_recall_meas_pred);
                runlog_put_num(&w, "S_recall_pred_ratio", h->S_recall_meas_pred / h->S_recall_pred);
                runlog_put_num(&w, "S_recall_pred_ratio_median", h->S_recall_pred_ratio_median);
                runlog_put_num(&w, "S_recall_pred_spearman", h->S_recall_pred_spearman);
                if (r->theory[l] == THEORY_EXP) runlog_put_num(&w, "S_recall_inf", h->S_recall_inf);
            }
            if (h->rows_answer > 0) {
                runlog_put_int(&w, "rows_answer", h->rows_answer);
                runlog_put_num(&w, "ans_share", h->ans_share);
                runlog_put_num(&w, "ans_chance", h->ans_chance);
                runlog_put_num(&w, "ans_lift", h->ans_share / h->ans_chance);
                runlog_put_num(&w, "key_share", h->key_share);
                runlog_put_num(&w, "ans_hit", h->ans_hit);
                runlog_put_num(&w, "ans_rank", h->ans_rank);
                runlog_put_num(&w, "top1", h->top1);
                runlog_put_num(&w, "top4", h->top4);
                runlog_put_num(&w, "n90", h->n90);
                if (r->answer_window[l] > 1) {
                    runlog_put_int(&w, "answer_window", r->answer_window[l]);
                    runlog_put_num(&w, "ans_window_share", h->ans_window_share);
                    runlog_put_num(&w, "ans_window_hit", h->ans_window_hit);
                    runlog_put_num(&w, "ans_window_chance", h->ans_window_chance);
                    runlog_put_num(&w, "ans_window_lift", h->ans_window_share / h->ans_window_chance);
                }
                runlog_put_int(&w, "rows_right", h->rows_right);
                runlog_put_int(&w, "rows_wrong", h->rows_wrong);
                runlog_put_num(&w, "S_recall_right", h->S_recall_right);
                runlog_put_num(&w, "S_recall_wrong", h->S_recall_wrong);
                runlog_put_num(&w, "window_share_right", h->window_share_right);
                runlog_put_num(&w, "window_share_wrong", h->window_share_wrong);
                runlog_put_num(&w, "window_hit_right", h->window_hit_right);
                runlog_put_num(&w, "window_hit_wrong", h->window_hit_wrong);
            }
            for (int c = 0; c < r->n_cells; c++) {  // a mixture: where recall and focus fail, per cell
                const HeadSparsity *ch = &r->cell_heads[((size_t)c * r->L + l) * r->H + hd];
                char name[32], key[64];
                mqar_cell_name(r->cells[c], name, sizeof name);
                snprintf(key, sizeof key, "S_recall_%s", name);
                runlog_put_num_or_null(&w, key, ch->S_recall);
                snprintf(key, sizeof key, "ans_share_%s", name);
                runlog_put_num(&w, key, ch->ans_share);
                snprintf(key, sizeof key, "ans_hit_%s", name);
                runlog_put_num(&w, key, ch->ans_hit);
                if (r->answer_window[l] > 1) {
                    snprintf(key, sizeof key, "ans_window_share_%s", name);
                    runlog_put_num(&w, key, ch->ans_window_share);
                }
            }
            if (r->n_bins > 0) {
                runlog_put_int(&w, "pos_bin_width", r->bin_width);
                runlog_put_nums(&w, "S_by_pos", h->bin_S, r->n_bins);
                if (h->rows_pred > 0) runlog_put_nums(&w, "S_pred_by_pos", h->bin_pred, r->n_bins);
            }
            if (options && *options) runlog_put_str(&w, "options", options);
            runlog_end(&w);
        }
}

int sparsity_answer_window(const Model *m, int l) {
    const MixerKind *mk = m->mixer[l];
    int conv = m->s.short_conv > 1 ? m->s.short_conv : 1;
    int own = mk->value_window ? mk->value_window(m->mixer_state[l]) : 1;
    return conv + own - 1;
}

int sparsity_recall_layer(const SparsityResult *r) {
    // ans_window_share holds the value position's share where the window is 1 wide: the records'
    // derived_window_share, from the struct
    double *share = mallocCheck(sizeof(double) * (size_t)(r->L * r->H + 1));
    for (int i = 0; i < r->L * r->H; i++) share[i] = r->heads[i].ans_window_share;
    int l = derived_recall_layer(share, r->L, r->H);
    free(share);
    return l;
}

void sparsity_print_layers(FILE *f, long step, const SparsityResult *r) {
    int recall = sparsity_recall_layer(r);
    for (int l = 0; l < r->L; l++) {
        const HeadSparsity *hs = &r->heads[l * r->H];
        fprintf(f, "step %6ld | L%d%s S_recall", step, l, l == recall ? "*" : " ");
        for (int h = 0; h < r->H; h++) {
            double v = hs[h].S_recall;
            if (isfinite(v)) fprintf(f, " %.3f", v);
            else fputs("   - ", f);
        }
        fputs(" | tokens", f);  // effective tokens n S^2 of the query rows
        for (int h = 0; h < r->H; h++) {
            double v = hs[h].eff_tokens_recall;
            if (isfinite(v)) fprintf(f, " %.1f", v);
            else fputs(" -", f);
        }
        if (r->kv_pairs > 0) {
            fputs(r->answer_window[l] > 1 ? " | answer window share" : " | answer share", f);
            for (int h = 0; h < r->H; h++) {
                double v = hs[h].ans_window_share;
                if (isfinite(v)) fprintf(f, " %.3f", v);
                else fputs("   - ", f);
            }
            // the chance level is the rows' geometry: the same for every head
            if (isfinite(hs[0].ans_window_chance)) fprintf(f, " (chance %.3f)", hs[0].ans_window_chance);
        }
        fputc('\n', f);
    }
}
