// Products with a triangular factor, for the chunked mixers' n x n in-chunk matrices (the delta
// rule's and the SSD's causal blocks): row blocks of GEMM_TRI_RB rows, each block's inner
// dimension (or its columns) cut to where the factor can be nonzero. Only exact zeros are left out
// of each element's sum, which gemm_serial runs as an FMA chain in its fixed order, so the bits are
// those of the full product (tests/test_gemm.c holds them equal). Single-threaded, as gemm_serial.
#pragma once
#include "core/real.h"

#define GEMM_TRI_RB 16

// C [n, N] (= with beta 0, += with beta 1) A B, A [n, n] lower-triangular (row i zero past column i).
void gemm_lower_a(int n, int N, const real *A, int lda, const real *B, int ldb, real beta, real *C, int ldc);
// C [n, N] (=, +=) A^T B, A [n, n] lower-triangular (so row i of A^T is zero before column i).
void gemm_lower_at(int n, int N, const real *A, int lda, const real *B, int ldb, real beta, real *C, int ldc);
// The lower triangle (diagonal in) of C [n, n] = A op(B) (A [n, K]; op(B) [K, n] is B [K, n] with
// transB 0, B^T of B [n, K] with transB 1): in each row block the columns up to the block's last
// row are written, the rest of C is left alone.
void gemm_lower_c(int n, int K, const real *A, int lda, int transB, const real *B, int ldb, real *C, int ldc);
