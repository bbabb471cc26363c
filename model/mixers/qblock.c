#include "model/mixers/qblock.h"

#include <omp.h>

#include "model/kernels/gemm.h"
#include "model/kernels/vmath.h"

size_t qblock_scratch(int n_planes, int T) { return (size_t)omp_get_max_threads() * (n_planes + 1) * QBLOCK_ROWS * T; }

static QBlockHead head(const QBlock *qb, int bh, const real *qkv, int koff, int voff, const real *att, const real *datt,
                       real *dqkv) {
    int b = bh / qb->H, h = bh % qb->H;
    size_t off = (size_t)b * qb->T * qb->ld + (size_t)h * qb->D;
    size_t ooff = (size_t)b * qb->T * qb->ldo + (size_t)h * qb->D;
    // clang-format off
    QBlockHead hd = {.b = b, .h = h, .bh = bh, .q = qkv + off, .k = qkv + off + koff,
                     .v = qkv + off + voff, .o = att + ooff, .dout = datt ? datt + ooff : NULL};
    // clang-format on
    if (dqkv) hd.dq = dqkv + off, hd.dk = dqkv + off + koff, hd.dv = dqkv + off + voff;
    return hd;
}

void qblock_forward(const QBlock *qb, const real *qkv, int koff, int voff, real *att) {
    int T = qb->T, D = qb->D, ld = qb->ld, ldo = qb->ldo;
    size_t stride = (size_t)(qb->n_planes + 1) * QBLOCK_ROWS * qb->Tmax;
#pragma omp parallel for schedule(dynamic, 1)
    for (int bh = 0; bh < qb->B * qb->H; bh++) {
        QBlockHead hd = head(qb, bh, qkv, koff, voff, att, NULL, NULL);
        real *W = qb->scratch + (size_t)omp_get_thread_num() * stride;
        real *o = (real *)hd.o;
        for (int i0 = 0; i0 < T; i0 += QBLOCK_ROWS) {
            int i1 = i0 + QBLOCK_ROWS < T ? i0 + QBLOCK_ROWS : T;
            qb->weights(qb, &hd, i0, i1, W, 1);
            gemm_serial(0, 0, i1 - i0, D, i1, W, i1, hd.v, ld, 0, o + (size_t)i0 * ldo, ldo);
        }
    }
}

void qblock_backward(const QBlock *qb, const real *qkv, int koff, int voff, const real *att, const real *datt, real *dqkv) {
    int T = qb->T, D = qb->D, ld = qb->ld, ldo = qb->ldo;
    size_t plane = (size_t)QBLOCK_ROWS * qb->Tmax, stride = (size_t)(qb->n_planes + 1) * plane;
#pragma omp parallel for schedule(dynamic, 1)
    for (int bh = 0; bh < qb->B * qb->H; bh++) {
        QBlockHead hd = head(qb, bh, qkv, koff, voff, att, datt, dqkv);
        real *W = qb->scratch + (size_t)omp_get_thread_num() * stride;
        real *dW = W + (size_t)qb->n_planes * plane;
        for (int i0 = 0; i0 < T; i0 += QBLOCK_ROWS) {
            int i1 = i0 + QBLOCK_ROWS < T ? i0 + QBLOCK_ROWS : T, nq = i1 - i0;
            const real *dout = hd.dout + (size_t)i0 * ldo;
            qb->weights(qb, &hd, i0, i1, W, 0);
            gemm_serial(0, 1, nq, i1, D, dout, ldo, hd.v, ld, 0, dW, i1);  // dW = dO v^T
            qb->dscores(qb, &hd, i0, i1, W, dW);
            // dv[0:i1] += W^T dO;  dq[i0:i1] += dS k;  dk[0:i1] += dS^T q
            gemm_serial(1, 0, i1, D, nq, W, i1, dout, ldo, 1, hd.dv, ld);
            gemm_serial(0, 0, nq, D, i1, dW, i1, hd.k, ld, 1, hd.dq + (size_t)i0 * ld, ld);
            gemm_serial(1, 0, i1, D, nq, dW, i1, hd.q + (size_t)i0 * ld, ld, 1, hd.dk, ld);
        }
    }
}

void qblock_softmax(int D, const real *q, int ldq, const real *k, int ldk, int i0, int i1, real *P, real *lse, int recompute) {
    int nk = i1, nq = i1 - i0;
    real scale = 1 / sqrtr((real)D);
    gemm_serial(0, 1, nq, nk, D, q + (size_t)i0 * ldq, ldq, k, ldk, 0, P, nk);
    for (int r = 0; r < nq; r++) {
        int i = i0 + r;
        real *row = P + (size_t)r * nk;
        if (recompute) {
            real l = lse[i];
#pragma omp simd
            for (int j = 0; j <= i; j++) row[j] = vexpr(row[j] * scale - l);
        } else {
            real m = row[0];
#pragma omp simd reduction(max : m)
            for (int j = 1; j <= i; j++) m = row[j] > m ? row[j] : m;
            m *= scale;
            real sum = 0;
#pragma omp simd reduction(+ : sum)
            for (int j = 0; j <= i; j++) {
                row[j] = vexpr(row[j] * scale - m);
                sum += row[j];
            }
            real inv = 1 / sum;
#pragma omp simd
            for (int j = 0; j <= i; j++) row[j] *= inv;
            lse[i] = m + logr(sum);
        }
        for (int j = i + 1; j < nk; j++) row[j] = 0;
    }
}
