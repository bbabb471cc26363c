#include "model/kernels/dwconv.h"

#include <stddef.h>

#define BLK 16  // channels a register block holds

void dwconv_taps(const real *w, int C, int K, real *taps) {
    for (int c = 0; c < C; c++)
        for (int k = 0; k < K; k++) taps[(size_t)k * C + c] = w[(size_t)c * K + k];
}

void dwconv_grads_add(const real *gtaps, int ldg, const real *gbias, int nc, int K, real *dw, real *dbias) {
    for (int c = 0; c < nc; c++) {
        for (int k = 0; k < K; k++) dw[(size_t)c * K + k] += gtaps[(size_t)k * ldg + c];
        if (gbias) dbias[c] += gbias[c];
    }
}

// Channels [c0, c1) of rows [i0, i1), row by row: any width, any token.
static void forward_rows(const real *taps, int ldt, const real *bias, const real *in, int ldi, real *out, int ldo,
                         int c0, int c1, int t0, int i0, int i1, int K) {
    for (int i = i0; i < i1; i++) {
        int t = t0 + i, k0 = K - 1 - t > 0 ? K - 1 - t : 0;  // the first tap with an input
        real *o = out + (size_t)i * ldo;
        for (int c = c0; c < c1; c++) o[c] = bias ? bias[c] : 0;
        for (int k = k0; k < K; k++) {
            const real *x = in + (size_t)(i - (K - 1 - k)) * ldi, *wk = taps + (size_t)k * ldt;
#pragma omp simd
            for (int c = c0; c < c1; c++) o[c] += wk[c] * x[c];
        }
    }
}

// Width 4, BLK channels from c0, rows [i0, i1) with all four inputs: the sum in registers.
static void forward_block4(const real *restrict taps, int ldt, const real *restrict bias, const real *restrict in,
                           int ldi, real *restrict out, int ldo, int c0, int i0, int i1) {
    const real *w0 = taps + c0, *w1 = w0 + ldt, *w2 = w1 + ldt, *w3 = w2 + ldt;
    for (int i = i0; i < i1; i++) {
        const real *x0 = in + (size_t)i * ldi + c0, *x1 = x0 - ldi, *x2 = x1 - ldi, *x3 = x2 - ldi;  // token t - back
        real *o = out + (size_t)i * ldo + c0;
#pragma omp simd
        for (int c = 0; c < BLK; c++) {
            real acc = bias ? bias[c0 + c] : 0;
            acc += w0[c] * x3[c];
            acc += w1[c] * x2[c];
            acc += w2[c] * x1[c];
            acc += w3[c] * x0[c];
            o[c] = acc;
        }
    }
}

void dwconv_forward(const real *taps, int ldt, const real *bias, const real *in, int ldi, real *out, int ldo, int nc,
                    int t0, int n, int K) {
    int i0 = K == 4 ? (t0 < 3 ? 3 - t0 : 0) : n, blocked = nc / BLK * BLK;
    if (i0 > n) i0 = n;
    forward_rows(taps, ldt, bias, in, ldi, out, ldo, 0, nc, t0, 0, i0, K);
    for (int c0 = 0; c0 < blocked && K == 4 && i0 < n; c0 += BLK)
        forward_block4(taps, ldt, bias, in, ldi, out, ldo, c0, i0, n);
    forward_rows(taps, ldt, bias, in, ldi, out, ldo, blocked, nc, t0, i0, n, K);
}

// Channels [c0, c1) of rows [i0, i1), row by row.
static void backward_rows(const real *taps, int ldt, const real *in, int ldi, const real *dout, int lddo, real *din, int lddi,
                          int c0, int c1, int t0, int i0, int i1, int T, int K, real *gtaps, int ldg, real *gbias) {
    for (int i = i0; i < i1; i++) {
        int t = t0 + i;
        real *dx = din + (size_t)i * lddi;
        for (int k = 0, first = 1; k < K; k++) {
            int ahead = K - 1 - k;  // out[t + ahead] used in[t] with tap k
            if (t + ahead >= T) continue;
            const real *dy = dout + (size_t)(i + ahead) * lddo, *wk = taps + (size_t)k * ldt;
            if (first) {
#pragma omp simd
                for (int c = c0; c < c1; c++) dx[c] = wk[c] * dy[c];
            } else {
#pragma omp simd
                for (int c = c0; c < c1; c++) dx[c] += wk[c] * dy[c];
            }
            first = 0;
        }
        const real *dy = dout + (size_t)i * lddo;
        if (gbias)
            for (int c = c0; c < c1; c++) gbias[c] += dy[c];
        for (int k = 0; k < K; k++) {
            int back = K - 1 - k;
            if (back > t) continue;
            const real *x = in + (size_t)(i - back) * ldi;
            real *gk = gtaps + (size_t)k * ldg;
#pragma omp simd
            for (int c = c0; c < c1; c++) gk[c] += dy[c] * x[c];
        }
    }
}

// Width 4, BLK channels from c0, rows [i0, i1) whose four inputs and four outputs are all in the
// sequence: din and the five partial sums in registers over the rows.
static void backward_block4(const real *restrict taps, int ldt, const real *restrict in, int ldi,
                            const real *restrict dout, int lddo, real *restrict din, int lddi, int c0, int i0, int i1,
                            real *restrict gtaps, int ldg, real *restrict gbias) {
    const real *w0 = taps + c0, *w1 = w0 + ldt, *w2 = w1 + ldt, *w3 = w2 + ldt;
    real g0[BLK], g1[BLK], g2[BLK], g3[BLK], gb[BLK];
    for (int c = 0; c < BLK; c++) {
        g0[c] = gtaps[c0 + c], g1[c] = gtaps[ldg + c0 + c], g2[c] = gtaps[2 * (size_t)ldg + c0 + c];
        g3[c] = gtaps[3 * (size_t)ldg + c0 + c], gb[c] = gbias ? gbias[c0 + c] : 0;
    }
    for (int i = i0; i < i1; i++) {
        const real *y0 = dout + (size_t)i * lddo + c0, *y1 = y0 + lddo, *y2 = y1 + lddo, *y3 = y2 + lddo;  // t + ahead
        const real *x0 = in + (size_t)i * ldi + c0, *x1 = x0 - ldi, *x2 = x1 - ldi, *x3 = x2 - ldi;        // t - back
        real *dx = din + (size_t)i * lddi + c0;
#pragma omp simd
        for (int c = 0; c < BLK; c++) {
            real a = w0[c] * y3[c];
            a += w1[c] * y2[c];
            a += w2[c] * y1[c];
            a += w3[c] * y0[c];
            dx[c] = a;
            gb[c] += y0[c];
            g0[c] += y0[c] * x3[c];
            g1[c] += y0[c] * x2[c];
            g2[c] += y0[c] * x1[c];
            g3[c] += y0[c] * x0[c];
        }
    }
    for (int c = 0; c < BLK; c++) {
        gtaps[c0 + c] = g0[c], gtaps[ldg + c0 + c] = g1[c], gtaps[2 * (size_t)ldg + c0 + c] = g2[c];
        gtaps[3 * (size_t)ldg + c0 + c] = g3[c];
        if (gbias) gbias[c0 + c] = gb[c];
    }
}

void dwconv_backward(const real *taps, int ldt, const real *in, int ldi, const real *dout, int lddo, real *din,
                     int lddi, int nc, int t0, int n, int T, int K, real *gtaps, int ldg, real *gbias) {
    // rows [i0, i1): tokens in [3, T - 3), every tap's input and output inside the sequence
    int i0 = t0 < 3 ? 3 - t0 : 0, i1 = T - 3 - t0 < n ? T - 3 - t0 : n, blocked = nc / BLK * BLK;
    if (K != 4 || i1 < i0) i0 = i1 = n;
    if (i0 > n) i0 = i1 = n;
    backward_rows(taps, ldt, in, ldi, dout, lddo, din, lddi, 0, nc, t0, 0, i0, T, K, gtaps, ldg, gbias);
    for (int c0 = 0; c0 < blocked && i0 < i1; c0 += BLK)  // (i0 < i1 only at width 4)
        backward_block4(taps, ldt, in, ldi, dout, lddo, din, lddi, c0, i0, i1, gtaps, ldg, gbias);
    backward_rows(taps, ldt, in, ldi, dout, lddo, din, lddi, blocked, nc, t0, i0, i1, T, K, gtaps, ldg, gbias);
    backward_rows(taps, ldt, in, ldi, dout, lddo, din, lddi, 0, nc, t0, i1, n, T, K, gtaps, ldg, gbias);
}
