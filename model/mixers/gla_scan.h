// Gated linear attention (GLA, Yang et al. 2023; docs/mixers.md#gla) for one sequence
// and head, with a per-key-channel LOG gate g_t <= 0:
//   S_t = diag(exp(g_t)) S_{t-1} + k_t v_t^T     (K x V),     o_t = scale S_t^T q_t
// Q, K, G [T, K] and V, O [T, V] are row-major with the given row strides.
//
// Chunkwise form (fla's chunk_gla, chunks of L tokens): with b_i the gate sum from the chunk's
// start to i (fp32 like fla, never a global cumsum) and S_n the state entering the chunk,
//   o_i = (q_i exp(b_i))^T S_n scale + sum_{j<=i} a_ij v_j,
//   a_ij = scale sum_c (q_ic exp(b_ic)) (k_jc exp(-b_jc)),
//   S_{n+1} = diag(exp(b_L)) S_n + sum_j (k_j exp(b_L - b_j)) v_j^T,
// all as gemm_serial products. exp(-b) grows with the chunk's gate range max_c(-b_Lc), so a
// chunk whose range exceeds max_range runs the plain recurrence instead (same state out; only
// strong decays, where the recurrence is exact and a factor exp(-range) < 4e-18 would be lost).
// Memory: forward saves the state entering every chunk but the first (gla_n_states(T, L) of
// K x V); backward reads them and walks the chunks once in reverse time, so nothing is
// recomputed but the chunk's exps and scores, and no T x T buffer exists.
// Serial: call per (sequence, head) from inside a parallel loop; sums run in a fixed order.
#pragma once
#include <stddef.h>

#include "core/real.h"

#define GLA_MAX_CHUNK 64

// Reals of per-thread work for chunks of up to GLA_MAX_CHUNK tokens.
size_t gla_scan_work(int K, int V);
// States saved by the forward of T tokens in chunks of L (each K x V).
int gla_n_states(int T, int L);

// O = the attention above; states[gla_n_states * K * V] receives the chunk-entry states.
// L in 1..GLA_MAX_CHUNK; max_range < 0 forces the recurrence in every chunk.
void gla_scan_forward(int T, int K, int V, int L, real max_range, real scale, const real *Q, int ldq, const real *Kt,
                      int ldk, const real *Vv, int ldv, const real *G, int ldg, real *O, int ldo, real *states, real *work);

// Given dO, ACCUMULATES dQ, dK, dV and dG (the log gates' gradient,
// dG_t = sum_{s>=t} q_s*dq_s - k_s*dk_s) with the same layouts and arguments as the forward.
void gla_scan_backward(int T, int K, int V, int L, real max_range, real scale, const real *Q, int ldq, const real *Kt,
                       int ldk, const real *Vv, int ldv, const real *G, int ldg, const real *dO, int lddo,
                       const real *states, real *dQ, real *dK, real *dV, real *dG, real *work);

// One token of the recurrence (generation): S = diag(exp(g)) S + k v^T, o = scale S^T q.
void gla_scan_step(int K, int V, real scale, real *S, const real *q, const real *k, const real *v, const real *g, real *o);
