#include "model/mixers/mamba2_ssd_naive.h"

#include <math.h>
#include <stdlib.h>

#include "core/io.h"

void ssd_naive(int T, int P, int N, const double *x, const double *dt, double A, const double *B, const double *C,
               double *y) {
    double *S = callocCheck((size_t)N * P, sizeof(double));
    for (int t = 0; t < T; t++) {
        double a = exp(dt[t] * A);
        for (int n = 0; n < N; n++)
            for (int p = 0; p < P; p++)
                S[(size_t)n * P + p] = a * S[(size_t)n * P + p] + dt[t] * B[(size_t)t * N + n] * x[(size_t)t * P + p];
        for (int p = 0; p < P; p++) {
            double s = 0;
            for (int n = 0; n < N; n++) s += S[(size_t)n * P + p] * C[(size_t)t * N + n];
            y[(size_t)t * P + p] = s;
        }
    }
    free(S);
}
