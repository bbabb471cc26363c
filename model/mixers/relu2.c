// relu^2 attention (GAU / FLASH, Hua et al. 2022; docs/mixers.md#relu2), per head:
//   a_ij = relu(q_i . k_j / n + b)^2 for j <= i (0 above the diagonal),  o_i = sum_j a_ij v_j,
// n = seq_len (the configured length, fixed, not the call's), b = `relu2_bias`; then the output
// projection. No normalisation: rows do not sum to 1 and every score <= 0 gives an exact zero.
// The causal mask is applied to a_ij itself (lucidrains' GAU masks before the square, which leaks
// the future). Forward and backward run model/mixers/qblock.c's blocks of query rows like softmax,
// so memory is O(64 T) per thread; backward recomputes the block (O(T^2) per head).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/kernels/gemm.h"
#include "model/mixers/qblock.h"
#include "model/mixers/qkv_common.h"

typedef struct {
    QkvShape s;
    real inv_n, bias;  // 1 / seq_len, b
} Relu2;

enum { S_BLOCK = QKV_N_SCRATCH };  // scratch: per-thread blocks [2, 64, T] (qblock.h)

static const KeyDef relu2_keys[] = {
    {"relu2_bias", KEY_FLOAT, "0", RANGE_ANY, 0, 0, "model",
     "relu2: the constant b in a_ij = relu(q_i.k_j / seq_len + b)^2"},
    {NULL, 0, NULL, 0, NULL, 0, NULL, NULL},
};

static void *relu2_create(const MixerDims *d) {
    Relu2 *m = mallocCheck(sizeof *m);
    qkv_shape(&m->s, d, 0);
    m->inv_n = (real)(1.0 / d->T);
    m->bias = (real)cfg_float(d->cfg, "relu2_bias");
    return m;
}

static void relu2_destroy(void *st) { free(st); }

static int relu2_params(const void *st, ParamDecl *out) { return qkv_params(&((const Relu2 *)st)->s, out); }

static void relu2_buffers(const void *st, int B, int T, BufDecl *saved, int *n_saved, BufDecl *scratch,
                          int *n_scratch) {
    const Relu2 *m = st;
    qkv_buffers(&m->s, B, T, saved, n_saved, scratch, n_scratch);
    scratch[S_BLOCK] = (BufDecl){"blocks", qblock_scratch(1, T)};
    *n_scratch = S_BLOCK + 1;
}

// R = relu(q_i.k_j / n + b) for query rows [i0, i1) against keys [0, i1), row stride i1, 0 above
// the diagonal. q and k have row stride ldq.
static void block_relu(const Relu2 *m, const real *q, const real *k, int ldq, int i0, int i1, real *R) {
    int nk = i1;
    gemm_serial(0, 1, i1 - i0, nk, m->s.D, q + (size_t)i0 * ldq, ldq, k, ldq, 0, R, nk);
    for (int i = i0; i < i1; i++) {
        real *row = R + (size_t)(i - i0) * nk;
        for (int j = 0; j <= i; j++) {
            real s = row[j] * m->inv_n + m->bias;
            row[j] = s > 0 ? s : 0;
        }
        for (int j = i + 1; j < nk; j++) row[j] = 0;
    }
}

// qblock hooks. The forward's weights are relu(s)^2; the backward keeps R = relu(s) for dscores.
static void relu2_weights(const QBlock *qb, const QBlockHead *hd, int i0, int i1, real *A, int forward) {
    block_relu(qb->mixer, hd->q, hd->k, qb->ld, i0, i1, A);
    if (forward)
        for (size_t e = 0; e < (size_t)(i1 - i0) * i1; e++) A[e] *= A[e];
}

// d(score) = 2 relu(s) dA / n (0 where relu is off); then R becomes A = R^2
static void relu2_dscores(const QBlock *qb, const QBlockHead *hd, int i0, int i1, real *R, real *dA) {
    const Relu2 *m = qb->mixer;
    (void)hd;
    for (size_t e = 0; e < (size_t)(i1 - i0) * i1; e++) {
        dA[e] *= 2 * R[e] * m->inv_n;
        R[e] *= R[e];
    }
}

static QBlock relu2_qblock(const Relu2 *m, const MixerIO *io) {
    return (QBlock){.mixer = m, .call = io, .B = io->B, .T = io->T, .H = m->s.H, .D = m->s.D,
                    .ld = 3 * m->s.C, .ldo = m->s.C, .n_planes = 1, .Tmax = m->s.T,
                    .scratch = io->tmp[S_BLOCK], .weights = relu2_weights, .dscores = relu2_dscores};
}

static void relu2_forward(const void *st, MixerIO *io) {
    const Relu2 *m = st;
    qkv_in_forward(&m->s, io);
    QBlock qb = relu2_qblock(m, io);
    qblock_forward(&qb, io->act[QKV_A_QKV], m->s.C, 2 * m->s.C, io->act[QKV_A_ATT]);
    qkv_out_forward(&m->s, io);
}

static void relu2_backward(const void *st, MixerIO *io) {
    const Relu2 *m = st;
    const real *datt = qkv_out_backward(&m->s, io);
    QBlock qb = relu2_qblock(m, io);
    qblock_backward(&qb, io->act[QKV_A_QKV], m->s.C, 2 * m->s.C, io->act[QKV_A_ATT], datt, io->tmp[QKV_S_DQKV]);
    qkv_in_backward(&m->s, io);
}

static int relu2_n_maps(const void *st) { return ((const Relu2 *)st)->s.H; }

static void relu2_attention(const void *st, const MixerIO *io, int b, int h, real *a) {
    const Relu2 *m = st;
    int T = io->T, C3 = 3 * m->s.C;
    const real *q = io->act[QKV_A_QKV] + (size_t)b * T * C3 + h * m->s.D;
    block_relu(m, q, q + m->s.C, C3, 0, T, a);
    for (size_t e = 0; e < (size_t)T * T; e++) a[e] *= a[e];
}

static int relu2_attention_values(const void *st, const MixerIO *io, int b, int m, real *v, real *o) {
    return qkv_attention_values(&((const Relu2 *)st)->s, io, b, m, v, o);
}

// The score q_i.k_j / seq_len + b as one dot product, for the evaluator's theory:
// q' = [q / seq_len, b], k' = [k, 1] (K = D + 1).
static int relu2_attention_qk(const void *st, const MixerIO *io, int b, int h, real *q, real *k) {
    const Relu2 *m = st;
    int T = io->T, C3 = 3 * m->s.C, D = m->s.D;
    const real *qs = io->act[QKV_A_QKV] + (size_t)b * T * C3 + h * D, *ks = qs + m->s.C;
    for (int t = 0; t < T; t++) {
        for (int d = 0; d < D; d++) {
            q[t * (D + 1) + d] = qs[(size_t)t * C3 + d] * m->inv_n;
            k[t * (D + 1) + d] = ks[(size_t)t * C3 + d];
        }
        q[t * (D + 1) + D] = m->bias;
        k[t * (D + 1) + D] = 1;
    }
    return D + 1;
}

// KV cache: k [T, C], v [T, C], then scratch: qkv [3C], o [C].
static size_t relu2_state_floats(const void *st) {
    const Relu2 *m = st;
    return (size_t)2 * m->s.T * m->s.C;  // the key and value caches at full length
}

static size_t relu2_state_size(const void *st) {
    const Relu2 *m = st;
    return (size_t)2 * m->s.T * m->s.C + 4 * (size_t)m->s.C;
}

static void relu2_step(const void *st, real *const *p, real *state, int t, const real *x, real *y) {
    const Relu2 *m = st;
    int C = m->s.C, D = m->s.D;
    real *kc = state, *vc = kc + (size_t)m->s.T * C, *qkv = vc + (size_t)m->s.T * C, *o = qkv + 3 * C;
    qkv_step_in(&m->s, p, x, qkv);
    memcpy(kc + (size_t)t * C, qkv + C, sizeof(real) * C);
    memcpy(vc + (size_t)t * C, qkv + 2 * C, sizeof(real) * C);
    for (int h = 0; h < m->s.H; h++) {
        real *oh = o + h * D;
        for (int d = 0; d < D; d++) oh[d] = 0;
        for (int j = 0; j <= t; j++) {
            real s = 0;
            for (int d = 0; d < D; d++) s += qkv[h * D + d] * kc[(size_t)j * C + h * D + d];
            s = s * m->inv_n + m->bias;
            if (s <= 0) continue;
            for (int d = 0; d < D; d++) oh[d] += s * s * vc[(size_t)j * C + h * D + d];
        }
    }
    qkv_step_out(&m->s, p, o, y);
}

// Per head q k^T and A v over the causal triangle, as softmax.
static void relu2_flops(const void *st, int B, int T, double *fwd, double *bwd) {
    const Relu2 *m = st;
    qkv_flops(&m->s, B, T, 2.0 * B * m->s.C * T * (T + 1.0), fwd, bwd);
}

const MixerKind mixer_relu2 = {
    .name = "relu2",
    .summary = "relu^2 attention a_ij = relu(q_i.k_j / seq_len + b)^2, unnormalised (GAU/FLASH, Hua et al. 2022)",
    .options = relu2_keys,
    .length_bound = "n",  // n = seq_len
    .create = relu2_create,
    .destroy = relu2_destroy,
    .params = relu2_params,
    .buffers = relu2_buffers,
    .forward = relu2_forward,
    .backward = relu2_backward,
    .n_maps = relu2_n_maps,
    .attention = relu2_attention,
    .attention_values = relu2_attention_values,
    .theory = THEORY_RELU2,
    .attention_qk = relu2_attention_qk,
    .state_size = relu2_state_size,
    .state_floats = relu2_state_floats,
    .step = relu2_step,
    .flops = relu2_flops,
};
