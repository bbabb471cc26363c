// Plain (naive) references of the linear-attention kernels, in double precision, written as the
// definitions read rather than for speed: what the chunked forms in linear_chunk.c and
// linear.c are tested against (as fla keeps naive.py beside each kernel). O(T^2) or a token-by-
// token recurrence; not used by training.
#pragma once
#include "core/real.h"

// Decayed causal linear attention (docs/mixers.md#decay), for one sequence and head:
//   O_i = scale sum_{j<=i} g^(i-j) (Q_i . K_j) V_j       Q, Kt [T, K], V [T, W], O [T, W]
void lin_decay_naive(int T, int K, int W, double g, double scale, const real *Q, const real *Kt, const real *V, double *O);

// elu+1 linear attention with its normaliser (docs/mixers.md#linear), for one sequence and head,
// as the recurrence S_t = S_{t-1} + phi(k_t) v_t^T, z_t = z_{t-1} + phi(k_t),
// o_t = S_t^T phi(q_t) / (phi(q_t) . z_t + 1e-6), phi = elu + 1.   q, k, v, o [T, D]
// mag (may be NULL) [T, D] gets sum_j |a_tj v_j|, the scale against which o's rounding is judged
// (o can be tiny by cancellation).
void linear_elu1_naive(int T, int D, const double *q, const double *k, const double *v, double *o, double *mag);
