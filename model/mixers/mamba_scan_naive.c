// The plain selective scan, the reference for model/mixers/mamba_scan.c (mamba_scan_naive.h):
// one (sequence, channel, state) chain at a time, every state kept, gradients by walking the
// recurrence backwards. Slow and memory-hungry (T N reals per chain); the tests only.
#include "model/mixers/mamba_scan_naive.h"

#include <stdlib.h>
#include <string.h>

#include "core/io.h"

void mamba_scan_forward_naive(const MambaScan *s, real *ys) {
    int B = s->B, T = s->T, E = s->E, N = s->N;
    memset(ys, 0, sizeof(real) * B * T * E);
    for (int b = 0; b < B; b++)
        for (int e = 0; e < E; e++)
            for (int n = 0; n < N; n++) {
                real h = 0, A = s->A[(size_t)e * N + n];
                for (int t = 0; t < T; t++) {
                    size_t bt = (size_t)b * T + t;
                    real d = s->delta[bt * E + e], Bn = s->bc[bt * s->ld + n], Cn = s->bc[bt * s->ld + N + n];
                    h = mamba_exp(d * A) * h + d * Bn * s->u[bt * E + e];
                    ys[bt * E + e] += Cn * h;
                }
            }
}

void mamba_scan_map_naive(const MambaScan *s, int b, int e, real *att) {
    int T = s->T, E = s->E, N = s->N;
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) {
            real a = 0;
            for (int n = 0; n < N && j <= i; n++) {
                real A = s->A[(size_t)e * N + n], decay = 1;
                for (int t = j + 1; t <= i; t++) decay *= mamba_exp(s->delta[((size_t)b * T + t) * E + e] * A);
                const real *bcj = s->bc + ((size_t)b * T + j) * s->ld, *bci = s->bc + ((size_t)b * T + i) * s->ld;
                a += bci[N + n] * decay * bcj[n];
            }
            att[(size_t)i * T + j] = j <= i ? s->delta[((size_t)b * T + j) * E + e] * a : 0;
        }
}

void mamba_scan_backward_naive(const MambaScan *s, const real *dt_raw, const real *D, const real *dy, real *du,
                               real *ddt, real *dbc, real *dA, real *dD) {
    int B = s->B, T = s->T, E = s->E, N = s->N;
    size_t BT = (size_t)B * T;
    memset(du, 0, sizeof(real) * BT * E);
    memset(ddt, 0, sizeof(real) * BT * E);
    memset(dbc, 0, sizeof(real) * BT * 2 * N);
    memset(dA, 0, sizeof(real) * E * N);
    memset(dD, 0, sizeof(real) * E);
    real *h = mallocCheck(sizeof(real) * (T + 1));  // h[t + 1] = state after token t
    for (int b = 0; b < B; b++)
        for (int e = 0; e < E; e++)
            for (int n = 0; n < N; n++) {
                real A = s->A[(size_t)e * N + n];
                h[0] = 0;
                for (int t = 0; t < T; t++) {
                    size_t bt = (size_t)b * T + t;
                    real d = s->delta[bt * E + e];
                    h[t + 1] = mamba_exp(d * A) * h[t] + d * s->bc[bt * s->ld + n] * s->u[bt * E + e];
                }
                real dh_next = 0;  // dLoss/dh_{t+1} through h_{t+1} = a_{t+1} h_t + ...
                for (int t = T - 1; t >= 0; t--) {
                    size_t bt = (size_t)b * T + t;
                    real d = s->delta[bt * E + e], x = s->u[bt * E + e], g = dy[bt * E + e];
                    real Bn = s->bc[bt * s->ld + n], Cn = s->bc[bt * s->ld + N + n];
                    real a = mamba_exp(d * A), dh = Cn * g + dh_next;
                    dbc[bt * 2 * N + N + n] += g * h[t + 1];          // dC_t
                    dbc[bt * 2 * N + n] += dh * d * x;                // dB_t
                    du[bt * E + e] += dh * d * Bn;                    // through d B x
                    ddt[bt * E + e] += dh * (A * a * h[t] + Bn * x);  // d/d delta
                    dA[(size_t)e * N + n] += dh * d * a * h[t];
                    dh_next = dh * a;
                }
            }
    free(h);
    for (size_t bt = 0; bt < BT; bt++)
        for (int e = 0; e < E; e++) {
            size_t i = bt * E + e;
            real raw = dt_raw[i];
            du[i] += D[e] * dy[i];
            dD[e] += dy[i] * s->u[i];
            ddt[i] = raw <= 20 ? ddt[i] / (1 + mamba_exp(-raw)) : ddt[i];
        }
}
