#include "model/mixers/h3_ssm.h"

#include <math.h>
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
// The same vector in memory the caller hands in (a work buffer aligned to its reals only).
typedef real h3vec_m __attribute__((vector_size(H3_EB * sizeof(real)), aligned(sizeof(real))));

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

// --- the same convolution by FFT (long sequences) --------------------------------------------------
// Linear convolution and correlation of length-T sequences as products of their discrete Fourier
// transforms of length L >= 2T, zero-padded so that nothing wraps around. The transforms run
// along t with a strip of H3_EB sequences in the vector lanes (every butterfly is a vector
// operation); a strip cut short is padded with zero lanes.

int h3_fft_len(int T) {
    int L = 1;
    while (L < 2 * T) L *= 2;
    return L;
}

void h3_fft_twiddles(int L, real *tw) {
    for (int k = 0; k < L / 2; k++) {
        double a = -2 * M_PI * k / L;
        tw[k] = (real)cos(a), tw[L / 2 + k] = (real)sin(a);
    }
}

// In place: the transform of (re, im)[L] (inverse: e^{+2 pi i k n / L}, unscaled).
static void fft_strip(h3vec_m *re, h3vec_m *im, int L, const real *tw, int inverse) {
    for (int i = 1, j = 0; i < L; i++) {  // bit-reversed order
        int bit = L >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j |= bit;
        if (i < j) {
            h3vec t = re[i];
            re[i] = re[j], re[j] = t;
            t = im[i], im[i] = im[j], im[j] = t;
        }
    }
    const real *twr = tw, *twi = tw + L / 2;
    for (int len = 2; len <= L; len *= 2) {
        int half = len / 2, step = L / len;
        for (int k = 0; k < half; k++) {
            real wr = twr[k * step], wi = inverse ? -twi[k * step] : twi[k * step];
            for (int i = k; i < L; i += len) {
                int b = i + half;
                h3vec xr = re[b] * wr - im[b] * wi, xi = re[b] * wi + im[b] * wr;
                re[b] = re[i] - xr, im[b] = im[i] - xi;
                re[i] += xr, im[i] += xi;
            }
        }
    }
}

// Lanes m0 .. m0+w-1 (w <= H3_EB) of rows 0..T-1 into a zero-padded strip of length L.
static void load_strip(h3vec_m *re, h3vec_m *im, const real *x, int T, int M, int m0, int w, int L) {
    for (int t = 0; t < L; t++) {
        re[t] = (h3vec){0}, im[t] = (h3vec){0};
        if (t >= T) continue;
        if (w == H3_EB) VLOAD(re[t], x + (size_t)t * M + m0);
        else memcpy(&re[t], x + (size_t)t * M + m0, sizeof(real) * w);
    }
}

// Rows 0..T-1 of a strip's real part times scale into (or, add, onto) lanes m0 .. m0+w-1.
static void store_strip(real *x, const h3vec_m *re, int T, int M, int m0, int w, real scale, int add) {
    for (int t = 0; t < T; t++) {
        real *row = x + (size_t)t * M + m0;
        for (int i = 0; i < w; i++) row[i] = (add ? row[i] : 0) + scale * re[t][i];
    }
}

// The transform of lanes m0 .. m0+w-1 of rows 0..T-1, zero-padded to L.
static void transform_strip(h3vec_m *re, h3vec_m *im, const real *x, int T, int M, int m0, int w, int L,
                            const real *tw) {
    load_strip(re, im, x, T, M, m0, w, L);
    fft_strip(re, im, L, tw, 0);
}

size_t h3_fft_work(int T) { return (size_t)4 * h3_fft_len(T) * H3_EB; }

void h3_fft_kernel_rows(int T, int M, int m0, int m1, const real *KE, const real *tw, real *KF, real *work) {
    int L = h3_fft_len(T);
    h3vec_m *re = (h3vec_m *)work, *im = re + L;
    for (; m0 < m1; m0 += H3_EB) {
        int w = m1 - m0 < H3_EB ? m1 - m0 : H3_EB;
        transform_strip(re, im, KE, T, M, m0, w, L, tw);
        for (int f = 0; f < L; f++)
            for (int i = 0; i < w; i++)
                KF[(size_t)f * M + m0 + i] = re[f][i], KF[((size_t)L + f) * M + m0 + i] = im[f][i];
    }
}

// The strip of the kernels' transforms at lanes m0 .. m0+w-1 (zero lanes past w).
static void kernel_strip(const real *KF, int L, int M, int m0, int w, int f, h3vec_m *kr, h3vec_m *ki) {
    *kr = (h3vec){0}, *ki = (h3vec){0};
    if (w == H3_EB) {
        VLOAD(*kr, KF + (size_t)f * M + m0);
        VLOAD(*ki, KF + ((size_t)L + f) * M + m0);
    } else {
        memcpy(kr, KF + (size_t)f * M + m0, sizeof(real) * w);
        memcpy(ki, KF + ((size_t)L + f) * M + m0, sizeof(real) * w);
    }
}

void h3_conv_forward_fft(int T, int M, int m0, int m1, const real *KF, const real *tw, const real *U, real *Y,
                         real *work) {
    int L = h3_fft_len(T);
    h3vec_m *re = (h3vec_m *)work, *im = re + L;
    for (; m0 < m1; m0 += H3_EB) {
        int w = m1 - m0 < H3_EB ? m1 - m0 : H3_EB;
        transform_strip(re, im, U, T, M, m0, w, L, tw);
        for (int f = 0; f < L; f++) {  // times the kernel's transform
            h3vec kr, ki, r = re[f];
            kernel_strip(KF, L, M, m0, w, f, &kr, &ki);
            re[f] = r * kr - im[f] * ki, im[f] = r * ki + im[f] * kr;
        }
        fft_strip(re, im, L, tw, 1);
        store_strip(Y, re, T, M, m0, w, (real)1 / L, 0);
    }
}

void h3_conv_backward_fft(int T, int M, int m0, int m1, const real *KF, const real *tw, const real *U,
                          const real *dY, real *dU, real *dKE, real *work) {
    int L = h3_fft_len(T);
    h3vec_m *gr = (h3vec_m *)work, *gi = gr + L, *ur = gi + L, *ui = ur + L;
    for (; m0 < m1; m0 += H3_EB) {
        int w = m1 - m0 < H3_EB ? m1 - m0 : H3_EB;
        transform_strip(gr, gi, dY, T, M, m0, w, L, tw);
        transform_strip(ur, ui, U, T, M, m0, w, L, tw);
        // correlations: du = IFFT(conj(K^) dY^), dK = IFFT(conj(U^) dY^)
        for (int f = 0; f < L; f++) {
            h3vec kr, ki, a = gr[f], b = gi[f], c = ur[f], d = ui[f];
            kernel_strip(KF, L, M, m0, w, f, &kr, &ki);
            ur[f] = c * a + d * b, ui[f] = c * b - d * a;
            gr[f] = kr * a + ki * b, gi[f] = kr * b - ki * a;
        }
        fft_strip(gr, gi, L, tw, 1);
        store_strip(dU, gr, T, M, m0, w, (real)1 / L, 0);
        fft_strip(ur, ui, L, tw, 1);
        store_strip(dKE, ur, T, M, m0, w, (real)1 / L, 1);
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
