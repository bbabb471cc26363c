// clang-format off
// (the whole file: kernels built by macros, which clang-format 14 misreads; .clang-format)
// x86-64 float micro-kernels for model/kernels/gemm.c: AVX-512F (register tile MR x 16*NV) and AVX2+FMA.
// Every function carries its own target attribute, so the file builds without -march=native and
// the kernel is chosen at run time (gemm_select_kernel). Float only: the double build (tests)
// uses the portable kernel.
#include "model/kernels/gemm_kernels.h"

#ifdef GEMM_HAVE_X86
#include <immintrin.h>
#include <stdint.h>

#define T512 __attribute__((target("avx512f,avx512vl,fma")))
#define T256 __attribute__((target("avx2,fma")))

// ---------------------------------------------------------------------------------------------
// AVX-512 micro-kernel body: MR rows x NV vectors of 16 floats; AIDX is A(r,k)'s index.
#define K512_BODY(MR, NV, AIDX, PREFETCH)                                                         \
    __m512 acc[MR][NV];                                                                           \
    _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++)                                         \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[r][v] =                          \
            load ? _mm512_loadu_ps(c + r * ldc + 16 * v) : _mm512_setzero_ps();                   \
    for (int k0 = 0; k0 < K; k0 += 16) {                                                          \
        const int k1 = K - k0 < 16 ? K : k0 + 16;                                                 \
        PREFETCH                                                                                  \
        for (int k = k0; k < k1; k++) {                                                           \
            __m512 bv[NV];                                                                        \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) bv[v] =                          \
                _mm512_loadu_ps(b + (ptrdiff_t)k * sb + 16 * v);                               \
            _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++) {                               \
                __m512 ar = _mm512_set1_ps(a[AIDX]);                                              \
                _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[r][v] =                  \
                    _mm512_fmadd_ps(ar, bv[v], acc[r][v]);                                        \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
    _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++)                                         \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                      \
            _mm512_storeu_ps(c + r * ldc + 16 * v, acc[r][v]);

// Prefetch of the next micro-panel of A (`an`, same layout), spread over the k loop.
// Row layout: one line per row per 16 k. Column layout: the last value of each k row (the first
// is usually on the line the current panel ends on).
// (Addresses are formed as integers: the next panel may lie past the end of A.)
#define PF_ADDR(off) ((const char *)((uintptr_t)an + (uintptr_t)((off) * (ptrdiff_t)sizeof(float))))
#define PF_ROW(MR)                                                                                \
    _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++)                                         \
        _mm_prefetch(PF_ADDR(r * sa + k0), _MM_HINT_T0);
#define PF_COL(MR)                                                                                \
    for (int k = k0; k < k1; k++) {                                                               \
        _mm_prefetch(PF_ADDR((ptrdiff_t)k * sa + MR - 1), _MM_HINT_T0);                           \
    }

// A kernel's row and col variants (gemm_kernels.h) from its body macro, for target attribute TGT.
#define DEF_KERNELS(TGT, PFX, BODY, MR, NV)                                                       \
    TGT static void PFX##_row_##MR##x##NV(int K, const float *a, ptrdiff_t sa, const float *an,    \
                                          const float *b, ptrdiff_t sb, float *c, ptrdiff_t ldc, int load) {    \
        BODY(MR, NV, r * sa + k, PF_ROW(MR))                                                      \
    }                                                                                             \
    TGT static void PFX##_col_##MR##x##NV(int K, const float *a, ptrdiff_t sa, const float *an,    \
                                          const float *b, ptrdiff_t sb, float *c, ptrdiff_t ldc, int load) {    \
        BODY(MR, NV, (ptrdiff_t)k * sa + r, PF_COL(MR))                                           \
    }
#define DEF_K512(MR, NV) DEF_KERNELS(T512, k512, K512_BODY, MR, NV)

// 16x16 transpose of rows r[0..15] in place.
T512 static inline void transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    // r[i] now holds, per 128-bit lane L, column (4L + i%4 ... ) groups; finish with lane shuffles.
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);       // lanes 0,2 of each
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);   // lanes 1,3
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
        r[i + 4] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0x88);
        r[i + 12] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0xdd);
    }
}

// transB packing: B rows j (nvalid of them, stride ldb) hold k contiguously; dst[k*NR + j].
#define DEF_PACKBT512(NR)                                                                         \
    T512 static void packbt512_##NR(int kc, int nvalid, const float *B, ptrdiff_t ldb,            \
                                    float *dst) {                                                 \
        for (int j0 = 0; j0 < NR; j0 += 16) {                                                     \
            for (int k0 = 0; k0 < kc; k0 += 16) {                                                 \
                int kv = kc - k0 < 16 ? kc - k0 : 16;                                             \
                __mmask16 km = (__mmask16)((1u << kv) - 1u);                                      \
                __m512 r[16];                                                                     \
                for (int j = 0; j < 16; j++)                                                      \
                    r[j] = j0 + j < nvalid ? _mm512_maskz_loadu_ps(km, B + (j0 + j) * ldb + k0)   \
                                           : _mm512_setzero_ps();                                 \
                transpose16(r);                                                                   \
                for (int k = 0; k < kv; k++) _mm512_store_ps(dst + (size_t)(k0 + k) * NR + j0, r[k]); \
            }                                                                                     \
        }                                                                                         \
    }

DEF_K512(14, 2)
DEF_K512(12, 2)
DEF_K512(8, 2)
DEF_K512(6, 4)
DEF_K512(16, 1)
DEF_PACKBT512(16)
DEF_PACKBT512(32)
DEF_PACKBT512(64)

#define KDESC512(MR, NV, NR, COST)                                                                \
    static const GemmKernel k512d_##MR##x##NV = {                                                 \
        .name = "avx512_" #MR "x" #NV, .mr = MR, .nr = NR, .kc = 512, .nc = 256, .cost = COST,   \
        .row = k512_row_##MR##x##NV, .col = k512_col_##MR##x##NV, .packbt = packbt512_##NR,       \
    };
// Costs: measured time per tile element relative to 14x32 (Zen 5, one thread): all the 32- and
// 64-wide tiles reach ~95% of the FMA peak on large shapes; 16x16 ~70% (one B vector per k, so
// a broadcast for every FMA), worth it only when N is 16 (mod 32).
KDESC512(14, 2, 32, 1.0)
KDESC512(12, 2, 32, 1.005)
KDESC512(8, 2, 32, 1.03)
KDESC512(6, 4, 64, 1.02)
KDESC512(16, 1, 16, 1.36)

const GemmKernel *const gemm_kernels_avx512[] = {
    &k512d_14x2, &k512d_12x2, &k512d_8x2, &k512d_6x4, &k512d_16x1, NULL,
};

// ---------------------------------------------------------------------------------------------
// AVX2 + FMA: 6 rows x 2 vectors of 8 floats (12 accumulators of the 16 ymm registers).
#define K256_BODY(MR, NV, AIDX, PREFETCH)                                                         \
    __m256 acc[MR][NV];                                                                           \
    _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++)                                         \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[r][v] =                          \
            load ? _mm256_loadu_ps(c + r * ldc + 8 * v) : _mm256_setzero_ps();                    \
    for (int k0 = 0; k0 < K; k0 += 16) {                                                          \
        const int k1 = K - k0 < 16 ? K : k0 + 16;                                                 \
        PREFETCH                                                                                  \
        for (int k = k0; k < k1; k++) {                                                           \
            __m256 bv[NV];                                                                        \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) bv[v] =                          \
                _mm256_loadu_ps(b + (ptrdiff_t)k * sb + 8 * v);                                 \
            _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++) {                               \
                __m256 ar = _mm256_broadcast_ss(a + (AIDX));                                      \
                _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[r][v] =                  \
                    _mm256_fmadd_ps(ar, bv[v], acc[r][v]);                                        \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
    _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++)                                         \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                      \
            _mm256_storeu_ps(c + r * ldc + 8 * v, acc[r][v]);

#define DEF_K256(MR, NV) DEF_KERNELS(T256, k256, K256_BODY, MR, NV)

DEF_K256(6, 2)
// The M edge of the 6-row tile: 1 to 5 rows of A read in place (no packed, zero-padded panel, no
// copy of the C tile), the same FMA chain per element.
DEF_K256(5, 2)
DEF_K256(4, 2)
DEF_K256(3, 2)
DEF_K256(2, 2)
DEF_K256(1, 2)
static const gemm_kern_fn k256_edge_row[6] = {NULL, k256_row_1x2, k256_row_2x2, k256_row_3x2, k256_row_4x2, k256_row_5x2};
static const gemm_kern_fn k256_edge_col[6] = {NULL, k256_col_1x2, k256_col_2x2, k256_col_3x2, k256_col_4x2, k256_col_5x2};

// 8x8 transpose of rows r[0..7] in place.
T256 static inline void transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    // u[i] (i < 4): rows 0-3 of column i in its low lane, of column i + 4 in its high lane;
    // u[i + 4] the same for rows 4-7. Joining the lanes makes the columns.
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

// transB packing for NR = 16: B rows j (nvalid of them, stride ldb) hold k contiguously;
// dst[k*16 + j] = B[j*ldb + k], zero for j >= nvalid. 8x8 blocks through registers, the last
// k block of a row masked.
T256 static void packbt256_16(int kc, int nvalid, const float *B, ptrdiff_t ldb, float *dst) {
    for (int j0 = 0; j0 < 16; j0 += 8) {
        for (int k0 = 0; k0 < kc; k0 += 8) {
            const int kv = kc - k0 < 8 ? kc - k0 : 8;
            const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            const __m256i km = _mm256_cmpgt_epi32(_mm256_set1_epi32(kv), lane);
            __m256 r[8];
            for (int j = 0; j < 8; j++)
                r[j] = j0 + j < nvalid ? _mm256_maskload_ps(B + (j0 + j) * ldb + k0, km) : _mm256_setzero_ps();
            transpose8(r);
            for (int k = 0; k < kv; k++) _mm256_store_ps(dst + (size_t)(k0 + k) * 16 + j0, r[k]);
        }
    }
}

static const GemmKernel k256d_6x2 = {
    .name = "avx2_6x2", .mr = 6, .nr = 16, .kc = 256, .nc = 512, .cost = 1.0,
    .row = k256_row_6x2, .col = k256_col_6x2, .packbt = packbt256_16,
    .edge_row = k256_edge_row, .edge_col = k256_edge_col,
};

const GemmKernel *const gemm_kernels_avx2[] = {&k256d_6x2, NULL};

#else
typedef int gemm_x86_unused;  // ISO C: a translation unit must declare something
#endif
