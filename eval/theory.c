#include "eval/theory.h"

#include <math.h>
#include <stdlib.h>

#include "core/io.h"
#include "core/rng.h"

double theory_softmax_Sinf(double gamma2) { return exp(-gamma2 / 2); }

// --- softmax at finite n: a table per n, filled on first use -----------------------------------

#define SN_POINTS THEORY_SN_POINTS
#define SN_FINE 64     // grid points 0..64: gamma = g * STEP (0 to 8)
#define SN_COARSE 0.5  // above: gamma = 8 + (g - 64) * 0.5, to 32 (S changes slowly there)

static double sn_gamma(int g) {
    return g <= SN_FINE ? g * THEORY_SN_STEP : SN_FINE * THEORY_SN_STEP + (g - SN_FINE) * SN_COARSE;
}
#define SN_EXACT_N 64  // every n up to here has its own table; above, n on a grid of 2^(1/4) steps

typedef struct SnTable {
    int n;
    int points;  // grid points computed (0..points-1); a larger gamma replaces the table by a longer one
    double mean[SN_POINTS], se[SN_POINTS];
    struct SnTable *older;  // the table this one replaced (readers may still hold it; kept, never freed)
} SnTable;

static SnTable **g_sn;  // [g_sn_cap], indexed by table slot
static int g_sn_cap;

int theory_sn_samples(int n) {
    // 8192 draws for short rows, whose S varies most; above 32 the same work per table (S of a
    // longer row varies less, so the standard error stays about the same)
    int s = n <= 32 ? 8192 : 262144 / n;
    return s < 512 ? 512 : s;
}

// Fills grid points 0..points-1 of t: E[S] of softmax over n N(0, gamma^2) scores at gamma =
// sn_gamma(g), from the same draws. With x_j = z_j - max z and u_j = exp(STEP * x_j) <= 1, the weights at
// gamma = g * STEP are u_j^g (the largest is exactly 1), so each grid point costs a multiply per
// weight, not an exp (above gamma = 8 a step is 4 fine steps, the factor u^4). A point's value does not depend on how many points are computed, so
// extending the grid later (larger gammas) recomputes the same values.
static void sn_fill(SnTable *t, int n, int points) {
    int M = theory_sn_samples(n);
    double *s1 = callocCheck((size_t)points, sizeof(double)), *s2 = callocCheck((size_t)points, sizeof(double));
    double *u = mallocCheck(sizeof(double) * (size_t)n), *w = mallocCheck(sizeof(double) * (size_t)n);
    Rng rng;
    rng_seed(&rng, seed_mix(0x536e5f7461626c65ULL, (uint64_t)n));
    for (int s = 0; s < M; s++) {
        double mx = -INFINITY;
        for (int j = 0; j < n; j += 2) {  // Box-Muller, both normals of each pair
            double r = sqrt(-2 * log(1 - rng_uniform(&rng))), a = 2 * M_PI * rng_uniform(&rng);
            u[j] = r * cos(a);
            if (j + 1 < n) u[j + 1] = r * sin(a);
        }
        for (int j = 0; j < n; j++) mx = u[j] > mx ? u[j] : mx;
        for (int j = 0; j < n; j++) u[j] = exp(THEORY_SN_STEP * (u[j] - mx)), w[j] = 1;
        s1[0] += 1, s2[0] += 1;  // gamma = 0: flat, S = 1
        for (int g = 1; g < points; g++) {
            double l1 = 0, l2 = 0;
            if (g == SN_FINE + 1)  // from here on a step is 4 fine steps: the factor u^4
                for (int j = 0; j < n; j++) u[j] = (u[j] * u[j]) * (u[j] * u[j]);
#pragma omp simd reduction(+ : l1, l2)
            for (int j = 0; j < n; j++) {
                w[j] *= u[j];
                l1 += w[j];
                l2 += w[j] * w[j];
            }
            double S = l1 / sqrt(n * l2);  // (sum a / n) / sqrt(sum a^2 / n) with a = w / l1
            s1[g] += S;
            s2[g] += S * S;
        }
    }
    t->n = n;
    t->points = points;
    for (int g = 0; g < points; g++) {
        t->mean[g] = s1[g] / M;
        double var = (s2[g] - s1[g] * s1[g] / M) / (M - 1);
        t->se[g] = sqrt(var > 0 ? var : 0) / sqrt((double)M);
    }
    free(s1), free(s2), free(u), free(w);
}

// Table slot k: n = k for k <= SN_EXACT_N, else n = round(SN_EXACT_N * 2^((k - SN_EXACT_N) / 4)).
static int sn_slot_n(int k) { return k <= SN_EXACT_N ? k : (int)lround(SN_EXACT_N * pow(2, (k - SN_EXACT_N) / 4.0)); }

// Table slot k with at least `need` grid points (computed on first use, extended by doubling).
static const SnTable *sn_table(int k, int need) {
    const SnTable *t;
#pragma omp critical(theory_sn_table)
    {
        if (k >= g_sn_cap) {
            int cap = k + 16;
            g_sn = reallocCheck(g_sn, sizeof(SnTable *) * (size_t)cap);
            for (int i = g_sn_cap; i < cap; i++) g_sn[i] = NULL;
            g_sn_cap = cap;
        }
        int have = g_sn[k] ? g_sn[k]->points : 0;
        if (have < need) {  // a new, longer table: other threads may be reading the old one
            int points = have * 2 > need ? have * 2 : need;
            if (points < 33) points = 33;
            if (points > SN_POINTS) points = SN_POINTS;
            SnTable *nt = mallocCheck(sizeof(SnTable));
            sn_fill(nt, sn_slot_n(k), points);
            nt->older = g_sn[k];
            g_sn[k] = nt;
        }
        t = g_sn[k];
    }
    return t;
}

// Grid position of gamma: g and f in [0, 1) with sn_gamma(g) <= gamma < sn_gamma(g + 1), f linear
// in gamma^2 (near 0, S = 1 - c gamma^2, so this is exact there where linear in gamma is not).
static int sn_pos(double gamma, double *f) {
    *f = 0;
    if (!(gamma > 0)) return 0;
    if (gamma >= sn_gamma(SN_POINTS - 1)) return SN_POINTS - 1;
    int g = gamma <= sn_gamma(SN_FINE) ? (int)(gamma / THEORY_SN_STEP)
                                       : SN_FINE + (int)((gamma - sn_gamma(SN_FINE)) / SN_COARSE);
    if (g >= SN_POINTS - 1) g = SN_POINTS - 2;
    double a = sn_gamma(g), b = sn_gamma(g + 1);
    *f = (gamma * gamma - a * a) / (b * b - a * a);
    return g;
}

// Grid points needed to interpolate at gamma.
static int sn_need(double gamma) {
    double f;
    int g = sn_pos(gamma, &f);
    return g + 2 > SN_POINTS ? SN_POINTS : g + 2;
}

// One table's value at gamma, clamped at the last grid point.
static double sn_at(const SnTable *t, double gamma, int want_se) {
    const double *v = want_se ? t->se : t->mean;
    double f;
    int g = sn_pos(gamma, &f);
    if (g >= SN_POINTS - 1) return v[SN_POINTS - 1];
    if (f == 0) return v[g];
    return want_se ? (v[g] > v[g + 1] ? v[g] : v[g + 1]) : v[g] + f * (v[g + 1] - v[g]);
}

static double sn_interp(int n, double gamma, int want_se) {
    if (n <= 1) return want_se ? 0 : 1;
    if (n <= SN_EXACT_N) return sn_at(sn_table(n, sn_need(gamma)), gamma, want_se);
    // between the grid lengths around n, linear in log n
    double kf = SN_EXACT_N + 4 * log2((double)n / SN_EXACT_N);
    int k = (int)kf;
    const SnTable *a = sn_table(k, sn_need(gamma)), *b = sn_table(k + 1, sn_need(gamma));
    if (n <= a->n) return sn_at(a, gamma, want_se);
    double f = log((double)n / a->n) / log((double)b->n / a->n);
    double va = sn_at(a, gamma, want_se), vb = sn_at(b, gamma, want_se);
    return want_se ? (va > vb ? va : vb) : va + f * (vb - va);
}

double theory_softmax_Sn(int n, double gamma) { return sn_interp(n, gamma, 0); }
double theory_softmax_Sn_se(int n, double gamma) { return sn_interp(n, gamma, 1); }

// --- Gaussian closed forms ------------------------------------------------------------------------

static double std_pdf(double t) { return exp(-t * t / 2) / sqrt(2 * M_PI); }
static double std_cdf(double t) { return 0.5 * erfc(-t / sqrt(2.0)); }

double theory_relu2_S(double beta, double gamma) {
    if (!(gamma > 0)) return beta > 0 ? 1 : NAN;
    double t = beta / gamma, P = std_cdf(t), p = std_pdf(t);
    double b2 = beta * beta, g2 = gamma * gamma;
    double m2 = (b2 + g2) * P + beta * gamma * p;
    double m4 = (b2 * b2 + 6 * b2 * g2 + 3 * g2 * g2) * P + (b2 * beta * gamma + 5 * beta * g2 * gamma) * p;
    if (!(m2 > 0) || !(m4 > 0)) return NAN;  // beta/gamma so negative that both underflow
    return m2 / sqrt(m4);
}

double theory_identity_S(double beta, double gamma) {
    if (!(gamma > 0)) return beta != 0 ? 1 : NAN;
    return (sqrt(2 / M_PI) * gamma * exp(-beta * beta / (2 * gamma * gamma)) + beta * erf(beta / (sqrt(2.0) * gamma))) /
        sqrt(beta * beta + gamma * gamma);
}

double theory_decay_S(double lambda, int n) {
    if (n <= 1 || lambda == 1) return 1;
    double ln = pow(lambda, n);
    return sqrt((1 - ln) / (n * (1 - lambda)) * (1 + lambda) / (1 + ln));
}

// --- per-row statistics ---------------------------------------------------------------------------

void theory_score_moments(const real *q, const real *k, int T, int K, double *beta, double *gamma2) {
    for (int i = 0; i < T; i++) {
        const real *qi = q + (size_t)i * K;
        // sums of x_j - x_0 and its square (shifted by the first score, so no cancellation when the
        // mean is large against the spread)
        double x0 = 0, s1 = 0, s2 = 0;
        for (int j = 0; j <= i; j++) {
            const real *kj = k + (size_t)j * K;
            double x = 0;
#pragma omp simd reduction(+ : x)
            for (int d = 0; d < K; d++) x += (double)qi[d] * (double)kj[d];
            if (j == 0) x0 = x;
            double y = x - x0;
            s1 += y;
            s2 += y * y;
        }
        double n = i + 1, mean = s1 / n, var = s2 / n - mean * mean;
        beta[i] = x0 + mean;
        gamma2[i] = var > 0 ? var : 0;
    }
}

void theory_linear_rows(const real *q, const real *k, int T, int K, double *out) {
    if ((double)(T + 1) / 2 < (double)K) {  // the scores' moments: mean q.mu, variance q' Sigma q
        double *mu = mallocCheck(sizeof(double) * T), *var = mallocCheck(sizeof(double) * T);
        theory_score_moments(q, k, T, K, mu, var);
        for (int i = 0; i < T; i++) out[i] = mu[i] != 0 ? 1 / sqrt(1 + var[i] / (mu[i] * mu[i])) : NAN;
        free(mu);
        free(var);
        return;
    }
    double *mean = callocCheck((size_t)K, sizeof(double));
    double *m2 = callocCheck((size_t)K * K, sizeof(double));  // co-moment matrix of the prefix
    double *delta = mallocCheck(sizeof(double) * K);
    for (int i = 0; i < T; i++) {
        const real *ki = k + (size_t)i * K, *qi = q + (size_t)i * K;
        double n = i + 1;
        for (int d = 0; d < K; d++) delta[d] = (double)ki[d] - mean[d];
        for (int d = 0; d < K; d++) mean[d] += delta[d] / n;
        // C += (x - mean_old)(x - mean_new)^T, symmetric
        for (int d = 0; d < K; d++) {
            double after = (double)ki[d] - mean[d];
            for (int e = 0; e < K; e++) m2[(size_t)d * K + e] += delta[e] * after;
        }
        double qmu = 0, qSq = 0;
        for (int d = 0; d < K; d++) {
            double row = 0;
            for (int e = 0; e < K; e++) row += m2[(size_t)d * K + e] * (double)qi[e];
            qSq += (double)qi[d] * row;
            qmu += (double)qi[d] * mean[d];
        }
        qSq /= n;
        if (qSq < 0) qSq = 0;  // rounding of a (near) constant prefix
        out[i] = qmu != 0 ? 1 / sqrt(1 + qSq / (qmu * qmu)) : NAN;
    }
    free(mean);
    free(m2);
    free(delta);
}
