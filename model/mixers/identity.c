// Linear attention with no feature map (docs/mixers.md#identity, the "unnormalized variant"):
//   a_ij = q_i . k_j / sqrt(D) for j <= i,  o_i = sum_j a_ij v_j = S_i^T q_i / sqrt(D),
//   S_i = S_{i-1} + k_i v_i^T,
// signed and unnormalised, then a per-head RMSNorm (as fla's LinearAttention layer does in place
// of the denominator) and the output projection. Training uses the chunked form
// (model/mixers/linear_chunk.c with no decay): O(T) time, no T x T buffer.
#include <math.h>
#include <omp.h>
#include <stdlib.h>

#include "core/io.h"
#include "model/mixers/linear_chunk.h"
#include "model/mixers/qkv_common.h"

typedef struct {
    QkvShape s;
    real ones[];  // [H]: the decay of every head, none
} Identity;

enum { S_WORK = QKV_N_SCRATCH };  // scratch: per-thread chunk work

static void *identity_create(const MixerDims *d) {
    Identity *m = mallocCheck(sizeof *m + sizeof(real) * d->H);
    qkv_shape(&m->s, d, 1);
    for (int h = 0; h < d->H; h++) m->ones[h] = 1;
    return m;
}

static void identity_destroy(void *st) { free(st); }

static int identity_params(const void *st, ParamDecl *out) {
    return qkv_params(&((const Identity *)st)->s, out);
}

static void identity_buffers(const void *st, int B, int T, BufDecl *saved, int *n_saved,
                             BufDecl *scratch, int *n_scratch) {
    const Identity *m = st;
    qkv_buffers(&m->s, B, T, saved, n_saved, scratch, n_scratch);
    scratch[S_WORK] = (BufDecl){"work", (size_t)omp_get_max_threads() * lin_chunk_work(m->s.D, m->s.D)};
    *n_scratch = S_WORK + 1;
}

static void identity_forward(const void *st, MixerIO *io) {
    const Identity *m = st;
    qkv_in_forward(&m->s, io);
    lin_chunk_heads_forward(io->B, io->T, m->s.H, m->s.D, m->ones, 1 / sqrtr((real)m->s.D),
                            io->act[QKV_A_QKV], io->act[QKV_A_ATT], io->tmp[S_WORK]);
    qkv_out_forward(&m->s, io);
}

static void identity_backward(const void *st, MixerIO *io) {
    const Identity *m = st;
    const real *datt = qkv_out_backward(&m->s, io);
    lin_chunk_heads_backward(io->B, io->T, m->s.H, m->s.D, m->ones, 1 / sqrtr((real)m->s.D),
                             io->act[QKV_A_QKV], datt, io->tmp[QKV_S_DQKV], io->tmp[S_WORK]);
    qkv_in_backward(&m->s, io);
}

static int identity_n_maps(const void *st) { return ((const Identity *)st)->s.H; }

static void identity_attention(const void *st, const MixerIO *io, int b, int h, real *a) {
    const Identity *m = st;
    int T = io->T, C3 = 3 * m->s.C, D = m->s.D;
    const real *q = io->act[QKV_A_QKV] + (size_t)b * T * C3 + h * D, *k = q + m->s.C;
    real scale = 1 / sqrtr((real)D);
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) {
            real s = 0;
            if (j <= i)
                for (int d = 0; d < D; d++) s += q[(size_t)i * C3 + d] * k[(size_t)j * C3 + d];
            a[(size_t)i * T + j] = s * scale;
        }
}

static int identity_attention_values(const void *st, const MixerIO *io, int b, int m, real *v, real *o) {
    return qkv_attention_values(&((const Identity *)st)->s, io, b, m, v, o);
}

// State: S [H, D, D], then scratch qkv [3C], o [C].
static size_t identity_state_floats(const void *st) {
    const Identity *m = st;
    return (size_t)m->s.C * m->s.D;  // per head S [D, D]
}

static size_t identity_state_size(const void *st) {
    const Identity *m = st;
    return (size_t)m->s.C * m->s.D + 4 * (size_t)m->s.C;
}

static void identity_step(const void *st, real *const *p, real *state, int t, const real *x, real *y) {
    const Identity *m = st;
    int C = m->s.C, D = m->s.D;
    real *S = state, *qkv = S + (size_t)C * D, *o = qkv + 3 * C;
    qkv_step_in(&m->s, p, x, qkv);
    for (int h = 0; h < m->s.H; h++)
        lin_recurrent_step(D, D, 1, 1 / sqrtr((real)D), S + (size_t)h * D * D, qkv + h * D,
                           qkv + C + h * D, qkv + 2 * C + h * D, o + h * D);
    qkv_step_out(&m->s, p, o, y);
}

// As decay: per head and chunk of L rows 2 L^2 D + 2 L D^2 multiply-adds.
static void identity_flops(const void *st, int B, int T, double *fwd, double *bwd) {
    const Identity *m = st;
    double L = T < LIN_CHUNK ? T : LIN_CHUNK;
    qkv_flops(&m->s, B, T, 4.0 * B * T * m->s.C * (L + m->s.D), fwd, bwd);
}

const MixerKind mixer_identity = {
    .name = "identity",
    .summary = "linear attention with no feature map, a_ij = q_i.k_j / sqrt(D), per-head RMSNorm",
    .options = NULL,
    .create = identity_create,
    .destroy = identity_destroy,
    .params = identity_params,
    .buffers = identity_buffers,
    .forward = identity_forward,
    .backward = identity_backward,
    .n_maps = identity_n_maps,
    .attention = identity_attention,
    .attention_values = identity_attention_values,
    .theory = THEORY_IDENTITY,  // the evaluator reads the scores off the map itself
    .state_size = identity_state_size,
    .state_floats = identity_state_floats,
    .step = identity_step,
    .flops = identity_flops,
};
