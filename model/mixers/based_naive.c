// The plain reference of Based's Taylor linear attention (based_naive.h).
#include "model/mixers/based_naive.h"

#include <math.h>
#include <stddef.h>

void based_naive(int T, int d, int Dv, const double *q, const double *k, const double *v, double *o, double *den) {
    for (int i = 0; i < T; i++) {
        double z = 0;
        for (int c = 0; c < Dv; c++) o[(size_t)i * Dv + c] = 0;
        for (int j = 0; j <= i; j++) {
            double s = 0;
            for (int c = 0; c < d; c++) s += q[(size_t)i * d + c] * k[(size_t)j * d + c];
            s /= sqrt((double)d);
            double w = 1 + s + s * s / 2;
            z += w;
            for (int c = 0; c < Dv; c++) o[(size_t)i * Dv + c] += w * v[(size_t)j * Dv + c];
        }
        z += 1e-12;
        den[i] = z;
        for (int c = 0; c < Dv; c++) o[(size_t)i * Dv + c] /= z;
    }
}
