// Vectorizable elementwise math for the hot loops (GELU, softmax rows, the LM head). In the float
// build exp is a branch-free polynomial that the compiler turns into SIMD code inside
// `#pragma omp simd` loops (libm's expf/tanhf are scalar calls and were a third of the step time
// of a GPT-2-shaped model); the double build (tests) uses libm. Same inputs, same bits: nothing
// depends on the thread count or the vector width.
#pragma once
#include <stdint.h>
#include <string.h>

#include "core/real.h"

#ifdef REAL_DOUBLE
static inline real vexpr(real x) { return exp(x); }
#else
// e^x = 2^n e^r, n = round(x / ln 2), |r| <= ln2 / 2 (two-part ln 2), e^r by its Taylor series to
// degree 7 (truncation < 6e-9, below float rounding); max error about 2 ulp. Like expf under
// flush-to-zero: 0 below -86.5 (results under 3e-38), +inf above ln(FLT_MAX), NaN stays NaN.
static inline float vexpr(float x) {
    // a NaN x becomes -86.5 here (converting NaN to an integer below is undefined) and is
    // returned as is at the end
    float xc = x > -86.5f ? x : -86.5f;
    xc = xc < 88.72283f ? xc : 88.72283f;
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
    float e = p * half_scale * 2.0f;
    e = x < -86.5f ? 0.0f : e;
    e = x > 88.72283f ? HUGE_VALF : e;
    return x == x ? e : x;
}
#endif
