// Based's linear attention (Arora, Eyuboglu, Zhang, Timalsina, Alberti, Zinsley, Zou, Rudra, Re
// 2024, "Simple linear attention language models balance the recall-throughput tradeoff", arXiv
// 2402.18668; Zoology's `Based` mixer, fla's `based` layer; docs/mixers.md#based): q and k
// projected to a small feature dimension d per head, v to the head width Dv = C / H,
//   [q, k, v] = x Wqkv^T                 [2 H d + C], no bias (Zoology's proj_q, proj_k, proj_v)
//   per head: phi(x) = [1, x / d^(1/4), vec(x x^T) / (sqrt(2) sqrt(d))]   (F = 1 + d + d^2)
//             o_i = sum_{j<=i} (phi(q_i).phi(k_j)) v_j / (phi(q_i) . sum_{j<=i} phi(k_j) + 1e-12)
//   y = o Wo^T                           no bias
// with phi(q).phi(k) = 1 + s + s^2 / 2, s = q.k / sqrt(d): the second-order Taylor expansion of
// exp(s), positive. Training: model/mixers/based_chunk.c (chunks of based_chunk = 64 tokens,
// the weights within a chunk from the d-wide scores, the state [F, Dv] and its normaliser [F]
// across chunks),
// backward its two passes; q, k, v and the normalisers are saved. The plain quadratic reference
// the tests hold it to: model/mixers/based_naive.c.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/layers.h"
#include "model/mixers/based_chunk.h"
#include "model/mixers/mixer.h"

typedef struct {
    int C, H, d, Dv, L;  // d_model, heads, feature dim, head width C / H, chunk
    int P;               // width of the projection: 2 H d + C
    Precision prec;      // of the projections
} Based;

enum { P_QKV, P_O };
// saved: qkv [B,T,P] (q [H d], k [H d], v [C] per token), att [B,T,C] (o before the output
// projection), den [B,H,T] (the normalisers)
enum { A_QKV, A_ATT, A_DEN };
// scratch: datt [B,T,C], dqkv [B,T,P], per-thread kernel work
enum { S_DATT, S_DQKV, S_WORK };

static const KeyDef based_keys[] = {
    {"based_feature_dim", KEY_INT, "16", RANGE_POS, 0, 0, "model",
     "based: feature dimension d of q and k per head (Zoology's feature_dim); phi has 1 + d + d^2 features"},
    {"based_chunk", KEY_INT, "64", RANGE_POS, 0, 0, "model",
     "based: tokens per chunk of the chunked form (speed and rounding only, not the function)"},
    {NULL, 0, NULL, 0, NULL, 0, NULL, NULL},
};

static void *based_create(const MixerDims *dm) {
    long d = cfg_int(dm->cfg, "based_feature_dim"), L = cfg_int(dm->cfg, "based_chunk");
    if (dm->C % dm->H) die_input("n_head: based needs d_model %d divisible by n_head %d", dm->C, dm->H);
    if (d > 64) die_input("based_feature_dim: expected 1..64, got %ld", d);
    if (L > 1024) die_input("based_chunk: expected 1..1024, got %ld", L);
    Based *m = mallocCheck(sizeof *m);
    *m = (Based){
        .C = dm->C, .H = dm->H, .d = (int)d, .Dv = dm->C / dm->H, .L = (int)L, .P = 2 * dm->H * (int)d + dm->C, .prec = dm->prec};
    return m;
}

static void based_destroy(void *st) { free(st); }

// The init of this project's other mixers (GPT-2's): N(0, 0.02), the output projection rescaled
// for the residual stream.
static int based_params(const void *st, ParamDecl *out) {
    const Based *m = st;
    out[P_QKV] = (ParamDecl){"based.qkv.weight", 2, {m->P, m->C}, INIT_NORMAL, 0, 0};
    out[P_O] = (ParamDecl){"based.o.weight", 2, {m->C, m->C}, INIT_NORMAL_OUT, 0, 0};
    return 2;
}

static size_t work_size(const Based *m, int T) { return based_chunk_work(T, m->d, m->Dv, m->L); }

static void based_buffers(const void *st, int B, int T, BufDecl *saved, int *n_saved, BufDecl *scratch, int *n_scratch) {
    const Based *m = st;
    size_t BT = (size_t)B * T;
    saved[A_QKV] = (BufDecl){"qkv", BT * m->P};
    saved[A_ATT] = (BufDecl){"att", BT * m->C};
    saved[A_DEN] = (BufDecl){"den", BT * m->H};
    *n_saved = A_DEN + 1;
    scratch[S_DATT] = (BufDecl){"datt", BT * m->C};
    scratch[S_DQKV] = (BufDecl){"dqkv", BT * m->P};
    scratch[S_WORK] = (BufDecl){"based_work", (size_t)omp_get_max_threads() * work_size(m, T)};
    *n_scratch = S_WORK + 1;
}

// Head h's q, k, v columns in a row of qkv.
static size_t q_off(const Based *m, int h) { return (size_t)h * m->d; }
static size_t k_off(const Based *m, int h) { return (size_t)m->H * m->d + (size_t)h * m->d; }
static size_t v_off(const Based *m, int h) { return 2 * (size_t)m->H * m->d + (size_t)h * m->Dv; }

static void based_forward(const void *st, MixerIO *io) {
    const Based *m = st;
    int B = io->B, T = io->T, BT = B * T, C = m->C, H = m->H, P = m->P;
    real **a = io->act;
    matmul_forward(a[A_QKV], io->x, io->p[P_QKV], NULL, BT, C, P, m->prec);
#pragma omp parallel for schedule(dynamic, 1)
    for (int bh = 0; bh < B * H; bh++) {
        int b = bh / H, h = bh % H;
        const real *row = a[A_QKV] + (size_t)b * T * P;
        based_chunk_forward(T, m->d, m->Dv, m->L, row + q_off(m, h), P, row + k_off(m, h), P, row + v_off(m, h), P,
                            a[A_ATT] + (size_t)b * T * C + (size_t)h * m->Dv, C, a[A_DEN] + (size_t)bh * T,
                            io->tmp[S_WORK] + (size_t)omp_get_thread_num() * work_size(m, T));
    }
    matmul_forward(io->y, a[A_ATT], io->p[P_O], NULL, BT, C, C, m->prec);
}

static void based_backward(const void *st, MixerIO *io) {
    const Based *m = st;
    int B = io->B, T = io->T, BT = B * T, C = m->C, H = m->H, P = m->P;
    real **a = io->act, **t = io->tmp;
    memset(t[S_DATT], 0, sizeof(real) * BT * C);
    matmul_backward(t[S_DATT], io->g[P_O], NULL, io->dy, a[A_ATT], io->p[P_O], BT, C, C, m->prec);
    memset(t[S_DQKV], 0, sizeof(real) * BT * P);
#pragma omp parallel for schedule(dynamic, 1)
    for (int bh = 0; bh < B * H; bh++) {
        int b = bh / H, h = bh % H;
        size_t off = (size_t)b * T * P, oo = (size_t)b * T * C + (size_t)h * m->Dv;
        const real *row = a[A_QKV] + off;
        real *drow = t[S_DQKV] + off;
        based_chunk_backward(T, m->d, m->Dv, m->L, row + q_off(m, h), P, row + k_off(m, h), P, row + v_off(m, h), P,
                             a[A_ATT] + oo, C, a[A_DEN] + (size_t)bh * T, t[S_DATT] + oo, C, drow + q_off(m, h),
                             drow + k_off(m, h), drow + v_off(m, h),
                             t[S_WORK] + (size_t)omp_get_thread_num() * work_size(m, T));
    }
    matmul_backward(io->dx, io->g[P_QKV], NULL, t[S_DQKV], io->x, io->p[P_QKV], BT, C, P, m->prec);
}

// ---------------------------------------------------------------------------------------------
// Maps: a_ij = (1 + s_ij + s_ij^2 / 2) / den_i, s_ij = q_i.k_j / sqrt(d), non-negative, rows sum
// to 1 but for the 1e-12.

static int based_n_maps(const void *st) { return ((const Based *)st)->H; }

static void based_attention(const void *st, const MixerIO *io, int b, int h, real *att) {
    const Based *m = st;
    int T = io->T, P = m->P;
    const real *row = io->act[A_QKV] + (size_t)b * T * P, *den = io->act[A_DEN] + ((size_t)b * m->H + h) * T;
    for (int i = 0; i < T; i++) {
        const real *q = row + (size_t)i * P + q_off(m, h);
        for (int j = 0; j <= i; j++)
            att[(size_t)i * T + j] = based_weight(m->d, q, row + (size_t)j * P + k_off(m, h)) / den[i];
        for (int j = i + 1; j < T; j++) att[(size_t)i * T + j] = 0;
    }
}

// Head h's values v_j and its outputs o_i before the output projection.
static void based_finish(const void *st, MixerIO *io, const real *o) {
    const Based *m = st;
    mixer_put_outputs(io->act[A_ATT], m->C, io->B, io->T, m->H, m->Dv, o);
    matmul_forward(io->y, io->act[A_ATT], io->p[P_O], NULL, io->B * io->T, m->C, m->C, m->prec);
}

static int based_attention_values(const void *st, const MixerIO *io, int b, int h, real *v, real *o) {
    const Based *m = st;
    int T = io->T, Dv = m->Dv;
    for (int t = 0; t < T; t++) {
        size_t r = (size_t)b * T + t;
        memcpy(v + (size_t)t * Dv, io->act[A_QKV] + r * m->P + v_off(m, h), sizeof(real) * Dv);
        memcpy(o + (size_t)t * Dv, io->act[A_ATT] + r * m->C + (size_t)h * Dv, sizeof(real) * Dv);
    }
    return Dv;
}

// THEORY_LINEAR's queries and keys: phi(q), phi(k) of head h, F = 1 + d + d^2 wide.
static int based_attention_qk(const void *st, const MixerIO *io, int b, int h, real *q, real *k) {
    const Based *m = st;
    int T = io->T, P = m->P, F = based_phi_width(m->d);
    const real *row = io->act[A_QKV] + (size_t)b * T * P;
    for (int t = 0; t < T; t++) {
        based_phi(m->d, row + (size_t)t * P + q_off(m, h), q + (size_t)t * F);
        based_phi(m->d, row + (size_t)t * P + k_off(m, h), k + (size_t)t * F);
    }
    return F;
}

static int based_qk_width(const void *st) { return based_phi_width(((const Based *)st)->d); }

// ---------------------------------------------------------------------------------------------
// Generation: per head S [F, Dv + 1] (the last column the normaliser sum phi(k)); then scratch for
// one token: qkv [P], o [C], phi(q), phi(k) [F], v' = [v, 1] and o' [Dv + 1].

static size_t based_state_floats(const void *st) {
    const Based *m = st;
    return (size_t)m->H * based_phi_width(m->d) * (m->Dv + 1);
}

static size_t based_state_size(const void *st) {
    const Based *m = st;
    size_t F = (size_t)based_phi_width(m->d);
    return based_state_floats(st) + (size_t)m->P + m->C + 2 * F + 2 * ((size_t)m->Dv + 1);
}

static void based_step(const void *st, real *const *p, real *state, int t, const real *x, real *y) {
    const Based *m = st;
    int F = based_phi_width(m->d), W = m->Dv + 1, Dv = m->Dv;
    real *S = state, *qkv = S + (size_t)m->H * F * W, *o = qkv + m->P, *pq = o + m->C, *pk = pq + F;
    real *vp = pk + F, *op = vp + W;
    (void)t;  // S is zero at position 0
    matmul_forward(qkv, x, p[P_QKV], NULL, 1, m->C, m->P, m->prec);
    for (int h = 0; h < m->H; h++) {
        real *Sh = S + (size_t)h * F * W;
        based_phi(m->d, qkv + q_off(m, h), pq);
        based_phi(m->d, qkv + k_off(m, h), pk);
        memcpy(vp, qkv + v_off(m, h), sizeof(real) * Dv);
        vp[Dv] = 1;
        for (int f = 0; f < F; f++)  // S += phi(k) v'^T, then o' = S^T phi(q)
            for (int c = 0; c < W; c++) Sh[(size_t)f * W + c] += pk[f] * vp[c];
        for (int c = 0; c < W; c++) op[c] = 0;
        for (int f = 0; f < F; f++)
            for (int c = 0; c < W; c++) op[c] += Sh[(size_t)f * W + c] * pq[f];
        real dn = op[Dv] + (real)BASED_EPS;
        for (int c = 0; c < Dv; c++) o[h * Dv + c] = op[c] / dn;
    }
    matmul_forward(y, o, p[P_O], NULL, 1, m->C, m->C, m->prec);
}

// Per token: the projections (C -> 2 H d + C, C -> C); per head, with n = min(L, T) and W = Dv + 1:
// the chunk's scores and weights times [v, 1] (2 n d + 2 n W), and for the tokens of every chunk
// but the first (a fraction f = (chunks - 1) / chunks: none on a one-chunk sequence) the state's
// read and update (2 F W each) with their features (d^2). Backward: twice the projections; per
// head P = dO' V'^T, the scores again, dQ, dK and dV within the chunk (2 n W + 2 n d + 4 n d +
// 2 n Dv), and across chunks (the same fraction) dphi(q), the state again, dphi(k), dV and G (2 F W
// each) with the features and their gradients (3 d^2 + 2 d^2).
static void based_flops(const void *st, int B, int T, double *fwd, double *bwd) {
    const Based *m = st;
    double BT = (double)B * T, C = m->C, H = m->H, d = m->d, Dv = m->Dv, W = Dv + 1;
    double n = T < m->L ? T : m->L, F = based_phi_width(m->d), chunks = ceil((double)T / m->L);
    double f = (chunks - 1) / chunks;
    double proj = 2 * BT * C * (m->P + C);
    double kf = BT * H * (2 * n * d + 2 * n * W + f * (d * d + 4 * F * W));
    double kb = BT * H * (2 * n * W + 6 * n * d + 2 * n * Dv + f * (10 * F * W + 5 * d * d));
    *fwd = proj + kf;
    *bwd = 2 * proj + kb;
}

const MixerKind mixer_based = {
    .name = "based",
    .summary = "Based: linear attention with the 2nd-order Taylor map phi(q).phi(k) = 1 + s + s^2/2 of a feature dim d, chunked (Arora et al. 2024, Zoology)",
    .options = based_keys,
    .create = based_create,
    .destroy = based_destroy,
    .params = based_params,
    .buffers = based_buffers,
    .forward = based_forward,
    .backward = based_backward,
    .n_maps = based_n_maps,
    .attention = based_attention,
    .attention_values = based_attention_values,
    .finish = based_finish,
    .theory = THEORY_LINEAR,
    .attention_qk = based_attention_qk,
    .qk_width = based_qk_width,
    .state_size = based_state_size,
    .state_floats = based_state_floats,
    .step = based_step,
    .flops = based_flops,
};
