#include "model/mixers/mamba_scan.h"

#include <omp.h>
#include <string.h>

size_t mamba_scan_work(int N) {
    // backward: a [CHUNK][EB][N], h [CHUNK+1][EB][N], carry and dA [EB][N], dD [EB];
    // rounded up to a cache line so threads never share one
    size_t n = (size_t)(2 * MAMBA_CHUNK + 3) * MAMBA_EB * N + MAMBA_EB;
    return (n + 15) / 16 * 16;
}

// One task of the forward: sequence b, channels e0 .. e0+ne-1. Inlined with N a constant for
// the default d_state, so the state loop is one unrolled vector with no remainder handling.
static inline __attribute__((always_inline)) void forward_task(const MambaScan *s, real *ys, real *hs,
                                                                real *h, int b, int e0, int ne, int N) {
    int T = s->T, E = s->E, nc = mamba_n_chunks(T);
    memset(h, 0, sizeof(real) * ne * N);
    for (int t = 0; t < T; t++) {
        size_t bt = (size_t)b * T + t;
        if (t % MAMBA_CHUNK == 0)
            memcpy(hs + (((size_t)b * nc + t / MAMBA_CHUNK) * E + e0) * N, h, sizeof(real) * ne * N);
        const real *Bt = s->bc + bt * s->ld, *Ct = Bt + N;
        for (int i = 0; i < ne; i++) {
            int e = e0 + i;
            real *hi = h + (size_t)i * N;
            mamba_scan_token(hi, hi, NULL, s->A + (size_t)e * N, Bt, s->delta[bt * E + e],
                             s->u[bt * E + e], N);
            ys[bt * E + e] = mamba_dot(Ct, hi, N);
        }
    }
}

void mamba_scan_forward(const MambaScan *s, real *ys, real *hs, real *work) {
    int nb = mamba_n_blocks(s->E);
    size_t wsz = mamba_scan_work(s->N);
#pragma omp parallel for schedule(static)
    for (int task = 0; task < s->B * nb; task++) {
        int b = task / nb, e0 = task % nb * MAMBA_EB;
        int ne = s->E - e0 < MAMBA_EB ? s->E - e0 : MAMBA_EB;
        real *h = work + (size_t)omp_get_thread_num() * wsz;  // [ne][N]
        if (s->N == 16) forward_task(s, ys, hs, h, b, e0, ne, 16);
        else forward_task(s, ys, hs, h, b, e0, ne, s->N);
    }
}

// One task of the backward (see forward_task); work as mamba_scan_work describes.
static inline __attribute__((always_inline)) void backward_task(
    const MambaScan *s, const real *hs, const real *dt_raw, const real *D, const real *dy, real *du,
    real *ddt, real *dbc, real *dA, real *dD, real *work, int b, int blk, int N) {
    int T = s->T, E = s->E, nb = mamba_n_blocks(E), nc = mamba_n_chunks(T);
    int e0 = blk * MAMBA_EB, ne = E - e0 < MAMBA_EB ? E - e0 : MAMBA_EB;
    size_t S = (size_t)ne * N;  // one token's states of the block
    real *abuf = work;                           // [CHUNK][ne][N] exp(delta A)
    real *hbuf = abuf + MAMBA_CHUNK * S;         // [CHUNK+1][ne][N] states
    real *carry = hbuf + (MAMBA_CHUNK + 1) * S;  // [ne][N] a_{t+1} dh_{t+1}
    real *dAacc = carry + S;                     // [ne][N]
    real *dDacc = dAacc + S;                     // [ne]
    memset(carry, 0, sizeof(real) * (2 * S + ne));
    for (int c = nc - 1; c >= 0; c--) {
        int t0 = c * MAMBA_CHUNK, t1 = t0 + MAMBA_CHUNK < T ? t0 + MAMBA_CHUNK : T;
        // recompute the chunk's states from the saved one (the forward's exact arithmetic)
        memcpy(hbuf, hs + (((size_t)b * nc + c) * E + e0) * N, sizeof(real) * S);
        for (int t = t0; t < t1; t++) {
            size_t bt = (size_t)b * T + t, k = (size_t)(t - t0);
            const real *Bt = s->bc + bt * s->ld;
            for (int i = 0; i < ne; i++) {
                int e = e0 + i;
                mamba_scan_token(hbuf + (k + 1) * S + (size_t)i * N, hbuf + k * S + (size_t)i * N,
                                 abuf + k * S + (size_t)i * N, s->A + (size_t)e * N, Bt,
                                 s->delta[bt * E + e], s->u[bt * E + e], N);
            }
        }
        for (int t = t1 - 1; t >= t0; t--) {
            size_t bt = (size_t)b * T + t, k = (size_t)(t - t0);
            const real *Bt = s->bc + bt * s->ld, *Ct = Bt + N;
            real *dB = dbc + (bt * nb + blk) * 2 * N, *dC = dB + N;  // sums over the block
            memset(dB, 0, sizeof(real) * 2 * N);
            for (int i = 0; i < ne; i++) {
                int e = e0 + i;
                const real *a = abuf + k * S + (size_t)i * N, *hp = hbuf + k * S + (size_t)i * N;
                const real *hc = hp + S, *Ae = s->A + (size_t)e * N;
                real *cr = carry + (size_t)i * N, *dAe = dAacc + (size_t)i * N;
                real g = dy[bt * E + e], d = s->delta[bt * E + e], x = s->u[bt * E + e];
                real dx = d * x, dd[MAMBA_LANES] = {0}, dBx[MAMBA_LANES] = {0};
                for (int n0 = 0; n0 < N; n0 += MAMBA_LANES) {
                    int nl = N - n0 < MAMBA_LANES ? N - n0 : MAMBA_LANES;
#pragma omp simd
                    for (int l = 0; l < nl; l++) {
                        int n = n0 + l;
                        real dh = Ct[n] * g + cr[n];  // dLoss/dh_t
                        real ah = a[n] * hp[n];       // exp(delta A) h_{t-1}
                        dd[l] += dh * (Bt[n] * x + Ae[n] * ah);
                        dAe[n] += dh * d * ah;
                        dB[n] += dh * dx;
                        dC[n] += g * hc[n];
                        dBx[l] += dh * Bt[n];
                        cr[n] = dh * a[n];
                    }
                }
                ddt[bt * E + e] = mamba_tree_sum(dd);   // dLoss/ddelta for now
                du[bt * E + e] = mamba_tree_sum(dBx);  // sum_n dh B for now
            }
            // per channel of the block (vectorised over channels): the D skip, delta's factor
            // in du, and softplus' derivative (sigmoid(raw), or 1 above the threshold)
            const real *gr = dy + bt * E + e0, *dr = s->delta + bt * E + e0, *xr = s->u + bt * E + e0;
            const real *raw = dt_raw + bt * E + e0;
            real *dur = du + bt * E + e0, *ddr = ddt + bt * E + e0;
#pragma omp simd
            for (int i = 0; i < ne; i++) {
                dur[i] = D[e0 + i] * gr[i] + dr[i] * dur[i];
                dDacc[i] += gr[i] * xr[i];
                ddr[i] = raw[i] <= 20 ? ddr[i] * mamba_sigmoid(raw[i]) : ddr[i];
            }
        }
    }
    memcpy(dA + ((size_t)b * E + e0) * N, dAacc, sizeof(real) * S);
    memcpy(dD + (size_t)b * E + e0, dDacc, sizeof(real) * ne);
}

void mamba_scan_backward(const MambaScan *s, const real *hs, const real *dt_raw, const real *D,
                         const real *dy, real *du, real *ddt, real *dbc, real *dA, real *dD,
                         real *work) {
    int nb = mamba_n_blocks(s->E);
    size_t wsz = mamba_scan_work(s->N);
#pragma omp parallel for schedule(static)
    for (int task = 0; task < s->B * nb; task++) {
        real *w = work + (size_t)omp_get_thread_num() * wsz;
        int b = task / nb, blk = task % nb;
        if (s->N == 16) backward_task(s, hs, dt_raw, D, dy, du, ddt, dbc, dA, dD, w, b, blk, 16);
        else backward_task(s, hs, dt_raw, D, dy, du, ddt, dbc, dA, dD, w, b, blk, s->N);
    }
}
