#include "model/mixers/mamba2_ssd.h"

#include <math.h>
#include <string.h>

#include "model/kernels/gemm.h"
#include "model/kernels/gemm_tri.h"
#include "model/kernels/vmath.h"

int ssd_n_states(int T, int L) { return (T + L - 1) / L; }

// Work layout (both passes): S, dS [N, P]; G, Dec, M, dM [L, L]; Cd, Bw, dCd, dBw [L, N]; cum, ec,
// w, dcum, dtc (the chunk's dt, contiguous), ddtc (its gradient) [L].
size_t ssd_work(int P, int N, int L) {
    return 2 * (size_t)N * P + 4 * (size_t)L * L + 4 * (size_t)L * N + 6 * (size_t)L;
}

typedef struct {
    real *S, *dS, *G, *Dec, *M, *dM, *Cd, *Bw, *dCd, *dBw, *cum, *ec, *w, *dcum, *dtc, *ddtc;
    real *Gown;  // the work's own G (G points at it, or at the chunk's in an SsdShared)
} Work;

static Work carve(real *p, int P, int N, int L) {
    size_t NP = (size_t)N * P, LL = (size_t)L * L, LN = (size_t)L * N;
    Work k;
    k.S = p, k.dS = k.S + NP, k.G = k.dS + NP, k.Dec = k.G + LL, k.M = k.Dec + LL, k.dM = k.M + LL;
    k.Cd = k.dM + LL, k.Bw = k.Cd + LN, k.dCd = k.Bw + LN, k.dBw = k.dCd + LN, k.cum = k.dBw + LN;
    k.ec = k.cum + L, k.w = k.ec + L, k.dcum = k.w + L, k.dtc = k.dcum + L, k.ddtc = k.dtc + L;
    k.Gown = k.G;
    return k;
}

// One chunk of n tokens (pointers at its first token): dtc (its dt, contiguous), cum (the segment
// sum of A dt), ec = exp(cum), w_j = exp(cum_{n-1} - cum_j) dt_j, G = C B^T, Dec_ij = exp(cum_i -
// cum_j) and M = G ⊙ Dec dt_j below and on the diagonal (0 above), Cd = diag(ec) C, Bw =
// diag(w) B. ec, w, Cd and Bw only with_state: a chunk that neither enters with a state nor
// leaves one (a sequence of one chunk, the MQAR cell's) reads none of them.
#define SSD_SPLIT_SPAN 40

static void chunk_prepare(Work *k, int n, int N, const real *dt, int lddt, real A, const real *B, int ldb,
                          const real *C, int ldc, int with_state, const SsdShared *sh, int c, int L) {
    for (int i = 0; i < n; i++) k->dtc[i] = dt[(size_t)i * lddt];
    for (int i = 0; i < n; i++) k->cum[i] = (i ? k->cum[i - 1] : 0) + A * k->dtc[i];
    for (int i = 0; i < n && with_state; i++) {
        k->ec[i] = expr(k->cum[i]);
        k->w[i] = expr(k->cum[n - 1] - k->cum[i]) * k->dtc[i];
        for (int m = 0; m < N; m++) {
            k->Cd[(size_t)i * N + m] = k->ec[i] * C[(size_t)i * ldc + m];
            k->Bw[(size_t)i * N + m] = k->w[i] * B[(size_t)i * ldb + m];
        }
    }
    k->G = sh ? sh->G + (size_t)c * L * L : k->Gown;  // (only its lower triangle is read)
    if (!sh || !sh->ready) gemm_lower_c(n, N, C, ldc, 1, B, ldb, k->G, n);
    // Dec_ij = exp(cum_i - cum_j) as exp(cum_i - cum_0) exp(cum_0 - cum_j) when the chunk's decay
    // spans at most SSD_SPLIT_SPAN (each factor then within e^+-span, far inside the float range):
    // 2n exps instead of n(n+1)/2; past it each entry's own exp (its exponent <= 0)
    const real *cum = k->cum, *dtc = k->dtc;
    int split = cum[0] - cum[n - 1] <= SSD_SPLIT_SPAN;
    real *f = k->dcum;  // exp(cum_0 - cum_j) (dcum is the backward's, zeroed after this)
    if (split)
        for (int j = 0; j < n; j++) f[j] = expr(cum[0] - cum[j]);
    for (int i = 0; i < n; i++) {
        real *mi = k->M + (size_t)i * n, *ei = k->Dec + (size_t)i * n, ci = cum[i];
        const real *gi = k->G + (size_t)i * n;
        if (split) {
            real e = expr(ci - cum[0]);
#pragma omp simd
            for (int j = 0; j <= i; j++) {
                ei[j] = e * f[j];
                mi[j] = gi[j] * ei[j] * dtc[j];
            }
        } else {
#pragma omp simd
            for (int j = 0; j <= i; j++) {
                ei[j] = vexpr(ci - cum[j]);
                mi[j] = gi[j] * ei[j] * dtc[j];
            }
        }
        for (int j = i + 1; j < n; j++) mi[j] = 0;
    }
}

void ssd_forward_hook(int T, int P, int N, int L, const real *X, int ldx, const real *dt, int lddt, real A,
                      const real *B, int ldb, const real *C, int ldc, real *Y, int ldy, real *states, real *work,
                      SsdHook hook, void *ctx, const SsdShared *sh) {
    Work k = carve(work, P, N, L);
    memset(k.S, 0, sizeof(real) * N * P);
    for (int c = 0, s = 0; s < T; c++, s += L) {
        int n = T - s < L ? T - s : L;
        if (hook) hook(ctx, s, n, 0);
        const real *x = X + (size_t)s * ldx, *d = dt + (size_t)s * lddt;
        const real *b = B + (size_t)s * ldb, *cc = C + (size_t)s * ldc;
        real *y = Y + (size_t)s * ldy;
        if (c) memcpy(states + (size_t)c * N * P, k.S, sizeof(real) * N * P);  // (the first is 0: not saved)
        chunk_prepare(&k, n, N, d, lddt, A, b, ldb, cc, ldc, c > 0 || s + n < T, sh, c, L);
        gemm_lower_a(n, P, k.M, n, x, ldx, 0, y, ldy);                  // the diagonal block
        if (c) gemm_serial(0, 0, n, P, N, k.Cd, N, k.S, P, 1, y, ldy);  // the entry state (0 at first)
        if (s + n == T) break;                                          // no state after the last
        real decay = k.ec[n - 1];
        for (int i = 0; i < N * P; i++) k.S[i] *= decay;
        gemm_serial(1, 0, N, P, n, k.Bw, N, x, ldx, 1, k.S, P);  // the state at the chunk's end
    }
}

void ssd_backward_hook(int T, int P, int N, int L, const real *X, int ldx, const real *dt, int lddt, real A,
                       const real *B, int ldb, const real *C, int ldc, const real *states, const real *dY, int lddy,
                       real *dX, int lddx, real *ddt, real *dB, real *dC, int lddbc, real *dA, real *work, SsdHook hook,
                       void *ctx, const SsdShared *sh) {
    Work k = carve(work, P, N, L);
    memset(k.dS, 0, sizeof(real) * N * P);
    real dA_acc = 0;
    for (int c = ssd_n_states(T, L) - 1; c >= 0; c--) {
        int s = c * L, n = T - s < L ? T - s : L;
        if (hook) hook(ctx, s, n, 0);
        const real *x = X + (size_t)s * ldx, *d = dt + (size_t)s * lddt, *S0 = states + (size_t)c * N * P;
        const real *b = B + (size_t)s * ldb, *cc = C + (size_t)s * ldc, *dy = dY + (size_t)s * lddy;
        real *dx = dX + (size_t)s * lddx, *dd = ddt + (size_t)s * lddt;
        real *db = dB + (size_t)s * lddbc, *dc = dC + (size_t)s * lddbc;
        chunk_prepare(&k, n, N, d, lddt, A, b, ldb, cc, ldc, c > 0 || s + n < T, sh, c, L);
        for (int i = 0; i < n; i++) k.dcum[i] = k.ddtc[i] = 0;
        real decay = c > 0 || s + n < T ? k.ec[n - 1] : 0;  // (read only with_state)
        // S1 = decay S0 + Bw^T X: the end state's gradient dS reaches S0's decay, Bw and X (dS is
        // 0 after the last chunk, and S0 before the first: those products are skipped)
        if (s + n < T) {
            real dot = 0;
            for (int i = 0; i < N * P && c; i++) dot += k.dS[i] * S0[i];  // (S0 = 0 at the first)
            k.dcum[n - 1] += decay * dot;
            gemm_serial(0, 1, n, N, P, x, ldx, k.dS, P, 0, k.dBw, N);   // dBw = X dS^T
            gemm_serial(0, 0, n, P, N, k.Bw, N, k.dS, P, 1, dx, lddx);  // dX += Bw dS
            for (int j = 0; j < n; j++) {
                real dw = 0;
                for (int m = 0; m < N; m++) {
                    dw += b[(size_t)j * ldb + m] * k.dBw[(size_t)j * N + m];
                    db[(size_t)j * lddbc + m] += k.w[j] * k.dBw[(size_t)j * N + m];
                }
                // w_j = exp(cum_{n-1} - cum_j) dt_j
                real q = dw * k.w[j];
                k.ddtc[j] += dw * expr(k.cum[n - 1] - k.cum[j]);
                k.dcum[n - 1] += q;
                k.dcum[j] -= q;
            }
        }
        // Y += Cd S0: dCd = dY S0^T, then Cd = diag(ec) C
        if (c) {
            gemm_serial(0, 1, n, N, P, dy, lddy, S0, P, 0, k.dCd, N);
            for (int i = 0; i < n; i++) {
                real r = 0;
                for (int m = 0; m < N; m++) {
                    real g = k.dCd[(size_t)i * N + m];
                    r += k.Cd[(size_t)i * N + m] * g;
                    dc[(size_t)i * lddbc + m] += k.ec[i] * g;
                }
                k.dcum[i] += r;
            }
            // the state entering the chunk: dS0 = decay dS + Cd^T dY
            for (int i = 0; i < N * P; i++) k.dS[i] *= decay;
            gemm_serial(1, 0, N, P, n, k.Cd, N, dy, lddy, 1, k.dS, P);
        }
        // Y = M X: dM = dY X^T (lower triangle), dX += M^T dY
        gemm_lower_at(n, P, k.M, n, dy, lddy, 1, dx, lddx);
        gemm_lower_c(n, P, dy, lddy, 1, x, ldx, k.dM, n);
        // M_ij = G_ij exp(cum_i - cum_j) dt_j: dM becomes dG in place
        for (int i = 0; i < n; i++) {
            real *dmi = k.dM + (size_t)i * n;
            const real *gi = k.G + (size_t)i * n, *mi = k.M + (size_t)i * n;
            const real *ei = k.Dec + (size_t)i * n;
            real rowq = 0;
#pragma omp simd reduction(+ : rowq)
            for (int j = 0; j <= i; j++) {
                real q = dmi[j] * mi[j];
                k.ddtc[j] += dmi[j] * gi[j] * ei[j];
                rowq += q;
                k.dcum[j] -= q;
                dmi[j] *= ei[j] * k.dtc[j];
            }
            k.dcum[i] += rowq;
            for (int j = i + 1; j < n; j++) dmi[j] = 0;
        }
        gemm_lower_a(n, N, k.dM, n, b, ldb, 1, dc, lddbc);    // G = C B^T: dC += dG B
        gemm_lower_at(n, N, k.dM, n, cc, ldc, 1, db, lddbc);  // dB += dG^T C
        // cum_i = A (dt_0 + ... + dt_i): the reverse cumulative sum of dcum is d(A dt_t)
        real acc = 0;
        for (int t = n - 1; t >= 0; t--) {
            acc += k.dcum[t];
            dd[(size_t)t * lddt] += k.ddtc[t] + A * acc;
            dA_acc += k.dtc[t] * acc;
        }
        if (hook) hook(ctx, s, n, 1);
    }
    *dA += dA_acc;
}

void ssd_forward(int T, int P, int N, int L, const real *X, int ldx, const real *dt, int lddt, real A, const real *B,
                 int ldb, const real *C, int ldc, real *Y, int ldy, real *states, real *work) {
    ssd_forward_hook(T, P, N, L, X, ldx, dt, lddt, A, B, ldb, C, ldc, Y, ldy, states, work, NULL, NULL, NULL);
}

void ssd_backward(int T, int P, int N, int L, const real *X, int ldx, const real *dt, int lddt, real A, const real *B,
                  int ldb, const real *C, int ldc, const real *states, const real *dY, int lddy, real *dX, real *ddt,
                  real *dB, real *dC, int lddbc, real *dA, real *work) {
    ssd_backward_hook(T, P, N, L, X, ldx, dt, lddt, A, B, ldb, C, ldc, states, dY, lddy, dX, ldx, ddt, dB, dC, lddbc,
                      dA, work, NULL, NULL, NULL);
}

void ssd_step(int P, int N, real *S, const real *x, real dt, real A, const real *b, const real *c, real *y) {
    real a = expr(dt * A);
    for (int m = 0; m < N; m++) {
        real *sm = S + (size_t)m * P, bm = dt * b[m];
        for (int p = 0; p < P; p++) sm[p] = a * sm[p] + bm * x[p];
    }
    for (int p = 0; p < P; p++) y[p] = 0;
    for (int m = 0; m < N; m++)
        for (int p = 0; p < P; p++) y[p] += c[m] * S[(size_t)m * P + p];
}

void ssd_map_row(int T, int N, int i, const real *dt, int lddt, real A, const real *B, int ldb, const real *C, int ldc,
                 real *a) {
    (void)T;
    real sum = 0;  // dt_{j+1} + ... + dt_i
    const real *ci = C + (size_t)i * ldc;
    for (int j = i; j >= 0; j--) {
        const real *bj = B + (size_t)j * ldb;
        real g = 0;
        for (int m = 0; m < N; m++) g += ci[m] * bj[m];
        real dj = dt[(size_t)j * lddt];
        a[j] = g * expr(A * sum) * dj;
        sum += dj;
    }
}
