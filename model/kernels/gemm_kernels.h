// Private to the gemm implementation (model/gemm*.c) and bench/bench_gemm.c: the micro-kernel
// interface, the kernel tables and run-time selection. Users include model/kernels/gemm.h only.
#pragma once
#include <stddef.h>

#include "core/real.h"

// A micro-kernel computes one MR x NR tile of C:
//   acc = load ? C : 0;  for k in 0..K-1: acc[r][j] = fma(A(r,k), Bp[k*NR + j], acc[r][j]);  C = acc
// so every element is one sequential FMA chain over k (independent of the tiling, the cache
// blocking and the thread count). Bp(k, j) = b[k*sb + j]: a packed panel of B (sb = NR) or,
// when transB = 0, B itself (sb = ldb).
// A(r,k) = a[r*sa + k] for the `row` variant and a[k*sa + r] for the `col` variant. `an` is the
// next micro-panel of A in the same layout, to prefetch (never dereferenced).
typedef void (*gemm_kern_fn)(int K, const real *a, ptrdiff_t sa, const real *an, const real *b, ptrdiff_t sb, real *c,
                             ptrdiff_t ldc, int load);
// Packs op(B)[0..kc, 0..nr) for transB = 1 (B stored [N,K], row j = column j of op(B)) into
// dst[k*nr + j]; columns at or past nvalid are zero. Optional (NULL: the portable packer).
typedef void (*gemm_packbt_fn)(int kc, int nvalid, const real *B, ptrdiff_t ldb, real *dst);

typedef struct {
    const char *name;
    int mr, nr;   // register tile
    int kc, nc;   // cache blocking: K block, N block (a multiple of nr)
    double cost;  // relative time per tile element (1 = best), to choose between variants
    gemm_kern_fn row, col;
    gemm_packbt_fn packbt;
    // Optional: kernels for an edge micro-panel of mv < mr rows, indexed by mv (entries 1..mr-1,
    // NULL where absent), reading A in place as row and col do. Without one the edge panel is
    // packed with zero rows and run by col.
    const gemm_kern_fn *edge_row, *edge_col;
} GemmKernel;

// Kernel tables: NULL-terminated lists of variants of one ISA; each call picks the variant
// that wastes least on edge tiles, from the full problem's M and N (so gemm and gemm_serial
// always agree). Selects by name: "avx512", "avx2", "neon", "portable" (a whole table) or one
// variant's name (e.g. "avx512_14x2"); NULL = the best table that both this CPU and the build's
// target ISA (-march) support, so an x86-64-v3 build runs the AVX2 kernel even on an AVX-512
// machine, as an AVX2 laptop would (a name may select any kernel the CPU runs). Returns the
// first variant of the selection, or NULL (selection unchanged) when unknown or unsupported.
// Not thread-safe: call before gemm runs (the bench uses it to compare kernels).
const GemmKernel *gemm_select_kernel(const char *name);
// Name of the current selection ("avx512", "avx2_6x2", ...).
const char *gemm_kernel_name(void);
// The ISA the build targets, from the compiler's predefined macros (e.g. "x86-64 AVX-512F",
// "x86-64 AVX2+FMA", "x86-64 SSE2", "arm64 NEON").
const char *gemm_build_isa(void);
// The variant a call of this shape uses.
const GemmKernel *gemm_kernel_for(int M, int N);

// Tuning knobs for the bench (0 = default).
typedef struct {
    int kc, nc;       // override the variant's blocking
    int split;        // threads: 1 = split M only, 2 = split N only
    int no_prefetch;  // 1: no software prefetch of the next C tile / B block
    int direct_b;     // 1: always pack B, 2: read B in place whenever transB = 0
} GemmTuning;
extern GemmTuning gemm_tuning;

extern const GemmKernel *const gemm_kernels_portable[];
#if !defined(REAL_DOUBLE) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GEMM_HAVE_X86 1
extern const GemmKernel *const gemm_kernels_avx512[];
extern const GemmKernel *const gemm_kernels_avx2[];
#endif
#if defined(__aarch64__) && defined(__ARM_NEON) && (defined(__GNUC__) || defined(__clang__))
#define GEMM_HAVE_NEON 1  // float and double (model/kernels/gemm_neon.c)
extern const GemmKernel *const gemm_kernels_neon[];
#endif
