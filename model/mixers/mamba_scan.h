// Mamba's selective scan (S6, docs/mixers.md#mamba) on CPU, per channel e and state n:
//   h_t[e,n] = exp(delta_t[e] A[e,n]) h_{t-1}[e,n] + delta_t[e] B_t[n] u_t[e]
//   ys_t[e]  = sum_n C_t[n] h_t[e,n]                     (the D skip and the z gate are the caller's)
// Work is split into tasks of (sequence b, up to MAMBA_GROUP blocks of MAMBA_EB consecutive
// channels), run in parallel with OpenMP; a task walks its blocks token by token, so each row is
// read in contiguous pieces. A block's channels are the SIMD lanes (one 16-float vector): each
// state n is an independent chain per lane, the read-out sum over n needs no horizontal add, and
// the only cross-lane sums (dB, dC over a task's channels in backward) are done for all N states
// at once by a transposing tree (lane_sums in mamba_scan.c).
// Memory: forward saves the state only at the start of every MAMBA_CHUNK tokens; backward
// recomputes each chunk's states from there (into a per-thread buffer that stays in L2) and
// walks it in reverse. Reductions across tasks (dB, dC over groups of blocks; dA, dD over
// sequences) go to per-task partial buffers that the caller sums in a fixed order, so results do
// not depend on the thread count.
#pragma once
#include <stddef.h>
#include <string.h>

#include "core/real.h"
#include "model/kernels/vmath.h"

#define MAMBA_CHUNK 16  // tokens between saved states
#define MAMBA_EB 16     // channels per block (the SIMD lanes)
#define MAMBA_GROUP 16  // blocks per task (up to)

// exp and softplus are the project's (model/kernels/vmath.h).
static inline real mamba_exp(real x) { return vexpr(x); }
static inline real mamba_softplus(real r) { return r <= 20 ? vsoftplusr(r) : r; }

static inline real mamba_sigmoid(real v) { return 1 / (1 + mamba_exp(-v)); }

// One token of one channel: h = exp(d A) h_prev + d x B over the N states (h may be h_prev).
// step() uses it; the training scan (mamba_scan.c) runs the same arithmetic on blocks of channels.
static inline void mamba_scan_token(real *h, const real *h_prev, const real *A, const real *Bt, real d, real x, int N) {
    real dx = d * x;
#pragma omp simd
    for (int n = 0; n < N; n++) h[n] = mamba_exp(d * A[n]) * h_prev[n] + dx * Bt[n];
}

static inline real mamba_dot(const real *a, const real *b, int N) {
    real s = 0;
    for (int n = 0; n < N; n++) s += a[n] * b[n];
    return s;
}

// One call's tensors. Token-major layouts as the projections produce them.
typedef struct {
    int B, T, E, N;
    const real *u;      // [B,T,E] scan input (conv + SiLU output)
    const real *delta;  // [B,T,E] step sizes, > 0
    const real *bc;     // B_t at bc[(b*T+t)*ld], C_t at bc[(b*T+t)*ld + N]
    int ld;             // row stride of bc
    const real *A;      // [E,N] = -exp(A_log)
} MambaScan;

static inline int mamba_n_chunks(int T) { return (T + MAMBA_CHUNK - 1) / MAMBA_CHUNK; }
static inline int mamba_n_blocks(int E) { return (E + MAMBA_EB - 1) / MAMBA_EB; }
static inline int mamba_n_groups(int E) { return (mamba_n_blocks(E) + MAMBA_GROUP - 1) / MAMBA_GROUP; }
// Reals of the chunk states the forward saves for backward: [B, n_chunks, n_blocks, N, MAMBA_EB].
static inline size_t mamba_states_size(int B, int T, int E, int N) {
    return (size_t)B * mamba_n_chunks(T) * mamba_n_blocks(E) * N * MAMBA_EB;
}
// Reals of per-thread work space the scan needs.
size_t mamba_scan_work(int E, int N);

// ys[B,T,E] = the scan output; hs[mamba_states_size] = the state before each chunk's first token.
void mamba_scan_forward(const MambaScan *s, real *ys, real *hs, real *work);

// Given dy[B,T,E] = dLoss/d(ys + D u) (the output with the D skip) and dt_raw[B,T,E] (delta
// before softplus, bias included), writes (overwrites):
//   du[B,T,E]     = D dy + the scan's gradient w.r.t. u
//   ddt[B,T,E]    = dLoss/d dt_raw (softplus derivative: sigmoid(raw), or 1 above 20)
//   dbc[B,T,n_groups,2N] = per group of blocks, the sums over its channels of dB_t and dC_t
//   dA[B,E,N]     = per sequence, dLoss/dA (summed over t)
//   dD[B,E]       = per sequence, dLoss/dD (summed over t)
void mamba_scan_backward(const MambaScan *s, const real *hs, const real *dt_raw, const real *D, const real *dy,
                         real *du, real *ddt, real *dbc, real *dA, real *dD, real *work);

// The attention map of channel e in sequence b (docs/mixers.md#mamba):
//   att[i*T + j] = delta_j[e] sum_n C_i[n] exp(A[e,n] sum_{t=j+1..i} delta_t[e]) B_j[n]  (j <= i),
// 0 above the diagonal, so ys_i[e] = sum_j att[i*T + j] u_j[e]. work holds
// mamba_map_work(T, N) reals. Rows walk j down from i with a running product of exp(delta A),
// sixteen j at a time summed over the states by a transposing tree (no sum is a serial chain).
size_t mamba_map_work(int T, int N);
void mamba_scan_map(const MambaScan *s, int b, int e, real *att, real *work);
