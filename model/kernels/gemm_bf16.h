// Matrix multiply with bfloat16 operands and fp32 accumulation (precision = bf16):
//   C[M,N] = beta * C + bf16(op(A))[M,K] . bf16(op(B))[K,N]
// Same arguments and layout as gemm() (model/kernels/gemm.h); A, B and C stay float in memory: the
// operands are rounded to bf16 (nearest even) as they are packed, and every product is summed in
// fp32. beta is 0 or 1. On x86-64 with AVX512-BF16 (vdpbf16ps: two bf16 products per fp32 lane
// per instruction, twice the fp32 FMA rate). Intel AMX tiles would be the next step, but this
// code was written on an AMD EPYC (Zen 5) without AMX, where AMX code could not be run or tested.
// Determinism: every C element is one fixed chain over k pairs (0,1), (2,3), ... starting from
// beta*C, whatever the blocking and the thread count (threads split C, never K).
// Float in every build (the double test runner checks it too).
#pragma once

// 1 when this CPU (and compiler) can run gemm_bf16: x86-64 with AVX512-BF16. The environment
// variable ATTNSCOPE_NO_BF16=1 makes it 0 (to test the refusal on CPUs that have it).
int gemm_bf16_supported(void);
// OpenMP-parallel when called from serial code (single-threaded inside a parallel region).
// Dies with an internal error when unsupported (check gemm_bf16_supported first).
void gemm_bf16(int transA, int transB, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
               float beta, float *C, int ldc);
