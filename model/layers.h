// The transformer's elementwise and row-wise layers, llm.c style: each *_forward has a *_backward
// with the same arguments that ACCUMULATES (+=) into the gradients it is given.
// Reductions over rows run in a fixed order (fixed row chunks), so results do not depend on the
// thread count.
#pragma once
#include <stddef.h>

#include "core/real.h"
#include "model/precision.h"

#define LAYERNORM_EPS 1e-5

// out[N,C] = (inp - mean) * rstd * w + b; also saves mean[N], rstd[N].
void layernorm_forward(real *out, real *mean, real *rstd, const real *inp, const real *w, const real *b, int N, int C);
void layernorm_backward(real *dinp, real *dw, real *db, const real *dout, const real *inp, const real *w,
                        const real *mean, const real *rstd, int N, int C);

// GELU, tanh approximation (GPT-2).
void gelu_forward(real *out, const real *inp, size_t n);
void gelu_backward(real *dinp, const real *inp, const real *dout, size_t n);

// out = a + b (elementwise).
void residual_forward(real *out, const real *a, const real *b, size_t n);

// out[B,T,C] = wte[tokens] (+ wpe[t] when wpe != NULL).
void embedding_forward(real *out, const int *tokens, const real *wte, const real *wpe, int B, int T, int C);
void embedding_backward(real *dwte, real *dwpe, const real *dout, const int *tokens, int B, int T, int C);

// The precision of the `precision` key's value: "fp32", or "bf16" = operands rounded to bfloat16
// with fp32 accumulation (model/kernels/gemm_bf16.h); weights, gradients and every other op stay
// fp32. Dies with exit 2 naming the key for another value, or for bf16 on a CPU (or a build)
// without AVX512-BF16.
Precision precision_parse(const char *name);
// gemm() (model/kernels/gemm.h) in precision `prec`: every matmul of the linear layers and the LM
// head goes through it.
void matmul_gemm(int transA, int transB, int M, int N, int K, const real *A, int lda, const real *B, int ldb, real beta,
                 real *C, int ldc, Precision prec);

// Linear layer in PyTorch layout: out[N,OC] = inp[N,IC] . w[OC,IC]^T + bias[OC] (bias may be NULL).
void matmul_forward(real *out, const real *inp, const real *w, const real *bias, int N, int IC, int OC, Precision prec);
// dinp[N,IC] += dout . w;  dw[OC,IC] += dout^T . inp;  dbias[OC] += column sums of dout.
// dinp, dw or dbias may be NULL to skip that product.
void matmul_backward(real *dinp, real *dw, real *dbias, const real *dout, const real *inp, const real *w, int N, int IC,
                     int OC, Precision prec);

// Short convolution (config key `short_conv` = K): depthwise causal convolution along time with a
// bias and no activation, on the mixer's input (docs/mixers.md, Hybrid stacks and short
// convolution). w[C,K] as PyTorch's Conv1d(C, C, K, groups=C, padding=K-1) truncated to T:
//   out[b,t,c] = bias[c] + sum_k w[c,k] inp[b, t-(K-1)+k, c]   (inputs before t = 0 are zero)
// bias (and dbias) may be NULL: no bias, as DeltaNet's own q/k/v convolutions.
void short_conv_forward(real *out, const real *inp, const real *w, const real *bias, int B, int T, int C, int K);
// dinp[b,t,c] += sum_k w[c,k] dout[b, t+(K-1)-k, c];  dw[c,k] += sum_{b,t} dout[b,t,c]
// inp[b, t-(K-1)+k, c];  dbias[c] += sum_{b,t} dout[b,t,c]  (fixed order over row chunks).
void short_conv_backward(real *dinp, real *dw, real *dbias, const real *dout, const real *inp, const real *w, int B,
                         int T, int C, int K);
// The same with dinp written instead of accumulated (no zeroing first).
void short_conv_backward_set(real *dinp, real *dw, real *dbias, const real *dout, const real *inp, const real *w, int B,
                             int T, int C, int K);
// One token for generation: out[C] from x[C] and state[(K-1)*C], the K-1 previous inputs, oldest
// first (zero before position 0); then shifts x into the state. Agrees with short_conv_forward.
void short_conv_step(real *out, real *state, const real *x, const real *w, const real *bias, int C, int K);

// out[C] += sum over the N rows of x[N,C], in a fixed order.
void colsum_accumulate(real *out, const real *x, int N, int C);
