// Causal multi-head softmax attention (GPT-2): qkv = x Wqkv^T + b; per head
// P = softmax(q k^T / sqrt(D)) with the causal mask; o = P v; y = o Wproj^T + b.
// A member of the qblock family (model/mixers/qblock_mixer.h: the q/k/v plumbing of qkv_common.h
// and qblock.c's blocks of query rows against the causal key prefix), so memory is O(64 T) per
// thread and the backward recomputes P from the saved log-sum-exp (O(T^2) per head,
// FlashAttention-2's dS = P * (dP - rowsum(dO * O))).
#include <math.h>

#include "core/io.h"
#include "model/mixers/qblock_mixer.h"

typedef struct {
    QMixer q;  // the qblock family's part: shapes and the hooks below
} Softmax;

enum { A_LSE = QKV_N_SAVED };  // saved: the log-sum-exp of each row of P [B, H, T]

// qblock hooks: P of the block (the forward stores each row's log-sum-exp, the backward reads it).
static void softmax_weights(const QBlock *qb, const QBlockHead *hd, int i0, int i1, real *P, int forward) {
    const MixerIO *io = qb->call;
    qblock_softmax(qb->D, hd->q, qb->ld, hd->k, qb->ld, i0, i1, P, io->act[A_LSE] + (size_t)hd->bh * qb->T, !forward);
}

// dS = P * (dP - Dlt_i) / sqrt(D), Dlt_i = dO_i . O_i (FlashAttention-2). With the maps' extra
// gradient G (MixerIO.dmap) dP becomes dP + G and Dlt_i gains sum_j P_ij G_ij.
static void softmax_dscores(const QBlock *qb, const QBlockHead *hd, int i0, int i1, real *P, real *dP) {
    int D = qb->D, C = qb->ldo;
    real scale = 1 / sqrtr((real)D);
    const real *dmap = ((const MixerIO *)qb->call)->dmap;
    const real *G = dmap ? dmap + (size_t)hd->bh * qb->T * qb->T : NULL;
    for (int r = 0; r < i1 - i0; r++) {
        int i = i0 + r;
        const real *doi = hd->dout + (size_t)i * C, *oi = hd->o + (size_t)i * C;
        real dlt = 0;
        for (int d = 0; d < D; d++) dlt += doi[d] * oi[d];
        real *pr = P + (size_t)r * i1, *dpr = dP + (size_t)r * i1;
        if (G) {
            const real *g = G + (size_t)i * qb->T;
            real pg = 0;
            for (int j = 0; j <= i; j++) {
                dpr[j] += g[j];
                pg += pr[j] * g[j];
            }
            dlt += pg;
        }
        for (int j = 0; j <= i; j++) dpr[j] = pr[j] * (dpr[j] - dlt) * scale;
        for (int j = i + 1; j < i1; j++) dpr[j] = 0;
    }
}

static void *softmax_create(const MixerDims *d) {
    Softmax *s = mallocCheck(sizeof *s);
    qmix_init(&s->q, d, 1, softmax_weights, softmax_dscores);  // one plane: P
    return s;
}

static void softmax_buffers(const void *st, int B, int T, BufDecl *saved, int *n_saved, BufDecl *scratch, int *n_scratch) {
    const Softmax *s = st;
    qmix_buffers(st, B, T, saved, n_saved, scratch, n_scratch);
    saved[A_LSE] = (BufDecl){"lse", (size_t)B * s->q.s.H * T};
    *n_saved = A_LSE + 1;
}

static void softmax_attention(const void *st, const MixerIO *io, int b, int m, real *a) {
    const Softmax *s = st;
    int T = io->T, C3 = 3 * s->q.s.C;
    const real *q = io->act[QKV_A_QKV] + (size_t)b * T * C3 + m * s->q.s.D, *k = q + s->q.s.C;
    real *l = io->act[A_LSE] + ((size_t)b * s->q.s.H + m) * T;
    qblock_softmax(s->q.s.D, q, C3, k, C3, 0, T, a, l, 1);
}

static int softmax_attention_qk(const void *st, const MixerIO *io, int b, int m, real *q, real *k) {
    const Softmax *s = st;
    int T = io->T, C = s->q.s.C, D = s->q.s.D;
    real scale = 1 / sqrtr((real)D);
    for (int t = 0; t < T; t++)
        for (int d = 0; d < D; d++) {
            const real *row = io->act[QKV_A_QKV] + ((size_t)b * T + t) * 3 * C + m * D + d;
            q[t * D + d] = row[0] * scale;
            k[t * D + d] = row[C];
        }
    return D;
}

// The KV cache and qkv (qmix_step_in), then o [C] and scores [T].
static size_t softmax_state_size(const void *st) {
    const Softmax *s = st;
    return qmix_state_size(&s->q, (size_t)s->q.s.C + (size_t)s->q.s.T);
}

static void softmax_step(const void *st, real *const *p, real *state, int t, const real *x, real *y) {
    const Softmax *s = st;
    int C = s->q.s.C, D = s->q.s.D;
    QMixStep k = qmix_step_in(&s->q, p, state, t, x);
    const real *kc = k.k, *vc = k.v, *qkv = k.qkv;
    real *o = k.scratch, *sc = o + C;
    real scale = 1 / sqrtr((real)D);
    for (int h = 0; h < s->q.s.H; h++) {
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
    qkv_step_out(&s->q.s, p, o, y);
}

const MixerKind mixer_softmax = {
    .name = "softmax",
    .summary = "causal multi-head softmax attention, scale 1/sqrt(D) (GPT-2; Vaswani et al. 2017)",
    .options = NULL,
    .create = softmax_create,
    .destroy = qmix_destroy,
    .params = qmix_params,
    .buffers = softmax_buffers,
    .forward = qmix_forward,
    .backward = qmix_backward,
    .n_maps = qmix_n_maps,
    .attention = softmax_attention,
    .attention_values = qmix_attention_values,
    .finish = qmix_finish,
    .theory = THEORY_EXP,
    .attention_qk = softmax_attention_qk,
    .state_size = softmax_state_size,
    .state_floats = qmix_state_floats,
    .step = softmax_step,
    .flops = qmix_flops,  // the projections, then q k^T and P v over the causal triangle
};
