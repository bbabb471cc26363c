// The plain delta-rule recurrence (delta_naive.h).
#include "model/mixers/delta_naive.h"

#include <math.h>
#include <stdlib.h>

#include "core/io.h"

void delta_rule_naive(int T, int K, int V, const double *q, const double *k, const double *v, const double *beta, double *o) {
    gated_delta_rule_naive(T, K, V, q, k, v, beta, NULL, o);
}

void gated_delta_rule_naive(int T, int K, int V, const double *q, const double *k, const double *v, const double *beta,
                            const double *g, double *o) {
    double *S = callocCheck((size_t)K * V, sizeof(double)), *u = mallocCheck(sizeof(double) * V);
    for (int t = 0; t < T; t++) {
        const double *qt = q + (size_t)t * K, *kt = k + (size_t)t * K, *vt = v + (size_t)t * V;
        if (g)  // S = alpha S: the decay first
            for (size_t i = 0; i < (size_t)K * V; i++) S[i] *= exp(g[t]);
        for (int j = 0; j < V; j++) {  // u = beta (v - S^T k): what the slot of k is missing
            double s = 0;
            for (int i = 0; i < K; i++) s += S[(size_t)i * V + j] * kt[i];
            u[j] = beta[t] * (vt[j] - s);
        }
        for (int i = 0; i < K; i++)
            for (int j = 0; j < V; j++) S[(size_t)i * V + j] += kt[i] * u[j];
        for (int j = 0; j < V; j++) {
            double s = 0;
            for (int i = 0; i < K; i++) s += S[(size_t)i * V + j] * qt[i];
            o[(size_t)t * V + j] = s;
        }
    }
    free(S), free(u);
}
