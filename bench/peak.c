// Peak FMA throughput: 12 independent accumulator chains per thread (enough to cover latency x
// pipes on current cores); flops = 2 * lanes * FMAs.
#include "bench/peak.h"

#include <omp.h>
#include <time.h>

static volatile double g_sink;  // keeps the loops' results alive

double peak_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_X86 1
// 12 independent chains in named variables (an array would be kept in memory).
#define FMA12(F, X, Y)                                                                                                 \
    c0 = F(c0, X, Y), c1 = F(c1, X, Y), c2 = F(c2, X, Y), c3 = F(c3, X, Y), c4 = F(c4, X, Y), c5 = F(c5, X, Y),        \
    c6 = F(c6, X, Y), c7 = F(c7, X, Y), c8 = F(c8, X, Y), c9 = F(c9, X, Y), c10 = F(c10, X, Y), c11 = F(c11, X, Y)
#define SUM12(ADD)                                                                                                     \
    ADD(ADD(ADD(ADD(c0, c1), ADD(c2, c3)), ADD(ADD(c4, c5), ADD(c6, c7))), ADD(ADD(c8, c9), ADD(c10, c11)))
// Start values the compiler cannot see (clang merges chains with known constant starts).
#define START12(SET, s0)                                                                                               \
    c0 = SET(s0), c1 = SET(s0 + 1), c2 = SET(s0 + 2), c3 = SET(s0 + 3), c4 = SET(s0 + 4), c5 = SET(s0 + 5),            \
    c6 = SET(s0 + 6), c7 = SET(s0 + 7), c8 = SET(s0 + 8), c9 = SET(s0 + 9), c10 = SET(s0 + 10), c11 = SET(s0 + 11)

__attribute__((target("avx512f,fma"), noinline)) static double fma_loop512(long iters) {
    __m512 x = _mm512_set1_ps(0.9999999f), y = _mm512_set1_ps(1e-7f);
    __m512 c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11;
    float s0 = (float)g_sink * 0.0f;
    START12(_mm512_set1_ps, s0);
    for (long it = 0; it < iters; it++) FMA12(_mm512_fmadd_ps, x, y);
    g_sink = (double)_mm512_reduce_add_ps(SUM12(_mm512_add_ps));
    return 2.0 * 16.0 * 12.0 * (double)iters;
}

__attribute__((target("avx2,fma"), noinline)) static double fma_loop256(long iters) {
    __m256 x = _mm256_set1_ps(0.9999999f), y = _mm256_set1_ps(1e-7f);
    __m256 c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11;
    float s0 = (float)g_sink * 0.0f;
    START12(_mm256_set1_ps, s0);
    for (long it = 0; it < iters; it++) FMA12(_mm256_fmadd_ps, x, y);
    float t[8];
    _mm256_storeu_ps(t, SUM12(_mm256_add_ps));
    g_sink = (double)t[0];
    return 2.0 * 8.0 * 12.0 * (double)iters;
}

// vdpbf16ps: 16 lanes x 2 bf16 products per instruction.
#define DP(c, x, y) _mm512_dpbf16_ps(c, x, y)
__attribute__((target("avx512f,avx512bf16"), noinline)) static double bf16_loop512(long iters) {
    __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80), y = (__m512bh)_mm512_set1_epi16(0x3380);
    __m512 c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11;
    float s0 = (float)g_sink * 0.0f;
    START12(_mm512_set1_ps, s0);
    for (long it = 0; it < iters; it++) {
        c0 = DP(c0, x, y), c1 = DP(c1, x, y), c2 = DP(c2, x, y), c3 = DP(c3, x, y);
        c4 = DP(c4, x, y), c5 = DP(c5, x, y), c6 = DP(c6, x, y), c7 = DP(c7, x, y);
        c8 = DP(c8, x, y), c9 = DP(c9, x, y), c10 = DP(c10, x, y), c11 = DP(c11, x, y);
    }
    g_sink = (double)_mm512_reduce_add_ps(SUM12(_mm512_add_ps));
    return 2.0 * 32.0 * 12.0 * (double)iters;
}
#endif

static double fma_loop_c(long iters) {
    float acc[16][16];
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) acc[i][j] = (float)j;
    for (long it = 0; it < iters; it++)
        for (int i = 0; i < 16; i++)
            for (int j = 0; j < 16; j++) acc[i][j] = acc[i][j] * 1.0000001f + 0.9999999f;
    g_sink = (double)acc[3][5];
    return 2.0 * 256.0 * (double)iters;
}

static double run_loop(double (*fn)(long), int nthreads, long iters, int reps) {
    double best = 0;
    for (int rep = 0; rep < reps; rep++) {
        double flops = 0, t0 = peak_now();
#pragma omp parallel num_threads(nthreads) reduction(+ : flops)
        flops += fn(iters);
        double t = peak_now() - t0;
        if (flops / t > best) best = flops / t;
    }
    return best * 1e-9;
}

double peak_fp32_iters(int nthreads, const char **kind, long iters, int reps) {
    double (*fn)(long) = fma_loop_c;
    *kind = "scalar C";
#ifdef HAVE_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) fn = fma_loop512, *kind = "AVX-512";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) fn = fma_loop256, *kind = "AVX2";
#endif
    return run_loop(fn, nthreads, iters, reps);
}

double peak_fp32(int nthreads, const char **kind) { return peak_fp32_iters(nthreads, kind, 20000000, 3); }

double peak_fp32_quick(int nthreads) {  // the first few ms after idle run slow: best of 3
    const char *kind;
    return peak_fp32_iters(nthreads, &kind, 2000000, 3);
}

double peak_bf16(int nthreads) {
#ifdef HAVE_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512bf16")) return run_loop(bf16_loop512, nthreads, 10000000, 3);
#endif
    (void)nthreads;
    return 0;
}
