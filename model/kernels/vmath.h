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
// e^x = 2^n e^r, n = round(x / ln 2), |r| <= ln2 / 2 (two-part ln 2), e^r by its Taylor series to
// degree 7 (truncation < 6e-9, below float rounding); max error about 2 ulp. Like expf under
// flush-to-zero: 0 below -86.5 (results under 3e-38), +inf above ln(FLT_MAX), NaN stays NaN.
// vexp_core: the reduction and the polynomial for xc in [-86.5, 88.72283]; vexpf adds the edge
// cases; vexpf_nonpos is the same function for arguments known to be <= 0 or NaN-free (Mamba's
// scan: delta A < 0), without the upper clamp and the inf and NaN selects (half the instructions
// of vexpf in a vector loop; same bits as vexpf for every x <= 0).
static inline float vexp_core(float xc) {
    const float shift = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
    float t = xc * 1.44269504088896341f + shift;
    float n = t - shift;  // -125 <= n <= 128
    float r = xc - n * 0.693145751953125f;
    r = r - n * 1.428606765330187e-06f;
    float p = 1.0f / 5040;
    p = p * r + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t bits = ((int32_t)n + 126) << 23;  // 2^(n-1): a normal float for every n above
    float half_scale;
    memcpy(&half_scale, &bits, sizeof half_scale);
    return p * half_scale * 2.0f;
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

#ifdef REAL_DOUBLE
static inline real vexpr(real x) { return exp(x); }
static inline real vexpr_nonpos(real x) { return exp(x); }
static inline real vsoftplusr(real x) { return (x > 0 ? x : 0) + log1p(exp(-fabs(x))); }
#else
static inline real vexpr(real x) { return vexpf(x); }
static inline real vexpr_nonpos(real x) { return vexpf_nonpos(x); }
static inline real vsoftplusr(real x) { return vsoftplusf(x); }
#endif
