#include "model/mixers/h3_ssm.h"

#include <string.h>

void h3_ssm_discretize(int N, real log_dt, const real *A_log, real *r, real *bd) {
    real dt = expr(log_dt);
    for (int n = 0; n < N; n++) {
        real a = -expr(A_log[n]);
        r[n] = expr(dt * a);
        bd[n] = expm1r(dt * a) / a;  // (r - 1) / a without the cancellation at small dt * a
    }
}

void h3_ssm_kernel(int N, int T, real log_dt, const real *A_log, const real *C, real D, real *K) {
    real dt = expr(log_dt);
    for (int l = 0; l < T; l++) K[l] = 0;
    for (int n = 0; n < N; n++) {
        real a = -expr(A_log[n]), r = expr(dt * a), w = C[n] * expm1r(dt * a) / a, p = 1;
        for (int l = 0; l < T; l++) {
            K[l] += w * p;
            p *= r;
        }
    }
    K[0] += D;
}

// With x = dt a: r = e^x, bd = (e^x - 1)/a, so dr/d(dt) = a r, dbd/d(dt) = r, dr/da = dt r and
// dbd/da = (dt r - bd) / a. K_n[l] = C bd r^l; S0 = sum_l dK[l] r^l, S1 = sum_l l dK[l] r^l.
void h3_ssm_kernel_backward(int N, int T, real log_dt, const real *A_log, const real *C, const real *dK,
                            real *dlog_dt, real *dA_log, real *dC, real *dD) {
    real dt = expr(log_dt), ddt = 0;
    for (int n = 0; n < N; n++) {
        real a = -expr(A_log[n]), r = expr(dt * a), bd = expm1r(dt * a) / a, p = 1, S0 = 0, S1 = 0;
        for (int l = 0; l < T; l++) {
            S0 += dK[l] * p;
            S1 += (real)l * dK[l] * p;
            p *= r;
        }
        dC[n] += bd * S0;
        ddt += C[n] * (r * S0 + bd * a * S1);
        real da = C[n] * ((dt * r - bd) / a * S0 + bd * dt * S1);
        dA_log[n] += da * a;  // da/dA_log = a
    }
    *dlog_dt += ddt * dt;
    *dD += dK[0];
}

void h3_conv_forward(int T, const real *Krev, const real *u, real *y) {
    for (int i = 0; i < T; i++) {
        const real *k = Krev + (T - 1 - i);  // k[j] = K[i - j]
        real s = 0;
#pragma omp simd reduction(+ : s)
        for (int j = 0; j <= i; j++) s += k[j] * u[j];
        y[i] = s;
    }
}

void h3_conv_backward(int T, const real *K, const real *u, const real *dy, real *du, real *dK) {
    for (int j = 0; j < T; j++) {
        const real *d = dy + j;
        real s = 0;
#pragma omp simd reduction(+ : s)
        for (int l = 0; l < T - j; l++) s += K[l] * d[l];
        du[j] = s;
    }
    for (int l = 0; l < T; l++) {
        const real *d = dy + l;
        real s = 0;
#pragma omp simd reduction(+ : s)
        for (int i = 0; i < T - l; i++) s += d[i] * u[i];
        dK[l] += s;
    }
}

void h3_shift_forward(int T, int N, const real *w, real Dk, const real *k, real *ks) {
    for (int t = 0; t < T; t++) {
        real s = Dk * k[t];
        for (int l = 0; l < N && l <= t; l++) s += w[l] * k[t - l];
        ks[t] = s;
    }
}

void h3_shift_backward(int T, int N, const real *w, real Dk, const real *k, const real *dks, real *dk,
                       real *dw, real *dDk) {
    real dd = 0;
    for (int t = 0; t < T; t++) {
        real s = Dk * dks[t];
        for (int l = 0; l < N && t + l < T; l++) s += w[l] * dks[t + l];
        dk[t] += s;
        dd += dks[t] * k[t];
    }
    *dDk += dd;
    for (int l = 0; l < N && l < T; l++) {
        real s = 0;
        for (int t = l; t < T; t++) s += dks[t] * k[t - l];
        dw[l] += s;
    }
}

void h3_shift_forward_rows(int T, int N, int C, const real *wT, const real *Dk, const real *k, int ldk, real *ks) {
    for (int t = 0; t < T; t++) {
        real *o = ks + (size_t)t * C;
        const real *kt = k + (size_t)t * ldk;
#pragma omp simd
        for (int c = 0; c < C; c++) o[c] = Dk[c] * kt[c];
        for (int l = 0; l < N && l <= t; l++) {
            const real *w = wT + (size_t)l * C, *kl = k + (size_t)(t - l) * ldk;
#pragma omp simd
            for (int c = 0; c < C; c++) o[c] += w[c] * kl[c];
        }
    }
}

void h3_shift_backward_rows(int T, int N, int C, const real *wT, const real *Dk, const real *k, int ldk,
                            const real *dks, real *dk, int lddk, real *dwT, real *dDk, real *tmp) {
    for (int t = 0; t < T; t++) {
        const real *g = dks + (size_t)t * C;
#pragma omp simd
        for (int c = 0; c < C; c++) tmp[c] = Dk[c] * g[c];
        for (int l = 0; l < N && t + l < T; l++) {
            const real *w = wT + (size_t)l * C, *gl = dks + (size_t)(t + l) * C;
#pragma omp simd
            for (int c = 0; c < C; c++) tmp[c] += w[c] * gl[c];
        }
        real *d = dk + (size_t)t * lddk;
#pragma omp simd
        for (int c = 0; c < C; c++) d[c] += tmp[c];
    }
    for (int c = 0; c < C; c++) tmp[c] = 0;
    for (int t = 0; t < T; t++) {
        const real *g = dks + (size_t)t * C, *kt = k + (size_t)t * ldk;
#pragma omp simd
        for (int c = 0; c < C; c++) tmp[c] += g[c] * kt[c];
    }
#pragma omp simd
    for (int c = 0; c < C; c++) dDk[c] += tmp[c];
    for (int l = 0; l < N && l < T; l++) {
        for (int c = 0; c < C; c++) tmp[c] = 0;
        for (int t = l; t < T; t++) {
            const real *g = dks + (size_t)t * C, *kl = k + (size_t)(t - l) * ldk;
#pragma omp simd
            for (int c = 0; c < C; c++) tmp[c] += g[c] * kl[c];
        }
        real *dw = dwT + (size_t)l * C;
#pragma omp simd
        for (int c = 0; c < C; c++) dw[c] += tmp[c];
    }
}

// --- the diagonal SSM's convolution over rows of lanes -------------------------------------------
// Lanes m0 .. m1-1 in strips of H3_EB: a strip's H3_TB output rows are vector sums held in
// registers while the loop walks the input rows, so each input row is loaded once per H3_TB
// outputs and a strip's rows (T x 64 bytes) stay in cache at any T (whole rows of M lanes did
// not past T ~ 1000). Lanes past the last whole strip take the plain loop. Every lane adds the
// same terms in the same order (ascending j or t) on either path.
#define H3_EB H3_CONV_LANES
#define H3_TB 4
typedef real h3vec __attribute__((vector_size(H3_EB * sizeof(real))));

#define VLOAD(v, p) memcpy(&(v), (p), sizeof(h3vec))
#define VSTORE(p, v) memcpy((p), &(v), sizeof(h3vec))

// Y[t] = sum_{j <= t} KE[t-j] U[j] on one strip (pointers at its first lane).
static void conv_forward_strip(int T, int M, const real *KE, const real *U, real *Y) {
    for (int t0 = 0; t0 < T; t0 += H3_TB) {
        int nb = T - t0 < H3_TB ? T - t0 : H3_TB;
        h3vec acc[H3_TB], k, u;
        for (int r = 0; r < H3_TB; r++) acc[r] = (h3vec){0};
        for (int j = 0; j <= t0; j++) {  // every row of the block takes these
            VLOAD(u, U + (size_t)j * M);
            if (nb == H3_TB) {
                for (int r = 0; r < H3_TB; r++) {
                    VLOAD(k, KE + (size_t)(t0 + r - j) * M);
                    acc[r] += k * u;
                }
            } else {
                for (int r = 0; r < nb; r++) {
                    VLOAD(k, KE + (size_t)(t0 + r - j) * M);
                    acc[r] += k * u;
                }
            }
        }
        for (int j = t0 + 1; j < t0 + nb; j++) {  // the block's own triangle
            VLOAD(u, U + (size_t)j * M);
            for (int r = j - t0; r < nb; r++) {
                VLOAD(k, KE + (size_t)(t0 + r - j) * M);
                acc[r] += k * u;
            }
        }
        for (int r = 0; r < nb; r++) VSTORE(Y + (size_t)(t0 + r) * M, acc[r]);
    }
}

// dU[j] = sum_{t >= j} KE[t-j] dY[t];  dKE[l] += sum_{t >= l} dY[t] U[t-l]  on one strip.
static void conv_backward_strip(int T, int M, const real *KE, const real *U, const real *dY, real *dU,
                                real *dKE) {
    for (int j0 = 0; j0 < T; j0 += H3_TB) {
        int nb = T - j0 < H3_TB ? T - j0 : H3_TB;
        h3vec acc[H3_TB], k, g;
        for (int r = 0; r < H3_TB; r++) acc[r] = (h3vec){0};
        for (int t = j0; t < T; t++) {  // row j0 + r takes t >= j0 + r
            VLOAD(g, dY + (size_t)t * M);
            int rmax = t - j0 + 1 < nb ? t - j0 + 1 : nb;
            if (rmax == H3_TB) {
                for (int r = 0; r < H3_TB; r++) {
                    VLOAD(k, KE + (size_t)(t - j0 - r) * M);
                    acc[r] += k * g;
                }
            } else {
                for (int r = 0; r < rmax; r++) {
                    VLOAD(k, KE + (size_t)(t - j0 - r) * M);
                    acc[r] += k * g;
                }
            }
        }
        for (int r = 0; r < nb; r++) VSTORE(dU + (size_t)(j0 + r) * M, acc[r]);
    }
    for (int l0 = 0; l0 < T; l0 += H3_TB) {
        int nb = T - l0 < H3_TB ? T - l0 : H3_TB;
        h3vec acc[H3_TB], g, u, d;
        for (int r = 0; r < H3_TB; r++) acc[r] = (h3vec){0};
        for (int t = l0; t < T; t++) {  // lag l0 + r takes t >= l0 + r
            VLOAD(g, dY + (size_t)t * M);
            int rmax = t - l0 + 1 < nb ? t - l0 + 1 : nb;
            if (rmax == H3_TB) {
                for (int r = 0; r < H3_TB; r++) {
                    VLOAD(u, U + (size_t)(t - l0 - r) * M);
                    acc[r] += g * u;
                }
            } else {
                for (int r = 0; r < rmax; r++) {
                    VLOAD(u, U + (size_t)(t - l0 - r) * M);
                    acc[r] += g * u;
                }
            }
        }
        for (int r = 0; r < nb; r++) {
            VLOAD(d, dKE + (size_t)(l0 + r) * M);
            d += acc[r];
            VSTORE(dKE + (size_t)(l0 + r) * M, d);
        }
    }
}

void h3_conv_forward_rows(int T, int M, int m0, int m1, const real *KE, const real *U, real *Y) {
    for (; m0 + H3_EB <= m1; m0 += H3_EB) conv_forward_strip(T, M, KE + m0, U + m0, Y + m0);
    for (int t = 0; t < T; t++)
        for (int m = m0; m < m1; m++) {
            real s = 0;
            for (int j = 0; j <= t; j++) s += KE[(size_t)(t - j) * M + m] * U[(size_t)j * M + m];
            Y[(size_t)t * M + m] = s;
        }
}

void h3_conv_backward_rows(int T, int M, int m0, int m1, const real *KE, const real *U, const real *dY, real *dU,
                           real *dKE) {
    for (; m0 + H3_EB <= m1; m0 += H3_EB) conv_backward_strip(T, M, KE + m0, U + m0, dY + m0, dU + m0, dKE + m0);
    for (int m = m0; m < m1; m++)
        for (int j = 0; j < T; j++) {
            real s = 0, sk = 0;
            for (int t = j; t < T; t++) s += KE[(size_t)(t - j) * M + m] * dY[(size_t)t * M + m];
            for (int t = j; t < T; t++) sk += dY[(size_t)t * M + m] * U[(size_t)(t - j) * M + m];
            dU[(size_t)j * M + m] = s;
            dKE[(size_t)j * M + m] += sk;
        }
}

real h3_ssm_step(int N, const real *r, const real *bd, const real *C, real D, real *x, real u) {
    real y = D * u;
    for (int n = 0; n < N; n++) {
        x[n] = r[n] * x[n] + bd[n] * u;
        y += C[n] * x[n];
    }
    return y;
}

real h3_shift_step(int N, const real *w, real Dk, real *s, real k) {
    memmove(s + 1, s, sizeof(real) * (size_t)(N - 1));
    s[0] = k;
    real y = Dk * k;
    for (int l = 0; l < N; l++) y += w[l] * s[l];
    return y;
}
