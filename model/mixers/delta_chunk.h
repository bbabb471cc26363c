// The delta rule (DeltaNet: Schlag et al. 2021; Yang et al. 2024, arXiv 2406.06484), for one
// sequence and head, in chunks (docs/mixers.md#deltanet). Q, K [T, D] (q already scaled, q and k
// L2-normalised by the caller), V, O [T, D], beta [T] in (0, 1):
//   S_t = (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T      (S [D, D], S_{-1} = 0)
//   o_t = S_t^T q_t
// Equivalently u_t = beta_t (v_t - S_{t-1}^T k_t) (the "pseudo-value": what the key's slot is
// missing), S_t = S_{t-1} + k_t u_t^T. Over a chunk of n tokens entering with state S0, the u_t
// solve a unit lower-triangular system (the WY / UT transform):
//   (I + tril(diag(beta) K K^T, -1)) U' = diag(beta) (V - K S0)
// so with Tm = (I + tril(diag(beta) K K^T, -1))^{-1} diag(beta) (the inverse by forward
// substitution), W = Tm K and U = Tm V:
//   U' = U - W S0,   O = Q S0 + (Q K^T ⊙ M) U',   S1 = S0 + K^T U'      (M: causal, diagonal in)
// all n x n and n x D matmuls (U' computed as Tm (V - K S0), so W is never formed; the triangular
// factors' zero halves are skipped, and so are the products with S0 = 0 in the first chunk). Gated DeltaNet (Yang, Kautz, Hatamizadeh 2024, arXiv 2412.06464)
// adds a decay alpha_t = exp(g_t) in (0, 1]: S_t = alpha_t (I - beta_t k_t k_t^T) S_{t-1} +
// beta_t k_t v_t^T. With gam_i = g_0 + ... + g_i summed from the chunk's start, c_i = exp(gam_i),
// Gam_ij = exp(gam_i - gam_j) (j <= i) and r_j = exp(gam_{n-1} - gam_j), the same form holds with
//   A_ij = beta_i k_i . k_j Gam_ij,  W = Tm diag(c) K,  O = diag(c) Q S0 + (Q K^T ⊙ Gam ⊙ M) U',
//   S1 = c_{n-1} S0 + K^T diag(r) U'
// every exponent <= 0. The g* functions take g [T] (stride ldg), or NULL for DeltaNet, whose
// operations (and bits) are then exactly the plain ones. Chunks of L tokens: time O(T (L D + D^2 + L^2)), memory
// O(L^2 + L D + D^2) per call plus the chunk-entry states. Serial: call it per (sequence, head)
// from inside a parallel loop; sums run in a fixed order.
#pragma once
#include <stddef.h>

#include "core/real.h"

#define DELTA_CHUNK 64  // the layer's default chunk (key deltanet_chunk)

// sum_i a_i b_i in a fixed order that vectorises: 16 running sums (lane i % 16), then added
// pairwise. A plain `s += a[i] * b[i]` is one chain of dependent FMAs (4 cycles each: 256 for a
// row of 64) that the compiler may not reorder; this is ~10x faster and the same bits at any
// thread count (not the same bits as the plain loop).
static inline real delta_dot(int n, const real *a, const real *b) {
    real acc[16] = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) acc[j] += a[i + j] * b[i + j];
    for (int j = 0; i < n; i++, j++) acc[j] += a[i] * b[i];
    for (int w = 8; w > 0; w /= 2)
        for (int j = 0; j < w; j++) acc[j] += acc[j + w];
    return acc[0];
}

// Chunk-entry states one call saves: ceil(T / L) matrices of D x D.
int delta_n_states(int T, int L);
// Reals of work one call (forward or backward) needs.
size_t delta_chunk_work(int D, int L);

// O (row stride ldo) from Q, K, V (row strides ldq, ldk, ldv) and beta (stride ldb); writes the
// state entering each chunk to states [delta_n_states(T, L), D, D] for the backward (but the
// first, which is zero: neither pass touches states[0]).
void delta_chunk_forward(int T, int D, int L, const real *Q, int ldq, const real *K, int ldk, const real *V, int ldv,
                         const real *beta, int ldb, real *O, int ldo, real *states, real *work);

// Given dO, ACCUMULATES dQ, dK, dV (layouts of Q, K, V) and dbeta (stride ldb), reading the states
// the forward saved; each chunk's Tm and U' are recomputed. One pass in reverse time carrying
// dS = dLoss/dS at the chunk's end.
void delta_chunk_backward(int T, int D, int L, const real *Q, int ldq, const real *K, int ldk, const real *V, int ldv,
                          const real *beta, int ldb, const real *states, const real *dO, int lddo, real *dQ, real *dK,
                          real *dV, real *dbeta, real *work);

// The same with log-decays g (NULL: none); the backward also ACCUMULATES dg (NULL when g is).
void gdelta_chunk_forward(int T, int D, int L, const real *Q, int ldq, const real *K, int ldk, const real *V, int ldv,
                          const real *beta, int ldb, const real *g, int ldg, real *O, int ldo, real *states, real *work);
void gdelta_chunk_backward(int T, int D, int L, const real *Q, int ldq, const real *K, int ldk, const real *V, int ldv,
                           const real *beta, int ldb, const real *g, int ldg, const real *states, const real *dO,
                           int lddo, real *dQ, real *dK, real *dV, real *dbeta, real *dg, real *work);

// The same with a hook called per chunk of rows t0 .. t0 + n - 1, with after = 0 before the
// kernel reads the chunk's Q, K, V, beta and g (forward: a caller may produce them there, so they
// are in cache for the kernel; backward: it may zero the chunk's rows of dQ, dK, dV there) and, in
// the backward, with after = 1 once the chunk's dQ, dK, dV, dbeta and dg are final (they are
// written while the kernel is on that chunk only). NULL: as the plain calls above.
typedef void (*DeltaChunkHook)(void *ctx, int t0, int n, int after);
void gdelta_chunk_forward_hook(int T, int D, int L, const real *Q, int ldq, const real *K, int ldk, const real *V,
                               int ldv, const real *beta, int ldb, const real *g, int ldg, real *O, int ldo,
                               real *states, real *work, DeltaChunkHook hook, void *ctx);
void gdelta_chunk_backward_hook(int T, int D, int L, const real *Q, int ldq, const real *K, int ldk, const real *V,
                                int ldv, const real *beta, int ldb, const real *g, int ldg, const real *states,
                                const real *dO, int lddo, real *dQ, real *dK, real *dV, real *dbeta, real *dg,
                                real *work, DeltaChunkHook hook, void *ctx);

// The recurrence, one token (generation): S [D, D] updated in place, o [D] = S^T q.
void delta_recurrent_step(int D, real *S, const real *q, const real *k, const real *v, real beta, real *o);
// With a decay alpha (S = alpha S first; 1 leaves S as it is).
void gdelta_recurrent_step(int D, real *S, const real *q, const real *k, const real *v, real beta, real alpha, real *o);

// Row i of the exact map of the whole sequence from position 0 with zero state,
// A = (Q K^T ⊙ M) (I + tril(diag(beta) K K^T, -1))^{-1} diag(beta), so that o = A v:
// a[0..i] (the rest of the row is left alone). Akk [T, T] holds beta_l k_l . k_j for j < l
// (delta_map_prepare); x [T] is work. O(i^2) per row.
void delta_map_prepare(int T, int D, const real *K, int ldk, const real *beta, int ldb, double *Akk);
void delta_map_row(int T, int D, int i, const real *Q, int ldq, const real *K, int ldk, const real *beta, int ldb,
                   const double *Akk, double *x, real *a);
// With log-decays g (NULL: none): Akk_lj = beta_l k_l . k_j Gamma_lj with Gamma_lj = exp(gam_l -
// gam_j), gam [T] the cumulative sums of g over the whole sequence (written by prepare, unread
// without g), so A = (Q K^T ⊙ Gamma ⊙ M) (I + tril(Akk, -1))^{-1} diag(beta). gam NULL in the row
// call: no decay.
void gdelta_map_prepare(int T, int D, const real *K, int ldk, const real *beta, int ldb, const real *g, int ldg,
                        double *Akk, double *gam);
void gdelta_map_row(int T, int D, int i, const real *Q, int ldq, const real *K, int ldk, const real *beta, int ldb,
                    const double *gam, const double *Akk, double *x, real *a);
