// The depthwise causal convolution of width K along time (short_conv's function, layers.h) on a
// slice of nc channels of one sequence's rows, for the mixers that run it inside their
// per-(sequence, head) tasks on rows in cache (DeltaNet's q/k/v conv, Mamba-2's xBC conv). Row i
// of each buffer is token t0 + i of the sequence, each buffer with its own row stride, and the
// rows before token t0 back to token 0 are readable. taps [K, ldt] are the weights w [C, K]
// transposed (taps[k ldt + c] = w[c, k]; column K-1 meets the current token), from dwconv_taps.
//
// Width 4 (every mixer's default) keeps each sum in registers 16 channels at a time over the
// rows whose taps all fall inside the sequence; the rest go row by row. Both add the same terms in
// the same order as short_conv_forward and short_conv_backward_set (the weight and bias gradients
// apart, whose partial sums the caller groups), each sum a chain of fused multiply-adds.
#pragma once
#include "core/real.h"

// taps [K, C] from w [C, K].
void dwconv_taps(const real *w, int C, int K, real *taps);

// out[i, c] = bias[c] + sum_k taps[k, c] in[i - (K-1) + k, c] for tokens t0 .. t0 + n - 1 (inputs
// before token 0 are zero; bias may be NULL).
void dwconv_forward(const real *taps, int ldt, const real *bias, const real *in, int ldi, real *out, int ldo, int nc,
                    int t0, int n, int K);

// Its backward for tokens t0 .. t0 + n - 1 of a sequence of T: din[i, c] = sum_k taps[k, c]
// dout[i + (K-1) - k, c] over the outputs inside the sequence (dout's rows after the n given, up to
// K - 1 of them, must be final), written, not added; gtaps [K, ldg] += dout[i, c] in[i - (K-1) + k,
// c] and gbias [nc] (NULL: none) += dout[i, c], each channel's rows added in order.
void dwconv_backward(const real *taps, int ldt, const real *in, int ldi, const real *dout, int lddo, real *din,
                     int lddi, int nc, int t0, int n, int T, int K, real *gtaps, int ldg, real *gbias);

// dw [nc, K] (the weights' layout, at the slice's first channel) += gtaps [K, ldg] transposed, and
// dbias [nc] += gbias (both NULL: none): a partial from dwconv_backward into the gradients.
void dwconv_grads_add(const real *gtaps, int ldg, const real *gbias, int nc, int K, real *dw, real *dbias);
