// Mamba's selective scan (S6, docs/mixers.md#mamba) on CPU, per channel e and state n:
//   h_t[e,n] = exp(delta_t[e] A[e,n]) h_{t-1}[e,n] + delta_t[e] B_t[n] u_t[e]
//   ys_t[e]  = sum_n C_t[n] h_t[e,n]                     (the D skip and the z gate are the caller's)
// Work is split into tasks of (sequence b, block of MAMBA_EB consecutive channels), run in
// parallel with OpenMP; the loop over the N states is the innermost (vectorised) one.
// Memory: forward saves the state only at the start of every MAMBA_CHUNK tokens; backward
// recomputes each chunk's states from there (into a per-thread buffer that stays in L1/L2) and
// walks it in reverse. Reductions across tasks (dB, dC over channel blocks; dA, dD over sequences)
// go to per-task partial buffers that the caller sums in a fixed order, so results do not depend
// on the thread count.
#pragma once
#include <stddef.h>
#include <string.h>

#include "core/real.h"

#define MAMBA_CHUNK 16  // tokens between saved states
#define MAMBA_EB 16     // channels per task

// exp for the scan and the gates. The float build uses mamba_expf: branch-free (Cody-Waite
// reduction, degree-7 Taylor polynomial on |r| <= ln2/2; about 1 ulp on [-87.3, 88.3], 0 below,
// saturating above), so the compiler vectorises the loops that call it, where libm's expf is a
// call that keeps them scalar. The double build (the tests) uses libm's exp (and log1p).
static inline float mamba_expf(float x) {
    float xc = x < -87.3f ? -87.3f : x > 88.3f ? 88.3f : x;
    float n = __builtin_rintf(xc * 1.44269504088896341f);  // xc = n ln2 + r
    float r = xc - n * 0.693145751953125f;                  // ln2's leading bits: n * it is exact
    r = r - n * 1.428606765330187045e-06f;                  // ... and the rest of ln2
    float p = 1.0f / 5040;
    p = p * r + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    union { int i; float f; } two_n = {.i = ((int)n + 127) << 23};  // 2^n, n in [-126, 127]
    return x < -87.3f ? 0.0f : p * two_n.f;
}
// softplus(r) = max(r, 0) + log1p(y), y = exp(-|r|) in (0, 1], with log1p(y) = 2 atanh(s),
// s = y / (2 + y) <= 1/3, summed as its odd series to s^15 (truncation < 2e-9 relative).
static inline float mamba_softplusf(float r) {
    float y = mamba_expf(r < 0 ? r : -r), s = y / (2 + y), s2 = s * s;
    float p = 1.0f / 15;
    p = p * s2 + 1.0f / 13;
    p = p * s2 + 1.0f / 11;
    p = p * s2 + 1.0f / 9;
    p = p * s2 + 1.0f / 7;
    p = p * s2 + 1.0f / 5;
    p = p * s2 + 1.0f / 3;
    p = p * s2 + 1.0f;
    return (r > 0 ? r : 0.0f) + 2 * s * p;
}
#ifdef REAL_DOUBLE
static inline real mamba_exp(real x) { return exp(x); }
static inline real mamba_softplus(real r) { return r <= 20 ? log1p(exp(r)) : r; }
#else
static inline real mamba_exp(real x) { return mamba_expf(x); }
static inline real mamba_softplus(real r) { return r <= 20 ? mamba_softplusf(r) : r; }
#endif

static inline real mamba_sigmoid(real v) { return 1 / (1 + mamba_exp(-v)); }

// One token of one channel: h = exp(d A) h_prev + d x B over the N states (h may be h_prev);
// keeps exp(d A) in a[] unless a is NULL. Forward, backward's recompute and step() all use it.
static inline void mamba_scan_token(real *h, const real *h_prev, real *a, const real *A,
                                    const real *Bt, real d, real x, int N) {
    real dx = d * x;
    if (a) {
#pragma omp simd
        for (int n = 0; n < N; n++) {
            real an = mamba_exp(d * A[n]);
            a[n] = an;
            h[n] = an * h_prev[n] + dx * Bt[n];
        }
    } else {
#pragma omp simd
        for (int n = 0; n < N; n++) h[n] = mamba_exp(d * A[n]) * h_prev[n] + dx * Bt[n];
    }
}

// Sums over the N states go through MAMBA_LANES partial sums and a fixed halving tree: the
// order is the same on every run and thread count, and (unlike a plain loop, which without
// -ffast-math becomes a chain of N scalar adds) it compiles to a few vector adds.
#define MAMBA_LANES 16
typedef real mamba_v8 __attribute__((vector_size(8 * sizeof(real))));
typedef real mamba_v4 __attribute__((vector_size(4 * sizeof(real))));
static inline real mamba_tree_sum(const real *p) {
    mamba_v8 lo, hi;
    memcpy(&lo, p, sizeof lo);
    memcpy(&hi, p + 8, sizeof hi);
    lo += hi;
    mamba_v4 l4, h4;
    memcpy(&l4, &lo, sizeof l4);
    memcpy(&h4, (const real *)&lo + 4, sizeof h4);
    l4 += h4;
    return (l4[0] + l4[2]) + (l4[1] + l4[3]);
}

static inline real mamba_dot(const real *a, const real *b, int N) {
    real part[MAMBA_LANES] = {0};
    for (int n0 = 0; n0 < N; n0 += MAMBA_LANES) {
        int nl = N - n0 < MAMBA_LANES ? N - n0 : MAMBA_LANES;
#pragma omp simd
        for (int l = 0; l < nl; l++) part[l] += a[n0 + l] * b[n0 + l];
    }
    return mamba_tree_sum(part);
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
// Reals of per-thread work space the scan needs.
size_t mamba_scan_work(int N);

// ys[B,T,E] = the scan output; hs[B, n_chunks, E, N] = the state before each chunk's first token.
void mamba_scan_forward(const MambaScan *s, real *ys, real *hs, real *work);

// Given dy[B,T,E] = dLoss/d(ys + D u) (the output with the D skip) and dt_raw[B,T,E] (delta
// before softplus, bias included), writes (overwrites):
//   du[B,T,E]     = D dy + the scan's gradient w.r.t. u
//   ddt[B,T,E]    = dLoss/d dt_raw (softplus derivative: sigmoid(raw), or 1 above 20)
//   dbc[B,T,n_blocks,2N] = per channel block, the sums over its channels of dB_t and dC_t
//   dA[B,E,N]     = per sequence, dLoss/dA (summed over t)
//   dD[B,E]       = per sequence, dLoss/dD (summed over t)
void mamba_scan_backward(const MambaScan *s, const real *hs, const real *dt_raw, const real *D,
                         const real *dy, real *du, real *ddt, real *dbc, real *dA, real *dD,
                         real *work);
