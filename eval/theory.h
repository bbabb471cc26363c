// The seeds' closed forms for S(a), per row (docs/sparsity.md, "Theory"). A row i sees n = i + 1
// scores x_j = q_i.k_j (j <= i); with keys k ~ N(mu, Sigma) the scores are N(beta, gamma^2),
// beta = q.mu and gamma^2 = q' Sigma q. The evaluator estimates beta and gamma^2 from the keys the
// row sees (the mean and population variance of its own n scores: exactly q' mu and q' Sigma q
// of the prefix's keys), so each row is predicted from the distribution it actually attends over.
#pragma once
#include "core/real.h"

// softmax, n -> infinity: exp(-gamma^2 / 2).
double theory_softmax_Sinf(double gamma2);
// softmax at finite n: E[S] of softmax over n i.i.d. N(0, gamma^2) scores (beta cancels). A
// fixed-seed Monte Carlo (theory_sn_samples(n) draws of n scores; the same draws for every gamma
// of one n, so the curve is smooth in gamma) on THEORY_SN_POINTS values of gamma, in steps of
// THEORY_SN_STEP from 0 to 8 and of 0.5 from 8 to 32, linear in gamma^2 between grid points and clamped above the grid (where S is near
// the one-hot 1/sqrt(n)). Lengths up to 64 have their own table; longer ones are interpolated
// linearly in log n between lengths 64 * 2^(k/4). Deterministic and safe to call from several
// threads (a table is computed on first use under a lock; its values do not depend on who asks).
#define THEORY_SN_STEP 0.125
#define THEORY_SN_POINTS 113
double theory_softmax_Sn(int n, double gamma);
int theory_sn_samples(int n);
// The Monte Carlo's standard error there (sample standard deviation / sqrt(samples)).
double theory_softmax_Sn_se(int n, double gamma);

// relu^2 (GAU): a_j = relu(x_j)^2 with x ~ N(beta, gamma^2):
//   S = E[relu(x)^2] / sqrt(E[relu(x)^4]),  t = beta / gamma,
//   E[relu(x)^2] = (beta^2 + gamma^2) Phi(t) + beta gamma phi(t),
//   E[relu(x)^4] = (beta^4 + 6 beta^2 gamma^2 + 3 gamma^4) Phi(t) + (beta^3 gamma + 5 beta gamma^3) phi(t).
// The mixer's score is x = q.k / seq_len + b: beta = q.mu / seq_len + b, gamma = sqrt(q'Sigma q) / seq_len
// (relu2's attention_qk folds both in: q' = [q / seq_len, b], k' = [k, 1]). NAN when gamma = 0 and beta <= 0
// (an all-zero row, which S skips).
double theory_relu2_S(double beta, double gamma);
// identity (no feature map): a_j = x_j, S = E|x| / sqrt(E x^2)
//   = (sqrt(2/pi) gamma exp(-beta^2 / 2 gamma^2) + beta erf(beta / (sqrt 2 gamma))) / sqrt(beta^2 + gamma^2).
double theory_identity_S(double beta, double gamma);
// Fixed decay a_ij = lambda^(i-j) over n positions: sqrt((1-l^n)/(n(1-l)) (1+l)/(1+l^n)).
double theory_decay_S(double lambda, int n);

// Mean and population variance of the scores x_j = q_i.k_j, j <= i, of every row i: beta[T], gamma2[T]
// from q[T*K], k[T*K].
void theory_score_moments(const real *q, const real *k, int T, int K, double *beta, double *gamma2);
// Non-negative linear attention (a consistency check, not a prediction): mu, Sigma = mean and
// population covariance of phi(k_j) over the prefix, out_i = 1/sqrt(1 + q_i' Sigma q_i / (q_i' mu)^2),
// which equals the measured S of a_ij = phi(q_i).phi(k_j) / sum_l exactly; NAN where q_i' mu = 0.
// q_i' mu and q_i' Sigma q_i are also the mean and variance of the row's scores q_i.k_j, so it
// takes whichever form costs less: the prefix covariance, T K^2 (long rows of few features), or
// the scores' moments, T^2 K / 2 (Based's 273 features on 64 tokens: 8x fewer operations).
void theory_linear_rows(const real *q, const real *k, int T, int K, double *out);
