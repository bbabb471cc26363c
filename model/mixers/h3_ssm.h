// The two SSMs of H3 (model/mixers/h3.c) on one channel of one sequence, as kernels computed from
// their parameters, the causal convolutions that apply them (the training path), and the
// recurrence they come from (the naive reference, and generation's step).
//
// Shift SSM (A = shift matrix, B = e_1, C = w): ks_t = sum_{l < min(N, t+1)} w[l] k_{t-l} + Dk k_t,
// a causal filter of N taps; its state is the last N inputs.
// Diagonal SSM, S4D-Real with B = 1 folded into C and zero-order hold: per state n,
//   a_n = -exp(A_log[n]),  dt = exp(log_dt),  r_n = exp(dt a_n),  bd_n = (r_n - 1) / a_n,
//   x_t[n] = r_n x_{t-1}[n] + bd_n u_t,  y_t = sum_n C[n] x_t[n] + D u_t,
// i.e. y = K * u with the kernel K[l] = sum_n C[n] bd_n r_n^l + D [l = 0].
#pragma once
#include <stddef.h>

#include "core/real.h"

// r[N] and bd[N] of the diagonal SSM.
void h3_ssm_discretize(int N, real log_dt, const real *A_log, real *r, real *bd);
// K[0..T-1] of the diagonal SSM, D included in K[0].
void h3_ssm_kernel(int N, int T, real log_dt, const real *A_log, const real *C, real D, real *K);
// Given dK[0..T-1] = dLoss/dK, accumulates the gradients of log_dt, A_log[N], C[N] and D.
void h3_ssm_kernel_backward(int N, int T, real log_dt, const real *A_log, const real *C, const real *dK, real *dlog_dt,
                            real *dA_log, real *dC, real *dD);

// One sequence: y_i = sum_{j <= i} K[i-j] u_j, given Krev[T-1-l] = K[l] (so every sum is one
// contiguous dot product).
void h3_conv_forward(int T, const real *Krev, const real *u, real *y);
// Its backward: du_j = sum_{i >= j} K[i-j] dy_i (overwrites du); dK[l] += sum_i dy_i u_{i-l}.
void h3_conv_backward(int T, const real *K, const real *u, const real *dy, real *du, real *dK);

// The shift SSM over a sequence: ks[T] from k[T] (overwrites ks).
void h3_shift_forward(int T, int N, const real *w, real Dk, const real *k, real *ks);
// Its backward from dks[T]: accumulates dk[T], dw[N], dDk.
void h3_shift_backward(int T, int N, const real *w, real Dk, const real *k, const real *dks, real *dk, real *dw, real *dDk);

// The training path's shift SSM: every channel of one sequence at once, the channels as the
// vector lanes (the per-channel loops above are latency-bound chains of dependent adds). Per
// channel the same products are added in the same order as h3_shift_forward/backward, so the
// results agree with them to rounding (the compiler may fuse a different multiply into each
// add). Rows: k[t * ldk + c], ks[t * C + c], dks[t * C + c],
// dk[t * lddk + c]; wT[l * C + c] = w of channel c (tap l); Dk[C].
// ks = the shift SSM of k (overwrites ks).
void h3_shift_forward_rows(int T, int N, int C, const real *wT, const real *Dk, const real *k, int ldk, real *ks);
// Its backward from dks: adds to dk, dwT[N * C] and dDk[C]; tmp[C] is scratch.
void h3_shift_backward_rows(int T, int N, int C, const real *wT, const real *Dk, const real *k, int ldk,
                            const real *dks, real *dk, int lddk, real *dwT, real *dDk, real *tmp);

// The training path's diagonal SSM: M independent sequences (H3's channel products) as rows
// of M lanes, each convolved with its own kernel, KE[l * M + m] = K of sequence m at lag l; on
// lanes m0 .. m1-1 (so callers can split the lanes among threads; split at multiples of
// H3_CONV_LANES, the vector width the kernels work in, or the rest takes a plain loop).
// Y[t] = sum_{j <= t} KE[t-j] * U[j] (overwrites Y).
#define H3_CONV_LANES 16
void h3_conv_forward_rows(int T, int M, int m0, int m1, const real *KE, const real *U, real *Y);
// Its backward: dU[j] = sum_{t >= j} KE[t-j] * dY[t] (overwrites dU); dKE[l] += sum_t dY[t] * U[t-l].
void h3_conv_backward_rows(int T, int M, int m0, int m1, const real *KE, const real *U, const real *dY, real *dU, real *dKE);

// The same convolution by FFT, O(T log T) per sequence instead of O(T^2), for long sequences:
// transforms of length h3_fft_len(T) (a power of two >= 2T) along t, H3_CONV_LANES sequences
// at a time. tw[L] from h3_fft_twiddles; KF[2 L M] the kernels' transforms (real parts [L][M],
// then imaginary) from h3_fft_kernel_rows; work[h3_fft_work(T)] per thread. Same results as
// the direct kernels to rounding (float: about 1.5e-7 of the norm of the result, an absolute
// error at that scale, so small entries are relatively less exact).
int h3_fft_len(int T);
void h3_fft_twiddles(int L, real *tw);
size_t h3_fft_work(int T);
void h3_fft_kernel_rows(int T, int M, int m0, int m1, const real *KE, const real *tw, real *KF, real *work);
void h3_conv_forward_fft(int T, int M, int m0, int m1, const real *KF, const real *tw, const real *U, real *Y, real *work);
void h3_conv_backward_fft(int T, int M, int m0, int m1, const real *KF, const real *tw, const real *U, const real *dY,
                          real *dU, real *dKE, real *work);

// Naive reference and generation: one token of the diagonal SSM, updating x[N]; returns y_t.
real h3_ssm_step(int N, const real *r, const real *bd, const real *C, real D, real *x, real u);
// One token of the shift SSM, updating the window s[N] (s[l] = k_{t-l}); returns ks_t.
real h3_shift_step(int N, const real *w, real Dk, real *s, real k);
