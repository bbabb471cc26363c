#include "model/mixers/qkv_common.h"

#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/layers.h"

void qkv_shape(QkvShape *s, const MixerDims *d, int norm) {
    if (d->C % d->H) die_input("n_head: d_model %d is not divisible by n_head %d", d->C, d->H);
    // clang-format off
    *s = (QkvShape){.C = d->C, .H = d->H, .D = d->C / d->H, .T = d->T, .B = d->B,
                    .layer = d->layer, .n_layer = d->n_layer, .norm = norm, .prec = d->prec};
    // clang-format on
}

int qkv_params(const QkvShape *s, ParamDecl *out) {
    int C = s->C;
    out[QKV_W] = (ParamDecl){"attn.qkv.weight", 2, {3 * C, C}, INIT_NORMAL, 0, 0};
    out[QKV_B] = (ParamDecl){"attn.qkv.bias", 1, {3 * C}, INIT_ZERO, 0, 0};
    out[QKV_PROJ_W] = (ParamDecl){"attn.proj.weight", 2, {C, C}, INIT_NORMAL_OUT, 0, 0};
    out[QKV_PROJ_B] = (ParamDecl){"attn.proj.bias", 1, {C}, INIT_ZERO, 0, 0};
    if (!s->norm) return 4;
    out[QKV_NORM_W] = (ParamDecl){"attn.norm.weight", 1, {s->D}, INIT_ONE, 0, 0};
    return 5;
}

void qkv_buffers(const QkvShape *s, int B, int T, BufDecl *saved, int *n_saved, BufDecl *scratch, int *n_scratch) {
    size_t BT = (size_t)B * T, C = (size_t)s->C;
    saved[QKV_A_QKV] = (BufDecl){"qkv", BT * 3 * C};
    saved[QKV_A_ATT] = (BufDecl){"att", BT * C};
    saved[QKV_A_NRM] = (BufDecl){"nrm", s->norm ? BT * C : 0};
    saved[QKV_A_RSTD] = (BufDecl){"rstd", s->norm ? BT * s->H : 0};
    *n_saved = QKV_N_SAVED;
    scratch[QKV_S_DNRM] = (BufDecl){"dnrm", s->norm ? BT * C : 0};
    scratch[QKV_S_DATT] = (BufDecl){"datt", BT * C};
    scratch[QKV_S_DQKV] = (BufDecl){"dqkv", BT * 3 * C};
    *n_scratch = QKV_N_SCRATCH;
}

void qkv_in_forward(const QkvShape *s, MixerIO *io) {
    matmul_forward(io->act[QKV_A_QKV], io->x, io->p[QKV_W], io->p[QKV_B], io->B * io->T, s->C, 3 * s->C, s->prec);
}

// One head's RMSNorm: out = o * rstd * w; returns rstd.
static real rmsnorm_head(const real *o, const real *w, int D, real *out) {
    real ss = 0;
    for (int d = 0; d < D; d++) ss += o[d] * o[d];
    real r = 1 / sqrtr(ss / D + (real)QKV_NORM_EPS);
    for (int d = 0; d < D; d++) out[d] = o[d] * r * w[d];
    return r;
}

void qkv_out_forward(const QkvShape *s, MixerIO *io) {
    int N = io->B * io->T, C = s->C, H = s->H, D = s->D;
    const real *att = io->act[QKV_A_ATT];
    if (s->norm) {
        real *nrm = io->act[QKV_A_NRM], *rstd = io->act[QKV_A_RSTD];
        const real *w = io->p[QKV_NORM_W];
#pragma omp parallel for schedule(static)
        for (int n = 0; n < N; n++)
            for (int h = 0; h < H; h++) {
                size_t off = (size_t)n * C + (size_t)h * D;
                rstd[(size_t)n * H + h] = rmsnorm_head(att + off, w, D, nrm + off);
            }
        att = nrm;
    }
    matmul_forward(io->y, att, io->p[QKV_PROJ_W], io->p[QKV_PROJ_B], N, C, C, s->prec);
}

void qkv_head_rmsnorm_backward(real *datt, real *dw, real *partial, const real *dnrm, const real *att, const real *rstd,
                               const real *w, int N, int H, int D) {
    // d att = rstd * (dn - att * rstd^2 * mean(dn * att)), dn = dnrm * w;  dw += dnrm * att * rstd
    int C = H * D, n_chunks = (N + QKV_NORM_ROWS - 1) / QKV_NORM_ROWS;
#pragma omp parallel for schedule(static)
    for (int ch = 0; ch < n_chunks; ch++) {
        real *pw = partial + (size_t)ch * D;
        for (int d = 0; d < D; d++) pw[d] = 0;
        int end = (ch + 1) * QKV_NORM_ROWS < N ? (ch + 1) * QKV_NORM_ROWS : N;
        for (int n = ch * QKV_NORM_ROWS; n < end; n++)
            for (int h = 0; h < H; h++) {
                size_t off = (size_t)n * C + (size_t)h * D;
                const real *o = att + off, *dn = dnrm + off;
                real r = rstd[(size_t)n * H + h], dot = 0;
                for (int d = 0; d < D; d++) {
                    dot += dn[d] * w[d] * o[d];
                    pw[d] += dn[d] * o[d] * r;
                }
                real c = r * r * dot / D;
                for (int d = 0; d < D; d++) datt[off + d] = r * (dn[d] * w[d] - o[d] * c);
            }
    }
    for (int ch = 0; ch < n_chunks; ch++)  // the row chunks' partials in order: thread-count free
        for (int d = 0; d < D; d++) dw[d] += partial[(size_t)ch * D + d];
}

real *qkv_out_backward(const QkvShape *s, MixerIO *io) {
    int N = io->B * io->T, C = s->C, H = s->H, D = s->D;
    real *datt = io->tmp[QKV_S_DATT];
    memset(datt, 0, sizeof(real) * N * C);
    memset(io->tmp[QKV_S_DQKV], 0, sizeof(real) * N * 3 * C);
    if (!s->norm) {
        matmul_backward(datt, io->g[QKV_PROJ_W], io->g[QKV_PROJ_B], io->dy, io->act[QKV_A_ATT], io->p[QKV_PROJ_W], N, C,
                        C, s->prec);
        return datt;
    }
    real *dnrm = io->tmp[QKV_S_DNRM];
    const real *att = io->act[QKV_A_ATT], *rstd = io->act[QKV_A_RSTD], *w = io->p[QKV_NORM_W];
    memset(dnrm, 0, sizeof(real) * N * C);
    matmul_backward(dnrm, io->g[QKV_PROJ_W], io->g[QKV_PROJ_B], io->dy, io->act[QKV_A_NRM], io->p[QKV_PROJ_W], N, C, C,
                    s->prec);
    int n_chunks = (N + QKV_NORM_ROWS - 1) / QKV_NORM_ROWS;
    real *partial = callocCheck((size_t)n_chunks * D, sizeof(real));
    qkv_head_rmsnorm_backward(datt, io->g[QKV_NORM_W], partial, dnrm, att, rstd, w, N, H, D);
    free(partial);
    return datt;
}

void qkv_in_backward(const QkvShape *s, MixerIO *io) {
    matmul_backward(io->dx, io->g[QKV_W], io->g[QKV_B], io->tmp[QKV_S_DQKV], io->x, io->p[QKV_W], io->B * io->T, s->C,
                    3 * s->C, s->prec);
}

void qkv_finish(const QkvShape *s, MixerIO *io, int n_maps, const real *o) {
    mixer_put_outputs(io->act[QKV_A_ATT], s->C, io->B, io->T, n_maps, s->C / n_maps, o);
    qkv_out_forward(s, io);
}

int qkv_attention_values(const QkvShape *s, const MixerIO *io, int b, int m, real *v, real *o) {
    int T = io->T, C = s->C, D = s->D;
    for (int t = 0; t < T; t++) {
        size_t row = (size_t)b * T + t;
        memcpy(v + (size_t)t * D, io->act[QKV_A_QKV] + row * 3 * C + 2 * C + (size_t)m * D, sizeof(real) * D);
        memcpy(o + (size_t)t * D, io->act[QKV_A_ATT] + row * C + (size_t)m * D, sizeof(real) * D);
    }
    return D;
}

void qkv_flops(const QkvShape *s, int B, int T, double mix, double *fwd, double *bwd) {
    double BT = (double)B * T, C = s->C;
    double lin = 2 * BT * C * 3 * C + 2 * BT * C * C + (s->norm ? 4 * BT * C : 0);
    *fwd = lin + mix;
    *bwd = 2 * lin + 2 * mix;
}

void qkv_step_in(const QkvShape *s, real *const *p, const real *x, real *qkv) {
    matmul_forward(qkv, x, p[QKV_W], p[QKV_B], 1, s->C, 3 * s->C, s->prec);
}

void qkv_step_out(const QkvShape *s, real *const *p, real *o, real *y) {
    if (s->norm)
        for (int h = 0; h < s->H; h++) rmsnorm_head(o + h * s->D, p[QKV_NORM_W], s->D, o + h * s->D);
    matmul_forward(y, o, p[QKV_PROJ_W], p[QKV_PROJ_B], 1, s->C, s->C, s->prec);
}
