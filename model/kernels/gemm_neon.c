// clang-format off
// (the whole file: kernels built by macros, which clang-format 14 misreads; .clang-format)
// AArch64 NEON (ASIMD) micro-kernels for model/kernels/gemm.c, float and double: the register tile is
// MR rows x NV vectors (4 floats or 2 doubles each). ASIMD is part of every AArch64 CPU, so there
// is no run-time check; the kernels are selected whenever the build targets arm64. Unlike the x86
// kernels they are also built in double, so the test suite (the double build) runs them on arm64.
//
// Each C element is one FMA chain over k = 0..K-1 (vfmaq: fused multiply-add, acc + a*b rounded
// once), the contract of model/kernels/gemm_kernels.h: the same bits for any tiling and thread count.
//
// Tiles: AArch64 has 32 vector registers. 8x3 and 12x2 keep 24 accumulators (the FMA latency of
// 4 cycles times up to 4 FMA pipes, as on Apple's big cores, needs at least 16 independent
// chains), the B row in 3 or 2 registers and the broadcast A value in one. 4x4 (16
// accumulators) is for small or narrow shapes. The costs below are estimates from the number of
// loads per FMA, not measurements: no arm64 hardware was available, only qemu, whose timings mean
// nothing.
#include "model/kernels/gemm_kernels.h"

#ifdef GEMM_HAVE_NEON
#include <arm_neon.h>
#include <stdint.h>

#ifdef REAL_DOUBLE
typedef float64x2_t nvec;
#define NL 2  // reals per vector
#define NV_LOAD vld1q_f64
#define NV_STORE vst1q_f64
#define NV_ZERO() vdupq_n_f64(0.0)
#define NV_DUP vdupq_n_f64
#define NV_FMA vfmaq_f64  // vfmaq(acc, x, y) = acc + x*y, one rounding
#else
typedef float32x4_t nvec;
#define NL 4
#define NV_LOAD vld1q_f32
#define NV_STORE vst1q_f32
#define NV_ZERO() vdupq_n_f32(0.0f)
#define NV_DUP vdupq_n_f32
#define NV_FMA vfmaq_f32
#endif

// Prefetch of the next micro-panel of A (`an`, same layout), spread over the k loop as in
// model/kernels/gemm_x86.c. (Addresses are formed as integers: the next panel may lie past the end of A.)
#define PF_ADDR(off) ((const void *)((uintptr_t)an + (uintptr_t)((off) * (ptrdiff_t)sizeof(real))))
#define PF_ROW(MR)                                                                                \
    _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++) __builtin_prefetch(PF_ADDR(r * sa + k0), 0, 3);
#define PF_COL(MR)                                                                                \
    for (int k = k0; k < k1; k++) __builtin_prefetch(PF_ADDR((ptrdiff_t)k * sa + MR - 1), 0, 3);

// GCC hoists the MR loads of A(r,k) above the FMAs of earlier rows, and 24 accumulators + NV B
// vectors + MR values of A need more than 32 registers: it spills accumulators in the inner loop.
// An empty asm with a memory clobber between rows keeps each load next to its FMAs (it orders
// memory accesses only; the accumulators stay in registers). Clang schedules without spills.
#if defined(__GNUC__) && !defined(__clang__)
#define A_LOAD_FENCE __asm__ volatile("" ::: "memory");
#else
#define A_LOAD_FENCE
#endif

// MR rows x NV vectors; AIDX is A(r,k)'s index in a.
#define NEON_BODY(MR, NV, AIDX, PREFETCH)                                                         \
    nvec acc[MR][NV];                                                                             \
    _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++)                                         \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[r][v] =                          \
            load ? NV_LOAD(c + r * ldc + NL * v) : NV_ZERO();                                     \
    for (int k0 = 0; k0 < K; k0 += 16) {                                                          \
        const int k1 = K - k0 < 16 ? K : k0 + 16;                                                 \
        PREFETCH                                                                                  \
        for (int k = k0; k < k1; k++) {                                                           \
            nvec bv[NV];                                                                          \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) bv[v] =                          \
                NV_LOAD(b + (ptrdiff_t)k * sb + NL * v);                                          \
            _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++) {                               \
                A_LOAD_FENCE                                                                      \
                const nvec ar = NV_DUP(a[AIDX]);                                                  \
                _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[r][v] =                  \
                    NV_FMA(acc[r][v], ar, bv[v]);                                                 \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
    _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++)                                         \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) NV_STORE(c + r * ldc + NL * v, acc[r][v]);

// nc: the N block, a multiple of nr near 512 columns.
#define DEF_NEON(MR, NV, COST)                                                                    \
    static void kneon_row_##MR##x##NV(int K, const real *a, ptrdiff_t sa, const real *an,         \
                                      const real *b, ptrdiff_t sb, real *c, ptrdiff_t ldc,        \
                                      int load) {                                                 \
        NEON_BODY(MR, NV, r * sa + k, PF_ROW(MR))                                                 \
    }                                                                                             \
    static void kneon_col_##MR##x##NV(int K, const real *a, ptrdiff_t sa, const real *an,         \
                                      const real *b, ptrdiff_t sb, real *c, ptrdiff_t ldc,        \
                                      int load) {                                                 \
        NEON_BODY(MR, NV, (ptrdiff_t)k * sa + r, PF_COL(MR))                                      \
    }                                                                                             \
    static const GemmKernel kneon_##MR##x##NV = {                                                 \
        .name = "neon_" #MR "x" #NV, .mr = MR, .nr = NV * NL, .kc = 256,                          \
        .nc = 512 / (NV * NL) * (NV * NL), .cost = COST, .row = kneon_row_##MR##x##NV,           \
        .col = kneon_col_##MR##x##NV, .packbt = NULL,                                             \
    };

DEF_NEON(8, 3, 1.0)
DEF_NEON(12, 2, 1.02)  // 2 B loads per 24 FMAs instead of 3, but 12 broadcasts instead of 8
DEF_NEON(4, 4, 1.25)   // 16 chains: under-fills 4 FMA pipes of 4-cycle latency

const GemmKernel *const gemm_kernels_neon[] = {&kneon_8x3, &kneon_12x2, &kneon_4x4, NULL};

#else
typedef int gemm_neon_unused;  // ISO C: a translation unit must declare something
#endif
