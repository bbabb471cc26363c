// The query-block loop shared by the O(T^2) mixers whose head output is o_i = sum_{j<=i} a_ij v_j
// with weights a_ij computed from the scores q_i.k_j (softmax, cog, relu2, gpam). Rows are taken
// QBLOCK_ROWS at a time against their causal key prefix, so memory is O(QBLOCK_ROWS * T) per
// thread and no T x T matrix exists; the backward recomputes each block's weights. A mixer
// supplies two hooks, the weights of a block and the gradient of its scores:
//   forward, per block:   W = weights(q, k);  o[i0:i1] = W v
//   backward, per block:  W = weights(q, k) (recomputed);  dW = dO v^T;  dscores(W, dW) turns dW
//                         into dS = dLoss/d(q_i.k_j) (any scale included) and may rewrite W into
//                         the weights that multiply v;  dv += W^T dO;  dq += dS k;  dk += dS^T q.
// Every (batch row, head) pair is one task of an OpenMP loop with a fixed order of sums inside,
// so results do not depend on the thread count. The mixers reach this loop through the family
// wrapper model/mixers/qblock_mixer.h, which builds the QBlock of a call from their hooks.
#pragma once
#include <stddef.h>

#include "core/real.h"

#define QBLOCK_ROWS 64  // query rows per block

// One head of one batch row: pointers to its first column.
typedef struct {
    int b, h, bh;           // batch row, head, b * H + h
    const real *q, *k, *v;  // [T, D] each, row stride QBlock.ld
    const real *o;          // [T, D] the mixing output (att), row stride QBlock.ldo
    const real *dout;       // [T, D] its gradient (backward only), row stride ldo
    real *dq, *dk, *dv;     // [T, D] gradients (backward only), row stride ld
} QBlockHead;

typedef struct QBlock QBlock;
struct QBlock {
    const void *mixer;  // the mixer's state, for the hooks
    const void *call;   // the call's data (usually its MixerIO), for the hooks
    int B, T, H, D;     // this call's batch and length, heads, head width
    int ld, ldo;        // row strides of q/k/v (and dq/dk/dv) and of o/dout
    int n_planes;       // block planes weights() and dscores() use, besides dW
    int Tmax;           // the longest call the scratch is sized for
    real *scratch;      // qblock_scratch(n_planes, Tmax) reals
    // Weights of query rows [i0, i1) against keys [0, i1) into W (row stride i1, zeros above the
    // diagonal); planes W + p * QBLOCK_ROWS * Tmax, p < n_planes, are the mixer's own. forward = 1
    // in the forward pass (row statistics may be stored), 0 when the backward recomputes.
    void (*weights)(const QBlock *qb, const QBlockHead *hd, int i0, int i1, real *W, int forward);
    // Backward: dW = dO v^T of the block on entry, the scores' gradient on return.
    void (*dscores)(const QBlock *qb, const QBlockHead *hd, int i0, int i1, real *W, real *dW);
};

// Scratch reals for all threads: (n_planes + 1) planes of QBLOCK_ROWS x T per thread.
size_t qblock_scratch(int n_planes, int T);
// o = W v for every head; qkv's q, k, v columns of head h start at q0 + h*D, q0 + koff + h*D, ...
// (koff, voff: column offsets of k and v from q), att's at att + h*D.
void qblock_forward(const QBlock *qb, const real *qkv, int koff, int voff, real *att);
// Accumulates dq, dk, dv into dqkv (same layout as qkv) from datt (same layout as att).
void qblock_backward(const QBlock *qb, const real *qkv, int koff, int voff, const real *att, const real *datt, real *dqkv);

// Softmax weights of a block: P = softmax_j(q_i.k_j / sqrt(D)) over j <= i for query rows
// [i0, i1) against keys [0, i1), into P (row stride i1, zeros above the diagonal). Stores each
// row's log-sum-exp in lse[i] (recompute = 0) or reads it (recompute = 1: one exp per weight).
void qblock_softmax(int D, const real *q, int ldq, const real *k, int ldk, int i0, int i1, real *P, real *lse, int recompute);
