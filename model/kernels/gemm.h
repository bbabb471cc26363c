// General matrix multiply on row-major `real` matrices:
//   C[M,N] = beta * C + op(A)[M,K] . op(B)[K,N],   op(X) = X (trans = 0) or X^T (trans = 1)
// lda/ldb/ldc are row strides of the matrices as stored (A is [M,K] when transA = 0, [K,M] when 1).
// beta is 0 (overwrite; C may hold garbage, even NaN) or 1 (accumulate).
// Determinism: every C element's sum over K runs in one fixed order whatever the thread count,
// so results are bit-identical for OMP_NUM_THREADS=1 and 2.
#pragma once
#include "core/real.h"

// OpenMP-parallel; call from serial code.
void gemm(int transA, int transB, int M, int N, int K, const real *A, int lda, const real *B, int ldb, real beta,
          real *C, int ldc);
// Single-threaded; safe to call inside an OpenMP parallel region. Same results as gemm().
void gemm_serial(int transA, int transB, int M, int N, int K, const real *A, int lda, const real *B, int ldb, real beta,
                 real *C, int ldc);
