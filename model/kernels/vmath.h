// Vectorizable elementwise math for the hot loops (GELU, softmax rows, the LM head). In the float
// build exp is a branch-free polynomial that the compiler turns into SIMD code inside
// `#pragma omp simd` loops (libm's expf/tanhf are scalar calls and were a third of the step time
// of a GPT-2-shaped model); the double build (tests) uses libm. Same inputs, same bits: nothing
// depends on the thread count or the vector width.
#pragma once
#include <stdint.h>
#include <string.h>

#include "core/real.h"

// The one fast exp of the project (softmax rows, GELU, the gates, Mamba's scan). vexpf exists in
// both builds so the tests can check the float kernel; vexpr is it in the float build and libm's
// exp in the double build.
// e^x = 2^n e^r, n = round(x / ln 2), |r| <= ln2 / 2 (two-part ln 2, exact without FMA), e^r by a
// degree-6 polynomial (a Chebyshev fit rounded to float: relative error 2e-8, below float
// rounding); max error about 2 ulp. Like expf under flush-to-zero: 0 below -86.5 (results under
// 3e-38), +inf above ln(FLT_MAX), NaN stays NaN.
// vexp_poly: the reduction and the polynomial, returning e^r and n; vexpf adds the scale by 2^n
// and the edge cases; vexpf_nonpos is the same function for arguments known to be <= 0 (Mamba's
// scan: delta A < 0), without the upper clamp and the inf and NaN selects. vexp16f_nonpos (below,
// AVX-512) computes 16 of them with the same bits.
static inline float vexp_poly(float xc, float *n_out) {
    const float shift = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
    float t = xc * 1.44269504088896341f + shift;
    float n = t - shift;  // -125 <= n <= 128
    float r = xc - n * 0.693145751953125f;
    r = r - n * 1.428606765330187e-06f;
    float p = 0.0013941108481958508f;
    p = p * r + 0.00837512593716383f;
    p = p * r + 0.04166635125875473f;
    p = p * r + 0.16666415333747864f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    *n_out = n;
    return p;
}
// p 2^n, exact: 2^(n-1) is a normal float for every n vexp_poly gives
static inline float vexp_scale(float p, float n) {
    int32_t bits = ((int32_t)n + 126) << 23;
    float half_scale;
    memcpy(&half_scale, &bits, sizeof half_scale);
    return p * half_scale * 2.0f;
}
static inline float vexp_core(float xc) {
    float n, p = vexp_poly(xc, &n);
    return vexp_scale(p, n);
}
static inline float vexpf(float x) {
    // a NaN x becomes -86.5 here (converting NaN to an integer is undefined) and is returned as
    // is at the end
    float xc = x > -86.5f ? x : -86.5f;
    xc = xc < 88.72283f ? xc : 88.72283f;
    float e = vexp_core(xc);
    e = x < -86.5f ? 0.0f : e;
    e = x > 88.72283f ? HUGE_VALF : e;
    return x == x ? e : x;
}
static inline float vexpf_nonpos(float x) {
    float e = vexp_core(x > -86.5f ? x : -86.5f);
    return x < -86.5f ? 0.0f : e;
}
#ifdef __AVX512F__
#include <immintrin.h>
// vexpf_nonpos on 16 lanes, bit for bit (in both builds, so the tests can compare them): the same reduction and polynomial (the same operations
// in the same order, so the same roundings), and the scale by 2^n in one vscalefps, which is
// exact where p 2^n is a normal float, as it is for every n here. 14 instructions where the
// compiler's vectorization of vexpf_nonpos takes 18: Mamba's scan computes one exp per state
// and token, and it is most of the scan's work.
static inline __m512 vexp16f_nonpos(__m512 x) {
    const __m512 lo = _mm512_set1_ps(-86.5f), shift = _mm512_set1_ps(12582912.0f);
    __m512 xc = _mm512_max_ps(x, lo);
    __m512 t = _mm512_fmadd_ps(xc, _mm512_set1_ps(1.44269504088896341f), shift);
    __m512 n = _mm512_sub_ps(t, shift);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), xc);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187e-06f), r);
    __m512 p = _mm512_set1_ps(0.0013941108481958508f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.00837512593716383f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.04166635125875473f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.16666415333747864f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    __m512 e = _mm512_scalef_ps(p, n);
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, lo, _CMP_NLT_US), e);  // 0 below -86.5
}
#endif
// softplus(r) = log(1 + e^r) = max(r, 0) + log1p(y), y = exp(-|r|) in (0, 1], with log1p(y) =
// 2 atanh(s), s = y / (2 + y) <= 1/3, summed as its odd series to s^15 (truncation < 2e-9
// relative): vectorizable, where libm's log1pf is a call (Mamba's delta, GLA's log-sigmoid gate).
static inline float vsoftplusf(float r) {
    float y = vexpf(r < 0 ? r : -r), s = y / (2 + y), s2 = s * s;
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

// log x for x > 0 (the evaluator's entropy: one log per attention weight, which libm's scalar log
// made a fifth of a sparsity pass). x = 2^k m with m in [sqrt(1/2), sqrt(2)) taken from the bits,
// log m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.172, as its odd series to s^9 (truncation
// about 2e-9 relative); k ln 2 in two parts. Relative error below 1.7e-7 (float rounding). 0 and subnormals give a finite
// number (x log x is then 0 or below 1e-36); inf and NaN are not handled.
static inline float vlogf(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    uint32_t ix = u - 0x3f3504f3u;  // the bits of sqrt(1/2): the exponent steps at sqrt(2)
    int32_t k = (int32_t)ix >> 23;
    uint32_t im = (ix & 0x007fffffu) + 0x3f3504f3u;
    float m;
    memcpy(&m, &im, sizeof m);
    float f = m - 1, s = f / (2 + f), s2 = s * s;
    float p = 1.0f / 9;
    p = p * s2 + 1.0f / 7;
    p = p * s2 + 1.0f / 5;
    p = p * s2 + 1.0f / 3;
    p = p * s2 + 1.0f;
    float kf = (float)k;
    return kf * 0.693145752f + (kf * 1.42860677e-06f + 2 * s * p);
}

// sigma(x) = 1 / (1 + e^-x) and SiLU(x) = x / (1 + e^-x), the form of every sigmoid and SiLU
// in the hot loops. e^-x is vexpf's polynomial with its argument clamped to vexpf's range and
// none of its selects (a sixth of a sigmoid's instructions): where vexpf gives 0 or inf, the
// clamped value makes 1 + e^-x round to 1, or 1 / (1 + e^-x) a subnormal that the trainer's flush
// of denormals (core/fpu.h) makes 0, the same bits; NaN stays NaN.
static inline float vexpf_neg_clamped(float x) {
    float t = -x;
    t = t > -86.5f ? t : -86.5f;
    t = t < 88.72283f ? t : 88.72283f;
    return vexp_core(t);
}
static inline float vsigmoidf(float x) {
    float s = 1 / (1 + vexpf_neg_clamped(x));
    return x == x ? s : x;
}
static inline float vsiluf(float x) { return x / (1 + vexpf_neg_clamped(x)); }

#ifdef REAL_DOUBLE
static inline real vsigmoidr(real x) { return 1 / (1 + exp(-x)); }
static inline real vsilur(real x) { return x / (1 + exp(-x)); }
static inline real vexpr(real x) { return exp(x); }
static inline real vexpr_nonpos(real x) { return exp(x); }
static inline real vsoftplusr(real x) { return (x > 0 ? x : 0) + log1p(exp(-fabs(x))); }
#else

static inline real vsigmoidr(real x) { return vsigmoidf(x); }
static inline real vsilur(real x) { return vsiluf(x); }
static inline real vexpr(real x) { return vexpf(x); }
static inline real vexpr_nonpos(real x) { return vexpf_nonpos(x); }
static inline real vsoftplusr(real x) { return vsoftplusf(x); }
#endif
