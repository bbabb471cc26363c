#include "model/mixers/qblock_mixer.h"

#include <stdlib.h>
#include <string.h>

void qmix_init(QMixer *q, const MixerDims *d, int n_planes,
               void (*weights)(const QBlock *, const QBlockHead *, int, int, real *, int),
               void (*dscores)(const QBlock *, const QBlockHead *, int, int, real *, real *)) {
    qkv_shape(&q->s, d, 0);
    q->n_planes = n_planes;
    q->weights = weights;
    q->dscores = dscores;
}

void qmix_destroy(void *st) { free(st); }

int qmix_params(const void *st, ParamDecl *out) { return qkv_params(&((const QMixer *)st)->s, out); }

void qmix_buffers(const void *st, int B, int T, BufDecl *saved, int *n_saved, BufDecl *scratch, int *n_scratch) {
    const QMixer *q = st;
    qkv_buffers(&q->s, B, T, saved, n_saved, scratch, n_scratch);
    scratch[QMIX_S_BLOCK] = (BufDecl){"blocks", qblock_scratch(q->n_planes, T)};
    *n_scratch = QMIX_N_SCRATCH;
}

// The loop's view of this call: q, k, v at column offsets 0, C, 2C of qkv's rows of 3C, att's
// rows of C. QBlock.mixer is the member's state (it begins with q).
static QBlock qblock_of(const QMixer *q, const MixerIO *io) {
    // clang-format off
    return (QBlock){.mixer = q, .call = io, .B = io->B, .T = io->T, .H = q->s.H, .D = q->s.D,
                    .ld = 3 * q->s.C, .ldo = q->s.C, .n_planes = q->n_planes, .Tmax = q->s.T,
                    .scratch = io->tmp[QMIX_S_BLOCK], .weights = q->weights, .dscores = q->dscores};
    // clang-format on
}

void qmix_blocks_forward(const QMixer *q, MixerIO *io) {
    QBlock qb = qblock_of(q, io);
    qblock_forward(&qb, io->act[QKV_A_QKV], q->s.C, 2 * q->s.C, io->act[QKV_A_ATT]);
}

void qmix_blocks_backward(const QMixer *q, MixerIO *io, const real *datt) {
    QBlock qb = qblock_of(q, io);
    qblock_backward(&qb, io->act[QKV_A_QKV], q->s.C, 2 * q->s.C, io->act[QKV_A_ATT], datt, io->tmp[QKV_S_DQKV]);
}

void qmix_forward(const void *st, MixerIO *io) {
    const QMixer *q = st;
    qkv_in_forward(&q->s, io);
    qmix_blocks_forward(q, io);
    qkv_out_forward(&q->s, io);
}

void qmix_backward(const void *st, MixerIO *io) {
    const QMixer *q = st;
    const real *datt = qkv_out_backward(&q->s, io);
    qmix_blocks_backward(q, io, datt);
    qkv_in_backward(&q->s, io);
}

int qmix_n_maps(const void *st) { return ((const QMixer *)st)->s.H; }

int qmix_attention_values(const void *st, const MixerIO *io, int b, int m, real *v, real *o) {
    return qkv_attention_values(&((const QMixer *)st)->s, io, b, m, v, o);
}

void qmix_finish(const void *st, MixerIO *io, const real *o) {
    const QMixer *q = st;
    qkv_finish(&q->s, io, q->s.H, o);
}

size_t qmix_state_floats(const void *st) {
    const QMixer *q = st;
    return (size_t)2 * q->s.T * q->s.C;  // the key and value caches at full length
}

void qmix_flops(const void *st, int B, int T, double *fwd, double *bwd) {
    const QMixer *q = st;
    qkv_flops(&q->s, B, T, 2.0 * B * q->s.C * T * (T + 1.0), fwd, bwd);
}

size_t qmix_state_size(const QMixer *q, size_t extra) {
    return (size_t)2 * q->s.T * q->s.C + 3 * (size_t)q->s.C + extra;
}

QMixStep qmix_step_in(const QMixer *q, real *const *p, real *state, int t, const real *x) {
    int C = q->s.C;
    real *kc = state, *vc = kc + (size_t)q->s.T * C, *qkv = vc + (size_t)q->s.T * C;
    qkv_step_in(&q->s, p, x, qkv);
    memcpy(kc + (size_t)t * C, qkv + C, sizeof(real) * C);
    memcpy(vc + (size_t)t * C, qkv + 2 * C, sizeof(real) * C);
    return (QMixStep){.k = kc, .v = vc, .qkv = qkv, .scratch = qkv + 3 * C};
}
