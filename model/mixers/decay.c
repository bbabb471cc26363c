// Fixed-decay linear attention (RetNet's retention without xPos and gate; fla's naive_retention,
// docs/mixers.md#decay), per head h:
//   S_t = gamma_h S_{t-1} + k_t v_t^T,  o_t = S_t^T q_t / sqrt(D)
//   i.e. a_ij = (q_i . k_j / sqrt(D)) gamma_h^(i-j) for j <= i,
// gamma_h = 1 - 2^(-5-h) (torchscale) or one `decay_gamma` for every head, then a per-head
// RMSNorm (standing in for RetNet's GroupNorm) and the output projection. Training uses the
// chunked form (model/mixers/linear_chunk.c): O(T) time, no T x T buffer.
//
// Two MixerKinds share this code. `decay` above; `identity` (docs/mixers.md#identity) is the
// same mixer with gamma_h = 1 for every head, linear attention with no feature map (the
// "unnormalized variant" of Katharopoulos et al. 2020): a_ij = q_i . k_j / sqrt(D),
// S_i = S_{i-1} + k_i v_i^T, the RMSNorm standing in for the denominator as in fla's
// LinearAttention. Only its create (no option, no decay), summary and theory differ.
#include <math.h>
#include <omp.h>
#include <stdlib.h>

#include "core/io.h"
#include "model/mixers/linear_chunk.h"
#include "model/mixers/qkv_common.h"

typedef struct {
    QkvShape s;
    real gamma[];  // [H]
} Decay;

enum { S_WORK = QKV_N_SCRATCH };  // scratch: per-thread chunk work

static const KeyDef decay_keys[] = {
    {"decay_gamma", KEY_FLOAT, "0", RANGE_UNIT, 0, 0, "model",
     "decay: the decay of every head (0 = per head gamma_h = 1 - 2^(-5-h), RetNet)"},
    {NULL, 0, NULL, 0, NULL, 0, NULL, NULL},
};

static void *decay_create(const MixerDims *d) {
    Decay *m = mallocCheck(sizeof *m + sizeof(real) * d->H);
    qkv_shape(&m->s, d, 1);
    double g = cfg_float(d->cfg, "decay_gamma");
    for (int h = 0; h < m->s.H; h++) m->gamma[h] = (real)(g > 0 ? g : 1 - ldexp(1, -5 - h));
    return m;
}

// identity: every head's gamma is 1 (so gamma^(i-j) = 1 exactly, in the map and the chunks).
static void *identity_create(const MixerDims *d) {
    Decay *m = mallocCheck(sizeof *m + sizeof(real) * d->H);
    qkv_shape(&m->s, d, 1);
    for (int h = 0; h < d->H; h++) m->gamma[h] = 1;
    return m;
}

static void decay_destroy(void *st) { free(st); }

static int decay_params(const void *st, ParamDecl *out) { return qkv_params(&((const Decay *)st)->s, out); }

static void decay_buffers(const void *st, int B, int T, BufDecl *saved, int *n_saved, BufDecl *scratch, int *n_scratch) {
    const Decay *m = st;
    qkv_buffers(&m->s, B, T, saved, n_saved, scratch, n_scratch);
    scratch[S_WORK] = (BufDecl){"work", (size_t)omp_get_max_threads() * lin_chunk_work(m->s.D, m->s.D)};
    *n_scratch = S_WORK + 1;
}

static void decay_forward(const void *st, MixerIO *io) {
    const Decay *m = st;
    qkv_in_forward(&m->s, io);
    lin_chunk_heads_forward(io->B, io->T, m->s.H, m->s.D, m->gamma, 1 / sqrtr((real)m->s.D), io->act[QKV_A_QKV],
                            io->act[QKV_A_ATT], io->tmp[S_WORK]);
    qkv_out_forward(&m->s, io);
}

static void decay_backward(const void *st, MixerIO *io) {
    const Decay *m = st;
    const real *datt = qkv_out_backward(&m->s, io);
    lin_chunk_heads_backward(io->B, io->T, m->s.H, m->s.D, m->gamma, 1 / sqrtr((real)m->s.D), io->act[QKV_A_QKV], datt,
                             io->tmp[QKV_S_DQKV], io->tmp[S_WORK]);
    qkv_in_backward(&m->s, io);
}

static int decay_n_maps(const void *st) { return ((const Decay *)st)->s.H; }

static void decay_attention(const void *st, const MixerIO *io, int b, int h, real *a) {
    const Decay *m = st;
    int T = io->T, C3 = 3 * m->s.C, D = m->s.D;
    const real *q = io->act[QKV_A_QKV] + (size_t)b * T * C3 + h * D, *k = q + m->s.C;
    real scale = 1 / sqrtr((real)D), g = m->gamma[h];
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) {
            real s = 0;
            if (j <= i) {
                for (int d = 0; d < D; d++) s += q[(size_t)i * C3 + d] * k[(size_t)j * C3 + d];
                s *= scale * powr(g, (real)(i - j));
            }
            a[(size_t)i * T + j] = s;
        }
}

static void decay_finish(const void *st, MixerIO *io, const real *o) {
    const Decay *m = st;
    qkv_finish(&m->s, io, m->s.H, o);
}

static int decay_attention_values(const void *st, const MixerIO *io, int b, int m, real *v, real *o) {
    return qkv_attention_values(&((const Decay *)st)->s, io, b, m, v, o);
}

static double decay_rate(const void *st, int m) { return ((const Decay *)st)->gamma[m]; }

// State: S [H, D, D], then scratch qkv [3C], o [C].
static size_t decay_state_floats(const void *st) {
    const Decay *m = st;
    return (size_t)m->s.C * m->s.D;  // per head S [D, D]
}

static size_t decay_state_size(const void *st) {
    const Decay *m = st;
    return (size_t)m->s.C * m->s.D + 4 * (size_t)m->s.C;
}

static void decay_step(const void *st, real *const *p, real *state, int t, const real *x, real *y) {
    const Decay *m = st;
    int C = m->s.C, D = m->s.D;
    real *S = state, *qkv = S + (size_t)C * D, *o = qkv + 3 * C;
    qkv_step_in(&m->s, p, x, qkv);
    for (int h = 0; h < m->s.H; h++)
        lin_recurrent_step(D, D, m->gamma[h], 1 / sqrtr((real)D), S + (size_t)h * D * D, qkv + h * D, qkv + C + h * D,
                           qkv + 2 * C + h * D, o + h * D);
    qkv_step_out(&m->s, p, o, y);
}

// Per head and chunk of L rows: q k^T and A v over the chunk (2 L^2 D multiply-adds), q S and
// the state update (2 L D^2).
static void decay_flops(const void *st, int B, int T, double *fwd, double *bwd) {
    const Decay *m = st;
    double L = T < LIN_CHUNK ? T : LIN_CHUNK;
    qkv_flops(&m->s, B, T, 4.0 * B * T * m->s.C * (L + m->s.D), fwd, bwd);
}

const MixerKind mixer_decay = {
    .name = "decay",
    .summary = "fixed-decay linear attention, gamma_h = 1 - 2^(-5-h), per-head RMSNorm (RetNet retention)",
    .options = decay_keys,
    .create = decay_create,
    .destroy = decay_destroy,
    .params = decay_params,
    .buffers = decay_buffers,
    .forward = decay_forward,
    .backward = decay_backward,
    .n_maps = decay_n_maps,
    .attention = decay_attention,
    .attention_values = decay_attention_values,
    .finish = decay_finish,
    .theory = THEORY_DECAY,
    .decay_rate = decay_rate,
    .state_size = decay_state_size,
    .state_floats = decay_state_floats,
    .step = decay_step,
    .flops = decay_flops,
};

const MixerKind mixer_identity = {
    .name = "identity",
    .summary = "linear attention with no feature map, a_ij = q_i.k_j / sqrt(D), per-head RMSNorm",
    .options = NULL,
    .create = identity_create,
    .destroy = decay_destroy,
    .params = decay_params,
    .buffers = decay_buffers,
    .forward = decay_forward,
    .backward = decay_backward,
    .n_maps = decay_n_maps,
    .attention = decay_attention,
    .attention_values = decay_attention_values,
    .finish = decay_finish,
    .theory = THEORY_IDENTITY,  // the evaluator reads the scores off the map itself (no decay_rate)
    .state_size = decay_state_size,
    .state_floats = decay_state_floats,
    .step = decay_step,
    .flops = decay_flops,
};
