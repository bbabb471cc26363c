// The plain selective scan (mamba_scan_naive.c), one channel and state at a time with every state
// kept: the reference the tests hold the fast scan (model/mixers/mamba_scan.h) to. Linked only
// into the test runner.
#pragma once
#include "model/mixers/mamba_scan.h"

// Same outputs as mamba_scan.h's forward, map and backward, except that the sums come whole:
// dbc[B,T,2N] over all channels, dA[E,N] and dD[E] over all sequences.
void mamba_scan_forward_naive(const MambaScan *s, real *ys);
void mamba_scan_map_naive(const MambaScan *s, int b, int e, real *att);
void mamba_scan_backward_naive(const MambaScan *s, const real *dt_raw, const real *D, const real *dy, real *du,
                               real *ddt, real *dbc, real *dA, real *dD);
