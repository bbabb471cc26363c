// Plain references of the linear-attention kernels (linear_naive.h).
#include "model/mixers/linear_naive.h"

#include <math.h>
#include <stdlib.h>

#include "core/io.h"

void lin_decay_naive(int T, int K, int W, double g, double scale, const real *Q, const real *Kt, const real *V, double *O) {
    for (int i = 0; i < T; i++)
        for (int w = 0; w < W; w++) {
            double s = 0;
            for (int j = 0; j <= i; j++) {
                double d = 0;
                for (int c = 0; c < K; c++) d += (double)Q[i * K + c] * Kt[j * K + c];
                s += scale * pow(g, i - j) * d * V[j * W + w];
            }
            O[i * W + w] = s;
        }
}

static double phi(double x) { return x > 0 ? x + 1 : exp(x); }

void linear_elu1_naive(int T, int D, const double *q, const double *k, const double *v, double *o, double *mag) {
    double *S = callocCheck((size_t)D * D, sizeof(double)), *Sabs = callocCheck((size_t)D * D, sizeof(double));
    double *z = callocCheck((size_t)D, sizeof(double));
    for (int t = 0; t < T; t++) {
        const double *qt = q + (size_t)t * D, *kt = k + (size_t)t * D, *vt = v + (size_t)t * D;
        double den = 1e-6;
        for (int c = 0; c < D; c++) {
            z[c] += phi(kt[c]);
            den += phi(qt[c]) * z[c];
            for (int w = 0; w < D; w++) {
                S[c * D + w] += phi(kt[c]) * vt[w];
                Sabs[c * D + w] += phi(kt[c]) * fabs(vt[w]);
            }
        }
        for (int w = 0; w < D; w++) {
            double num = 0, m = 0;
            for (int c = 0; c < D; c++) {
                num += S[c * D + w] * phi(qt[c]);
                m += Sabs[c * D + w] * phi(qt[c]);
            }
            o[(size_t)t * D + w] = num / den;
            if (mag) mag[(size_t)t * D + w] = m / den;
        }
    }
    free(S), free(Sabs), free(z);
}
