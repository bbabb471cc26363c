#include "model/mixers/based_chunk.h"

#include <math.h>

#include "model/kernels/gemm.h"

int based_phi_width(int d) { return 1 + d + d * d; }

// phi's two scales: d^(-1/4) on x, 1 / (sqrt(2) sqrt(d)) on x x^T.
static real scale1(int d) { return (real)(1 / sqrt(sqrt((double)d))); }
static real scale2(int d) { return (real)(1 / (sqrt(2.0) * sqrt((double)d))); }

void based_phi(int d, const real *x, real *f) {
    real c1 = scale1(d), c2 = scale2(d);
    f[0] = 1;
    for (int a = 0; a < d; a++) f[1 + a] = x[a] * c1;
    real *f2 = f + 1 + d;
    for (int a = 0; a < d; a++) {
        real xa = x[a] * c2;
        for (int b = 0; b < d; b++) f2[a * d + b] = xa * x[b];
    }
}

void based_phi_backward(int d, const real *x, const real *df, real *dx) {
    real c1 = scale1(d), c2 = scale2(d), u[64];  // d <= 64 (based_feature_dim's range)
    const real *g2 = df + 1 + d;
    // f2[a,b] = c2 x_a x_b: dx_a += c2 sum_b (g2[a,b] + g2[b,a]) x_b, both products row by row
    for (int a = 0; a < d; a++) u[a] = 0;
    for (int b = 0; b < d; b++) {
        const real *row = g2 + (size_t)b * d;
        real xb = x[b];
#pragma omp simd
        for (int a = 0; a < d; a++) u[a] += row[a] * xb;
    }
    for (int a = 0; a < d; a++) {
        const real *row = g2 + (size_t)a * d;
        real s = 0;
#pragma omp simd reduction(+ : s)
        for (int b = 0; b < d; b++) s += row[b] * x[b];
        dx[a] += c1 * df[1 + a] + c2 * (s + u[a]);
    }
}

real based_weight(int d, const real *q, const real *k) {
    real s = 0;
    for (int c = 0; c < d; c++) s += q[c] * k[c];
    s *= (real)(1 / sqrt((double)d));
    return 1 + s + s * s / 2;
}

size_t based_chunk_work(int T, int d, int Dv, int L) {
    size_t F = (size_t)based_phi_width(d), n = (size_t)(L < T ? L : T);
    // the state S (or G) [F, Dv] and its normaliser z (or gz) [F]; dO / den and the normaliser's
    // gradient for the whole head [T, Dv + 1]; phi rows and their gradients [n, F] each; the
    // weights and their gradients [n, n] each
    return F * ((size_t)Dv + 1) + (size_t)T * ((size_t)Dv + 1) + 2 * n * F + 2 * n * n;
}

typedef struct {
    real *S, *z, *dnum, *dden, *Pf, *dPf, *A, *P;
} Work;

static Work carve(real *w, int T, int d, int Dv, int L) {
    size_t F = (size_t)based_phi_width(d), n = (size_t)(L < T ? L : T);
    Work k;
    k.S = w;
    k.z = k.S + F * Dv;
    k.dnum = k.z + F;
    k.dden = k.dnum + (size_t)T * Dv;
    k.Pf = k.dden + T;
    k.dPf = k.Pf + n * F;
    k.A = k.dPf + n * F;
    k.P = k.A + n * n;
    return k;
}

// Rows r of X (stride ldx) into phi rows Pf [n, F].
static void phi_rows(int d, int n, const real *X, int ldx, real *Pf) {
    int F = based_phi_width(d);
    for (int r = 0; r < n; r++) based_phi(d, X + (size_t)r * ldx, Pf + (size_t)r * F);
}

// A [n, n] holds the chunk's q.k: on and below the diagonal 1 + s + s^2/2 (s = q.k / sqrt(d)),
// and, with P (the gradient of those weights, dO' V'^T), P becomes the gradient of q.k,
// P (1 + s) / sqrt(d); 0 above the diagonal in both.
static void weights(real *A, real *P, int n, int d) {
    real c0 = (real)(1 / sqrt((double)d));
    for (int r = 0; r < n; r++) {
        real *a = A + (size_t)r * n, *p = P ? P + (size_t)r * n : NULL;
        for (int c = 0; c <= r; c++) {
            real s = a[c] * c0;
            a[c] = 1 + s + s * s / 2;
            if (p) p[c] *= (1 + s) * c0;
        }
        for (int c = r + 1; c < n; c++) {
            a[c] = 0;
            if (p) p[c] = 0;
        }
    }
}

// z (first: from 0) += the column sums of Pf [n, F], rows in order.
static void add_rows(real *z, const real *Pf, int n, int F, int first) {
    if (first)
        for (int f = 0; f < F; f++) z[f] = 0;
    for (int r = 0; r < n; r++) {
        const real *row = Pf + (size_t)r * F;
#pragma omp simd
        for (int f = 0; f < F; f++) z[f] += row[f];
    }
}

void based_chunk_forward(int T, int d, int Dv, int L, const real *Q, int ldq, const real *K, int ldk, const real *V,
                         int ldv, real *O, int ldo, real *den, real *work) {
    int F = based_phi_width(d);
    Work k = carve(work, T, d, Dv, L);
    for (int t0 = 0; t0 < T; t0 += L) {
        int n = T - t0 < L ? T - t0 : L;
        const real *q = Q + (size_t)t0 * ldq, *kk = K + (size_t)t0 * ldk, *v = V + (size_t)t0 * ldv;
        real *o = O + (size_t)t0 * ldo, *dn = den + t0;
        if (t0 > 0) {  // from the chunks before: num = phi(Q) S, den = phi(Q) z
            phi_rows(d, n, q, ldq, k.Pf);
            gemm_serial(0, 0, n, Dv, F, k.Pf, F, k.S, Dv, 0, o, ldo);
            for (int r = 0; r < n; r++) {
                const real *pr = k.Pf + (size_t)r * F;
                real s = 0;
                for (int f = 0; f < F; f++) s += pr[f] * k.z[f];
                dn[r] = s;
            }
        }
        gemm_serial(0, 1, n, n, d, q, ldq, kk, ldk, 0, k.A, n);
        weights(k.A, NULL, n, d);
        gemm_serial(0, 0, n, Dv, n, k.A, n, v, ldv, t0 > 0 ? 1 : 0, o, ldo);
        for (int r = 0; r < n; r++) {
            const real *a = k.A + (size_t)r * n;
            real s = t0 > 0 ? dn[r] : 0, *orow = o + (size_t)r * ldo;
            for (int c = 0; c <= r; c++) s += a[c];
            dn[r] = s + (real)BASED_EPS;
            for (int c = 0; c < Dv; c++) orow[c] /= dn[r];
        }
        if (t0 + n < T) {  // S += phi(K)^T V, z += the sum of phi(K)'s rows
            phi_rows(d, n, kk, ldk, k.Pf);
            gemm_serial(1, 0, F, Dv, n, k.Pf, F, v, ldv, t0 > 0 ? 1 : 0, k.S, Dv);
            add_rows(k.z, k.Pf, n, F, t0 == 0);
        }
    }
}

void based_chunk_backward(int T, int d, int Dv, int L, const real *Q, int ldq, const real *K, int ldk, const real *V,
                          int ldv, const real *O, int ldo, const real *den, const real *dO, int lddo, real *dQ,
                          real *dK, real *dV, real *work) {
    int F = based_phi_width(d);
    Work k = carve(work, T, d, Dv, L);
    // o = num / den: dnum = dO / den, dden = -(dO . o) / den
    for (int t = 0; t < T; t++) {
        const real *o = O + (size_t)t * ldo, *dout = dO + (size_t)t * lddo;
        real *dnum = k.dnum + (size_t)t * Dv, s = 0;
        for (int c = 0; c < Dv; c++) {
            dnum[c] = dout[c] / den[t];
            s += dout[c] * o[c];
        }
        k.dden[t] = -s / den[t];
    }
    // Pass 1, forward time: dphi(Q) = dnum S^T + dden z^T through the state entering each chunk
    // (recomputed), and the chunk's own: with P = dnum V^T + dden 1^T, the gradient of q.k is
    // P (1 + s) / sqrt(d), so dQ += P K, dK += P^T Q; dV += A^T dnum.
    for (int t0 = 0; t0 < T; t0 += L) {
        int n = T - t0 < L ? T - t0 : L;
        const real *q = Q + (size_t)t0 * ldq, *kk = K + (size_t)t0 * ldk, *v = V + (size_t)t0 * ldv;
        const real *dnum = k.dnum + (size_t)t0 * Dv, *dden = k.dden + t0;
        if (t0 > 0) {
            gemm_serial(0, 1, n, F, Dv, dnum, Dv, k.S, Dv, 0, k.dPf, F);
            for (int r = 0; r < n; r++) {
                real *g = k.dPf + (size_t)r * F;
                for (int f = 0; f < F; f++) g[f] += dden[r] * k.z[f];
                based_phi_backward(d, q + (size_t)r * ldq, g, dQ + (size_t)(t0 + r) * ldq);
            }
        }
        gemm_serial(0, 1, n, n, Dv, dnum, Dv, v, ldv, 0, k.P, n);
        for (int r = 0; r < n; r++)
            for (int c = 0; c <= r; c++) k.P[(size_t)r * n + c] += dden[r];
        gemm_serial(0, 1, n, n, d, q, ldq, kk, ldk, 0, k.A, n);
        weights(k.A, k.P, n, d);
        gemm_serial(0, 0, n, d, n, k.P, n, kk, ldk, 1, dQ + (size_t)t0 * ldq, ldq);
        gemm_serial(1, 0, n, d, n, k.P, n, q, ldq, 1, dK + (size_t)t0 * ldk, ldk);
        gemm_serial(1, 0, n, Dv, n, k.A, n, dnum, Dv, 1, dV + (size_t)t0 * ldv, ldv);
        if (t0 + n < T) {
            phi_rows(d, n, kk, ldk, k.Pf);
            gemm_serial(1, 0, F, Dv, n, k.Pf, F, v, ldv, t0 > 0 ? 1 : 0, k.S, Dv);
            add_rows(k.z, k.Pf, n, F, t0 == 0);
        }
    }
    // Pass 2, reverse time: G = sum over the chunks after of phi(q_i) dnum_i^T [F, Dv] and
    // gz = sum phi(q_i) dden_i [F] give dphi(k_j) = G v_j + gz and dv_j += G^T phi(k_j).
    real *G = k.S, *gz = k.z;
    int last = (T - 1) / L * L;
    for (int t0 = last; t0 >= 0; t0 -= L) {
        int n = T - t0 < L ? T - t0 : L;
        const real *v = V + (size_t)t0 * ldv, *dnum = k.dnum + (size_t)t0 * Dv, *dden = k.dden + t0;
        if (t0 < last) {
            const real *kk = K + (size_t)t0 * ldk;
            phi_rows(d, n, kk, ldk, k.Pf);
            gemm_serial(0, 1, n, F, Dv, v, ldv, G, Dv, 0, k.dPf, F);
            for (int r = 0; r < n; r++) {
                real *g = k.dPf + (size_t)r * F;
                for (int f = 0; f < F; f++) g[f] += gz[f];
                based_phi_backward(d, kk + (size_t)r * ldk, g, dK + (size_t)(t0 + r) * ldk);
            }
            gemm_serial(0, 0, n, Dv, F, k.Pf, F, G, Dv, 1, dV + (size_t)t0 * ldv, ldv);
        }
        if (t0 > 0) {
            phi_rows(d, n, Q + (size_t)t0 * ldq, ldq, k.Pf);
            gemm_serial(1, 0, F, Dv, n, k.Pf, F, dnum, Dv, t0 < last ? 1 : 0, G, Dv);
            if (t0 == last)
                for (int f = 0; f < F; f++) gz[f] = 0;
            for (int r = 0; r < n; r++) {
                const real *row = k.Pf + (size_t)r * F;
                for (int f = 0; f < F; f++) gz[f] += row[f] * dden[r];
            }
        }
    }
}
