// The plain (naive) reference of the GLA scan (gla_scan.h), in double precision, written as the
// definition reads (docs/mixers.md#gla): what the chunked scan and its in-chunk recurrence are
// tested against, as fla keeps naive.py beside its kernels. O(T^2 K V); not used by training.
#pragma once
#include "core/real.h"

// O_i = sum_{j<=i} a_ij V_j with a_ij = scale sum_c Q_ic K_jc exp(sum_{t=j+1..i} G_tc), the gate
// sum accumulated walking j down from i.       Q, Kt, G [T, K] (row-major), V, O [T, W]
void gla_scan_naive(int T, int K, int W, double scale, const real *Q, const real *Kt, const real *G, const real *V,
                    double *O);
