// Dual-attention generalized probabilistic attention (daGPAM; Heo and Choi 2024, arXiv 2410.15578),
// per head h: an affine instead of a convex combination of two causal softmax maps
//   P+ = softmax(q k^T / sqrt(D)),  P- = softmax(q- k^T / sqrt(D))   (same keys, own queries q-)
//   a_ij = (1 + lambda_h) P+_ij - lambda_h P-_ij,   o_i = sum_j a_ij v_j,
// so every row still sums to 1 but weights can be negative. lambda_h = softplus(rho_h), one
// learned scalar per head, rho_h initialised so that lambda_h = 0.1 (close to softmax at the
// start; docs/mixers.md#gpam says why this choice). Forward and backward run
// model/mixers/qblock.c's query blocks (no T x T buffer), saving both log-sum-exps per row;
// backward, with dA = dO v^T and scale s = 1/sqrt(D):
//   dS+_ij = (1 + lambda) P+_ij (dA_ij - sum_j P+_ij dA_ij) s   (through q and k)
//   dS-_ij = -lambda P-_ij (dA_ij - sum_j P-_ij dA_ij) s        (through q- and k)
//   dlambda = sum_ij dA_ij (P+_ij - P-_ij),  drho = dlambda * sigmoid(rho).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/kernels/gemm.h"
#include "model/layers.h"
#include "model/mixers/qblock_mixer.h"

#define GPAM_LAMBDA0 0.1  // lambda_h at initialisation

typedef struct {
    QMixer q;  // the qblock family's part (first; model/mixers/qblock_mixer.h)
} Gpam;

// After the q/k/v tensors: the negative branch's query projection and the per-head rho.
enum { P_QN_W = QKV_NORM_W, P_QN_B, P_RHO };
// saved: qn [B,T,C] (q-), lse of P+ and of P- per row [B,H,T] each
enum { A_QN = QKV_N_SAVED, A_LSE_P, A_LSE_N };
// scratch, after the family's (its blocks [4, 64, T]): dqn [B,T,C], dlambda per (batch row, head) [B,H]
enum { S_DQN = QMIX_N_SCRATCH, S_DLAM };

static int gpam_params(const void *st, ParamDecl *out) {
    const Gpam *m = st;
    int n = qmix_params(st, out), C = m->q.s.C;
    out[n++] = (ParamDecl){"attn.q_neg.weight", 2, {C, C}, INIT_NORMAL, 0, 0};
    out[n++] = (ParamDecl){"attn.q_neg.bias", 1, {C}, INIT_ZERO, 0, 0};
    out[n++] = (ParamDecl){"attn.lambda_rho", 1, {m->q.s.H}, INIT_CUSTOM, 0, 1};
    return n;
}

static void gpam_init_custom(const void *st, int index, real *w, Rng *rng) {
    const Gpam *m = st;
    (void)rng;
    if (index == P_RHO)  // softplus(rho) = lambda0: rho = log(exp(lambda0) - 1)
        for (int h = 0; h < m->q.s.H; h++) w[h] = (real)log(expm1(GPAM_LAMBDA0));
}

static void gpam_buffers(const void *st, int B, int T, BufDecl *saved, int *n_saved, BufDecl *scratch, int *n_scratch) {
    const Gpam *m = st;
    size_t BT = (size_t)B * T;
    qmix_buffers(st, B, T, saved, n_saved, scratch, n_scratch);
    saved[A_QN] = (BufDecl){"q_neg", BT * m->q.s.C};
    saved[A_LSE_P] = (BufDecl){"lse_pos", (size_t)B * m->q.s.H * T};
    saved[A_LSE_N] = (BufDecl){"lse_neg", (size_t)B * m->q.s.H * T};
    *n_saved = A_LSE_N + 1;
    scratch[S_DQN] = (BufDecl){"dq_neg", BT * m->q.s.C};
    scratch[S_DLAM] = (BufDecl){"dlambda", (size_t)B * m->q.s.H};
    *n_scratch = S_DLAM + 1;
}

static real softplus(real r) { return r > 20 ? r : log1pr(expr(r)); }

// A = (1 + lambda) P+ - lambda P- of query rows [i0, i1) of head (b, h), with P+ and P- in Pp and
// Pn (all row stride i1). q and k have row stride ldq, qn row stride C.
static void block_weights(const Gpam *m, const real *rho, int h, const real *q, const real *k, int ldq, const real *qn,
                          real *lse_p, real *lse_n, int i0, int i1, real *A, real *Pp, real *Pn, int recompute) {
    real lam = softplus(rho[h]);
    qblock_softmax(m->q.s.D, q, ldq, k, ldq, i0, i1, Pp, lse_p, recompute);
    qblock_softmax(m->q.s.D, qn, m->q.s.C, k, ldq, i0, i1, Pn, lse_n, recompute);
    for (size_t e = 0; e < (size_t)(i1 - i0) * i1; e++) A[e] = (1 + lam) * Pp[e] - lam * Pn[e];
}

// qblock hooks: planes A, P+, P-, then dA.
static void gpam_weights(const QBlock *qb, const QBlockHead *hd, int i0, int i1, real *A, int forward) {
    const Gpam *m = qb->mixer;
    const MixerIO *io = qb->call;
    size_t plane = (size_t)QBLOCK_ROWS * qb->Tmax, row = (size_t)hd->bh * qb->T;
    const real *qn = io->act[A_QN] + (size_t)hd->b * qb->T * m->q.s.C + (size_t)hd->h * qb->D;
    block_weights(m, io->p[P_RHO], hd->h, hd->q, hd->k, qb->ld, qn, io->act[A_LSE_P] + row, io->act[A_LSE_N] + row, i0,
                  i1, A, A + plane, A + 2 * plane, !forward);
}

// dA becomes dS+ (the helper's q and k gradients); P- becomes dS-, whose q- and k gradients are
// taken here; dlambda of the rows is added to the head's partial sum.
static void gpam_dscores(const QBlock *qb, const QBlockHead *hd, int i0, int i1, real *A, real *dA) {
    const Gpam *m = qb->mixer;
    const MixerIO *io = qb->call;
    int C = m->q.s.C, D = qb->D, nq = i1 - i0;
    size_t plane = (size_t)QBLOCK_ROWS * qb->Tmax, qoff = (size_t)hd->b * qb->T * C + (size_t)hd->h * D;
    real *Pp = A + plane, *Pn = A + 2 * plane, scale = 1 / sqrtr((real)D);
    real lam = softplus(io->p[P_RHO][hd->h]), dlam = 0;
    for (int r = 0; r < nq; r++) {
        int i = i0 + r;
        real *pp = Pp + (size_t)r * i1, *pn = Pn + (size_t)r * i1, *da = dA + (size_t)r * i1;
        real dp = 0, dn = 0;
        for (int j = 0; j <= i; j++) dp += pp[j] * da[j], dn += pn[j] * da[j];
        for (int j = 0; j <= i; j++) {
            real g = da[j];
            da[j] = (1 + lam) * pp[j] * (g - dp) * scale;
            pn[j] = -lam * pn[j] * (g - dn) * scale;
        }
        for (int j = i + 1; j < i1; j++) da[j] = pn[j] = 0;
        dlam += dp - dn;
    }
    io->tmp[S_DLAM][hd->bh] += dlam;
    // dq-[i0:i1] += dS- k;  dk[0:i1] += dS-^T q-
    const real *qn = io->act[A_QN] + qoff;
    gemm_serial(0, 0, nq, D, i1, Pn, i1, hd->k, qb->ld, 1, io->tmp[S_DQN] + qoff + (size_t)i0 * C, C);
    gemm_serial(1, 0, i1, D, nq, Pn, i1, qn + (size_t)i0 * C, C, 1, hd->dk, qb->ld);
}

static void *gpam_create(const MixerDims *d) {
    Gpam *m = mallocCheck(sizeof *m);
    qmix_init(&m->q, d, 3, gpam_weights, gpam_dscores);  // planes A, P+, P-
    return m;
}

// The family's forward with the q- projection before the blocks.
static void gpam_forward(const void *st, MixerIO *io) {
    const Gpam *m = st;
    int BT = io->B * io->T, C = m->q.s.C;
    qkv_in_forward(&m->q.s, io);
    matmul_forward(io->act[A_QN], io->x, io->p[P_QN_W], io->p[P_QN_B], BT, C, C, m->q.s.prec);
    qmix_blocks_forward(&m->q, io);
    qkv_out_forward(&m->q.s, io);
}

// Its backward: the blocks also give dq- and dlambda (gpam_dscores), turned into the q- projection's
// and rho's gradients before the family's qkv backward.
static void gpam_backward(const void *st, MixerIO *io) {
    const Gpam *m = st;
    int B = io->B, BT = B * io->T, C = m->q.s.C, H = m->q.s.H;
    const real *datt = qkv_out_backward(&m->q.s, io);
    memset(io->tmp[S_DQN], 0, sizeof(real) * BT * C);
    memset(io->tmp[S_DLAM], 0, sizeof(real) * B * H);
    qmix_blocks_backward(&m->q, io, datt);
    for (int h = 0; h < H; h++) {  // sums over batch rows in order: thread-count free
        real acc = 0, rho = io->p[P_RHO][h];
        for (int b = 0; b < B; b++) acc += io->tmp[S_DLAM][b * H + h];
        io->g[P_RHO][h] += acc / (1 + expr(-rho));  // softplus' = sigmoid
    }
    matmul_backward(io->dx, io->g[P_QN_W], io->g[P_QN_B], io->tmp[S_DQN], io->x, io->p[P_QN_W], BT, C, C, m->q.s.prec);
    qkv_in_backward(&m->q.s, io);
}

static void gpam_attention(const void *st, const MixerIO *io, int b, int h, real *a) {
    const Gpam *m = st;
    int T = io->T, C = m->q.s.C, D = m->q.s.D, C3 = 3 * C;
    const real *q = io->act[QKV_A_QKV] + (size_t)b * T * C3 + h * D;
    const real *qn = io->act[A_QN] + (size_t)b * T * C + h * D;
    size_t row = ((size_t)b * m->q.s.H + h) * T;
    real *P = mallocCheck(sizeof(real) * 2 * T * T);
    block_weights(m, io->p[P_RHO], h, q, q + C, C3, qn, io->act[A_LSE_P] + row, io->act[A_LSE_N] + row, 0, T, a, P,
                  P + (size_t)T * T, 1);
    free(P);
}

// The KV cache and qkv (qmix_step_in), then q- [C], o [C], scores [2, T].
static size_t gpam_state_size(const void *st) {
    const Gpam *m = st;
    return qmix_state_size(&m->q, 2 * (size_t)m->q.s.C + 2 * (size_t)m->q.s.T);
}

// Softmax of the scores q.k_j / sqrt(D), j <= t, of one head into w[0..t].
static void step_softmax(const real *q, const real *kc, int C, int D, int t, real *w) {
    real mx = -INFINITY, sum = 0, scale = 1 / sqrtr((real)D);
    for (int j = 0; j <= t; j++) {
        real d = 0;
        for (int i = 0; i < D; i++) d += q[i] * kc[(size_t)j * C + i];
        w[j] = d * scale;
        mx = w[j] > mx ? w[j] : mx;
    }
    for (int j = 0; j <= t; j++) sum += w[j] = expr(w[j] - mx);
    for (int j = 0; j <= t; j++) w[j] /= sum;
}

static void gpam_step(const void *st, real *const *p, real *state, int t, const real *x, real *y) {
    const Gpam *m = st;
    int C = m->q.s.C, D = m->q.s.D, T = m->q.s.T;
    QMixStep k = qmix_step_in(&m->q, p, state, t, x);
    const real *kc = k.k, *vc = k.v, *qkv = k.qkv;
    real *qn = k.scratch, *o = qn + C, *wp = o + C, *wn = wp + T;
    matmul_forward(qn, x, p[P_QN_W], p[P_QN_B], 1, C, C, m->q.s.prec);
    for (int h = 0; h < m->q.s.H; h++) {
        real lam = softplus(p[P_RHO][h]);
        step_softmax(qkv + h * D, kc + h * D, C, D, t, wp);
        step_softmax(qn + h * D, kc + h * D, C, D, t, wn);
        for (int i = 0; i < D; i++) o[h * D + i] = 0;
        for (int j = 0; j <= t; j++) {
            real a = (1 + lam) * wp[j] - lam * wn[j];
            for (int i = 0; i < D; i++) o[h * D + i] += a * vc[(size_t)j * C + h * D + i];
        }
    }
    qkv_step_out(&m->q.s, p, o, y);
}

// The q- projection, then per head two score products and A v over the causal triangle.
static void gpam_flops(const void *st, int B, int T, double *fwd, double *bwd) {
    const Gpam *m = st;
    double BT = (double)B * T, C = m->q.s.C;
    qkv_flops(&m->q.s, B, T, 2 * BT * C * C + 3.0 * B * C * T * (T + 1.0), fwd, bwd);
}

const MixerKind mixer_gpam = {
    .name = "gpam",
    .summary = "dual-attention GPAM a_ij = (1+lambda_h) P+ - lambda_h P-, signed rows summing to 1 (Heo and Choi 2024)",
    .options = NULL,
    .create = gpam_create,
    .destroy = qmix_destroy,
    .params = gpam_params,
    .init_custom = gpam_init_custom,
    .buffers = gpam_buffers,
    .forward = gpam_forward,
    .backward = gpam_backward,
    .n_maps = qmix_n_maps,
    .attention = gpam_attention,
    .attention_values = qmix_attention_values,
    .finish = qmix_finish,
    .state_size = gpam_state_size,
    .state_floats = qmix_state_floats,
    .step = gpam_step,
    .flops = gpam_flops,
};
