// Causal linear attention with a constant scalar decay g, for one sequence and head, in chunks
// (docs/mixers.md#linear and #decay; fla's naive_chunk form):
//   O_i = scale sum_{j<=i} g^(i-j) (Q_i . K_j) V_j            Q, K [T, K], V, O [T, W]
// equivalently the recurrence S_i = g S_{i-1} + K_i V_i^T, O_i = scale S_i^T Q_i. Chunks of
// L = LIN_CHUNK tokens: within a chunk the L x L decayed scores, across chunks the K x W state,
// so time is O(T (L (K + W) + K W)) and memory O(L^2 + K W), never T x T. Used by `decay`
// (g = gamma_h), `identity` (g = 1) and `cosformer` (g = 1 on its 2D-wide sin/cos features, with
// a column of ones appended to V for the normaliser). Serial: call it per (sequence, head) from
// inside a parallel loop; sums run in a fixed order.
#pragma once
#include <stddef.h>

#include "core/real.h"

#define LIN_CHUNK 64

// Reals of work one call needs.
size_t lin_chunk_work(int K, int W);

// O (row stride ldo) = the attention above. Matrices are row-major with the given row strides.
void lin_chunk_forward(int T, int K, int W, real g, real scale, const real *Q, int ldq, const real *Kt, int ldk,
                       const real *V, int ldv, real *O, int ldo, real *work);

// Given dO, ACCUMULATES dQ, dK, dV (same layouts as Q, K, V).
void lin_chunk_backward(int T, int K, int W, real g, real scale, const real *Q, int ldq, const real *Kt, int ldk,
                        const real *V, int ldv, const real *dO, int lddo, real *dQ, real *dK, real *dV, real *work);

// Every (sequence, head) of a q/k/v tensor qkv [B, T, 3C] (head h: columns h*D.. of each third,
// K = W = D) into att [B, T, C], head h with decay g[h]; parallel over batch x head, each thread
// using work + thread * lin_chunk_work(D, D).
void lin_chunk_heads_forward(int B, int T, int H, int D, const real *g, real scale, const real *qkv, real *att, real *work);
// Its backward: ACCUMULATES into dqkv [B, T, 3C] from datt [B, T, C].
void lin_chunk_heads_backward(int B, int T, int H, int D, const real *g, real scale, const real *qkv, const real *datt,
                              real *dqkv, real *work);

// The recurrent form, one token (generation): S[K, W] = g S + k v^T, o[W] = scale S^T q.
void lin_recurrent_step(int K, int W, real g, real scale, real *S, const real *q, const real *k, const real *v, real *o);
