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

void h3_conv_forward_rows(int T, int M, const real *KE, const real *U, real *Y) {
    for (int t = 0; t < T; t++) {
        real *y = Y + (size_t)t * M;
        for (int m = 0; m < M; m++) y[m] = 0;
        for (int j = 0; j <= t; j++) {
            const real *k = KE + (size_t)(t - j) * M, *u = U + (size_t)j * M;
#pragma omp simd
            for (int m = 0; m < M; m++) y[m] += k[m] * u[m];
        }
    }
}

void h3_conv_backward_rows(int T, int M, const real *KE, const real *U, const real *dY, real *dU, real *dKE) {
    for (int j = 0; j < T; j++) {
        real *du = dU + (size_t)j * M;
        for (int m = 0; m < M; m++) du[m] = 0;
        for (int t = j; t < T; t++) {
            const real *k = KE + (size_t)(t - j) * M, *g = dY + (size_t)t * M;
#pragma omp simd
            for (int m = 0; m < M; m++) du[m] += k[m] * g[m];
        }
    }
    for (int l = 0; l < T; l++) {
        real *dk = dKE + (size_t)l * M;
        for (int t = l; t < T; t++) {
            const real *g = dY + (size_t)t * M, *u = U + (size_t)(t - l) * M;
#pragma omp simd
            for (int m = 0; m < M; m++) dk[m] += g[m] * u[m];
        }
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
