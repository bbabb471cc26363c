// Mamba-2's state space dual (SSD; Dao and Gu 2024, "Transformers are SSMs", arXiv 2405.21060;
// docs/mixers.md#mamba2), for one sequence and one head, in chunks. X [T, P] (the head's P
// channels), dt [T] > 0, a scalar A < 0, B, C [T, N] (shared by the heads: one group):
//   S_t = a_t S_{t-1} + dt_t B_t x_t^T,  a_t = exp(dt_t A)      (S [N, P], S_{-1} = 0)
//   y_t = S_t^T C_t                                              (the D skip is the caller's)
// so y_i = sum_{j <= i} a_ij x_j with the semiseparable map
//   a_ij = (C_i . B_j) exp(A sum_{t=j+1..i} dt_t) dt_j.
// Chunks of L tokens (the SSD algorithm): with cum_i = A (dt_s + ... + dt_i) summed from the
// chunk's first token s (a segment sum: every exponent below is <= 0, nothing overflows at any
// length; exp(cum_i - cum_j) is made as exp(cum_i - cum_0) exp(cum_0 - cum_j) where the chunk's
// decay spans at most 40, each factor then within e^40), the chunk entered with state S0:
//   diagonal block   Y  = M X,  M_ij = (C_i . B_j) exp(cum_i - cum_j) dt_j  (j <= i, 0 above)
//   off-diagonal     Y += diag(exp(cum)) C S0
//   chunk state      S1 = exp(cum_{n-1}) S0 + B^T diag(w) X,  w_j = exp(cum_{n-1} - cum_j) dt_j
// every product an n x n, n x N or N x P matmul (gemm_serial; those with the causal n x n factor
// through gemm_tri.h, which leaves out its blocks above the diagonal). Backward walks the chunks in
// reverse carrying dS = dLoss/dS1, recomputing each chunk's M and w from the saved chunk-entry
// states. Serial: call it per (sequence, head) from inside a parallel loop; sums run in a fixed
// order. The plain recurrence it is tested against is model/mixers/mamba2_ssd_naive.c.
#pragma once
#include <stddef.h>

#include "core/real.h"

#define MAMBA2_CHUNK 64  // the layer's default chunk (key mamba2_chunk)

// Chunk-entry states one call saves: ceil(T / L) matrices of N x P.
int ssd_n_states(int T, int L);
// Reals of work one call (forward or backward) needs.
size_t ssd_work(int P, int N, int L);

// Y [T, P] (row stride ldy) from X (ldx), dt (stride lddt), A, B (ldb), C (ldc); writes the state
// entering each chunk to states [ssd_n_states(T, L), N, P] for the backward, but the first
// chunk's (zero: left unwritten, and the backward reads none).
void ssd_forward(int T, int P, int N, int L, const real *X, int ldx, const real *dt, int lddt, real A, const real *B,
                 int ldb, const real *C, int ldc, real *Y, int ldy, real *states, real *work);

// Given dY (row stride lddy), ACCUMULATES dX (stride ldx), ddt (lddt), dB and dC (both row stride
// lddbc) and *dA, reading the states the forward saved.
void ssd_backward(int T, int P, int N, int L, const real *X, int ldx, const real *dt, int lddt, real A, const real *B,
                  int ldb, const real *C, int ldc, const real *states, const real *dY, int lddy, real *dX, real *ddt,
                  real *dB, real *dC, int lddbc, real *dA, real *work);

// The same two with a per-chunk hook (NULL: none), called before each chunk's work with its first
// token s and length n (after = 0) and, in the backward, after it (after = 1: the chunk's dX rows
// are final then), so a caller can make a chunk's inputs or take its gradients further while its
// rows are in cache; and the backward's dX with its own row stride lddx.
typedef void (*SsdHook)(void *ctx, int s, int n, int after);
// And C B^T shared by the heads of one sequence (they read the same B and C: one group): with sh,
// chunk c's G [n, n] (its lower triangle, row stride n) lives at sh->G + c L L, ceil(T / L) of them;
// a call with ready = 0 makes them there, later heads' calls (ready = 1) read them. NULL: each call
// makes its own. The values are the same either way, so are the bits.
typedef struct {
    real *G;
    int ready;
} SsdShared;
void ssd_forward_hook(int T, int P, int N, int L, const real *X, int ldx, const real *dt, int lddt, real A,
                      const real *B, int ldb, const real *C, int ldc, real *Y, int ldy, real *states, real *work,
                      SsdHook hook, void *ctx, const SsdShared *sh);
void ssd_backward_hook(int T, int P, int N, int L, const real *X, int ldx, const real *dt, int lddt, real A,
                       const real *B, int ldb, const real *C, int ldc, const real *states, const real *dY, int lddy,
                       real *dX, int lddx, real *ddt, real *dB, real *dC, int lddbc, real *dA, real *work, SsdHook hook,
                       void *ctx, const SsdShared *sh);

// The recurrence, one token (generation): S [N, P] updated in place, y [P] = S^T c.
void ssd_step(int P, int N, real *S, const real *x, real dt, real A, const real *b, const real *c, real *y);

// Row i of the map, a[0..i] (the rest of the row is left alone): j walks down from i with a
// running sum of dt, so each exponent is A times a sum of positive terms, exact to rounding.
void ssd_map_row(int T, int N, int i, const real *dt, int lddt, real A, const real *B, int ldb, const real *C, int ldc,
                 real *a);
