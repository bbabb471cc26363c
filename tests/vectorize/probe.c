// The loop shapes of the hot elementwise code, for tests/vectorize/check.sh: each function whose
// line carries the marker holds one `#pragma omp simd` loop, which GCC must vectorize with the
// build's floating-point flags (Makefile: FP_FLAGS) on every ISA the check compiles for (GCC
// reports a loop at one of its lines, not always the `for`). Compiled only by the check.
#include "model/kernels/vmath.h"

void probe_exp(float *restrict y, const float *restrict x, int n) {  // VEC: vexpf
#pragma omp simd
    for (int i = 0; i < n; i++) y[i] = vexpf(x[i]);
}

float probe_exp_sum(float *restrict z, float mx, int n) {  // VEC: vexpf with a sum; a softmax row, as the LM head's
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int i = 0; i < n; i++) {
        float e = vexpf(z[i] - mx);
        z[i] = e;
        sum += e;
    }
    return sum;
}

void probe_exp_nonpos(float *restrict y, const float *restrict x, int n) {  // VEC: vexpf_nonpos
#pragma omp simd
    for (int i = 0; i < n; i++) y[i] = vexpf_nonpos(x[i]);
}

void probe_sigmoid(float *restrict y, const float *restrict x, int n) {  // VEC: vsigmoidf
#pragma omp simd
    for (int i = 0; i < n; i++) y[i] = vsigmoidf(x[i]);
}

void probe_silu(float *x, int n) {  // VEC: vsiluf in place
#pragma omp simd
    for (int i = 0; i < n; i++) x[i] = vsiluf(x[i]);
}

void probe_silu_backward(float *restrict d, const float *restrict c, int n) {  // VEC: SiLU's derivative
#pragma omp simd
    for (int i = 0; i < n; i++) {
        float s = vsigmoidf(c[i]);
        d[i] *= s * (1 + c[i] * (1 - s));
    }
}

void probe_softplus(float *restrict y, const float *restrict x, int n) {  // VEC: vsoftplusf
#pragma omp simd
    for (int i = 0; i < n; i++) y[i] = vsoftplusf(x[i]);
}

float probe_log_sum(const float *x, int n) {  // VEC: vlogf with a sum; the evaluator's entropy
    float s = 0;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < n; i++) s += x[i] * vlogf(x[i]);
    return s;
}
