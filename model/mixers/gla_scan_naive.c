// The plain reference of the GLA scan (gla_scan_naive.h).
#include "model/mixers/gla_scan_naive.h"

#include <math.h>
#include <stdlib.h>

#include "core/io.h"

void gla_scan_naive(int T, int K, int W, double scale, const real *Q, const real *Kt, const real *G, const real *V,
                    double *O) {
    double *gs = mallocCheck(sizeof(double) * K);
    for (int i = 0; i < T; i++) {
        for (int w = 0; w < W; w++) O[i * W + w] = 0;
        for (int c = 0; c < K; c++) gs[c] = 0;
        for (int j = i; j >= 0; j--) {
            if (j < i)
                for (int c = 0; c < K; c++) gs[c] += G[(j + 1) * K + c];
            double a = 0;
            for (int c = 0; c < K; c++) a += (double)Q[i * K + c] * Kt[j * K + c] * exp(gs[c]);
            for (int w = 0; w < W; w++) O[i * W + w] += scale * a * V[j * W + w];
        }
    }
    free(gs);
}
