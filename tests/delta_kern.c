// The delta rule's kernel rig of the DeltaNet and Gated DeltaNet tests (delta_kern.h).
#include "tests/delta_kern.h"

#include <math.h>
#include <stdlib.h>

#include "core/io.h"
#include "model/mixers/delta_chunk.h"
#include "tests/gradcheck.h"

void dkern_alloc(DeltaKern *s, int T, int D, int L, double gmax, Rng *rng) {
    *s = (DeltaKern){T, D, L, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    size_t n = (size_t)T * D;
    s->Q = mallocCheck(sizeof(real) * n), s->K = mallocCheck(sizeof(real) * n);
    s->V = mallocCheck(sizeof(real) * n), s->O = mallocCheck(sizeof(real) * n), s->R = mallocCheck(sizeof(real) * n);
    s->beta = mallocCheck(sizeof(real) * T);
    if (gmax >= 0) s->g = mallocCheck(sizeof(real) * T);
    s->states = mallocCheck(sizeof(real) * (size_t)delta_n_states(T, L) * D * D);
    s->work = mallocCheck(sizeof(real) * delta_chunk_work(D, L));
    fill_normal(s->Q, n, rng, 1), fill_normal(s->K, n, rng, 1);
    fill_normal(s->V, n, rng, 1), fill_normal(s->R, n, rng, 1);
    for (int t = 0; t < T; t++) {
        double nq = 0, nk = 0;
        for (int d = 0; d < D; d++) nq += s->Q[t * D + d] * s->Q[t * D + d], nk += s->K[t * D + d] * s->K[t * D + d];
        for (int d = 0; d < D; d++) s->Q[t * D + d] /= (real)(sqrt(nq) * sqrt(D)), s->K[t * D + d] /= (real)sqrt(nk);
        s->beta[t] = (real)rng_uniform(rng);
        if (s->g) s->g[t] = (real)(-gmax * rng_uniform(rng));
    }
}

void dkern_free(DeltaKern *s) {
    free(s->Q), free(s->K), free(s->V), free(s->O), free(s->R), free(s->beta), free(s->g), free(s->states);
    free(s->work);
}

double dkern_loss(void *ctx) {
    DeltaKern *s = ctx;
    int D = s->D;
    if (s->g)
        gdelta_chunk_forward(s->T, D, s->L, s->Q, D, s->K, D, s->V, D, s->beta, 1, s->g, 1, s->O, D, s->states, s->work);
    else delta_chunk_forward(s->T, D, s->L, s->Q, D, s->K, D, s->V, D, s->beta, 1, s->O, D, s->states, s->work);
    double l = 0;
    for (int i = 0; i < s->T * D; i++) l += (double)s->O[i] * s->R[i];
    return l;
}

real *dkern_grads(DeltaKern *s) {
    int T = s->T, D = s->D;
    real *d = callocCheck((size_t)T * (3 * D + (s->g ? 2 : 1)), sizeof(real));
    dkern_loss(s);
    if (s->g)
        gdelta_chunk_backward(T, D, s->L, s->Q, D, s->K, D, s->V, D, s->beta, 1, s->g, 1, s->states, s->R, D, d,
                              d + T * D, d + 2 * T * D, d + 3 * T * D, d + 3 * T * D + T, s->work);
    else
        delta_chunk_backward(T, D, s->L, s->Q, D, s->K, D, s->V, D, s->beta, 1, s->states, s->R, D, d, d + T * D,
                             d + 2 * T * D, d + 3 * T * D, s->work);
    return d;
}

double *dkern_to_double(const real *x, size_t n) {
    double *y = mallocCheck(sizeof(double) * n);
    for (size_t i = 0; i < n; i++) y[i] = x[i];
    return y;
}
