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

// The powers r^l of r = e^x over l = 0 .. T-1, H3_KP at a time: lane j of a block is r^(l0 + j),
// the first block e^(j x) and every next one the one before times e^(H3_KP x). Each lane is its own
// chain of multiplications, so a block costs one vector multiply where one chain of T multiplies
// (p *= r) waited on each, and r^l carries about l / H3_KP + 1 roundings instead of l.
#define H3_KP 16
static void powers_start(real x, real *pw, real *step) {
    for (int j = 0; j < H3_KP; j++) pw[j] = expr((real)j * x);
    *step = expr((real)H3_KP * x);
}

void h3_ssm_kernel(int N, int T, real log_dt, const real *A_log, const real *C, real D, real *K) {
    real dt = expr(log_dt);
    for (int l = 0; l < T; l++) K[l] = 0;
    for (int n = 0; n < N; n++) {  // K[l] = sum_n C_n bd_n r_n^l, n in order
        real a = -expr(A_log[n]), x = dt * a, w = C[n] * expm1r(x) / a, pw[H3_KP], step;
        powers_start(x, pw, &step);
        int l0 = 0;
        for (; l0 + H3_KP <= T; l0 += H3_KP) {
#pragma omp simd
            for (int j = 0; j < H3_KP; j++) K[l0 + j] += w * pw[j], pw[j] *= step;
        }
        for (int j = 0; l0 + j < T; j++) K[l0 + j] += w * pw[j];
    }
    K[0] += D;
}

// With x = dt a: r = e^x, bd = (e^x - 1)/a, so dr/d(dt) = a r, dbd/d(dt) = r, dr/da = dt r and
// dbd/da = (dt r - bd) / a. K_n[l] = C bd r^l; S0 = sum_l dK[l] r^l, S1 = sum_l l dK[l] r^l (the
// powers as in the forward, the sums in H3_KP lanes added in a fixed order at the end).
void h3_ssm_kernel_backward(int N, int T, real log_dt, const real *A_log, const real *C, const real *dK, real *dlog_dt,
                            real *dA_log, real *dC, real *dD) {
    real dt = expr(log_dt), ddt = 0;
    for (int n = 0; n < N; n++) {
        real a = -expr(A_log[n]), x = dt * a, r = expr(x), bd = expm1r(x) / a, pw[H3_KP], step;
        real s0[H3_KP] = {0}, s1[H3_KP] = {0};
        powers_start(x, pw, &step);
        int l0 = 0;
        for (; l0 + H3_KP <= T; l0 += H3_KP) {
#pragma omp simd
            for (int j = 0; j < H3_KP; j++) {
                real g = dK[l0 + j] * pw[j];
                s0[j] += g, s1[j] += (real)(l0 + j) * g, pw[j] *= step;
            }
        }
        for (int j = 0; l0 + j < T; j++) {
            real g = dK[l0 + j] * pw[j];
            s0[j] += g, s1[j] += (real)(l0 + j) * g;
        }
        real S0 = 0, S1 = 0;
        for (int j = 0; j < H3_KP; j++) S0 += s0[j], S1 += s1[j];
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

void h3_shift_backward(int T, int N, const real *w, real Dk, const real *k, const real *dks, real *dk, real *dw, real *dDk) {
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

// (below, with the vector type of the convolution's strips: taps SH_LB at a time, channels
// H3_CONV_LANES)
#define SH_LB 8
static void shift_dw_block(int T, int l0, int C, int c0, const real *k, int ldk, const real *dks, real *dwT);

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
    int nl = N < T ? N : T, lb = nl / SH_LB * SH_LB, cb = C / H3_CONV_LANES * H3_CONV_LANES;
    for (int l0 = 0; l0 < lb; l0 += SH_LB)
        for (int c0 = 0; c0 < cb; c0 += H3_CONV_LANES) shift_dw_block(T, l0, C, c0, k, ldk, dks, dwT);
    for (int l = 0; l < nl; l++) {  // the taps and channels the blocks leave, one tap at a time
        int c_from = l < lb ? cb : 0;
        if (c_from == C) continue;
        for (int c = c_from; c < C; c++) tmp[c] = 0;
        for (int t = l; t < T; t++) {
            const real *g = dks + (size_t)t * C, *kl = k + (size_t)(t - l) * ldk;
#pragma omp simd
            for (int c = c_from; c < C; c++) tmp[c] += g[c] * kl[c];
        }
        real *dw = dwT + (size_t)l * C;
#pragma omp simd
        for (int c = c_from; c < C; c++) dw[c] += tmp[c];
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
// The same vector in memory the caller hands in: a work buffer of reals, aligned to its reals
// only, and read as vectors (may_alias, as compilers' own unaligned vector types are).
typedef real h3vec_m __attribute__((vector_size(H3_EB * sizeof(real)), aligned(sizeof(real)), may_alias));

#define VLOAD(v, p) memcpy(&(v), (p), sizeof(h3vec))
#define VSTORE(p, v) memcpy((p), &(v), sizeof(h3vec))

// The taps' gradients dwT[l][c] += sum_{t >= l} dks[t][c] k[t - l][c] (t ascending) of SH_LB taps
// from l0 and the H3_EB channels from c0, their sums held in vector registers over one pass of
// the rows (summed one tap at a time, every tap's pass read all T rows again, from L2 or memory
// at long T), the rows ahead prefetched (they are C and ldk apart). Every sum adds the same terms
// in the same order as one tap at a time, so the bits are the same.
static void shift_dw_block(int T, int l0, int C, int c0, const real *k, int ldk, const real *dks, real *dwT) {
    h3vec a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0}, a6 = {0}, a7 = {0}, g, x;
    // tap l0 + j from row t = l0 + j on (the block's first rows take some taps only)
#define SH_TAP(j, a)                                                                                                   \
    if ((j) <= t - l0) {                                                                                               \
        VLOAD(x, k + (size_t)(t - l0 - (j)) * ldk + c0);                                                               \
        a += g * x;                                                                                                    \
    }
    for (int t = l0; t < T; t++) {
        VLOAD(g, dks + (size_t)t * C + c0);
        __builtin_prefetch(dks + (size_t)(t + 8) * C + c0), __builtin_prefetch(k + (size_t)(t - l0 + 8) * ldk + c0);
        SH_TAP(0, a0)
        SH_TAP(1, a1)
        SH_TAP(2, a2)
        SH_TAP(3, a3)
        SH_TAP(4, a4)
        SH_TAP(5, a5)
        SH_TAP(6, a6)
        SH_TAP(7, a7)
    }
#undef SH_TAP
    h3vec acc[SH_LB] = {a0, a1, a2, a3, a4, a5, a6, a7};
    for (int j = 0; j < SH_LB; j++)
        for (int c = 0; c < H3_EB; c++) dwT[(size_t)(l0 + j) * C + c0 + c] += acc[j][c];
}

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

// out[l] (= or +=) sum_{t >= l} X[t-l] dY[t] for every lag l on one strip: the backward's two
// correlations (X = KE gives dU, X = U gives dKE's sum).
static void correlate_strip(int T, int M, const real *X, const real *dY, real *out, int add) {
    for (int l0 = 0; l0 < T; l0 += H3_TB) {
        int nb = T - l0 < H3_TB ? T - l0 : H3_TB;
        h3vec acc[H3_TB], x, g, d;
        for (int r = 0; r < H3_TB; r++) acc[r] = (h3vec){0};
        for (int t = l0; t < T; t++) {  // lag l0 + r takes t >= l0 + r
            VLOAD(g, dY + (size_t)t * M);
            int rmax = t - l0 + 1 < nb ? t - l0 + 1 : nb;
            if (rmax == H3_TB) {
                for (int r = 0; r < H3_TB; r++) {
                    VLOAD(x, X + (size_t)(t - l0 - r) * M);
                    acc[r] += x * g;
                }
            } else {
                for (int r = 0; r < rmax; r++) {
                    VLOAD(x, X + (size_t)(t - l0 - r) * M);
                    acc[r] += x * g;
                }
            }
        }
        for (int r = 0; r < nb; r++) {
            if (add) {
                VLOAD(d, out + (size_t)(l0 + r) * M);
                acc[r] += d;
            }
            VSTORE(out + (size_t)(l0 + r) * M, acc[r]);
        }
    }
}

// dU[j] = sum_{t >= j} KE[t-j] dY[t];  dKE[l] += sum_{t >= l} dY[t] U[t-l]  on one strip.
static void conv_backward_strip(int T, int M, const real *KE, const real *U, const real *dY, real *dU, real *dKE) {
    correlate_strip(T, M, KE, dY, dU, 0);
    correlate_strip(T, M, U, dY, dKE, 1);
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

void h3_conv_backward_rows(int T, int M, int m0, int m1, const real *KE, const real *U, const real *dY, real *dU, real *dKE) {
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

// (ar, ai), (br, bi) <- (a + w b, a - w b), w = wr + i wi.
#define BUTTERFLY(ar, ai, br, bi, wr, wi)                                                                              \
    do {                                                                                                               \
        h3vec xr_ = (br) * (wr) - (bi) * (wi), xi_ = (br) * (wi) + (bi) * (wr);                                        \
        (br) = (ar)-xr_, (bi) = (ai)-xi_;                                                                              \
        (ar) += xr_, (ai) += xi_;                                                                                      \
    } while (0)

// Two radix-2 stages at once, of half-sizes h and 2h (twiddles of a length-L transform), on the
// points lo .. hi - 1 (whole groups of 4h).
static inline void radix4_pass(h3vec_m *re, h3vec_m *im, int L, int h, int lo, int hi, const real *twr, const real *twi,
                               real sg) {
    int step1 = L / (2 * h), step2 = L / (4 * h);
    for (int k = 0; k < h; k++) {
        real w1r = twr[k * step1], w1i = sg * twi[k * step1];
        real w2r = twr[k * step2], w2i = sg * twi[k * step2];
        real w3r = twr[(k + h) * step2], w3i = sg * twi[(k + h) * step2];
        for (int i = lo + k; i < hi; i += 4 * h) {
            int b = i + h, c = i + 2 * h, d = i + 3 * h;
            BUTTERFLY(re[i], im[i], re[b], im[b], w1r, w1i);  // stage h
            BUTTERFLY(re[c], im[c], re[d], im[d], w1r, w1i);
            BUTTERFLY(re[i], im[i], re[c], im[c], w2r, w2i);  // stage 2h
            BUTTERFLY(re[b], im[b], re[d], im[d], w3r, w3i);
        }
    }
}

// Points per block of the stages that run block by block (below): 256 KB of a strip, a quarter of
// this machine's 1 MB L2 per core; and per sub-block of the first of those stages, 16 KB, a third
// of its 48 KB L1.
#define FFT_BLOCK ((int)(256 * 1024 / (2 * sizeof(h3vec))))
#define FFT_L1_BLOCK ((int)(16 * 1024 / (2 * sizeof(h3vec))))

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
    // Radix-2 stages, two at a time where they pair up: stages of half-size h and 2h in one pass
    // over the strip, each element going through the same two butterflies as before, so the
    // bits are those of one stage at a time with half the passes over memory (the butterflies
    // wait on their loads). The stages whose butterflies stay inside blocks of FFT_BLOCK points
    // run block by block, all of them on one block before the next, so a block is read from
    // memory once for them all (a strip of 8192 points is 1 MB; its blocks of 2048, a quarter
    // of it, stay in the cache); each element still goes through the same butterflies in the
    // same order, so the bits do not change. The stages past the block size take whole passes.
    // The same once more inside each block: the stages whose butterflies stay inside sub-blocks of
    // FFT_L1_BLOCK points run sub-block by sub-block, from L1 instead of L2.
    const real *twr = tw, *twi = tw + L / 2;
    const real sg = inverse ? -1 : 1;
    int B = L < FFT_BLOCK ? L : FFT_BLOCK, B1 = B < FFT_L1_BLOCK ? B : FFT_L1_BLOCK;
    int odd = __builtin_ctz((unsigned)L) % 2, h0 = odd ? 2 : 1, h_l1 = h0, h_end;
    while (4 * h_l1 <= B1) h_l1 *= 4;  // the stages below h_l1 stay inside a sub-block
    h_end = h_l1;
    while (4 * h_end <= B) h_end *= 4;  // those below h_end inside a block
    for (int blk = 0; blk < L; blk += B) {
        for (int sub = blk; sub < blk + B; sub += B1) {
            if (odd)  // an odd number of stages: the first alone
                for (int i = sub; i < sub + B1; i += 2)
                    BUTTERFLY(re[i], im[i], re[i + 1], im[i + 1], twr[0], sg * twi[0]);
            for (int h = h0; h < h_l1; h *= 4) radix4_pass(re, im, L, h, sub, sub + B1, twr, twi, sg);
        }
        for (int h = h_l1; h < h_end; h *= 4) radix4_pass(re, im, L, h, blk, blk + B, twr, twi, sg);
    }
    for (int h = h_end; 4 * h <= L; h *= 4) radix4_pass(re, im, L, h, 0, L, twr, twi, sg);
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
static void transform_strip(h3vec_m *re, h3vec_m *im, const real *x, int T, int M, int m0, int w, int L, const real *tw) {
    load_strip(re, im, x, T, M, m0, w, L);
    fft_strip(re, im, L, tw, 0);
}

size_t h3_fft_work(int T) { return (size_t)2 * h3_fft_len(T) * H3_EB; }

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

// Packing two real signals into one complex transform (a in the real part, b in the imaginary
// part) keeps each one's rounding at the scale of the pair, so a signal 1000 times smaller than
// its partner would lose three digits: the partner is scaled lane by lane to the same norm first
// (by lane_ratio, 1 where either is zero), and unscaled after.
// r = sqrt(sa / sb) lane by lane, 1 where either is zero. (Through pointers: a 64-byte vector
// passed or returned by value is an ABI question without AVX-512.)
static void norm_ratio(const h3vec *sa, const h3vec *sb, h3vec *r) {
    for (int i = 0; i < H3_EB; i++)
        (*r)[i] = (*sa)[i] > 0 && (*sb)[i] > 0 ? (real)sqrt((double)(*sa)[i] / (double)(*sb)[i]) : 1;
}

static void lane_ratio(const h3vec_m *a, const h3vec_m *b, int n, h3vec *r) {
    h3vec sa = {0}, sb = {0};
    for (int i = 0; i < n; i++) sa += a[i] * a[i], sb += b[i] * b[i];
    norm_ratio(&sa, &sb, r);
}

// Of a transform Z of a + i b (a, b real), the transforms of a and b at frequency x, given Z at
// x (zr, zi) and at its mirror -x (mr, mi): a^ = (Z[x] + conj Z[-x]) / 2, b^ = (Z[x] - conj
// Z[-x]) / 2i.
#define SPLIT(ar, ai, br, bi, zr, zi, mr, mi)                                                                          \
    h3vec ar = (zr + mr) * half, ai = (zi - mi) * half, br = (zi + mi) * half, bi = (mr - zr) * half

// The middle of both directions, in place on the transform (re, im) of a + i sc b: per
// frequency x, split it into a^ and b^ (b^ unscaled by unsc), form two products p and q, and
// replace it by p + i r q, r scaling q's lanes to p's norm (returned in *r; the caller unscales
// the imaginary part of the inverse transform by it). Forward: a, b two strips of products,
// p = a^ K_a^, q = b^ K_b^ (kernels at lanes ma, mb; wb = 0: no b). Backward: a = dy, b = u,
// p = conj(K^) dy^, q = conj(u^) dy^. Two passes: the norms, then the join.
static void join_products(h3vec_m *re, h3vec_m *im, int L, const real *KF, int M, int ma, int wa, int mb, int wb,
                          const h3vec *unsc, int backward, h3vec *r) {
    const real half = (real)0.5;
    h3vec na = {0}, nb = {0};
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) norm_ratio(&na, &nb, r);
        for (int f = 0; f <= L / 2; f++) {  // f and its mirror g = -f mod L together
            int g = (L - f) & (L - 1), n = g == f ? 1 : 2;
            h3vec zr[2] = {re[f], re[g]}, zi[2] = {im[f], im[g]}, wr[2], wi[2];
            for (int k = 0; k < n; k++) {
                int x = k == 0 ? f : g, o = 1 - k;
                SPLIT(ar, ai, br, bi, zr[k], zi[k], zr[o], zi[o]);
                br *= *unsc, bi *= *unsc;
                h3vec kr, ki, pr, pi, qr, qi;
                kernel_strip(KF, L, M, ma, wa, x, &kr, &ki);
                if (backward) {
                    pr = kr * ar + ki * ai, pi = kr * ai - ki * ar;  // conj(K^) dy^
                    qr = br * ar + bi * ai, qi = br * ai - bi * ar;  // conj(u^) dy^
                } else {
                    h3vec kbr = {0}, kbi = {0};
                    if (wb > 0) kernel_strip(KF, L, M, mb, wb, x, &kbr, &kbi);
                    pr = ar * kr - ai * ki, pi = ar * ki + ai * kr;      // a^ K_a^
                    qr = br * kbr - bi * kbi, qi = br * kbi + bi * kbr;  // b^ K_b^
                }
                if (pass == 0) {
                    na += pr * pr + pi * pi, nb += qr * qr + qi * qi;
                    continue;
                }
                wr[k] = pr - *r * qi, wi[k] = pi + *r * qr;
            }
            if (pass == 0) continue;
            re[f] = wr[0], im[f] = wi[0];
            if (n == 2) re[g] = wr[1], im[g] = wi[1];
        }
    }
}

// The transform of a + i sc b, a the lanes ma .. ma+wa-1 of rows 0..T-1 of A and b those of B
// from mb (wb = 0: none), zero-padded to L, sc scaling b's lanes to a's norm (*unsc = 1 / sc).
static void transform_pair(h3vec_m *re, h3vec_m *im, const real *A, int ma, int wa, const real *B, int mb, int wb,
                           int T, int M, int L, const real *tw, h3vec *unsc) {
    load_strip(re, im, A, T, M, ma, wa, L);
    for (int t = 0; t < T && wb > 0; t++) {
        if (wb == H3_EB) VLOAD(im[t], B + (size_t)t * M + mb);
        else memcpy(&im[t], B + (size_t)t * M + mb, sizeof(real) * wb);
    }
    h3vec sc;
    lane_ratio(re, im, T, &sc);
    for (int t = 0; t < T; t++) im[t] *= sc;
    *unsc = 1 / sc;
    fft_strip(re, im, L, tw, 0);
}

// Two strips per transform: strip A in the real part and strip B (the next H3_EB lanes, zero
// past m1) in the imaginary part, split after the transform, each times its own kernels, and
// joined again so that one inverse transform gives y of A in its real part and of B in its
// imaginary part.
void h3_conv_forward_fft(int T, int M, int m0, int m1, const real *KF, const real *tw, const real *U, real *Y, real *work) {
    int L = h3_fft_len(T);
    h3vec_m *re = (h3vec_m *)work, *im = re + L;
    for (; m0 < m1; m0 += 2 * H3_EB) {
        int wa = m1 - m0 < H3_EB ? m1 - m0 : H3_EB, mb = m0 + H3_EB;
        int wb = m1 - mb < 0 ? 0 : m1 - mb < H3_EB ? m1 - mb : H3_EB;
        h3vec unsc, out = {0};
        transform_pair(re, im, U, m0, wa, U, mb, wb, T, M, L, tw, &unsc);
        join_products(re, im, L, KF, M, m0, wa, mb, wb, &unsc, 0, &out);
        fft_strip(re, im, L, tw, 1);
        store_strip(Y, re, T, M, m0, wa, (real)1 / L, 0);
        if (wb > 0) {
            h3vec s = 1 / (out * (real)L);
            for (int t = 0; t < T; t++) im[t] *= s;
            store_strip(Y, im, T, M, mb, wb, 1, 0);
        }
    }
}

// Both correlations with two transforms instead of four: dY and U are real, so one transform of
// Z = dY + i U holds both, and du and dK are real, so one inverse transform of conj(K^) dY^ +
// i conj(U^) dY^ gives du in its real part and dK in its imaginary part (each scaled as above).
void h3_conv_backward_fft(int T, int M, int m0, int m1, const real *KF, const real *tw, const real *U, const real *dY,
                          real *dU, real *dKE, real *work) {
    int L = h3_fft_len(T);
    h3vec_m *re = (h3vec_m *)work, *im = re + L;
    for (; m0 < m1; m0 += H3_EB) {
        int w = m1 - m0 < H3_EB ? m1 - m0 : H3_EB;
        h3vec unsc, out = {0};
        transform_pair(re, im, dY, m0, w, U, m0, w, T, M, L, tw, &unsc);
        join_products(re, im, L, KF, M, m0, w, 0, 0, &unsc, 1, &out);
        fft_strip(re, im, L, tw, 1);
        store_strip(dU, re, T, M, m0, w, (real)1 / L, 0);
        h3vec s = 1 / (out * (real)L);
        for (int t = 0; t < T; t++) im[t] *= s;
        store_strip(dKE, im, T, M, m0, w, 1, 1);
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
