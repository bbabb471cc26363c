// The plain delta-rule recurrence in double precision, written as the definition reads rather
// than for speed: what the chunked form in delta_chunk.c and the layer's map are tested against
// (as fla keeps naive.py beside each kernel). Not used by training.
#pragma once

// One sequence and head, zero initial state. q, k [T, K] (q already scaled; the caller
// normalises), v, o [T, V], beta [T]:
//   u_t = beta_t (v_t - S_{t-1}^T k_t),  S_t = S_{t-1} + k_t u_t^T,  o_t = S_t^T q_t
// (S_t = (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T written out). V may be any width: with
// V = T and v = the identity (one-hot values) row i of o is row i of the map A (o = A v).
void delta_rule_naive(int T, int K, int V, const double *q, const double *k, const double *v, const double *beta, double *o);
// The gated delta rule (Gated DeltaNet): with alpha_t = exp(g_t), S_{t-1} is first decayed,
//   S' = alpha_t S_{t-1},  u_t = beta_t (v_t - S'^T k_t),  S_t = S' + k_t u_t^T
// (S_t = alpha_t (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T; fla's
// naive_recurrent_gated_delta_rule). g NULL: delta_rule_naive.
void gated_delta_rule_naive(int T, int K, int V, const double *q, const double *k, const double *v, const double *beta,
                            const double *g, double *o);
