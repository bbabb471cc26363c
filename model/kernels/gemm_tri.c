#include "model/kernels/gemm_tri.h"

#include <stddef.h>

#include "model/kernels/gemm.h"

#define RB GEMM_TRI_RB

void gemm_lower_a(int n, int N, const real *A, int lda, const real *B, int ldb, real beta, real *C, int ldc) {
    for (int r0 = 0; r0 < n; r0 += RB) {
        int r1 = r0 + RB < n ? r0 + RB : n;
        gemm_serial(0, 0, r1 - r0, N, r1, A + (size_t)r0 * lda, lda, B, ldb, beta, C + (size_t)r0 * ldc, ldc);
    }
}

void gemm_lower_at(int n, int N, const real *A, int lda, const real *B, int ldb, real beta, real *C, int ldc) {
    for (int r0 = 0; r0 < n; r0 += RB) {
        int r1 = r0 + RB < n ? r0 + RB : n;
        gemm_serial(1, 0, r1 - r0, N, n - r0, A + (size_t)r0 * lda + r0, lda, B + (size_t)r0 * ldb, ldb, beta,
                    C + (size_t)r0 * ldc, ldc);
    }
}

void gemm_lower_c(int n, int K, const real *A, int lda, int transB, const real *B, int ldb, real *C, int ldc) {
    for (int r0 = 0; r0 < n; r0 += RB) {
        int r1 = r0 + RB < n ? r0 + RB : n;
        gemm_serial(0, transB, r1 - r0, r1, K, A + (size_t)r0 * lda, lda, B, ldb, 0, C + (size_t)r0 * ldc, ldc);
    }
}
