// The plain quadratic reference of Based's Taylor linear attention (based_chunk.h), in fp64, for
// the tests: per query i, every j <= i weighted by w_ij = 1 + s + s^2 / 2 (s = q_i.k_j / sqrt(d)),
// o_i = sum_j w_ij v_j / (sum_j w_ij + 1e-12), and that normaliser in den[i].
#pragma once

void based_naive(int T, int d, int Dv, const double *q, const double *k, const double *v, double *o, double *den);
