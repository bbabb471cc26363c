// The plain Mamba-2 recurrence in double precision, written as the definition reads rather than
// for speed: what the chunked SSD in mamba2_ssd.c and the layer's map are tested against. Linked
// only into the test runner.
#pragma once

// One sequence and head, zero initial state. x [T, P], dt [T], A < 0, B, C [T, N]:
//   S_t = exp(dt_t A) S_{t-1} + dt_t B_t x_t^T  (S [N, P]),  y_t = S_t^T C_t   (y [T, P])
// P may be any width: with P = T and x the identity (one-hot values) row i of y is row i of the
// map (y = a x).
void ssd_naive(int T, int P, int N, const double *x, const double *dt, double A, const double *B, const double *C,
               double *y);
