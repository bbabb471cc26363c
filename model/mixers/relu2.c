// relu^2 attention (GAU / FLASH, Hua et al. 2022; docs/mixers.md#relu2), per head:
//   a_ij = relu(q_i . k_j / n + b)^2 for j <= i (0 above the diagonal),  o_i = sum_j a_ij v_j,
// n = seq_len (the configured length, fixed, not the call's), b = `relu2_bias`; then the output
// projection. No normalisation: rows do not sum to 1 and every score <= 0 gives an exact zero.
// The causal mask is applied to a_ij itself (lucidrains' GAU masks before the square, which leaks
// the future). Forward and backward run model/mixers/qblock.c's blocks of query rows like softmax,
// so memory is O(64 T) per thread; backward recomputes the block (O(T^2) per head).
// The template of the qblock family (model/mixers/qblock_mixer.h): what is here is all such a
// mixer writes, its options, weights, score gradient, maps and step; the other slots are qmix_*.

#include "core/io.h"
#include "model/kernels/gemm.h"
#include "model/mixers/qblock_mixer.h"

typedef struct {
    QMixer q;          // the family's part (first): shapes, and the hooks below
    real inv_n, bias;  // 1 / seq_len, b
} Relu2;

// clang-format off
static const KeyDef relu2_keys[] = {
    {"relu2_bias", KEY_FLOAT, "0", RANGE_ANY, 0, 0, "model",
     "relu2: the constant b in a_ij = relu(q_i.k_j / seq_len + b)^2"},
    {NULL, 0, NULL, 0, NULL, 0, NULL, NULL},
};
// clang-format on

// R = relu(q_i.k_j / n + b) for query rows [i0, i1) against keys [0, i1), row stride i1, 0 above
// the diagonal. q and k have row stride ldq.
static void block_relu(const Relu2 *m, const real *q, const real *k, int ldq, int i0, int i1, real *R) {
    int nk = i1;
    gemm_serial(0, 1, i1 - i0, nk, m->q.s.D, q + (size_t)i0 * ldq, ldq, k, ldq, 0, R, nk);
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

static void *relu2_create(const MixerDims *d) {
    Relu2 *m = mallocCheck(sizeof *m);
    qmix_init(&m->q, d, 1, relu2_weights, relu2_dscores);  // one plane: R, squared in place
    m->inv_n = (real)(1.0 / d->T);
    m->bias = (real)cfg_float(d->cfg, "relu2_bias");
    return m;
}

static void relu2_attention(const void *st, const MixerIO *io, int b, int h, real *a) {
    const Relu2 *m = st;
    int T = io->T, C3 = 3 * m->q.s.C;
    const real *q = io->act[QKV_A_QKV] + (size_t)b * T * C3 + h * m->q.s.D;
    block_relu(m, q, q + m->q.s.C, C3, 0, T, a);
    for (size_t e = 0; e < (size_t)T * T; e++) a[e] *= a[e];
}

// The score q_i.k_j / seq_len + b as one dot product, for the evaluator's theory:
// q' = [q / seq_len, b], k' = [k, 1] (K = D + 1).
static int relu2_attention_qk(const void *st, const MixerIO *io, int b, int h, real *q, real *k) {
    const Relu2 *m = st;
    int T = io->T, C3 = 3 * m->q.s.C, D = m->q.s.D;
    const real *qs = io->act[QKV_A_QKV] + (size_t)b * T * C3 + h * D, *ks = qs + m->q.s.C;
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

// The KV cache and qkv (qmix_step_in), then o [C].
static size_t relu2_state_size(const void *st) { return qmix_state_size(st, ((const Relu2 *)st)->q.s.C); }

static void relu2_step(const void *st, real *const *p, real *state, int t, const real *x, real *y) {
    const Relu2 *m = st;
    int C = m->q.s.C, D = m->q.s.D;
    QMixStep k = qmix_step_in(&m->q, p, state, t, x);
    const real *kc = k.k, *vc = k.v, *qkv = k.qkv;
    real *o = k.scratch;
    for (int h = 0; h < m->q.s.H; h++) {
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
    qkv_step_out(&m->q.s, p, o, y);
}

const MixerKind mixer_relu2 = {
    .name = "relu2",
    .summary = "relu^2 attention a_ij = relu(q_i.k_j / seq_len + b)^2, unnormalised (GAU/FLASH, Hua et al. 2022)",
    .options = relu2_keys,
    .length_bound = "n",  // n = seq_len
    .create = relu2_create,
    .destroy = qmix_destroy,
    .params = qmix_params,
    .buffers = qmix_buffers,
    .forward = qmix_forward,
    .backward = qmix_backward,
    .n_maps = qmix_n_maps,
    .attention = relu2_attention,
    .attention_values = qmix_attention_values,
    .finish = qmix_finish,
    .theory = THEORY_RELU2,
    .attention_qk = relu2_attention_qk,
    .state_size = relu2_state_size,
    .state_floats = qmix_state_floats,
    .step = relu2_step,
    .flops = qmix_flops,
};
