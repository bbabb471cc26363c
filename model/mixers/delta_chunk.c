#include "model/mixers/delta_chunk.h"

#include <string.h>

#include "model/kernels/gemm.h"

int delta_n_states(int T, int L) { return (T + L - 1) / L; }

// Work layout (both passes): S, dS [D, D]; KK, Linv, Tm, P, dP [L, L]; W, U, dU, dW [L, D]; tmp
// [max(L, D), D] for the n x D and D x D products (the backward's dTm and dLinv reuse P and dP).
size_t delta_chunk_work(int D, int L) {
    return 2 * (size_t)D * D + 5 * (size_t)L * L + 4 * (size_t)L * D + (size_t)(L > D ? L : D) * D;
}

typedef struct {
    real *S, *dS, *KK, *Linv, *Tm, *P, *dP, *W, *U, *tmp, *dU, *dW;
} Work;

static Work carve(real *w, int D, int L) {
    size_t DD = (size_t)D * D, LL = (size_t)L * L, LD = (size_t)L * D;
    Work k;
    k.S = w, k.dS = k.S + DD, k.KK = k.dS + DD, k.Linv = k.KK + LL, k.Tm = k.Linv + LL, k.P = k.Tm + LL;
    k.dP = k.P + LL, k.W = k.dP + LL, k.U = k.W + LD, k.dU = k.U + LD, k.dW = k.dU + LD, k.tmp = k.dW + LD;
    return k;
}

// The chunk's n rows (k, v, beta at the chunk's start): KK = K K^T, then by forward substitution
// Linv = (I + A)^{-1} with A_ij = beta_i k_i . k_j below the diagonal (unit lower-triangular, so
// row i needs only the rows above it: Linv_ij = [i == j] - sum_{j <= l < i} A_il Linv_lj), then
// Tm = Linv diag(beta), W = Tm K, U = Tm V. Everything above the diagonal is zero.
static void ut_transform(const Work *w, int n, int D, const real *k, int ldk, const real *v, int ldv, const real *beta,
                         int ldb) {
    gemm_serial(0, 1, n, n, D, k, ldk, k, ldk, 0, w->KK, n);
    for (int i = 0; i < n; i++) {
        real *li = w->Linv + (size_t)i * n, bi = beta[(size_t)i * ldb];
        for (int j = 0; j < n; j++) li[j] = i == j;
        for (int l = 0; l < i; l++) {
            real a = bi * w->KK[(size_t)i * n + l];  // A_il
            const real *ll = w->Linv + (size_t)l * n;
            for (int j = 0; j <= l; j++) li[j] -= a * ll[j];
        }
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) w->Tm[(size_t)i * n + j] = w->Linv[(size_t)i * n + j] * beta[(size_t)j * ldb];
    gemm_serial(0, 0, n, D, n, w->Tm, n, k, ldk, 0, w->W, D);
    gemm_serial(0, 0, n, D, n, w->Tm, n, v, ldv, 0, w->U, D);
}

// U' = U - W S0 in U (the pseudo-values u_t of the chunk).
static void pseudo_values(const Work *w, int n, int D, const real *S0) {
    gemm_serial(0, 0, n, D, D, w->W, D, S0, D, 0, w->tmp, D);
    for (int i = 0; i < n * D; i++) w->U[i] -= w->tmp[i];
}

// A[n, n] keeps its lower triangle with the diagonal, 0 above.
static void causal_mask(real *A, int n) {
    for (int r = 0; r < n; r++)
        for (int c = r + 1; c < n; c++) A[(size_t)r * n + c] = 0;
}

void delta_chunk_forward(int T, int D, int L, const real *Q, int ldq, const real *K, int ldk, const real *V, int ldv,
                         const real *beta, int ldb, real *O, int ldo, real *states, real *work) {
    Work w = carve(work, D, L);
    memset(w.S, 0, sizeof(real) * D * D);
    for (int t0 = 0, c = 0; t0 < T; t0 += L, c++) {
        int n = T - t0 < L ? T - t0 : L;
        const real *q = Q + (size_t)t0 * ldq, *k = K + (size_t)t0 * ldk, *v = V + (size_t)t0 * ldv;
        real *o = O + (size_t)t0 * ldo;
        memcpy(states + (size_t)c * D * D, w.S, sizeof(real) * D * D);
        ut_transform(&w, n, D, k, ldk, v, ldv, beta + (size_t)t0 * ldb, ldb);
        pseudo_values(&w, n, D, w.S);
        gemm_serial(0, 0, n, D, D, q, ldq, w.S, D, 0, o, ldo);  // from the state: Q S0
        gemm_serial(0, 1, n, n, D, q, ldq, k, ldk, 0, w.P, n);  // within the chunk: (Q K^T ⊙ M) U'
        causal_mask(w.P, n);
        gemm_serial(0, 0, n, D, n, w.P, n, w.U, D, 1, o, ldo);
        if (t0 + n < T) gemm_serial(1, 0, D, D, n, k, ldk, w.U, D, 1, w.S, D);  // S1 = S0 + K^T U'
    }
}

// Reverse time. With dS the gradient of the state leaving the chunk and S0 the state entering it:
//   dU' = P^T dO + K dS                          (P = Q K^T ⊙ M)
//   dQ += dO S0^T + (dO U'^T ⊙ M) K;  dK += (dO U'^T ⊙ M)^T Q + U' dS^T
//   dS0 = dS + Q^T dO - W^T dU'                  (S0 enters O, S1 and U' = U - W S0)
//   dW = -dU' S0^T;  U = Tm V: dV += Tm^T dU';  W = Tm K: dK += Tm^T dW
//   dTm = dU' V^T + dW K^T;  Tm = Linv diag(beta): dbeta_j += sum_i dTm_ij Linv_ij, dLinv = dTm diag(beta)
//   Linv = (I + A)^{-1}: dA = -Linv^T dLinv Linv^T, kept below the diagonal (A's support)
//   A_ij = beta_i k_i . k_j (i > j): dbeta_i += sum_j dA_ij k_i . k_j; with H = diag(beta) dA,
//   dK += H K + H^T K.
void delta_chunk_backward(int T, int D, int L, const real *Q, int ldq, const real *K, int ldk, const real *V, int ldv,
                          const real *beta, int ldb, const real *states, const real *dO, int lddo, real *dQ, real *dK,
                          real *dV, real *dbeta, real *work) {
    Work w = carve(work, D, L);
    memset(w.dS, 0, sizeof(real) * D * D);
    int last = (T - 1) / L * L;
    for (int t0 = last, c = last / L; t0 >= 0; t0 -= L, c--) {
        int n = T - t0 < L ? T - t0 : L;
        size_t oq = (size_t)t0 * ldq, ok = (size_t)t0 * ldk, ov = (size_t)t0 * ldv, ob = (size_t)t0 * ldb;
        const real *q = Q + oq, *k = K + ok, *v = V + ov, *b = beta + ob, *dout = dO + (size_t)t0 * lddo;
        const real *S0 = states + (size_t)c * D * D;
        real *dq = dQ + oq, *dk = dK + ok, *dv = dV + ov, *db = dbeta + ob;
        ut_transform(&w, n, D, k, ldk, v, ldv, b, ldb);
        pseudo_values(&w, n, D, S0);
        gemm_serial(0, 1, n, n, D, q, ldq, k, ldk, 0, w.P, n);
        causal_mask(w.P, n);
        // dU' = P^T dO + K dS
        gemm_serial(1, 0, n, D, n, w.P, n, dout, lddo, 0, w.dU, D);
        gemm_serial(0, 0, n, D, D, k, ldk, w.dS, D, 1, w.dU, D);
        // dQ, dK through O = Q S0 + P U' and S1 = S0 + K^T U'
        gemm_serial(0, 1, n, D, D, dout, lddo, S0, D, 1, dq, ldq);
        gemm_serial(0, 1, n, n, D, dout, lddo, w.U, D, 0, w.dP, n);
        causal_mask(w.dP, n);
        gemm_serial(0, 0, n, D, n, w.dP, n, k, ldk, 1, dq, ldq);
        gemm_serial(1, 0, n, D, n, w.dP, n, q, ldq, 1, dk, ldk);
        gemm_serial(0, 1, n, D, D, w.U, D, w.dS, D, 1, dk, ldk);
        // dS0 = dS + Q^T dO - W^T dU' (dS is read above for the last time)
        gemm_serial(1, 0, D, D, n, q, ldq, dout, lddo, 1, w.dS, D);
        gemm_serial(1, 0, D, D, n, w.W, D, w.dU, D, 0, w.tmp, D);
        for (int i = 0; i < D * D; i++) w.dS[i] -= w.tmp[i];
        // dW = -dU' S0^T
        gemm_serial(0, 1, n, D, D, w.dU, D, S0, D, 0, w.dW, D);
        for (int i = 0; i < n * D; i++) w.dW[i] = -w.dW[i];
        // through U = Tm V and W = Tm K
        gemm_serial(1, 0, n, D, n, w.Tm, n, w.dU, D, 1, dv, ldv);
        gemm_serial(1, 0, n, D, n, w.Tm, n, w.dW, D, 1, dk, ldk);
        real *dTm = w.P, *dLinv = w.dP;  // P and dP are done with
        gemm_serial(0, 1, n, n, D, w.dU, D, v, ldv, 0, dTm, n);
        gemm_serial(0, 1, n, n, D, w.dW, D, k, ldk, 1, dTm, n);
        // Tm = Linv diag(beta) (lower with the diagonal)
        for (int j = 0; j < n; j++) {
            real s = 0;
            for (int i = j; i < n; i++) s += dTm[(size_t)i * n + j] * w.Linv[(size_t)i * n + j];
            db[(size_t)j * ldb] += s;
        }
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                dLinv[(size_t)i * n + j] = j <= i ? dTm[(size_t)i * n + j] * b[(size_t)j * ldb] : 0;
        // dA = -Linv^T dLinv Linv^T: X = Linv^T dLinv into dTm's place, then dA = X Linv^T into Tm's
        real *X = dTm, *dA = w.Tm;
        gemm_serial(1, 0, n, n, n, w.Linv, n, dLinv, n, 0, X, n);
        gemm_serial(0, 1, n, n, n, X, n, w.Linv, n, 0, dA, n);
        // A_ij = beta_i k_i . k_j below the diagonal; H = diag(beta) (-dA) there, 0 elsewhere
        real *H = dLinv;
        for (int i = 0; i < n; i++) {
            real s = 0, bi = b[(size_t)i * ldb];
            for (int j = 0; j < n; j++) {
                real g = j < i ? -dA[(size_t)i * n + j] : 0;
                s += g * w.KK[(size_t)i * n + j];
                H[(size_t)i * n + j] = bi * g;
            }
            db[(size_t)i * ldb] += s;
        }
        gemm_serial(0, 0, n, D, n, H, n, k, ldk, 1, dk, ldk);
        gemm_serial(1, 0, n, D, n, H, n, k, ldk, 1, dk, ldk);
    }
}

void delta_recurrent_step(int D, real *S, const real *q, const real *k, const real *v, real beta, real *o) {
    // u = beta (v - S^T k), then S += k u^T, o = S^T q
    for (int j = 0; j < D; j++) {
        real s = 0;
        for (int i = 0; i < D; i++) s += S[(size_t)i * D + j] * k[i];
        o[j] = beta * (v[j] - s);  // o holds u until the read below
    }
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) S[(size_t)i * D + j] += k[i] * o[j];
    for (int j = 0; j < D; j++) {
        real s = 0;
        for (int i = 0; i < D; i++) s += S[(size_t)i * D + j] * q[i];
        o[j] = s;
    }
}

void delta_map_prepare(int T, int D, const real *K, int ldk, const real *beta, int ldb, double *Akk) {
    for (int l = 0; l < T; l++)
        for (int j = 0; j < l; j++) {
            double s = 0;
            for (int d = 0; d < D; d++) s += (double)K[(size_t)l * ldk + d] * K[(size_t)j * ldk + d];
            Akk[(size_t)l * T + j] = (double)beta[(size_t)l * ldb] * s;
        }
}

// Row i of X = (Q K^T ⊙ M) (I + Akk)^{-1} solves X (I + Akk) = Q K^T ⊙ M from the right, last
// column first: x_j = q_i . k_j - sum_{j < l <= i} x_l Akk_lj. Then a_ij = x_j beta_j.
void delta_map_row(int T, int D, int i, const real *Q, int ldq, const real *K, int ldk, const real *beta, int ldb,
                   const double *Akk, double *x, real *a) {
    const real *qi = Q + (size_t)i * ldq;
    for (int j = i; j >= 0; j--) {
        double s = 0;
        for (int d = 0; d < D; d++) s += (double)qi[d] * K[(size_t)j * ldk + d];
        for (int l = j + 1; l <= i; l++) s -= x[l] * Akk[(size_t)l * T + j];
        x[j] = s;
        a[j] = (real)(s * beta[(size_t)j * ldb]);
    }
}
