// Causal multi-head softmax attention (GPT-2): qkv = x Wqkv^T + b; per head
// P = softmax(q k^T / sqrt(D)) with the causal mask; o = P v; y = o Wproj^T + b.
// Forward and backward run model/mixers/qblock.c's blocks of query rows against the causal key
// prefix, so memory is O(64 T) per thread and the backward recomputes P from the saved
// log-sum-exp (O(T^2) per head, FlashAttention-2's dS = P * (dP - rowsum(dO * O))).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/layers.h"
#include "model/mixers/mixer.h"
#include "model/mixers/qblock.h"


typedef struct {
    int C, H, D, T, B;
    Precision prec;  // of the matmuls
} Softmax;

enum { P_QKV_W, P_QKV_B, P_PROJ_W, P_PROJ_B };
enum { A_QKV, A_ATT, A_LSE };            // saved: qkv [B,T,3C], att [B,T,C], lse [B,H,T]
enum { S_DATT, S_DQKV, S_BLOCK };        // scratch: datt [B,T,C], dqkv [B,T,3C], per-thread blocks

static void *softmax_create(const MixerDims *d) {
    if (d->C % d->H) die_input("n_head: d_model %d is not divisible by n_head %d", d->C, d->H);
    Softmax *s = mallocCheck(sizeof *s);
    *s = (Softmax){d->C, d->H, d->C / d->H, d->T, d->B, d->prec};
    return s;
}

static void softmax_destroy(void *st) { free(st); }

static int softmax_params(const void *st, ParamDecl *out) {
    const Softmax *s = st;
    int C = s->C;
    out[P_QKV_W] = (ParamDecl){"attn.qkv.weight", 2, {3 * C, C}, INIT_NORMAL, 0, 0};
    out[P_QKV_B] = (ParamDecl){"attn.qkv.bias", 1, {3 * C}, INIT_ZERO, 0, 0};
    out[P_PROJ_W] = (ParamDecl){"attn.proj.weight", 2, {C, C}, INIT_NORMAL_OUT, 0, 0};
    out[P_PROJ_B] = (ParamDecl){"attn.proj.bias", 1, {C}, INIT_ZERO, 0, 0};
    return 4;
}

static void softmax_buffers(const void *st, int B, int T, BufDecl *saved, int *n_saved,
                            BufDecl *scratch, int *n_scratch) {
    const Softmax *s = st;
    size_t BT = (size_t)B * T;
    saved[A_QKV] = (BufDecl){"qkv", BT * 3 * s->C};
    saved[A_ATT] = (BufDecl){"att", BT * s->C};
    saved[A_LSE] = (BufDecl){"lse", (size_t)B * s->H * T};
    *n_saved = 3;
    scratch[S_DATT] = (BufDecl){"datt", BT * s->C};
    scratch[S_DQKV] = (BufDecl){"dqkv", BT * 3 * s->C};
    scratch[S_BLOCK] = (BufDecl){"blocks", qblock_scratch(1, T)};
    *n_scratch = 3;
}

// qblock hooks: P of the block (the forward stores each row's log-sum-exp, the backward reads it).
static void softmax_weights(const QBlock *qb, const QBlockHead *hd, int i0, int i1, real *P, int forward) {
    const MixerIO *io = qb->call;
    qblock_softmax(qb->D, hd->q, qb->ld, hd->k, qb->ld, i0, i1, P, io->act[A_LSE] + (size_t)hd->bh * qb->T, !forward);
}

// dS = P * (dP - Dlt_i) / sqrt(D), Dlt_i = dO_i . O_i (FlashAttention-2)
static void softmax_dscores(const QBlock *qb, const QBlockHead *hd, int i0, int i1, real *P, real *dP) {
    int D = qb->D, C = qb->ldo;
    real scale = 1 / sqrtr((real)D);
    for (int r = 0; r < i1 - i0; r++) {
        int i = i0 + r;
        const real *doi = hd->dout + (size_t)i * C, *oi = hd->o + (size_t)i * C;
        real dlt = 0;
        for (int d = 0; d < D; d++) dlt += doi[d] * oi[d];
        real *pr = P + (size_t)r * i1, *dpr = dP + (size_t)r * i1;
        for (int j = 0; j <= i; j++) dpr[j] = pr[j] * (dpr[j] - dlt) * scale;
        for (int j = i + 1; j < i1; j++) dpr[j] = 0;
    }
}

static QBlock softmax_qblock(const Softmax *s, const MixerIO *io) {
    return (QBlock){.mixer = s, .call = io, .B = io->B, .T = io->T, .H = s->H, .D = s->D,
                    .ld = 3 * s->C, .ldo = s->C, .n_planes = 1, .Tmax = s->T,
                    .scratch = io->tmp[S_BLOCK], .weights = softmax_weights,
                    .dscores = softmax_dscores};
}

static void softmax_forward(const void *st, MixerIO *io) {
    const Softmax *s = st;
    int B = io->B, T = io->T, C = s->C, C3 = 3 * C;
    real *qkv = io->act[A_QKV], *att = io->act[A_ATT];
    matmul_forward(qkv, io->x, io->p[P_QKV_W], io->p[P_QKV_B], B * T, C, C3, s->prec);
    QBlock qb = softmax_qblock(s, io);
    qblock_forward(&qb, qkv, C, 2 * C, att);
    matmul_forward(io->y, att, io->p[P_PROJ_W], io->p[P_PROJ_B], B * T, C, C, s->prec);
}

static void softmax_backward(const void *st, MixerIO *io) {
    const Softmax *s = st;
    int B = io->B, T = io->T, C = s->C, C3 = 3 * C;
    const real *qkv = io->act[A_QKV], *att = io->act[A_ATT];
    real *datt = io->tmp[S_DATT], *dqkv = io->tmp[S_DQKV];
    memset(datt, 0, sizeof(real) * B * T * C);
    matmul_backward(datt, io->g[P_PROJ_W], io->g[P_PROJ_B], io->dy, att, io->p[P_PROJ_W], B * T, C, C, s->prec);
    memset(dqkv, 0, sizeof(real) * B * T * C3);
    QBlock qb = softmax_qblock(s, io);
    qblock_backward(&qb, qkv, C, 2 * C, att, datt, dqkv);
    matmul_backward(io->dx, io->g[P_QKV_W], io->g[P_QKV_B], dqkv, io->x, io->p[P_QKV_W], B * T, C, C3, s->prec);
}

static int softmax_n_maps(const void *st) { return ((const Softmax *)st)->H; }

static void softmax_attention(const void *st, const MixerIO *io, int b, int m, real *a) {
    const Softmax *s = st;
    int T = io->T, C3 = 3 * s->C;
    const real *q = io->act[A_QKV] + (size_t)b * T * C3 + m * s->D, *k = q + s->C;
    real *l = io->act[A_LSE] + ((size_t)b * s->H + m) * T;
    qblock_softmax(s->D, q, C3, k, C3, 0, T, a, l, 1);
}

static int softmax_attention_values(const void *st, const MixerIO *io, int b, int m, real *v, real *o) {
    const Softmax *s = st;
    int T = io->T, C = s->C, D = s->D;
    for (int t = 0; t < T; t++)
        for (int d = 0; d < D; d++) {
            v[t * D + d] = io->act[A_QKV][((size_t)b * T + t) * 3 * C + 2 * C + m * D + d];
            o[t * D + d] = io->act[A_ATT][((size_t)b * T + t) * C + m * D + d];
        }
    return D;
}

static int softmax_attention_qk(const void *st, const MixerIO *io, int b, int m, real *q, real *k) {
    const Softmax *s = st;
    int T = io->T, C = s->C, D = s->D;
    real scale = 1 / sqrtr((real)D);
    for (int t = 0; t < T; t++)
        for (int d = 0; d < D; d++) {
            const real *row = io->act[A_QKV] + ((size_t)b * T + t) * 3 * C + m * D + d;
            q[t * D + d] = row[0] * scale;
            k[t * D + d] = row[C];
        }
    return D;
}

// KV cache: k [T, C], v [T, C], then scratch: qkv [3C], o [C], scores [T].
static size_t softmax_state_floats(const void *st) {
    const Softmax *s = st;
    return (size_t)2 * s->T * s->C;  // the key and value caches at full length
}

static size_t softmax_state_size(const void *st) {
    const Softmax *s = st;
    return (size_t)2 * s->T * s->C + 4 * (size_t)s->C + (size_t)s->T;
}

static void softmax_step(const void *st, real *const *p, real *state, int t, const real *x, real *y) {
    const Softmax *s = st;
    int C = s->C, D = s->D;
    real *kc = state, *vc = kc + (size_t)s->T * C, *qkv = vc + (size_t)s->T * C, *o = qkv + 3 * C;
    real *sc = o + C;
    real scale = 1 / sqrtr((real)D);
    matmul_forward(qkv, x, p[P_QKV_W], p[P_QKV_B], 1, C, 3 * C, s->prec);
    memcpy(kc + (size_t)t * C, qkv + C, sizeof(real) * C);
    memcpy(vc + (size_t)t * C, qkv + 2 * C, sizeof(real) * C);
    for (int h = 0; h < s->H; h++) {
        real mx = -INFINITY, sum = 0;
        for (int j = 0; j <= t; j++) {
            real d = 0;
            for (int i = 0; i < D; i++) d += qkv[h * D + i] * kc[(size_t)j * C + h * D + i];
            sc[j] = d * scale;
            mx = sc[j] > mx ? sc[j] : mx;
        }
        for (int j = 0; j <= t; j++) sum += sc[j] = expr(sc[j] - mx);
        for (int i = 0; i < D; i++) o[h * D + i] = 0;
        for (int j = 0; j <= t; j++)
            for (int i = 0; i < D; i++) o[h * D + i] += sc[j] / sum * vc[(size_t)j * C + h * D + i];
    }
    matmul_forward(y, o, p[P_PROJ_W], p[P_PROJ_B], 1, C, C, s->prec);
}

// qkv and output projections, then per head q k^T and P v over the causal triangle; the backward
// doubles both (dX and dW; dP, dV, dQ, dK). The recomputed scores are not counted.
static void softmax_flops(const void *st, int B, int T, double *fwd, double *bwd) {
    const Softmax *s = st;
    double BT = (double)B * T, C = s->C;
    double lin = 2 * BT * C * 3 * C + 2 * BT * C * C;
    double mix = 2 * (double)B * C * T * (T + 1.0);
    *fwd = lin + mix;
    *bwd = 2 * lin + 2 * mix;
}

const MixerKind mixer_softmax = {
    .name = "softmax",
    .summary = "causal multi-head softmax attention, scale 1/sqrt(D) (GPT-2; Vaswani et al. 2017)",
    .options = NULL,
    .create = softmax_create,
    .destroy = softmax_destroy,
    .params = softmax_params,
    .buffers = softmax_buffers,
    .forward = softmax_forward,
    .backward = softmax_backward,
    .n_maps = softmax_n_maps,
    .attention = softmax_attention,
    .attention_values = softmax_attention_values,
    .theory = THEORY_EXP,
    .attention_qk = softmax_attention_qk,
    .state_size = softmax_state_size,
    .state_floats = softmax_state_floats,
    .step = softmax_step,
    .flops = softmax_flops,
};
