// Based's Taylor linear attention on one head (Arora et al. 2024; docs/mixers.md#based): with the
// feature map of a projected feature dimension d,
//   phi(x) = [1, x / d^(1/4), vec(x x^T) / (sqrt(2) sqrt(d))]       F = 1 + d + d^2 features
//   phi(q).phi(k) = 1 + s + s^2 / 2,  s = q.k / sqrt(d)               (> 0: at least 1/2)
//   o_i = sum_{j<=i} (phi(q_i).phi(k_j)) v_j / (phi(q_i) . sum_{j<=i} phi(k_j) + 1e-12)
// Chunked (chunks of L tokens): within a chunk the n x n weights 1 + s + s^2/2 straight from the
// d-wide scores, across chunks the state S = sum_j phi(k_j) v_j^T [F, Dv] and the normaliser
// z = sum_j phi(k_j) [F] (one state [F, Dv + 1] in the docs and in step(); two here, so the
// products stay Dv wide). The plain quadratic reference: based_naive.h.
#pragma once
#include <stddef.h>

#include "core/real.h"

#define BASED_CHUNK 64   // the layer's default chunk (key based_chunk)
#define BASED_EPS 1e-12  // Zoology's eps in y = num / (den + eps)

// F = 1 + d + d^2, the width of phi.
int based_phi_width(int d);
// f[F] = phi(x[d]).
void based_phi(int d, const real *x, real *f);
// dx[d] += (d phi / d x)^T df[F].
void based_phi_backward(int d, const real *x, const real *df, real *dx);

// Reals of work one head's forward or backward needs (per thread), for up to T tokens.
size_t based_chunk_work(int T, int d, int Dv, int L);

// Q, K [T, d] and V [T, Dv] with row strides ldq, ldk, ldv; writes O [T, Dv] (stride ldo) and
// den[T] = phi(q_i) . sum_{j<=i} phi(k_j) + eps, the normaliser each row was divided by.
void based_chunk_forward(int T, int d, int Dv, int L, const real *Q, int ldq, const real *K, int ldk, const real *V,
                         int ldv, real *O, int ldo, real *den, real *work);
// Backward from dO [T, Dv] (stride lddo), given the forward's O and den: ACCUMULATES into dQ, dK,
// dV (the strides of Q, K, V).
void based_chunk_backward(int T, int d, int Dv, int L, const real *Q, int ldq, const real *K, int ldk, const real *V,
                          int ldv, const real *O, int ldo, const real *den, const real *dO, int lddo, real *dQ,
                          real *dK, real *dV, real *work);
// The weight a_ij before the normaliser: 1 + s + s^2 / 2 of s = q.k / sqrt(d).
real based_weight(int d, const real *q, const real *k);
