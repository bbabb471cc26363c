#include "eval/intervene.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/rng.h"
#include "eval/answer.h"
#include "eval/sparsity.h"

// --- the kinds ----------------------------------------------------------------------------------

static const char *const g_names[] = {
#define IV_NAME(id, name) name,
    X_INTERVENTIONS(IV_NAME)
#undef IV_NAME
};

const char *intervention_name(InterventionKind k) { return k >= 0 && k < IV_N_KINDS ? g_names[k] : "?"; }

static int is_lag_kind(InterventionKind k) { return k == IV_ORACLE_LAG || k == IV_ORACLE_LAG_CONTROL; }

int intervention_has_strength(InterventionKind k) {
    return k == IV_FLATTEN || k == IV_TOPK || k == IV_SHARPEN || k == IV_TEMPERATURE || is_lag_kind(k);
}

int intervention_lags(const Model *m, int layer, const double *strengths, int n, double *lags) {
    int w = 1, c = 0;
    for (int l = 0; l < m->s.L; l++)
        if (layer < 0 || l == layer) {
            int lw = sparsity_answer_window(m, l);
            if (lw > w) w = lw;
        }
    for (int i = 0; i < n; i++)
        if (strengths[i] < w) lags[c++] = strengths[i];
    return c;
}

// The strengths a kind runs without a list: flatten's 11 steps of 0.1, top-k over powers of two,
// sharpening and temperatures around 1.
static int default_strengths(InterventionKind k, double *s) {
    static const double flatten[] = {0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1};
    static const double topk[] = {1, 2, 4, 8, 16, 32, 64};
    static const double sharpen[] = {0.25, 0.5, 1, 2, 4, 8};
    static const double temperature[] = {0.25, 0.5, 1, 2, 4};
    static const double lags[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    const double *v = k == IV_FLATTEN ? flatten
        : k == IV_TOPK                ? topk
        : k == IV_SHARPEN             ? sharpen
        : is_lag_kind(k)              ? lags
                                      : temperature;
    int n = k == IV_FLATTEN ? 11 : k == IV_TOPK ? 7 : k == IV_SHARPEN ? 6 : is_lag_kind(k) ? 16 : 5;
    memcpy(s, v, sizeof(double) * n);
    return n;
}

static void check_strength(InterventionKind k, double s, const char *text) {
    int ok = k == IV_FLATTEN ? s >= 0 && s <= 1
        : k == IV_TOPK       ? s >= 1 && s == floor(s) && s <= 1e6
        : is_lag_kind(k)     ? s >= 0 && s == floor(s) && s <= INTERVENTION_MAX_LAG
                             : s > 0 && s < 1e6;
    const char *want = k == IV_FLATTEN ? "a number in [0, 1]"
        : k == IV_TOPK                 ? "an integer >= 1"
        : is_lag_kind(k)               ? "a lag, an integer in [0, 63]"
                                       : "a number > 0";
    if (!ok) die_input("intervene: %s: expected %s, got '%s'", intervention_name(k), want, text);
}

int intervention_parse(const char *value, InterventionKind *kind, double *strengths) {
    char name[32];
    const char *colon = strchr(value, ':');
    size_t len = colon ? (size_t)(colon - value) : strlen(value);
    snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), value);
    *kind = IV_N_KINDS;
    for (int k = IV_FLATTEN; k < IV_N_KINDS; k++)
        if (len == strlen(g_names[k]) && !strncmp(value, g_names[k], len)) *kind = (InterventionKind)k;
    if (*kind == IV_N_KINDS)
        die_input("intervene: expected flatten, topk, sharpen, temperature, derange, oracle, oracle_window, "
                  "oracle_wrong, ablate, oracle_lag, oracle_lag_control, derange_values or patch (with :STRENGTHS for the "
                  "first four and :LAGS for the lag kinds), got '%s'",
                  value);
    if (!intervention_has_strength(*kind)) {
        if (colon) die_input("intervene: %s takes no strengths, got '%s'", name, value);
        strengths[0] = 0;
        return 1;
    }
    if (!colon) return default_strengths(*kind, strengths);
    int n = 0;
    const char *p = colon + 1;
    for (;;) {
        char *end;
        double s = strtod(p, &end);
        char text[64];
        size_t tl = strcspn(p, ",");
        snprintf(text, sizeof text, "%.*s", (int)(tl < 63 ? tl : 63), p);
        if (end == p || (*end && *end != ',')) die_input("intervene: %s: expected a number, got '%s'", name, text);
        check_strength(*kind, s, text);
        for (int i = 0; i < n; i++)  // each strength is one record's key: a repeated one would be two
            if (strengths[i] == s) die_input("intervene: %s: the strength '%s' appears twice", name, text);
        if (n == INTERVENTION_MAX_STRENGTHS)
            die_input("intervene: %s: at most %d strengths, got more", name, INTERVENTION_MAX_STRENGTHS);
        strengths[n++] = s;
        if (!*end) break;
        p = end + 1;
    }
    return n;
}

// --- one row ------------------------------------------------------------------------------------

static real signed_mass(real a, double mass) { return (real)(a < 0 ? -mass : mass); }

// The k largest |a_j| kept (ties: the earlier position), rescaled to the row's mass r.
static void topk_row(real *a, int n, int k, double r, double *d) {
    if (k >= n) return;  // every weight kept: the row as it is
    char *keep = (char *)(d + n);
    memset(keep, 0, (size_t)n);
    double kept = 0;
    for (int c = 0; c < k; c++) {
        int best = -1;
        for (int j = 0; j < n; j++)
            if (!keep[j] && (best < 0 || d[j] > d[best])) best = j;
        keep[best] = 1;
        kept += d[best];
    }
    for (int j = 0; j < n; j++) a[j] = keep[j] && kept > 0 ? (real)(a[j] * (r / kept)) : 0;
}

// |a'| proportional to |a|^p (taken relative to the largest, so nothing underflows), mass r.
static void power_row(real *a, int n, double p, double r, double *d) {
    double mx = 0, s = 0;
    for (int j = 0; j < n; j++) mx = fmax(mx, d[j]);
    for (int j = 0; j < n; j++) s += d[j] = d[j] > 0 ? pow(d[j] / mx, p) : 0;
    for (int j = 0; j < n; j++) a[j] = signed_mass(a[j], r * d[j] / s);
}

// A random cyclic permutation (Sattolo's algorithm) of the weights on the value positions
// 2p + 1 < min(n, 2 kv_pairs): every one moves. 0 with fewer than two in the prefix. d holds 2 n
// doubles: the weights, then their positions.
static int derange_row(real *a, int n, const RowContext *rc, double *d) {
    double *w = d, *pos = d + n;
    int c = 0;
    for (int j = 1; j < n && j < 2 * rc->kv_pairs; j += 2) w[c] = a[j], pos[c++] = j;
    if (c < 2) return 0;
    Rng rng;
    rng_seed(&rng, rc->seed);
    for (int i = c - 1; i > 0; i--) {
        int j = (int)rng_below(&rng, (uint64_t)i);  // j < i: the cycle is one loop through all
        double t = w[i];
        w[i] = w[j];
        w[j] = t;
    }
    for (int i = 0; i < c; i++) a[(int)pos[i]] = (real)w[i];
    return 1;
}

// The row's mass on the answer (its window, or another pair's value), signed as the row's sum.
static int oracle_row(InterventionKind kind, real *a, int n, double r, const RowContext *rc) {
    int vp = rc->value_pos;
    if (vp < 0 || vp >= n) return 0;
    int first = vp, count = 1;
    if (kind == IV_ORACLE_WINDOW) count = answer_window_positions(n, vp, rc->window);
    if (kind == IV_ORACLE_WRONG) {  // the next pair's value outside the answer window
        int p = (vp - 1) / 2, w = rc->window > 1 ? rc->window : 1;
        first = -1;
        for (int q = 1; q < rc->kv_pairs && first < 0; q++) {
            int pos = 2 * ((p + q) % rc->kv_pairs) + 1;
            if (pos < n && (pos < vp || pos >= vp + w)) first = pos;
        }
        if (first < 0) return 0;
    }
    double sum = 0;
    for (int j = 0; j < n; j++) sum += a[j];
    real v = (real)((sum < 0 ? -r : r) / count);
    for (int j = 0; j < n; j++) a[j] = 0;
    for (int j = first; j < first + count; j++) a[j] = v;
    return 1;
}

// The lag oracle (k = lag) and its control: the row's mass r on one position, vp + k or another
// pair's value position + k (a pair whose window [pos, pos + w) does not overlap the answer's),
// signed as the map's own weight there, or as the row's sum where that is 0.
static int oracle_lag_row(InterventionKind kind, real *a, int n, double r, const RowContext *rc, int k) {
    int vp = rc->value_pos, w = rc->window > 1 ? rc->window : 1;
    if (vp < 0 || k >= w) return 0;
    int pos = vp + k;
    if (kind == IV_ORACLE_LAG_CONTROL) {
        int p = (vp - 1) / 2;
        pos = -1;
        for (int q = 1; q < rc->kv_pairs && pos < 0; q++) {
            int other = 2 * ((p + q) % rc->kv_pairs) + 1;
            if ((other + w <= vp || other >= vp + w) && other + k < n) pos = other + k;
        }
        if (pos < 0) return 0;
    }
    if (pos >= n) return 0;
    double sign = a[pos];
    if (sign == 0)
        for (int j = 0; j < n; j++) sign += a[j];
    for (int j = 0; j < n; j++) a[j] = 0;
    a[pos] = (real)(sign < 0 ? -r : r);
    return 1;
}

int intervene_row(const Intervention *iv, real *a, int n, const RowContext *rc, double *d) {
    double r = 0;
    for (int j = 0; j < n; j++) r += d[j] = fabs((double)a[j]);
    if (r == 0) return 0;  // no mass to move
    switch (iv->kind) {
    case IV_FLATTEN:
    case IV_ABLATE: {
        double eps = iv->kind == IV_ABLATE ? 1 : iv->strength;
        for (int j = 0; j < n; j++) a[j] = signed_mass(a[j], (1 - eps) * d[j] + eps * r / n);
        return 1;
    }
    case IV_TOPK: topk_row(a, n, (int)iv->strength, r, d); return 1;
    case IV_SHARPEN: power_row(a, n, iv->strength, r, d); return 1;
    case IV_TEMPERATURE: power_row(a, n, 1 / iv->strength, r, d); return 1;
    case IV_DERANGE: return derange_row(a, n, rc, d);
    case IV_ORACLE:
    case IV_ORACLE_WINDOW:
    case IV_ORACLE_WRONG: return oracle_row(iv->kind, a, n, r, rc);
    case IV_ORACLE_LAG:
    case IV_ORACLE_LAG_CONTROL: return oracle_lag_row(iv->kind, a, n, r, rc, (int)iv->strength);
    default: return 0;
    }
}

// --- the pass -----------------------------------------------------------------------------------

// What one map's query rows measured after the change (summed; added in a fixed order).
typedef struct {
    double rows, S, eff, rows_answer, ans, win, ch_ans, ch_win;
    // contribution shares |a_ij| ||v_j|| and their chance (a uniform row's), the margins
    double rows_contrib, c_ans, c_win, cch_ans, cch_win, margin, win_margin;
} MapAcc;

typedef struct {
    real *a, *v;  // [T * T], [T * 4C]
    double *d;    // [2 T]
} Scratch;

// derange_values's two passes: the clean one keeps the layer's query rows, the permuted one
// puts them back.
enum { KEEP_OFF, KEEP_RECORD, KEEP_REPLACE };

typedef struct {
    const Intervention *iv;
    int keep;    // KEEP_*
    real *kept;  // [B, n_maps, Q, T] the clean pass's query rows (derange_values)
    size_t kept_cap;
    int Q;              // query rows kept per sequence
    int kv_pairs;       // this batch's cell
    const long *seq;    // [B] the batch rows' sequences (derange's draws)
    int cell;           // this batch's cell
    const int *inputs;  // [B, T] this batch
    const int *targets;
    Scratch *scr;  // per thread
    real *o;       // the layer's mixing outputs, finish's layout
    size_t o_cap;
    MapAcc *acc;  // [B * n_maps]
    size_t acc_cap;
    MapAcc total;
} Hook;

// The row's contribution shares (docs/interventions.md#contribution-share): position j's part of
// o_i is a_ij v_j, so its share is |a_ij| ||v_j|| / sum_l |a_il| ||v_l||, on the answer and on the
// window; a uniform row's (the chance) is ||v_j|| / sum_l ||v_l||. And the margins: the answer's
// weight share less the largest other pair's value's, and the same for the windows. v[j * W + w].
static void contribution_row(MapAcc *acc, const real *row, int n, int vp, int window, int kv_pairs, const real *v, int W) {
    double tot = 0, norm_tot = 0, c_ans = 0, c_win = 0, n_ans = 0, n_win = 0, r = 0;
    int w = window > 1 ? window : 1;
    for (int j = 0; j < n; j++) {
        double nv = 0;
        for (int k = 0; k < W; k++) nv += (double)v[(size_t)j * W + k] * (double)v[(size_t)j * W + k];
        nv = sqrt(nv);
        double c = fabs((double)row[j]) * nv;
        tot += c, norm_tot += nv, r += fabs((double)row[j]);
        if (j == vp) c_ans += c, n_ans += nv;
        if (j >= vp && j < vp + w) c_win += c, n_win += nv;
    }
    if (tot <= 0 || norm_tot <= 0 || r <= 0) return;
    acc->rows_contrib++;
    acc->c_ans += c_ans / tot, acc->c_win += c_win / tot;
    acc->cch_ans += n_ans / norm_tot, acc->cch_win += n_win / norm_tot;
    double other = 0, other_win = 0, own_win = 0;
    for (int j = vp; j < vp + w && j < n; j++) own_win += fabs((double)row[j]);
    for (int q = 0; q < kv_pairs; q++) {
        int pos = 2 * q + 1;
        if (pos == vp || pos >= n) continue;
        other = fmax(other, fabs((double)row[pos]));
        double s = 0;
        for (int j = pos; j < pos + w && j < n; j++) s += fabs((double)row[j]);
        other_win = fmax(other_win, s);
    }
    acc->margin += (fabs((double)row[vp]) - other) / r;
    acc->win_margin += (own_win - other_win) / r;
}

static void measure_row(MapAcc *acc, const real *row, int n, int value_pos, int window, double *d) {
    RowStats rs;
    if (!sparsity_row(row, n, &rs)) return;
    acc->rows++;
    acc->S += rs.S;
    acc->eff += n * rs.S * rs.S;
    AnswerStats as;
    if (value_pos < 0 || !answer_row(row, n, value_pos, window, d, &as)) return;
    acc->rows_answer++;
    acc->ans += as.ans_share;
    acc->win += as.window_share;
    acc->ch_ans += 1.0 / n;
    acc->ch_win += answer_window_positions(n, value_pos, window) / (double)n;
}

// Map mi of batch row b: its outputs into o (changed rows recomputed from a'), its query rows
// measured into acc.
static void change_map(const Hook *h, const Model *m, int l, const MixerIO *io, int b, int mi, int W, int window,
                       Scratch *s, real *o, MapAcc *acc) {
    const MixerKind *mk = m->mixer[l];
    const void *st = m->mixer_state[l];
    const Intervention *iv = h->iv;
    int T = io->T, per_head = mk->n_maps(st) / m->s.H;
    memset(acc, 0, sizeof *acc);
    mk->attention_values(st, io, b, mi, s->v, o);
    if (iv->head >= 0 && mi / per_head != iv->head) return;  // another head: as it was
    mk->attention(st, io, b, mi, s->a);
    const int *in = h->inputs + (size_t)b * T, *tg = h->targets + (size_t)b * T;
    int q = 0;  // the query rows so far
    for (int i = 0; i < T; i++) {
        int query = tg[i] >= 0, n = i + 1;
        if (!query && !iv->all_rows) continue;
        real *row = s->a + (size_t)i * T;
        if (h->keep != KEEP_OFF && query && q < h->Q) {  // derange_values: keep, or put back, the row
            real *kept = h->kept + (((size_t)b * mk->n_maps(st) + mi) * h->Q + q++) * T;
            if (h->keep == KEEP_RECORD) {
                memcpy(kept, row, sizeof(real) * (size_t)n);
                continue;  // the clean pass is measured by nothing: it only lends its maps
            }
            memcpy(row, kept, sizeof(real) * (size_t)n);
            for (int w = 0; w < W; w++) {
                double sum = 0;
                for (int j = 0; j < n; j++) sum += (double)row[j] * (double)s->v[(size_t)j * W + w];
                o[(size_t)i * W + w] = (real)sum;
            }
            int vp = h->kv_pairs > 0 ? answer_value_pos(in, i, tg[i]) : -1;
            measure_row(acc, row, n, vp, window, s->d);
            if (vp >= 0) contribution_row(acc, row, n, vp, window, h->kv_pairs, s->v, W);
            continue;
        }
        int vp = query && h->kv_pairs > 0 ? answer_value_pos(in, i, tg[i]) : -1;
        RowContext rc = {h->kv_pairs, vp, window, seed_mix(seed_mix((uint64_t)h->cell, (uint64_t)h->seq[b]), (uint64_t)i)};
        if (iv->kind != IV_NONE && intervene_row(iv, row, n, &rc, s->d))
            for (int w = 0; w < W; w++) {  // o'_i = sum_j a'_ij v_j
                double sum = 0;
                for (int j = 0; j < n; j++) sum += (double)row[j] * (double)s->v[(size_t)j * W + w];
                o[(size_t)i * W + w] = (real)sum;
            }
        if (query) measure_row(acc, row, n, vp, window, s->d);
        if (query && vp >= 0) contribution_row(acc, row, n, vp, window, h->kv_pairs, s->v, W);
    }
}

static void after_mixer(Model *m, int l, MixerIO *io, void *ctx) {
    Hook *h = ctx;
    if (h->iv->layer >= 0 && h->iv->layer != l) return;
    const MixerKind *mk = m->mixer[l];
    const void *st = m->mixer_state[l];
    int B = io->B, T = io->T, n_maps = mk->n_maps(st), window = sparsity_answer_window(m, l);
    int W = mk->attention_values(st, io, 0, 0, h->scr[0].v, h->scr[0].a);  // the width only
    size_t per_map = (size_t)T * W, need = (size_t)B * n_maps * per_map;
    if (need > h->o_cap) h->o = reallocCheck(h->o, sizeof(real) * (h->o_cap = need));
    if ((size_t)B * n_maps > h->acc_cap)
        h->acc = reallocCheck(h->acc, sizeof(MapAcc) * (h->acc_cap = (size_t)B * n_maps));
#pragma omp parallel for schedule(dynamic, 1)
    for (int task = 0; task < B * n_maps; task++)
        change_map(h, m, l, io, task / n_maps, task % n_maps, W, window, &h->scr[omp_get_thread_num()],
                   h->o + (size_t)task * per_map, &h->acc[task]);
    for (int task = 0; task < B * n_maps; task++) {  // in a fixed order: any thread count
        const MapAcc *a = &h->acc[task];
        double *t = &h->total.rows;
        const double *v = &a->rows;
        for (size_t k = 0; k < sizeof(MapAcc) / sizeof(double); k++) t[k] += v[k];
    }
    if (h->iv->kind != IV_NONE && h->keep != KEEP_RECORD) mk->finish(st, io, h->o);
}

void intervene_permute_values(int *in, const int *tg, int *tg_perm, int T, int K, uint64_t seed) {
    for (int i = 0; i < T; i++) tg_perm[i] = tg[i];
    if (K < 2 || 2 * K > T) return;
    int *val = mallocCheck(sizeof(int) * (size_t)K), *perm = mallocCheck(sizeof(int) * (size_t)K);
    for (int p = 0; p < K; p++) val[p] = in[2 * p + 1], perm[p] = p;
    Rng rng;
    rng_seed(&rng, seed);
    for (int i = K - 1; i > 0; i--) {  // Sattolo: one cycle through every pair
        int j = (int)rng_below(&rng, (uint64_t)i), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int p = 0; p < K; p++) in[2 * p + 1] = val[perm[p]];
    for (int i = 2 * K; i < T; i++)
        if (tg[i] >= 0)
            for (int p = 0; p < K; p++)
                if (in[2 * p] == in[i]) tg_perm[i] = val[perm[p]];
    free(val), free(perm);
}

// The share of the last forward's rows whose argmax is want[row] (count and right into *all, *right).
static void count_hits(const Model *m, int T, const int *want, long *right, long *all) {
    int V = m->s.V;
    real *lg = mallocCheck(sizeof(real) * (size_t)V);
    for (int r = 0; r < m->n_rows; r++) {
        int pos = m->rows[r];
        model_logits_at(m, pos / T, pos % T, lg);
        int arg = 0;
        for (int v = 1; v < V; v++)
            if (lg[v] > lg[arg]) arg = v;
        *right += arg == want[pos];
        (*all)++;
    }
    free(lg);
}

// --- activation patching ---------------------------------------------------------------------------

// The changed query row of each batch row (-1: none) and its y, kept from A' and put into A.
typedef struct {
    int mode;  // KEEP_RECORD (A'), KEEP_REPLACE (A patched)
    int layer;
    const int *qpos;  // [B]
    real *kept;       // [B, C]
} PatchHook;

static void patch_after_mixer(Model *m, int l, MixerIO *io, void *ctx) {
    const PatchHook *p = ctx;
    if (l != p->layer) return;
    int C = m->s.C;
    for (int b = 0; b < io->B; b++) {
        if (p->qpos[b] < 0) continue;
        real *y = io->y + ((size_t)b * io->T + p->qpos[b]) * C, *k = p->kept + (size_t)b * C;
        if (p->mode == KEEP_RECORD) memcpy(k, y, sizeof(real) * (size_t)C);
        else memcpy(y, k, sizeof(real) * (size_t)C);
    }
}

// The argmax of the last forward's logits at each of its rows, into pred[b * T + t].
static void predictions(const Model *m, int T, int *pred) {
    int V = m->s.V;
    real *lg = mallocCheck(sizeof(real) * (size_t)V);
    for (int r = 0; r < m->n_rows; r++) {
        int pos = m->rows[r], arg = 0;
        model_logits_at(m, pos / T, pos % T, lg);
        for (int v = 1; v < V; v++)
            if (lg[v] > lg[arg]) arg = v;
        pred[pos] = arg;
    }
    free(lg);
}

// A' of an MQAR sequence in[0..T) with K pairs: one pair's value (the pair drawn from seed)
// replaced by a value token (in [V/2, V), MQAR's) the sequence does not hold, in place; returns
// the position of that key's query, -1 when it has none (or no free token was found).
static int patch_sequence(int *in, const int *tg, int T, int K, int V, uint64_t seed) {
    if (K < 1 || 2 * K > T) return -1;
    Rng rng;
    rng_seed(&rng, seed);
    int p = (int)rng_below(&rng, (uint64_t)K), key = in[2 * p], q = -1;
    for (int i = 2 * K; i < T && q < 0; i++)
        if (tg[i] >= 0 && in[i] == key) q = i;
    if (q < 0 || V / 2 < 1) return -1;
    for (int tries = 0; tries < 1000; tries++) {
        int v = V / 2 + (int)rng_below(&rng, (uint64_t)(V - V / 2)), used = 0;
        for (int i = 0; i < T && !used; i++) used = in[i] == v;
        if (!used) {
            in[2 * p + 1] = v;
            return q;
        }
    }
    return -1;
}

static void patch_eval(Model *m, const Dataset *val, int B, int T, long eval_batches, long sparsity_rows,
                       const Intervention *iv, InterventionResult *out) {
    int C = m->s.C;
    size_t BT = (size_t)B * T;
    int *in = mallocCheck(sizeof(int) * BT), *tg = mallocCheck(sizeof(int) * BT), *in2 = mallocCheck(sizeof(int) * BT);
    int *pa = mallocCheck(sizeof(int) * BT), *pa2 = mallocCheck(sizeof(int) * BT), *pp = mallocCheck(sizeof(int) * BT);
    int *qpos = mallocCheck(sizeof(int) * (size_t)B);
    PatchHook ph = {KEEP_RECORD, iv->layer, qpos, mallocCheck(sizeof(real) * (size_t)B * C)};
    ExampleCounts ex = {0};
    long informative = 0, follows = 0, others = 0, moved = 0;
    for (int cell = 0; cell < (val->n_cells ? val->n_cells : 1); cell++) {
        Dataset part = val->n_cells ? dataset_cell(val, cell) : *val;
        int len = val->n_cells ? val->cells[cell].seq_len : T;
        long *seq, n_seq = sparsity_sequences(&part, B, len, eval_batches, sparsity_rows, &seq);
        for (long i0 = 0; i0 < n_seq; i0 += B) {
            int b = (int)(n_seq - i0 < B ? n_seq - i0 : B);
            for (int r = 0; r < b; r++) {
                size_t o = (size_t)r * len;
                dataset_get_prefix(&part, seq[i0 + r], len, in + o, tg + o);
                memcpy(in2 + o, in + o, sizeof(int) * (size_t)len);
                qpos[r] = patch_sequence(in2 + o, tg + o, len, part.mqar_kv_pairs, part.vocab_size,
                                         seed_mix(seed_mix((uint64_t)cell, (uint64_t)seq[i0 + r]), 0x7061746368));
            }
            m->after_mixer = NULL;  // A as it is
            model_forward(m, in, tg, b, len, 0);
            predictions(m, len, pa);
            m->after_mixer = patch_after_mixer, m->after_mixer_ctx = &ph;
            ph.mode = KEEP_RECORD;  // A': the layer's y at the changed query kept
            model_forward(m, in2, tg, b, len, 0);
            predictions(m, len, pa2);
            ph.mode = KEEP_REPLACE;  // A with it put in
            HeadStats hs = model_forward(m, in, tg, b, len, 0);
            predictions(m, len, pp);
            val_stats_add(&out->stats, cell, &hs);
            examples_add_forward(&ex, m, b, len, cell);
            out->sequences += b;
            for (int r = 0; r < m->n_rows; r++) {
                int pos = m->rows[r], rb = pos / len;
                if (pos % len == qpos[rb]) {
                    if (pa[pos] != pa2[pos]) informative++, follows += pp[pos] == pa2[pos];
                } else others++, moved += pp[pos] != pa[pos];
            }
        }
        free(seq);
    }
    m->after_mixer = NULL, m->after_mixer_ctx = NULL;
    examples_interval(&ex, out->stats.n_cells, &out->acc_lo, &out->acc_hi);
    examples_free(&ex);
    out->patch_rows = informative;
    out->patch_follows = informative ? (double)follows / informative : NAN;
    out->patch_control = others ? (double)moved / others : NAN;
    free(in), free(tg), free(in2), free(pa), free(pa2), free(pp), free(qpos), free(ph.kept);
}

void intervene_eval(Model *m, const Dataset *val, int B, int T, long eval_batches, long sparsity_rows,
                    const Intervention *iv, InterventionResult *out) {
    if (!sparsity_supported(m)) die("intervene: a layer's mixer has no attention extractor");
    int L = m->s.L, C = m->s.C;
    if (iv->layer >= L) die_input("layer: expected 0 to %d or all, got %d", L - 1, iv->layer);
    if (iv->head >= m->s.H) die_input("head: expected 0 to %d or all, got %d", m->s.H - 1, iv->head);
    for (int l = 0; l < L; l++)
        if (iv->kind == IV_TEMPERATURE && (iv->layer < 0 || iv->layer == l) && m->mixer[l]->theory != THEORY_EXP)
            die_input("intervene: temperature acts on softmax logits; layer %d's mixer '%s' has none (use sharpen)", l,
                      m->mixer[l]->name);
    int needs_answers =
        iv->kind == IV_DERANGE || iv->kind == IV_ORACLE || iv->kind == IV_ORACLE_WINDOW || iv->kind == IV_ORACLE_WRONG;
    if (needs_answers && !val->mqar_kv_pairs)  // on text every row would be left as it is: no measurement
        die_input("intervene: %s moves weight between MQAR key-value positions, and this run's validation set is not "
                  "MQAR (task = shards: no answer positions)",
                  intervention_name(iv->kind));
    memset(out, 0, sizeof *out);
    out->stats.n_cells = val->n_cells;
    memcpy(out->stats.cells, val->cells, sizeof out->stats.cells);
    out->patch_follows = out->patch_control = NAN;
    if (iv->kind == IV_PATCH) {  // no maps: the layer's outputs
        if (iv->layer < 0)
            die_input("intervene: patch replaces one layer's outputs: give layer=L (or none: each in turn)");
        if (!val->mqar_kv_pairs) die_input("intervene: patch changes an MQAR pair's value: MQAR data only");
        out->S_recall = out->eff_tokens_recall = out->ans_share = out->ans_window_share = NAN;
        out->ans_chance = out->ans_window_chance = out->acc_permuted = NAN;
        out->contrib_share = out->contrib_chance = out->contrib_window_share = out->contrib_window_chance = NAN;
        out->ans_margin = out->ans_window_margin = NAN;
        patch_eval(m, val, B, T, eval_batches, sparsity_rows, iv, out);
        return;
    }
    int n_threads = omp_get_max_threads();
    Hook h = {.iv = iv, .scr = mallocCheck(sizeof(Scratch) * n_threads)};
    for (int t = 0; t < n_threads; t++) {
        h.scr[t].a = mallocCheck(sizeof(real) * (size_t)T * (T > 4 * C ? T : 4 * C));
        h.scr[t].v = mallocCheck(sizeof(real) * (size_t)T * 4 * C);
        h.scr[t].d = mallocCheck(sizeof(double) * 2 * (size_t)T);
    }
    int derange_values = iv->kind == IV_DERANGE_VALUES;
    if (derange_values && iv->layer < 0)
        die_input("intervene: derange_values keeps one layer's maps: give layer=L or layer=causal");
    if (derange_values && iv->all_rows) die_input("intervene: derange_values keeps the query rows' maps: rows=query");
    if (derange_values && !val->mqar_kv_pairs)
        die_input("intervene: derange_values permutes MQAR pairs: MQAR data only");
    for (int l = 0; l < L; l++)
        if (iv->kind == IV_DERANGE && (iv->layer < 0 || iv->layer == l) && sparsity_answer_window(m, l) > 1)
            die_input("intervene: derange moves weights between value positions, and layer %d's answer window of %d "
                      "spans the neighbouring pairs ('%s'): use derange_values",
                      l, sparsity_answer_window(m, l), m->mixer[l]->name);
    int *inputs = mallocCheck(sizeof(int) * (size_t)B * T), *targets = mallocCheck(sizeof(int) * (size_t)B * T);
    int *perm_targets = derange_values ? mallocCheck(sizeof(int) * (size_t)B * T) : NULL;
    long perm_right = 0, perm_all = 0;
    m->after_mixer = after_mixer;
    m->after_mixer_ctx = &h;
    ExampleCounts ex = {0};  // each sequence's queries and right answers: the accuracy's interval
    for (int cell = 0; cell < (val->n_cells ? val->n_cells : 1); cell++) {
        Dataset part = val->n_cells ? dataset_cell(val, cell) : *val;
        int len = val->n_cells ? val->cells[cell].seq_len : T;
        long *seq, n_seq = sparsity_sequences(&part, B, len, eval_batches, sparsity_rows, &seq);
        h.kv_pairs = part.mqar_kv_pairs;
        h.cell = cell;
        int step = B;
        if (derange_values) {  // the kept rows of a batch in at most 256 MiB
            const MixerKind *mk = m->mixer[iv->layer];
            h.Q = part.mqar_kv_pairs;
            size_t per_seq = (size_t)mk->n_maps(m->mixer_state[iv->layer]) * h.Q * len * sizeof(real);
            long fit = (long)((256u << 20) / (per_seq ? per_seq : 1));
            step = fit < 1 ? 1 : fit < B ? (int)fit : B;
            size_t need = (size_t)step * per_seq / sizeof(real);
            if (need > h.kept_cap) h.kept = reallocCheck(h.kept, sizeof(real) * (h.kept_cap = need));
        }
        for (long i0 = 0; i0 < n_seq; i0 += step) {
            int b = (int)(n_seq - i0 < step ? n_seq - i0 : step);
            for (int r = 0; r < b; r++)
                dataset_get_prefix(&part, seq[i0 + r], len, inputs + (size_t)r * len, targets + (size_t)r * len);
            h.seq = seq + i0;
            h.inputs = inputs;
            h.targets = targets;
            if (derange_values) {  // the clean pass lends its maps; the values then move among the pairs
                h.keep = KEEP_RECORD;
                model_forward(m, inputs, targets, b, len, 0);
                for (int r = 0; r < b; r++)
                    intervene_permute_values(inputs + (size_t)r * len, targets + (size_t)r * len,
                                             perm_targets + (size_t)r * len, len, part.mqar_kv_pairs,
                                             seed_mix(seed_mix((uint64_t)cell, (uint64_t)seq[i0 + r]), 0x76616c));
                h.keep = KEEP_REPLACE;
                h.targets = perm_targets;  // the measured rows' answer is where the permuted value sits
            }
            HeadStats hs = model_forward(m, inputs, targets, b, len, 0);
            if (derange_values) count_hits(m, len, perm_targets, &perm_right, &perm_all);
            val_stats_add(&out->stats, cell, &hs);
            examples_add_forward(&ex, m, b, len, cell);
            out->sequences += b;
        }
        free(seq);
    }
    examples_interval(&ex, out->stats.n_cells, &out->acc_lo, &out->acc_hi);
    examples_free(&ex);
    out->acc_permuted = derange_values && perm_all ? (double)perm_right / perm_all : NAN;
    free(perm_targets), free(h.kept);
    m->after_mixer = NULL;
    m->after_mixer_ctx = NULL;
    const MapAcc *t = &h.total;
    out->rows_recall = (long)t->rows;
    out->rows_answer = (long)t->rows_answer;
    out->S_recall = t->rows ? t->S / t->rows : NAN;
    out->eff_tokens_recall = t->rows ? t->eff / t->rows : NAN;
    double na = t->rows_answer;
    out->ans_share = na ? t->ans / na : NAN;
    out->ans_window_share = na ? t->win / na : NAN;
    out->ans_chance = na ? t->ch_ans / na : NAN;
    out->ans_window_chance = na ? t->ch_win / na : NAN;
    double nc = t->rows_contrib;
    out->contrib_share = nc ? t->c_ans / nc : NAN, out->contrib_window_share = nc ? t->c_win / nc : NAN;
    out->contrib_chance = nc ? t->cch_ans / nc : NAN, out->contrib_window_chance = nc ? t->cch_win / nc : NAN;
    out->ans_margin = nc ? t->margin / nc : NAN, out->ans_window_margin = nc ? t->win_margin / nc : NAN;
    for (int i = 0; i < n_threads; i++) free(h.scr[i].a), free(h.scr[i].v), free(h.scr[i].d);
    free(h.scr), free(h.o), free(h.acc), free(inputs), free(targets);
}

// --- the record ---------------------------------------------------------------------------------

void intervention_options(char *buf, size_t n, const Intervention *iv, const char *rest) {
    char kind[48];
    if (intervention_has_strength(iv->kind)) {    // the shortest text that reads back as the strength: two
        for (int prec = 6; prec <= 17; prec++) {  // strengths never share a key (%g made 0.1234567 0.123457)
            snprintf(kind, sizeof kind, "%s:%.*g", intervention_name(iv->kind), prec, iv->strength);
            if (strtod(strchr(kind, ':') + 1, NULL) == iv->strength) break;
        }
    } else snprintf(kind, sizeof kind, "%s", intervention_name(iv->kind));
    snprintf(buf, n, "intervene=%s rows=%s%s%s", kind, iv->all_rows ? "all" : "query", rest && *rest ? " " : "",
             rest ? rest : "");
}

void intervention_write_record(FILE *f, long step, const Intervention *iv, const InterventionResult *r, const char *split,
                               const char *checkpoint, const char *mixer, const char *options, double seconds) {
    RunlogLine w;
    runlog_begin(&w, f, RUNLOG_INTERVENTION, step);
    runlog_put_int(&w, "layer", iv->layer);
    runlog_put_int(&w, "head", iv->head);
    runlog_put_str(&w, "split", split);
    runlog_put_str(&w, "options", options);
    runlog_put_str(&w, "kind", intervention_name(iv->kind));
    if (intervention_has_strength(iv->kind)) runlog_put_num(&w, "strength", iv->strength);
    runlog_put_str(&w, "rows", iv->all_rows ? "all" : "query");
    runlog_put_str(&w, "checkpoint", checkpoint);
    runlog_put_str(&w, "mixer", mixer);
    runlog_put_int(&w, "sequences", r->sequences);
    runlog_put_num(&w, "loss", val_loss(&r->stats));
    runlog_put_num(&w, "acc", val_acc(&r->stats));
    runlog_put_num(&w, "acc_lo", r->acc_lo);
    runlog_put_num(&w, "acc_hi", r->acc_hi);
    if (iv->kind == IV_DERANGE_VALUES) runlog_put_num(&w, "acc_permuted", r->acc_permuted);
    if (iv->kind == IV_PATCH) {
        runlog_put_int(&w, "patch_rows", r->patch_rows);
        runlog_put_num_or_null(&w, "patch_follows", r->patch_follows);
        runlog_put_num_or_null(&w, "patch_control", r->patch_control);
    }
    runlog_put_int(&w, "rows_recall", r->rows_recall);
    runlog_put_num_or_null(&w, "S_recall", r->S_recall);
    runlog_put_num(&w, "eff_tokens_recall", r->eff_tokens_recall);
    if (r->rows_answer > 0) {
        runlog_put_int(&w, "rows_answer", r->rows_answer);
        runlog_put_num(&w, "ans_share", r->ans_share);
        runlog_put_num(&w, "ans_chance", r->ans_chance);
        runlog_put_num(&w, "ans_lift", r->ans_share / r->ans_chance);
        runlog_put_num(&w, "ans_window_share", r->ans_window_share);
        runlog_put_num(&w, "ans_window_chance", r->ans_window_chance);
        runlog_put_num(&w, "ans_window_lift", r->ans_window_share / r->ans_window_chance);
        runlog_put_num(&w, "contrib_share", r->contrib_share);
        runlog_put_num(&w, "contrib_chance", r->contrib_chance);
        runlog_put_num(&w, "contrib_window_share", r->contrib_window_share);
        runlog_put_num(&w, "contrib_window_chance", r->contrib_window_chance);
        runlog_put_num(&w, "ans_margin", r->ans_margin);
        runlog_put_num(&w, "ans_window_margin", r->ans_window_margin);
    }
    runlog_put_num_fmt(&w, "seconds", "%.2f", seconds);
    runlog_end(&w);
}
