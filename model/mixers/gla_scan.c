#include "model/mixers/gla_scan.h"

#include <string.h>

#include "model/kernels/gemm.h"
#include "model/kernels/vmath.h"

#define LM GLA_MAX_CHUNK

// Per-thread work, carved from one block.
typedef struct {
    real *S, *G, *Sw;         // [K, V]: state; gradient of the state at the chunk's end; copy
    real *b, *eb, *en, *ed;   // [L, K]: gate sums b from the chunk start, exp(b), exp(-b),
                              //         exp(b_L - b)
    real *Qh, *Kh, *Kd;       // [L, K]: q exp(b) scale, k exp(-b), k exp(b_L - b)
    real *X, *Y, *tdq, *tdk;  // [L, K]: products; this chunk's dq' (w.r.t. scale q) and dk
    real *A, *dA;             // [L, L]: scores and their gradient
    real *al, *acc;           // [K]: exp(g_t); running gate gradient
} Work;

size_t gla_scan_work(int K, int V) {
    return 3 * (size_t)K * V + 11 * (size_t)LM * K + 2 * (size_t)LM * LM + 2 * (size_t)K;
}

int gla_n_states(int T, int L) { return T > 0 ? (T - 1) / L : 0; }

static Work carve(real *w, int K, int V) {
    Work s;
    size_t kv = (size_t)K * V, lk = (size_t)LM * K;
    s.S = w, s.G = s.S + kv, s.Sw = s.G + kv;
    s.b = s.Sw + kv, s.eb = s.b + lk, s.en = s.eb + lk, s.ed = s.en + lk;
    s.Qh = s.ed + lk, s.Kh = s.Qh + lk, s.Kd = s.Kh + lk;
    s.X = s.Kd + lk, s.Y = s.X + lk, s.tdq = s.Y + lk, s.tdk = s.tdq + lk;
    s.A = s.tdk + lk, s.dA = s.A + (size_t)LM * LM;
    s.al = s.dA + (size_t)LM * LM, s.acc = s.al + K;
    return s;
}

// b[n, K] = sums of the log gates from the chunk's first row; returns max_c -b[n-1][c].
static real gate_sums(const real *G, int ldg, int n, int K, real *b) {
    for (int c = 0; c < K; c++) b[c] = G[c];
    for (int r = 1; r < n; r++) {
        const real *g = G + (size_t)r * ldg, *prev = b + (size_t)(r - 1) * K;
        real *br = b + (size_t)r * K;
#pragma omp simd
        for (int c = 0; c < K; c++) br[c] = prev[c] + g[c];
    }
    real range = 0;
    for (int c = 0; c < K; c++) range = -b[(size_t)(n - 1) * K + c] > range ? -b[(size_t)(n - 1) * K + c] : range;
    return range;
}

// The chunk's decay factors and the scaled q and k (all exponents of the same sign per factor).
static void chunk_factors(Work *w, int n, int K, real scale, const real *q, int ldq, const real *k, int ldk) {
    const real *bl = w->b + (size_t)(n - 1) * K;
    for (int r = 0; r < n; r++) {
        size_t o = (size_t)r * K;
        const real *qr = q + (size_t)r * ldq, *kr = k + (size_t)r * ldk, *br = w->b + o;
        real *eb = w->eb + o, *en = w->en + o, *ed = w->ed + o;
        real *Qh = w->Qh + o, *Kh = w->Kh + o, *Kd = w->Kd + o;
#pragma omp simd
        for (int c = 0; c < K; c++) {
            eb[c] = vexpr(br[c]);
            en[c] = vexpr(-br[c]);
            ed[c] = vexpr(bl[c] - br[c]);
            Qh[c] = qr[c] * scale * eb[c];
            Kh[c] = kr[c] * en[c];
            Kd[c] = kr[c] * ed[c];
        }
    }
}

// Zeroes the strictly upper triangle of the n x n matrix A (causality within the chunk).
static void mask_upper(real *A, int n) {
    for (int r = 0; r < n; r++)
        for (int c = r + 1; c < n; c++) A[(size_t)r * n + c] = 0;
}

static void alphas(const real *g, int K, real *al) {
#pragma omp simd
    for (int c = 0; c < K; c++) al[c] = vexpr(g[c]);
}

// S = diag(al) S + k v^T.
static void state_step(real *S, int K, int V, const real *al, const real *k, const real *v) {
    for (int c = 0; c < K; c++) {
        real a = al[c], kc = k[c], *Sr = S + (size_t)c * V;
#pragma omp simd
        for (int j = 0; j < V; j++) Sr[j] = a * Sr[j] + kc * v[j];
    }
}

// o[V] = scale S^T q.
static void state_out(const real *S, int K, int V, real scale, const real *q, real *o) {
    for (int j = 0; j < V; j++) o[j] = 0;
    for (int c = 0; c < K; c++) {
        real qc = q[c] * scale;
        const real *Sr = S + (size_t)c * V;
#pragma omp simd
        for (int j = 0; j < V; j++) o[j] += qc * Sr[j];
    }
}

void gla_scan_forward(int T, int K, int V, int L, real max_range, real scale, const real *Q, int ldq, const real *Kt,
                      int ldk, const real *Vv, int ldv, const real *G, int ldg, real *O, int ldo, real *states, real *work) {
    Work w = carve(work, K, V);
    size_t kv = (size_t)K * V;
    memset(w.S, 0, sizeof(real) * kv);
    for (int t0 = 0, ci = 0; t0 < T; t0 += L, ci++) {
        int n = T - t0 < L ? T - t0 : L;
        const real *q = Q + (size_t)t0 * ldq, *k = Kt + (size_t)t0 * ldk, *v = Vv + (size_t)t0 * ldv;
        const real *g = G + (size_t)t0 * ldg;
        real *o = O + (size_t)t0 * ldo;
        if (ci > 0) memcpy(states + (ci - 1) * kv, w.S, sizeof(real) * kv);
        real range = gate_sums(g, ldg, n, K, w.b);
        if (range > max_range) {  // strong decay: the recurrence, token by token
            for (int r = 0; r < n; r++) {
                alphas(g + (size_t)r * ldg, K, w.al);
                state_step(w.S, K, V, w.al, k + (size_t)r * ldk, v + (size_t)r * ldv);
                state_out(w.S, K, V, scale, q + (size_t)r * ldq, o + (size_t)r * ldo);
            }
            continue;
        }
        chunk_factors(&w, n, K, scale, q, ldq, k, ldk);
        if (t0 > 0) gemm_serial(0, 0, n, V, K, w.Qh, K, w.S, V, 0, o, ldo);  // from the state
        gemm_serial(0, 1, n, n, K, w.Qh, K, w.Kh, K, 0, w.A, n);
        mask_upper(w.A, n);
        gemm_serial(0, 0, n, V, n, w.A, n, v, ldv, t0 > 0 ? 1 : 0, o, ldo);
        if (t0 + n < T) {  // the state entering the next chunk
            const real *el = w.eb + (size_t)(n - 1) * K;
            for (int c = 0; c < K; c++) {
                real *Sr = w.S + (size_t)c * V;
#pragma omp simd
                for (int j = 0; j < V; j++) Sr[j] *= el[c];
            }
            gemm_serial(1, 0, K, V, n, w.Kd, K, v, ldv, 1, w.S, V);
        }
    }
}

void gla_scan_backward(int T, int K, int V, int L, real max_range, real scale, const real *Q, int ldq, const real *Kt,
                       int ldk, const real *Vv, int ldv, const real *G, int ldg, const real *dO, int lddo,
                       const real *states, real *dQ, real *dK, real *dV, real *dG, real *work) {
    if (T <= 0) return;
    Work w = carve(work, K, V);
    size_t kv = (size_t)K * V;
    memset(w.G, 0, sizeof(real) * kv);  // nothing after the last token
    for (int c = 0; c < K; c++) w.acc[c] = 0;
    int n_chunks = (T - 1) / L + 1;
    for (int ci = n_chunks - 1; ci >= 0; ci--) {
        int t0 = ci * L, n = T - t0 < L ? T - t0 : L, last = ci == n_chunks - 1;
        const real *q = Q + (size_t)t0 * ldq, *k = Kt + (size_t)t0 * ldk, *v = Vv + (size_t)t0 * ldv;
        const real *g = G + (size_t)t0 * ldg, *dout = dO + (size_t)t0 * lddo;
        const real *Sn = ci > 0 ? states + (ci - 1) * kv : NULL;  // state entering the chunk
        real *dv = dV + (size_t)t0 * ldv;
        real range = gate_sums(g, ldg, n, K, w.b);
        if (range > max_range) {
            // Forward time from Sn: dq'_t = S_t dO_t.
            if (Sn) memcpy(w.Sw, Sn, sizeof(real) * kv);
            else memset(w.Sw, 0, sizeof(real) * kv);
            for (int r = 0; r < n; r++) {
                alphas(g + (size_t)r * ldg, K, w.al);
                state_step(w.Sw, K, V, w.al, k + (size_t)r * ldk, v + (size_t)r * ldv);
                const real *dor = dout + (size_t)r * lddo;
                for (int c = 0; c < K; c++) {
                    const real *Sr = w.Sw + (size_t)c * V;
                    real s = 0;
#pragma omp simd reduction(+ : s)
                    for (int j = 0; j < V; j++) s += Sr[j] * dor[j];
                    w.tdq[(size_t)r * K + c] = s;
                }
            }
            // Reverse time: D_t = scale q_t dO_t^T + diag(alpha_{t+1}) D_{t+1} (in w.G);
            // dk_t = D_t v_t, dv_t = D_t^T k_t; what is left is the gradient of Sn.
            for (int r = n - 1; r >= 0; r--) {
                alphas(g + (size_t)r * ldg, K, w.al);
                const real *qr = q + (size_t)r * ldq, *kr = k + (size_t)r * ldk, *vr = v + (size_t)r * ldv;
                const real *dor = dout + (size_t)r * lddo;
                real *dvr = dv + (size_t)r * ldv;
                for (int c = 0; c < K; c++) {
                    real qc = qr[c] * scale, kc = kr[c], a = w.al[c], s = 0, *Dr = w.G + (size_t)c * V;
#pragma omp simd reduction(+ : s)
                    for (int j = 0; j < V; j++) {
                        Dr[j] += qc * dor[j];
                        s += Dr[j] * vr[j];
                        dvr[j] += Dr[j] * kc;
                        Dr[j] *= a;
                    }
                    w.tdk[(size_t)r * K + c] = s;
                }
            }
        } else {
            chunk_factors(&w, n, K, scale, q, ldq, k, ldk);
            // dA_ij = dO_i . v_j (j <= i)
            gemm_serial(0, 1, n, n, V, dout, lddo, v, ldv, 0, w.dA, n);
            mask_upper(w.dA, n);
            // dq'_i = exp(b_i) (Sn dO_i + sum_j dA_ij k_j exp(-b_j))
            if (Sn) gemm_serial(0, 1, n, K, V, dout, lddo, Sn, V, 0, w.X, K);
            gemm_serial(0, 0, n, K, n, w.dA, n, w.Kh, K, Sn ? 1 : 0, w.X, K);
            // dk_j = exp(-b_j) sum_i dA_ij q_i exp(b_i) scale + exp(b_L - b_j) G v_j
            gemm_serial(1, 0, n, K, n, w.dA, n, w.Qh, K, 0, w.Y, K);
            for (size_t i = 0; i < (size_t)n * K; i++) {
                w.tdq[i] = w.eb[i] * w.X[i];
                w.tdk[i] = w.en[i] * w.Y[i];
            }
            if (!last) {
                gemm_serial(0, 1, n, K, V, v, ldv, w.G, V, 0, w.X, K);
                for (size_t i = 0; i < (size_t)n * K; i++) w.tdk[i] += w.ed[i] * w.X[i];
            }
            // dv_j = sum_i a_ij dO_i + G^T k_j exp(b_L - b_j)
            gemm_serial(0, 1, n, n, K, w.Qh, K, w.Kh, K, 0, w.A, n);
            mask_upper(w.A, n);
            gemm_serial(1, 0, n, V, n, w.A, n, dout, lddo, 1, dv, ldv);
            if (!last) gemm_serial(0, 0, n, V, K, w.Kd, K, w.G, V, 1, dv, ldv);
            // gradient of Sn: diag(exp(b_L)) G + sum_i (q_i exp(b_i) scale) dO_i^T
            if (ci > 0) {
                const real *el = w.eb + (size_t)(n - 1) * K;
                if (!last)
                    for (int c = 0; c < K; c++) {
                        real *Gr = w.G + (size_t)c * V;
#pragma omp simd
                        for (int j = 0; j < V; j++) Gr[j] *= el[c];
                    }
                gemm_serial(1, 0, K, V, n, w.Qh, K, dout, lddo, 1, w.G, V);
            }
        }
        // dg_t = sum_{s>=t} (q_s dq_s - k_s dk_s), then accumulate dq (= scale dq') and dk.
        for (int r = n - 1; r >= 0; r--) {
            const real *qr = q + (size_t)r * ldq, *kr = k + (size_t)r * ldk;
            const real *tq = w.tdq + (size_t)r * K, *tk = w.tdk + (size_t)r * K;
            real *dq = dQ + (size_t)(t0 + r) * ldq, *dk = dK + (size_t)(t0 + r) * ldk;
            real *dg = dG + (size_t)(t0 + r) * ldg;
#pragma omp simd
            for (int c = 0; c < K; c++) {
                real dqc = scale * tq[c];
                w.acc[c] += qr[c] * dqc - kr[c] * tk[c];
                dg[c] += w.acc[c];
                dq[c] += dqc;
                dk[c] += tk[c];
            }
        }
    }
}

void gla_scan_step(int K, int V, real scale, real *S, const real *q, const real *k, const real *v, const real *g, real *o) {
    for (int c = 0; c < K; c++) {
        real a = vexpr(g[c]), kc = k[c], *Sr = S + (size_t)c * V;
        for (int j = 0; j < V; j++) Sr[j] = a * Sr[j] + kc * v[j];
    }
    state_out(S, K, V, scale, q, o);
}
