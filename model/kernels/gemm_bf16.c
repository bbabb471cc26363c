// clang-format off
// (the whole file: kernels built by macros, which clang-format 14 misreads; .clang-format)
// bf16 GEMM (model/kernels/gemm_bf16.h) on AVX512-BF16.
//
// vdpbf16ps multiplies bf16 PAIRS: lane j of acc gains a[2j] b[2j] + a[2j+1] b[2j+1]. So both
// operands are packed as 32-bit units holding the bf16 values of k = 2kp and 2kp+1 (k padded to
// even with zeros), converted with round-to-nearest-even (vcvtne2ps2bf16) while packing:
//   A: "row" layout ap[r * sa + kp] (transA = 0: each row of A converted in place order) or
//      "col" layout ap[kp * sa + r] (transA = 1: rows k and k+1 of the stored A interleaved);
//      rows up to a multiple of MR are zero.
//   B: panels of NR = 32 columns, bp[(panel * KP + kp) * 32 + j] (transB = 0: rows k, k+1
//      interleaved; transB = 1: rows of the stored B converted, then 16x16 transposes).
// Each call packs all of A and B once (in parallel), then threads compute disjoint blocks of C:
// the micro-kernel holds MR x 32 of C in 28 zmm accumulators and walks k pairs, one broadcast
// pair of A and two vectors of B per row step. K is blocked by KCP pairs (C is reloaded between
// blocks, exactly), N by NCP panels, so each element's chain is the same for any split.
#include "model/kernels/gemm_bf16.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"

#include <omp.h>  // core/no_openmp/omp.h in a build without OpenMP

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define TBF __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#define MR 14    // rows of the register tile
#define NR 32    // columns of the register tile (two zmm)
#define KCP 256  // k pairs per K block (A micro-panel 14 KB, B panel 32 KB)
#define NCP 16   // panels per N block (B block <= 512 KB: the L2)

int gemm_bf16_supported(void) {
    const char *off = getenv("ATTNSCOPE_NO_BF16");
    if (off && *off && strcmp(off, "0")) return 0;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512bf16");
}

static __mmask16 mask16(int n) { return n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1); }

// ---------------------------------------------------------------------------------------------
// Conversion

// src[0..n) to bf16 pairs: dst[kp] = (bf16(src[2kp]), bf16(src[2kp+1])), for kp < nout (a
// multiple of 16), zero past n.
TBF static void cvt_row(const float *src, int n, uint32_t *dst, int nout) {
    for (int k0 = 0; k0 < 2 * nout; k0 += 32) {
        __m512 lo = _mm512_maskz_loadu_ps(mask16(n - k0), src + k0);
        __m512 hi = _mm512_maskz_loadu_ps(mask16(n - k0 - 16), src + k0 + 16);
        _mm512_storeu_si512((void *)(dst + k0 / 2), (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    }
}

// Two rows to interleaved pairs: dst[j] = (bf16(r0[j]), bf16(r1[j])) for j < nout (a multiple
// of 16); zero for j >= n, and r1 = NULL counts as zeros.
TBF static void cvt_pair_rows(const float *r0, const float *r1, int n, uint32_t *dst, int nout) {
    // word 2i <- word i (the r0 half), word 2i+1 <- word 16+i (the r1 half)
    static const uint16_t idx_w[32] = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23,
                                       8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    const __m512i idx = _mm512_loadu_si512((const void *)idx_w);
    for (int j0 = 0; j0 < nout; j0 += 16) {
        __mmask16 m = mask16(n - j0);
        __m512 x0 = _mm512_maskz_loadu_ps(m, r0 + j0);
        __m512 x1 = r1 ? _mm512_maskz_loadu_ps(m, r1 + j0) : _mm512_setzero_ps();
        __m512i v = (__m512i)_mm512_cvtne2ps_pbh(x1, x0);
        _mm512_storeu_si512((void *)(dst + j0), _mm512_permutexvar_epi16(idx, v));
    }
}

// In-register transpose of a 16 x 16 matrix of 32-bit values (rows r[0..15]).
TBF static void transpose16(__m512 r[16]) {
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
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (int i = 0; i < 8; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    }
}

// Panel p of op(B) when transB = 1 (B stored [N, K]): rows j of B hold k contiguously.
TBF static void pack_b_trans(const float *B, int ldb, int N, int K, int KP, int p, uint32_t *dst) {
    for (int half = 0; half < 2; half++) {
        int j0 = p * NR + half * 16;
        for (int kp0 = 0; kp0 < KP; kp0 += 16) {
            __m512 r[16];
            for (int j = 0; j < 16; j++) {
                if (j0 + j >= N) {
                    r[j] = _mm512_setzero_ps();
                    continue;
                }
                const float *s = B + (size_t)(j0 + j) * ldb;
                int k0 = 2 * kp0;
                __m512 lo = _mm512_maskz_loadu_ps(mask16(K - k0), s + k0);
                __m512 hi = _mm512_maskz_loadu_ps(mask16(K - k0 - 16), s + k0 + 16);
                r[j] = (__m512)_mm512_cvtne2ps_pbh(hi, lo);
            }
            transpose16(r);
            int nk = KP - kp0 < 16 ? KP - kp0 : 16;
            for (int i = 0; i < nk; i++)
                _mm512_storeu_ps((float *)(dst + ((size_t)p * KP + kp0 + i) * NR + half * 16), r[i]);
        }
    }
}

// Panel p of op(B) when transB = 0 (B stored [K, N]).
TBF static void pack_b_plain(const float *B, int ldb, int N, int K, int KP, int p, uint32_t *dst) {
    int j0 = p * NR;
    for (int kp = 0; kp < KP; kp++) {
        const float *r0 = B + (size_t)(2 * kp) * ldb + j0;
        const float *r1 = 2 * kp + 1 < K ? r0 + ldb : NULL;
        cvt_pair_rows(r0, r1, N - j0, dst + ((size_t)p * KP + kp) * NR, NR);
    }
}

// ---------------------------------------------------------------------------------------------
// Micro-kernels: C[MR, 32] (= or +=) sum over kp < KP of pairs; AIDX is A(r, kp)'s index.
#define KBF_BODY(AIDX)                                                                            \
    __m512 acc[MR][2];                                                                            \
    _Pragma("GCC unroll 14") for (int r = 0; r < MR; r++) {                                       \
        acc[r][0] = load ? _mm512_loadu_ps(c + r * ldc) : _mm512_setzero_ps();                    \
        acc[r][1] = load ? _mm512_loadu_ps(c + r * ldc + 16) : _mm512_setzero_ps();               \
    }                                                                                             \
    for (int kp = 0; kp < KP; kp++) {                                                             \
        __m512bh b0 = (__m512bh)_mm512_loadu_si512((const void *)(b + (size_t)kp * NR));          \
        __m512bh b1 = (__m512bh)_mm512_loadu_si512((const void *)(b + (size_t)kp * NR + 16));     \
        _Pragma("GCC unroll 14") for (int r = 0; r < MR; r++) {                                   \
            __m512bh ar = (__m512bh)_mm512_set1_epi32((int)a[AIDX]);                              \
            acc[r][0] = _mm512_dpbf16_ps(acc[r][0], ar, b0);                                      \
            acc[r][1] = _mm512_dpbf16_ps(acc[r][1], ar, b1);                                      \
        }                                                                                         \
    }                                                                                             \
    _Pragma("GCC unroll 14") for (int r = 0; r < MR; r++) {                                       \
        _mm512_storeu_ps(c + r * ldc, acc[r][0]);                                                 \
        _mm512_storeu_ps(c + r * ldc + 16, acc[r][1]);                                            \
    }

typedef void (*kbf_fn)(int KP, const uint32_t *a, ptrdiff_t sa, const uint32_t *b, float *c,
                       ptrdiff_t ldc, int load);

TBF static void kbf_row(int KP, const uint32_t *a, ptrdiff_t sa, const uint32_t *b, float *c,
                        ptrdiff_t ldc, int load) {
    KBF_BODY(r * sa + kp)
}

TBF static void kbf_col(int KP, const uint32_t *a, ptrdiff_t sa, const uint32_t *b, float *c,
                        ptrdiff_t ldc, int load) {
    KBF_BODY((ptrdiff_t)kp * sa + r)
}

// ---------------------------------------------------------------------------------------------
// Driver

typedef struct {
    int tA, tB, M, N, K, KP, Mpad, sa, mt, np;
    const float *A, *B;
    int lda, ldb, ldc, beta1;
    uint32_t *ap, *bp;
    float *C;
} Job;

// Thread t of nt packs its share of A (by rows or k pairs) and of B (by panels).
TBF static void pack_share(const Job *j, int t, int nt) {
    if (!j->tA) {
        for (int r = j->Mpad * t / nt; r < j->Mpad * (t + 1) / nt; r++) {
            if (r < j->M) cvt_row(j->A + (size_t)r * j->lda, j->K, j->ap + (size_t)r * j->sa, j->sa);
            else memset(j->ap + (size_t)r * j->sa, 0, sizeof(uint32_t) * j->sa);
        }
    } else {
        for (int kp = j->KP * t / nt; kp < j->KP * (t + 1) / nt; kp++) {
            const float *r0 = j->A + (size_t)(2 * kp) * j->lda;
            cvt_pair_rows(r0, 2 * kp + 1 < j->K ? r0 + j->lda : NULL, j->M, j->ap + (size_t)kp * j->sa, j->sa);
        }
    }
    for (int p = j->np * t / nt; p < j->np * (t + 1) / nt; p++) {
        if (j->tB) pack_b_trans(j->B, j->ldb, j->N, j->K, j->KP, p, j->bp);
        else pack_b_plain(j->B, j->ldb, j->N, j->K, j->KP, p, j->bp);
    }
}

// C tiles [i0, i1) x panels [p0, p1).
TBF static void compute_block(const Job *j, int i0, int i1, int p0, int p1) {
    kbf_fn kern = j->tA ? kbf_col : kbf_row;
    float ct[MR * NR];
    for (int pb = p0; pb < p1; pb += NCP) {
        int pe = pb + NCP < p1 ? pb + NCP : p1;
        for (int kp0 = 0; kp0 < j->KP; kp0 += KCP) {
            int kc = j->KP - kp0 < KCP ? j->KP - kp0 : KCP;
            int load = kp0 > 0 || j->beta1;
            for (int it = i0; it < i1; it++) {
                int r0 = it * MR, rows = j->M - r0 < MR ? j->M - r0 : MR;
                const uint32_t *a = j->tA ? j->ap + (size_t)kp0 * j->sa + r0 : j->ap + (size_t)r0 * j->sa + kp0;
                for (int p = pb; p < pe; p++) {
                    int c0 = p * NR, cols = j->N - c0 < NR ? j->N - c0 : NR;
                    const uint32_t *b = j->bp + ((size_t)p * j->KP + kp0) * NR;
                    float *c = j->C + (size_t)r0 * j->ldc + c0;
                    if (rows == MR && cols == NR) {
                        kern(kc, a, j->sa, b, c, j->ldc, load);
                        continue;
                    }
                    if (load)
                        for (int r = 0; r < rows; r++) memcpy(ct + r * NR, c + (size_t)r * j->ldc, sizeof(float) * cols);
                    kern(kc, a, j->sa, b, ct, NR, load);
                    for (int r = 0; r < rows; r++) memcpy(c + (size_t)r * j->ldc, ct + r * NR, sizeof(float) * cols);
                }
            }
        }
    }
}

// Thread t of nt: its block of C (whole MR tiles or whole panels, never K).
static void compute_share(const Job *j, int t, int nt) {
    if (j->mt >= 2 * nt || j->np < nt)
        compute_block(j, j->mt * t / nt, j->mt * (t + 1) / nt, 0, j->np);
    else
        compute_block(j, 0, j->mt, j->np * t / nt, j->np * (t + 1) / nt);
}

// The calling thread's packing buffer (grown on demand; shared with its team during a call).
static _Thread_local uint32_t *tl_buf;
static _Thread_local size_t tl_n;

void gemm_bf16(int transA, int transB, int M, int N, int K, const float *A, int lda,
               const float *B, int ldb, float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        if (beta == 0)
            for (int i = 0; i < M; i++) memset(C + (size_t)i * ldc, 0, sizeof(float) * N);
        return;
    }
    if (!gemm_bf16_supported()) die("internal error: gemm_bf16 without AVX512-BF16");
    Job j = {.tA = transA, .tB = transB, .M = M, .N = N, .K = K, .A = A, .B = B, .lda = lda,
             .ldb = ldb, .ldc = ldc, .beta1 = beta != 0, .C = C};
    j.KP = (K + 1) / 2;
    j.mt = (M + MR - 1) / MR;
    j.Mpad = j.mt * MR;
    j.np = (N + NR - 1) / NR;
    j.sa = transA ? (j.Mpad + 15) / 16 * 16 : (j.KP + 15) / 16 * 16;
    size_t na = transA ? (size_t)j.KP * j.sa : (size_t)j.Mpad * j.sa;
    size_t nb = (size_t)j.np * j.KP * NR + 16;  // (+16: full-vector stores of the last rows)
    if (na + nb + 16 > tl_n) {
        free(tl_buf);
        tl_n = na + nb + 16;
        tl_buf = aligned_alloc(64, (tl_n * sizeof(uint32_t) + 63) & ~(size_t)63);
        if (!tl_buf) die("out of memory (bf16 packing, %zu bytes)", tl_n * sizeof(uint32_t));
    }
    j.ap = tl_buf;
    j.bp = tl_buf + (na + 15) / 16 * 16;
    int nthr = 1;
#ifdef _OPENMP
    if (!omp_in_parallel() && 2.0 * M * N * (double)K >= 1e6) nthr = omp_get_max_threads();
#endif
    if (nthr <= 1) {
        pack_share(&j, 0, 1);
        compute_share(&j, 0, 1);
        return;
    }
#pragma omp parallel num_threads(nthr)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        pack_share(&j, t, nt);
#pragma omp barrier
        compute_share(&j, t, nt);
    }
}

#else  // no AVX512-BF16 code for this architecture or compiler

int gemm_bf16_supported(void) { return 0; }

void gemm_bf16(int transA, int transB, int M, int N, int K, const float *A, int lda,
               const float *B, int ldb, float beta, float *C, int ldc) {
    (void)transA, (void)transB, (void)M, (void)N, (void)K, (void)A, (void)lda, (void)B, (void)ldb;
    (void)beta, (void)C, (void)ldc;
    die("internal error: gemm_bf16 is not available in this build");
}
#endif
