#include "model/mixers/delta_chunk.h"

#include <math.h>
#include <string.h>

#include "model/kernels/gemm.h"
#include "model/kernels/gemm_tri.h"
#include "model/kernels/vmath.h"

int delta_n_states(int T, int L) { return (T + L - 1) / L; }

// Work layout (both passes): S, dS [D, D]; KK, Linv, Tm, P, dP, Gam, QK, dGam [L, L]; U, dU, E,
// Z, Kd, X, Kt, Ut [L, D] (Kt, Ut: K and U' transposed, [D, n]); gam, c, r, dgam, dc, dr [L]; tmp
// [max(L, D), D] for the n x D and D x D products. The decay's buffers go unused without g.
size_t delta_chunk_work(int D, int L) {
    return 2 * (size_t)D * D + 8 * (size_t)L * L + 8 * (size_t)L * D + 6 * (size_t)L + (size_t)(L > D ? L : D) * D;
}

typedef struct {
    real *S, *dS, *KK, *Linv, *Tm, *P, *dP, *Gam, *QK, *dGam, *U, *dU, *E, *Z, *Kd, *X, *Kt, *Ut;
    real *gam, *c, *r, *dgam, *dc, *dr, *tmp;
} Work;

static Work carve(real *w, int D, int L) {
    size_t DD = (size_t)D * D, LL = (size_t)L * L, LD = (size_t)L * D;
    Work k;
    k.S = w, k.dS = k.S + DD, k.KK = k.dS + DD, k.Linv = k.KK + LL, k.Tm = k.Linv + LL, k.P = k.Tm + LL;
    k.dP = k.P + LL, k.Gam = k.dP + LL, k.QK = k.Gam + LL, k.dGam = k.QK + LL, k.U = k.dGam + LL;
    k.dU = k.U + LD, k.E = k.dU + LD, k.Z = k.E + LD, k.Kd = k.Z + LD, k.X = k.Kd + LD;
    k.Kt = k.X + LD, k.Ut = k.Kt + LD, k.gam = k.Ut + LD, k.c = k.gam + L, k.r = k.c + L, k.dgam = k.r + L,
    k.dc = k.dgam + L, k.dr = k.dc + L;
    k.tmp = k.dr + L;
    return k;
}

// xt [D, n] = x^T (x [n, D], row stride ldx).
static void transpose(int n, int D, const real *x, int ldx, real *xt) {
    for (int i0 = 0; i0 < n; i0 += 16) {  // 16 rows of x at a time (in L1), written a column at a time
        int i1 = i0 + 16 < n ? i0 + 16 : n;
        for (int d = 0; d < D; d++)
            for (int i = i0; i < i1; i++) xt[(size_t)d * n + i] = x[(size_t)i * ldx + d];
    }
}

// The chunk's decays from its n log-decays g (stride ldg): gam_i = g_0 + ... + g_i, summed from
// the chunk's start (a segment sum, so it never grows with the position in the sequence), c_i =
// exp(gam_i) the decay from the chunk's entry to token i, r_j = exp(gam_{n-1} - gam_j) from token j
// to the chunk's end, Gam_ij = exp(gam_i - gam_j) for j <= i (0 above): every exponent is <= 0,
// nothing overflows at any length. Kd = diag(c) K.
static void decays(const Work *w, int n, int D, const real *g, int ldg, const real *k, int ldk) {
    for (int i = 0; i < n; i++) w->gam[i] = (i ? w->gam[i - 1] : 0) + g[(size_t)i * ldg];
    const real *gm = w->gam;
    for (int i = 0; i < n; i++) {
        w->c[i] = vexpr_nonpos(gm[i]), w->r[i] = vexpr_nonpos(gm[n - 1] - gm[i]);
        real *gi = w->Gam + (size_t)i * n;
#pragma omp simd
        for (int j = 0; j <= i; j++) gi[j] = vexpr_nonpos(gm[i] - gm[j]);
        for (int j = i + 1; j < n; j++) gi[j] = 0;
        for (int d = 0; d < D; d++) w->Kd[(size_t)i * D + d] = w->c[i] * k[(size_t)i * ldk + d];
    }
}

// A[n, n] keeps its lower triangle with the diagonal, 0 above.
static void causal_mask(real *A, int n) {
    for (int r = 0; r < n; r++)
        for (int c = r + 1; c < n; c++) A[(size_t)r * n + c] = 0;
}

// Columns j0 .. j0 + nb of row i of the forward substitution (below): li = e_i - sum_l a_l Linv_l
// over the rows l = j0 .. i - 1, the FMAs in order of l; nb a constant at the fast call sites.
static inline void subst_block(int nb, int i, int j0, int n, const real *arow, const real *Linv, real *li) {
    real acc[64];
    for (int t = 0; t < nb; t++) acc[t] = j0 + t == i;
    for (int l = j0; l < i; l++) {
        const real *ll = Linv + (size_t)l * n + j0, a = arow[l];
        for (int t = 0; t < nb; t++) acc[t] -= a * ll[t];
    }
    for (int t = 0; t < nb; t++) li[j0 + t] = acc[t];
}

// Row i of a 64-row forward substitution (below), its sum over l cut to where row l of Linv can
// be nonzero: row l is zero past column l, so in the l-th block of 16 rows only the first
// 16 (l / 16 + 1) columns take its term. The terms left out are the exact zeros subst_block adds,
// so the bits are the same; the row's 64 sums stay in registers throughout.
static inline void subst_row64(int i, const real *arow, const real *Linv, real *li) {
    real acc[64];
    for (int t = 0; t < 64; t++) acc[t] = t == i;
    int l = 0;
    for (; l < i && l < 16; l++)
        for (int t = 0; t < 16; t++) acc[t] -= arow[l] * Linv[(size_t)l * 64 + t];
    for (; l < i && l < 32; l++)
        for (int t = 0; t < 32; t++) acc[t] -= arow[l] * Linv[(size_t)l * 64 + t];
    for (; l < i && l < 48; l++)
        for (int t = 0; t < 48; t++) acc[t] -= arow[l] * Linv[(size_t)l * 64 + t];
    for (; l < i; l++)
        for (int t = 0; t < 64; t++) acc[t] -= arow[l] * Linv[(size_t)l * 64 + t];
    for (int t = 0; t < 64; t++) li[t] = acc[t];
}

// The chunk's n rows (k, v, beta at the chunk's start; entering with state S0, NULL when zero):
// KK = K K^T (lower triangle), then by forward substitution Linv = (I + A)^{-1} with A_ij = beta_i
// k_i . k_j (times Gam_ij with a decay) below the diagonal (unit lower-triangular, so row i needs
// only the rows above it: Linv_i = e_i - sum_{l < i} A_il Linv_l, whole rows, zero past the
// diagonal), Tm = Linv diag(beta); the effective values E = V - Kd S0 (Kd = K without a decay;
// E = V itself when S0 = 0: then *e, *lde point at V) and the pseudo-values U' = Tm E into U.
static void ut_transform(const Work *w, int n, int D, const real *k, int ldk, const real *kd, int ldkd, const real *v,
                         int ldv, const real *beta, int ldb, int decay, const real *S0, const real **e, int *lde) {
    transpose(n, D, k, ldk, w->Kt);
    gemm_lower_c(n, D, k, ldk, 0, w->Kt, n, w->KK, n);
    real *arow = w->Tm;  // row i of A, before Tm is written
    for (int i = 0; i < n; i++) {
        real *li = w->Linv + (size_t)i * n, bi = beta[(size_t)i * ldb];
        for (int l = 0; l < i; l++) arow[l] = bi * w->KK[(size_t)i * n + l] * (decay ? w->Gam[(size_t)i * n + l] : 1);
        // row i, columns j0.. in blocks of 64, 16 or what is left, each held in registers and
        // summed from the block's first row on (the rows above add exact zeros to it); past the
        // diagonal the row is zero
        if (n == 64) {
            subst_row64(i, arow, w->Linv, li);
            continue;
        }
        for (int j0 = 0; j0 < n;) {
            int nb = n - j0 >= 64 ? 64 : n - j0 >= 16 ? 16 : n - j0;
            if (j0 > i) nb = n - j0, memset(li + j0, 0, sizeof(real) * nb);
            else if (nb == 64) subst_block(64, i, j0, n, arow, w->Linv, li);
            else if (nb == 16) subst_block(16, i, j0, n, arow, w->Linv, li);
            else subst_block(nb, i, j0, n, arow, w->Linv, li);
            j0 += nb;
        }
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) w->Tm[(size_t)i * n + j] = w->Linv[(size_t)i * n + j] * beta[(size_t)j * ldb];
    if (S0) {
        gemm_serial(0, 0, n, D, D, kd, ldkd, S0, D, 0, w->E, D);
        for (int i = 0; i < n; i++)
            for (int d = 0; d < D; d++) w->E[(size_t)i * D + d] = v[(size_t)i * ldv + d] - w->E[(size_t)i * D + d];
        *e = w->E, *lde = D;
    } else {
        *e = v, *lde = ldv;
    }
    gemm_lower_a(n, D, w->Tm, n, *e, *lde, 0, w->U, D);
}

// dst_i += s_i src_i for n rows of D (src [n, D] dense), and ds_i = src_i . y_i when ds: the
// gradient of a row scale s (dst = diag(s) Y's gradient src).
static void add_scaled_rows(int n, int D, const real *s, const real *src, real *dst, int ldd, const real *y, int ldy,
                            real *ds) {
    for (int i = 0; i < n; i++) {
        const real *si = src + (size_t)i * D;
        real *di = dst + (size_t)i * ldd;
        for (int d = 0; d < D; d++) di[d] += s[i] * si[d];
        if (ds) ds[i] += delta_dot(D, si, y + (size_t)i * ldy);
    }
}

// The first chunk enters with S0 = 0 and the last leaves with dS = 0: the products with them are
// left out (and their consumers), as is dS0 for the first chunk, which nothing reads.
void gdelta_chunk_forward_hook(int T, int D, int L, const real *Q, int ldq, const real *K, int ldk, const real *V,
                               int ldv, const real *beta, int ldb, const real *g, int ldg, real *O, int ldo,
                               real *states, real *work, DeltaChunkHook hook, void *ctx) {
    Work w = carve(work, D, L);
    memset(w.S, 0, sizeof(real) * D * D);
    for (int t0 = 0, c = 0; t0 < T; t0 += L, c++) {
        int n = T - t0 < L ? T - t0 : L;
        if (hook) hook(ctx, t0, n, 0);
        const real *q = Q + (size_t)t0 * ldq, *k = K + (size_t)t0 * ldk, *v = V + (size_t)t0 * ldv, *e;
        real *o = O + (size_t)t0 * ldo;
        int lde;
        if (c) memcpy(states + (size_t)c * D * D, w.S, sizeof(real) * D * D);
        if (g) decays(&w, n, D, g + (size_t)t0 * ldg, ldg, k, ldk);
        ut_transform(&w, n, D, k, ldk, g ? w.Kd : k, g ? D : ldk, v, ldv, beta + (size_t)t0 * ldb, ldb, g != NULL,
                     c ? w.S : NULL, &e, &lde);
        if (c) {  // from the state: diag(c) Q S0
            gemm_serial(0, 0, n, D, D, q, ldq, w.S, D, 0, o, ldo);
            if (g)
                for (int i = 0; i < n; i++)
                    for (int d = 0; d < D; d++) o[(size_t)i * ldo + d] *= w.c[i];
        }
        gemm_lower_c(n, D, q, ldq, 0, w.Kt, n, w.P, n);  // within the chunk: (Q K^T ⊙ Gam ⊙ M) U'
        causal_mask(w.P, n);
        if (g)
            for (int i = 0; i < n * n; i++) w.P[i] *= w.Gam[i];
        gemm_lower_a(n, D, w.P, n, w.U, D, c ? 1 : 0, o, ldo);
        if (t0 + n >= T) continue;
        if (g) {  // S1 = c_{n-1} S0 + K^T diag(r) U'
            for (int i = 0; i < D * D; i++) w.S[i] *= w.c[n - 1];
            for (int i = 0; i < n; i++)
                for (int d = 0; d < D; d++) w.tmp[(size_t)i * D + d] = w.r[i] * w.U[(size_t)i * D + d];
            gemm_serial(1, 0, D, D, n, k, ldk, w.tmp, D, 1, w.S, D);
        } else {  // S1 = S0 + K^T U'
            gemm_serial(1, 0, D, D, n, k, ldk, w.U, D, 1, w.S, D);
        }
    }
}

// Reverse time. With dS the gradient of the state leaving the chunk and S0 the state entering it
// (without a decay read c = r = Gam = 1 and drop the lines on them):
//   dU' = P^T dO + diag(r) K dS                  (P = Q K^T ⊙ Gam ⊙ M)
//   dQ += diag(c) dO S0^T + (dO U'^T ⊙ M ⊙ Gam) K;  dK += (dO U'^T ⊙ M ⊙ Gam)^T Q + diag(r) U' dS^T
//   dS0 = c_{n-1} dS + Q^T diag(c) dO - Kd^T Y   (S0 enters O, S1 and E = V - Kd S0)
// Through U' = Tm E = Linv diag(beta) E, with Z = Linv^T dU' and Y = diag(beta) Z = dE:
//   dbeta_j += E_j . Z_j;  dV += Y;  dKd = -Y S0^T: dK += diag(c) dKd (and dc);
//   Linv = (I + A)^{-1}, dLinv = dU' (diag(beta) E)^T: dA = -Linv^T dLinv Linv^T = -Z U'^T, kept
//   below the diagonal (A's support; the rest of dLinv, above the diagonal, adds nothing there)
//   A_ij = beta_i k_i . k_j Gam_ij (i > j): dbeta_i += sum_j dA_ij k_i . k_j Gam_ij; with
//   H = diag(beta) dA ⊙ Gam, dK += H K + H^T K.
// The decays: dc, dr, dc_{n-1} and dGam (from P and A) gather into dgam (c_i = exp(gam_i): dgam_i
// += c_i dc_i; Gam_ij = exp(gam_i - gam_j): dgam_i += Gam_ij dGam_ij, dgam_j -= the same), and
// gam_i = g_0 + ... + g_i gives dg_t = sum_{i >= t} dgam_i.
void gdelta_chunk_backward_hook(int T, int D, int L, const real *Q, int ldq, const real *K, int ldk, const real *V,
                                int ldv, const real *beta, int ldb, const real *g, int ldg, const real *states,
                                const real *dO, int lddo, real *dQ, real *dK, real *dV, real *dbeta, real *dg,
                                real *work, DeltaChunkHook hook, void *ctx) {
    Work w = carve(work, D, L);
    memset(w.dS, 0, sizeof(real) * D * D);
    int last = (T - 1) / L * L;
    for (int t0 = last, c = last / L; t0 >= 0; t0 -= L, c--) {
        int n = T - t0 < L ? T - t0 : L, lde, ds = t0 != last;  // ds: dS nonzero; c: S0 nonzero, dS0 read
        if (hook) hook(ctx, t0, n, 0);
        size_t oq = (size_t)t0 * ldq, ok = (size_t)t0 * ldk, ov = (size_t)t0 * ldv, ob = (size_t)t0 * ldb;
        const real *q = Q + oq, *k = K + ok, *v = V + ov, *b = beta + ob, *dout = dO + (size_t)t0 * lddo, *e;
        const real *S0 = states + (size_t)c * D * D, *kd = g ? w.Kd : k;
        real *dq = dQ + oq, *dk = dK + ok, *dv = dV + ov, *db = dbeta + ob;
        int ldkd = g ? D : ldk;
        if (g) {
            decays(&w, n, D, g + (size_t)t0 * ldg, ldg, k, ldk);
            for (int i = 0; i < n; i++) w.dc[i] = w.dr[i] = 0;
            for (int i = 0; i < n * n; i++) w.dGam[i] = 0;
        }
        ut_transform(&w, n, D, k, ldk, kd, ldkd, v, ldv, b, ldb, g != NULL, c ? S0 : NULL, &e, &lde);
        gemm_lower_c(n, D, q, ldq, 0, w.Kt, n, w.P, n);
        causal_mask(w.P, n);
        if (g) {
            memcpy(w.QK, w.P, sizeof(real) * n * n);
            for (int i = 0; i < n * n; i++) w.P[i] *= w.Gam[i];
        }
        // dU' = P^T dO + diag(r) K dS
        gemm_lower_at(n, D, w.P, n, dout, lddo, 0, w.dU, D);
        if (ds && g) {
            gemm_serial(0, 0, n, D, D, k, ldk, w.dS, D, 0, w.X, D);
            add_scaled_rows(n, D, w.r, w.X, w.dU, D, NULL, 0, NULL);
        } else if (ds) {
            gemm_serial(0, 0, n, D, D, k, ldk, w.dS, D, 1, w.dU, D);
        }
        // dQ, dK through O = diag(c) Q S0 + P U' and S1 = c_{n-1} S0 + K^T diag(r) U'
        if (c && g) {
            gemm_serial(0, 1, n, D, D, dout, lddo, S0, D, 0, w.X, D);
            add_scaled_rows(n, D, w.c, w.X, dq, ldq, q, ldq, w.dc);
        } else if (c) {
            gemm_serial(0, 1, n, D, D, dout, lddo, S0, D, 1, dq, ldq);
        }
        transpose(n, D, w.U, D, w.Ut);
        gemm_lower_c(n, D, dout, lddo, 0, w.Ut, n, w.dP, n);
        causal_mask(w.dP, n);
        if (g)
            for (int i = 0; i < n * n; i++) w.dGam[i] = w.dP[i] * w.QK[i], w.dP[i] *= w.Gam[i];
        gemm_lower_a(n, D, w.dP, n, k, ldk, 1, dq, ldq);
        gemm_lower_at(n, D, w.dP, n, q, ldq, 1, dk, ldk);
        real dc_last = 0;
        if (ds && g) {
            gemm_serial(0, 1, n, D, D, w.U, D, w.dS, D, 0, w.X, D);
            add_scaled_rows(n, D, w.r, w.X, dk, ldk, k, ldk, w.dr);
            if (c) dc_last = delta_dot(D * D, S0, w.dS);
        } else if (ds) {
            gemm_serial(0, 1, n, D, D, w.U, D, w.dS, D, 1, dk, ldk);
        }
        if (c) {  // dS0 = c_{n-1} dS + Q^T diag(c) dO, less Kd^T Y below
            if (g) {
                for (int i = 0; i < D * D; i++) w.dS[i] *= w.c[n - 1];
                for (int i = 0; i < n; i++)
                    for (int d = 0; d < D; d++) w.X[(size_t)i * D + d] = w.c[i] * dout[(size_t)i * lddo + d];
                gemm_serial(1, 0, D, D, n, q, ldq, w.X, D, 1, w.dS, D);
            } else {
                gemm_serial(1, 0, D, D, n, q, ldq, dout, lddo, 1, w.dS, D);
            }
        }
        // Z = Linv^T dU'; dbeta_j += E_j . Z_j; dA = -Z U'^T below the diagonal (into dP's place)
        gemm_lower_at(n, D, w.Linv, n, w.dU, D, 0, w.Z, D);
        for (int j = 0; j < n; j++) db[(size_t)j * ldb] += delta_dot(D, e + (size_t)j * lde, w.Z + (size_t)j * D);
        real *mA = w.dP;  // Z U'^T = -dA
        gemm_lower_c(n, D, w.Z, D, 0, w.Ut, n, mA, n);
        // Z becomes -Y = -diag(beta) Z: dV += Y, dKd = -Y S0^T, dS0 += Kd^T (-Y)
        for (int j = 0; j < n; j++)
            for (int d = 0; d < D; d++) w.Z[(size_t)j * D + d] *= -b[(size_t)j * ldb];
        for (int j = 0; j < n; j++)
            for (int d = 0; d < D; d++) dv[(size_t)j * ldv + d] -= w.Z[(size_t)j * D + d];
        if (c) {
            if (g) {
                gemm_serial(0, 1, n, D, D, w.Z, D, S0, D, 0, w.X, D);
                add_scaled_rows(n, D, w.c, w.X, dk, ldk, k, ldk, w.dc);
            } else {
                gemm_serial(0, 1, n, D, D, w.Z, D, S0, D, 1, dk, ldk);
            }
            gemm_serial(1, 0, D, D, n, kd, ldkd, w.Z, D, 1, w.dS, D);
        }
        // A_ij = beta_i k_i . k_j Gam_ij below the diagonal; H = diag(beta) dA ⊙ Gam there, 0 elsewhere
        real *H = w.Tm;                // Tm is done with
        for (int i = 0; i < n; i++) {  // (KK and mA hold only their lower triangles)
            real bi = b[(size_t)i * ldb], *Hi = H + (size_t)i * n;
            const real *mAi = mA + (size_t)i * n, *KKi = w.KK + (size_t)i * n;
            if (g) {
                real *dGi = w.dGam + (size_t)i * n;
                const real *Gi = w.Gam + (size_t)i * n;
#pragma omp simd
                for (int j = 0; j < i; j++) dGi[j] += bi * -mAi[j] * KKi[j], Hi[j] = -mAi[j] * Gi[j];
            } else {
#pragma omp simd
                for (int j = 0; j < i; j++) Hi[j] = -mAi[j];
            }
            db[(size_t)i * ldb] += delta_dot(i, Hi, KKi);  // H_ij holds dA_ij Gam_ij until the scale by beta_i
#pragma omp simd
            for (int j = 0; j < i; j++) Hi[j] *= bi;
            for (int j = i; j < n; j++) Hi[j] = 0;
        }
        gemm_lower_a(n, D, H, n, k, ldk, 1, dk, ldk);
        gemm_lower_at(n, D, H, n, k, ldk, 1, dk, ldk);
        if (!g) {
            if (hook) hook(ctx, t0, n, 1);
            continue;
        }
        // the decays into dgam, then dg by the reverse cumulative sum
        for (int i = 0; i < n; i++) w.dgam[i] = w.c[i] * w.dc[i] - w.r[i] * w.dr[i];
        real *col = w.dc;  // dc is read: the column sums of dGam ⊙ Gam, built a row at a time
        for (int j = 0; j < n; j++) col[j] = 0;
        for (int i = 0; i < n; i++) {
            const real *dGi = w.dGam + (size_t)i * n, *Gi = w.Gam + (size_t)i * n;
            real s = 0;
#pragma omp simd reduction(+ : s)
            for (int j = 0; j < i; j++) {
                real e_ = dGi[j] * Gi[j];
                s += e_, col[j] += e_;
            }
            w.dgam[i] += s;
        }
        for (int j = 0; j < n; j++) w.dgam[j] -= col[j];
        real dlast = w.c[n - 1] * dc_last;
        for (int j = 0; j < n; j++) dlast += w.r[j] * w.dr[j];
        w.dgam[n - 1] += dlast;
        real acc = 0;
        for (int i = n - 1; i >= 0; i--) acc += w.dgam[i], dg[(size_t)(t0 + i) * ldg] += acc;
        if (hook) hook(ctx, t0, n, 1);
    }
}

void gdelta_chunk_forward(int T, int D, int L, const real *Q, int ldq, const real *K, int ldk, const real *V, int ldv,
                          const real *beta, int ldb, const real *g, int ldg, real *O, int ldo, real *states, real *work) {
    gdelta_chunk_forward_hook(T, D, L, Q, ldq, K, ldk, V, ldv, beta, ldb, g, ldg, O, ldo, states, work, NULL, NULL);
}

void gdelta_chunk_backward(int T, int D, int L, const real *Q, int ldq, const real *K, int ldk, const real *V, int ldv,
                           const real *beta, int ldb, const real *g, int ldg, const real *states, const real *dO,
                           int lddo, real *dQ, real *dK, real *dV, real *dbeta, real *dg, real *work) {
    gdelta_chunk_backward_hook(T, D, L, Q, ldq, K, ldk, V, ldv, beta, ldb, g, ldg, states, dO, lddo, dQ, dK, dV, dbeta,
                               dg, work, NULL, NULL);
}

void delta_chunk_forward(int T, int D, int L, const real *Q, int ldq, const real *K, int ldk, const real *V, int ldv,
                         const real *beta, int ldb, real *O, int ldo, real *states, real *work) {
    gdelta_chunk_forward(T, D, L, Q, ldq, K, ldk, V, ldv, beta, ldb, NULL, 0, O, ldo, states, work);
}

void delta_chunk_backward(int T, int D, int L, const real *Q, int ldq, const real *K, int ldk, const real *V, int ldv,
                          const real *beta, int ldb, const real *states, const real *dO, int lddo, real *dQ, real *dK,
                          real *dV, real *dbeta, real *work) {
    gdelta_chunk_backward(T, D, L, Q, ldq, K, ldk, V, ldv, beta, ldb, NULL, 0, states, dO, lddo, dQ, dK, dV, dbeta,
                          NULL, work);
}

void gdelta_recurrent_step(int D, real *S, const real *q, const real *k, const real *v, real beta, real alpha, real *o) {
    // S = alpha S, u = beta (v - S^T k), then S += k u^T, o = S^T q
    if (alpha != 1)
        for (int i = 0; i < D * D; i++) S[i] *= alpha;
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

void delta_recurrent_step(int D, real *S, const real *q, const real *k, const real *v, real beta, real *o) {
    gdelta_recurrent_step(D, S, q, k, v, beta, 1, o);
}

void gdelta_map_prepare(int T, int D, const real *K, int ldk, const real *beta, int ldb, const real *g, int ldg,
                        double *Akk, double *gam) {
    for (int t = 0; g && t < T; t++) gam[t] = (t ? gam[t - 1] : 0) + g[(size_t)t * ldg];
    for (int l = 0; l < T; l++)
        for (int j = 0; j < l; j++) {
            double s = 0;
            for (int d = 0; d < D; d++) s += (double)K[(size_t)l * ldk + d] * K[(size_t)j * ldk + d];
            Akk[(size_t)l * T + j] = (double)beta[(size_t)l * ldb] * s * (g ? exp(gam[l] - gam[j]) : 1);
        }
}

// Row i of X = (Q K^T ⊙ Gamma ⊙ M) (I + Akk)^{-1} solves X (I + Akk) = Q K^T ⊙ Gamma ⊙ M from the
// right, last column first: x_j = q_i . k_j Gamma_ij - sum_{j < l <= i} x_l Akk_lj. Then a_ij =
// x_j beta_j. Gamma_ij = exp(gam_i - gam_j) <= 1 (j <= i), 1 without a decay.
void gdelta_map_row(int T, int D, int i, const real *Q, int ldq, const real *K, int ldk, const real *beta, int ldb,
                    const double *gam, const double *Akk, double *x, real *a) {
    const real *qi = Q + (size_t)i * ldq;
    for (int j = i; j >= 0; j--) {
        double s = 0;
        for (int d = 0; d < D; d++) s += (double)qi[d] * K[(size_t)j * ldk + d];
        if (gam) s *= exp(gam[i] - gam[j]);
        for (int l = j + 1; l <= i; l++) s -= x[l] * Akk[(size_t)l * T + j];
        x[j] = s;
        a[j] = (real)(s * beta[(size_t)j * ldb]);
    }
}

void delta_map_prepare(int T, int D, const real *K, int ldk, const real *beta, int ldb, double *Akk) {
    gdelta_map_prepare(T, D, K, ldk, beta, ldb, NULL, 0, Akk, NULL);
}

void delta_map_row(int T, int D, int i, const real *Q, int ldq, const real *K, int ldk, const real *beta, int ldb,
                   const double *Akk, double *x, real *a) {
    gdelta_map_row(T, D, i, Q, ldq, K, ldk, beta, ldb, NULL, Akk, x, a);
}
