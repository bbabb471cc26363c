// The chunked delta rule on one head (model/mixers/delta_chunk.h), as the kernel tests of
// DeltaNet (tests/test_deltanet.c) and Gated DeltaNet (tests/test_gated_deltanet.c) drive it:
// random inputs of the shapes the layer passes, the loss sum(O * R) and its gradients.
#pragma once
#include <stddef.h>

#include "core/real.h"
#include "core/rng.h"

typedef struct {
    int T, D, L;                                         // tokens, head width, chunk
    real *Q, *K, *V, *beta, *g, *O, *R, *states, *work;  // g NULL: DeltaNet (no decay)
} DeltaKern;

// q, k unit vectors (q then scaled by D^-1/2, as the layer passes them), v, R ~ N(0, 1), beta
// uniform in (0, 1), and with gmax >= 0 the log-decays g uniform in (-gmax, 0) (alpha = exp(g)
// down to exp(-gmax)); gmax < 0: no g, DeltaNet's kernel.
void dkern_alloc(DeltaKern *s, int T, int D, int L, double gmax, Rng *rng);
void dkern_free(DeltaKern *s);
// The chunked forward into O (and the chunk states), then sum(O * R) in fp64.
double dkern_loss(void *ctx);
// dQ, dK, dV [T, D] each, then dbeta [T] and (gated) dg [T], of that loss, in one array.
real *dkern_grads(DeltaKern *s);
// x [n] as doubles (for the fp64 recurrences of model/mixers/delta_naive.h).
double *dkern_to_double(const real *x, size_t n);
