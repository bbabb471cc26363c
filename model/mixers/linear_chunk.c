#include "model/mixers/linear_chunk.h"

#include <omp.h>

#include "model/kernels/gemm.h"

#define L LIN_CHUNK

static int imax(int a, int b) { return a > b ? a : b; }

size_t lin_chunk_work(int K, int W) {
    // state [K, W], two L x L score blocks, row-scaled copies [L, max(K, W)], powers of g [L+1]
    return (size_t)K * W + 2 * (size_t)L * L + (size_t)L * imax(K, W) + L + 1;
}

// A[n, n] (chunk scores) *= scale g^(r-c) on and below the diagonal, 0 above it.
static void decay_mask(real *A, int n, real scale, const real *pw) {
    for (int r = 0; r < n; r++) {
        real *row = A + (size_t)r * n;
        for (int c = 0; c <= r; c++) row[c] *= scale * pw[r - c];
        for (int c = r + 1; c < n; c++) row[c] = 0;
    }
}

// out[n, cols] = rows of X (row stride ldx) times f * pw[r + 1] (from_end = 0) or pw[n - 1 - r].
static void scale_rows(real *out, const real *X, int ldx, int n, int cols, real f, const real *pw, int from_end) {
    for (int r = 0; r < n; r++) {
        real s = f * pw[from_end ? n - 1 - r : r + 1];
        for (int c = 0; c < cols; c++) out[(size_t)r * cols + c] = X[(size_t)r * ldx + c] * s;
    }
}

static void powers(real *pw, real g) {
    pw[0] = 1;
    for (int i = 1; i <= L; i++) pw[i] = powr(g, (real)i);
}

// S = g^n S + sum_c g^(n-1-c) k_c v_c^T over the chunk's n rows (first: S starts from 0).
static void state_update(real *S, int K, int W, int n, real g, const real *k, int ldk, const real *v, int ldv,
                         real *tmp, const real *pw, int first) {
    if (!first && g != 1)
        for (int i = 0; i < K * W; i++) S[i] *= pw[n];
    scale_rows(tmp, k, ldk, n, K, 1, pw, 1);
    gemm_serial(1, 0, K, W, n, tmp, K, v, ldv, first ? 0 : 1, S, W);
}

void lin_chunk_forward(int T, int K, int W, real g, real scale, const real *Q, int ldq, const real *Kt, int ldk,
                       const real *V, int ldv, real *O, int ldo, real *work) {
    real *S = work, *A = S + (size_t)K * W, *tmp = A + 2 * (size_t)L * L;
    real *pw = tmp + (size_t)L * imax(K, W);
    powers(pw, g);
    for (int t0 = 0; t0 < T; t0 += L) {
        int n = T - t0 < L ? T - t0 : L;
        const real *q = Q + (size_t)t0 * ldq, *k = Kt + (size_t)t0 * ldk, *v = V + (size_t)t0 * ldv;
        real *o = O + (size_t)t0 * ldo;
        if (t0 > 0) {  // from the state: o_r = scale g^(r+1) S^T q_r
            scale_rows(tmp, q, ldq, n, K, scale, pw, 0);
            gemm_serial(0, 0, n, W, K, tmp, K, S, W, 0, o, ldo);
        }
        gemm_serial(0, 1, n, n, K, q, ldq, k, ldk, 0, A, n);
        decay_mask(A, n, scale, pw);
        gemm_serial(0, 0, n, W, n, A, n, v, ldv, t0 > 0 ? 1 : 0, o, ldo);
        if (t0 + n < T) state_update(S, K, W, n, g, k, ldk, v, ldv, tmp, pw, t0 == 0);
    }
}

void lin_chunk_backward(int T, int K, int W, real g, real scale, const real *Q, int ldq, const real *Kt, int ldk,
                        const real *V, int ldv, const real *dO, int lddo, real *dQ, real *dK, real *dV, real *work) {
    real *S = work, *A = S + (size_t)K * W, *P = A + (size_t)L * L, *tmp = P + (size_t)L * L;
    real *pw = tmp + (size_t)L * imax(K, W);
    powers(pw, g);
    // Pass 1, forward time: dQ through the state entering each chunk (recomputed), and every
    // gradient from within the chunk: P = mask(dO V^T), dQ += P K, dK += P^T Q, dV += A^T dO.
    for (int t0 = 0; t0 < T; t0 += L) {
        int n = T - t0 < L ? T - t0 : L;
        size_t oq = (size_t)t0 * ldq, ok = (size_t)t0 * ldk, ov = (size_t)t0 * ldv;
        const real *q = Q + oq, *k = Kt + ok, *v = V + ov, *dout = dO + (size_t)t0 * lddo;
        if (t0 > 0) {
            scale_rows(tmp, dout, lddo, n, W, scale, pw, 0);
            gemm_serial(0, 1, n, K, W, tmp, W, S, W, 1, dQ + oq, ldq);
        }
        gemm_serial(0, 1, n, n, W, dout, lddo, v, ldv, 0, P, n);
        decay_mask(P, n, scale, pw);
        gemm_serial(0, 0, n, K, n, P, n, k, ldk, 1, dQ + oq, ldq);
        gemm_serial(1, 0, n, K, n, P, n, q, ldq, 1, dK + ok, ldk);
        gemm_serial(0, 1, n, n, K, q, ldq, k, ldk, 0, A, n);
        decay_mask(A, n, scale, pw);
        gemm_serial(1, 0, n, W, n, A, n, dout, lddo, 1, dV + ov, ldv);
        if (t0 + n < T) state_update(S, K, W, n, g, k, ldk, v, ldv, tmp, pw, t0 == 0);
    }
    // Pass 2, reverse time: G = sum over the rows after the chunk of scale g^(i - end) q_i dO_i^T
    // (end = the chunk's last row) gives dk_j += g^(end-j) G v_j and dv_j += g^(end-j) G^T k_j.
    real *G = S;
    int last = (T - 1) / L * L;
    for (int t0 = last; t0 >= 0; t0 -= L) {
        int n = T - t0 < L ? T - t0 : L;
        size_t oq = (size_t)t0 * ldq, ok = (size_t)t0 * ldk, ov = (size_t)t0 * ldv;
        if (t0 < last) {
            scale_rows(tmp, Kt + ok, ldk, n, K, 1, pw, 1);
            gemm_serial(0, 0, n, W, K, tmp, K, G, W, 1, dV + ov, ldv);
            scale_rows(tmp, V + ov, ldv, n, W, 1, pw, 1);
            gemm_serial(0, 1, n, K, W, tmp, W, G, W, 1, dK + ok, ldk);
        }
        if (t0 > 0) {  // G for the chunk before: g^n G + sum_r scale g^(r+1) q_r dO_r^T
            if (t0 < last && g != 1)
                for (int i = 0; i < K * W; i++) G[i] *= pw[n];
            scale_rows(tmp, Q + oq, ldq, n, K, scale, pw, 0);
            gemm_serial(1, 0, K, W, n, tmp, K, dO + (size_t)t0 * lddo, lddo, t0 < last ? 1 : 0, G, W);
        }
    }
}

void lin_chunk_heads_forward(int B, int T, int H, int D, const real *g, real scale, const real *qkv, real *att, real *work) {
    int C = H * D, C3 = 3 * C;
#pragma omp parallel for schedule(dynamic, 1)
    for (int bh = 0; bh < B * H; bh++) {
        int b = bh / H, h = bh % H;
        const real *q = qkv + (size_t)b * T * C3 + h * D;
        lin_chunk_forward(T, D, D, g[h], scale, q, C3, q + C, C3, q + 2 * C, C3, att + (size_t)b * T * C + h * D, C,
                          work + (size_t)omp_get_thread_num() * lin_chunk_work(D, D));
    }
}

void lin_chunk_heads_backward(int B, int T, int H, int D, const real *g, real scale, const real *qkv, const real *datt,
                              real *dqkv, real *work) {
    int C = H * D, C3 = 3 * C;
#pragma omp parallel for schedule(dynamic, 1)
    for (int bh = 0; bh < B * H; bh++) {
        int b = bh / H, h = bh % H;
        size_t off = (size_t)b * T * C3 + h * D;
        const real *q = qkv + off;
        real *dq = dqkv + off;
        lin_chunk_backward(T, D, D, g[h], scale, q, C3, q + C, C3, q + 2 * C, C3, datt + (size_t)b * T * C + h * D, C,
                           dq, dq + C, dq + 2 * C, work + (size_t)omp_get_thread_num() * lin_chunk_work(D, D));
    }
}

void lin_recurrent_step(int K, int W, real g, real scale, real *S, const real *q, const real *k, const real *v, real *o) {
    for (int i = 0; i < K; i++)
        for (int j = 0; j < W; j++) S[(size_t)i * W + j] = g * S[(size_t)i * W + j] + k[i] * v[j];
    for (int j = 0; j < W; j++) {
        real s = 0;
        for (int i = 0; i < K; i++) s += S[(size_t)i * W + j] * q[i];
        o[j] = s * scale;
    }
}
