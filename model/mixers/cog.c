// Cog attention (Lv et al. 2024, arXiv 2411.07176; trestad/CogAttn's Cogformer;
// docs/mixers.md#cog): signed weights from a softmax over the magnitudes of the scores, per head
//   p_ij = q_i . k_j / sqrt(D),  a_ij = sign(p_ij) softmax_j(|p_ij|) over j <= i,  o_i = sum_j a_ij v_j,
// so sum_j |a_ij| = 1 and a head can subtract a value as well as add it (sign(0) = 0). Cogformer
// keeps plain softmax attention in the first and the last layer (`cog_softmax_ends`). Forward and
// backward run model/mixers/qblock.c's blocks of query rows like softmax, saving the log-sum-exp of each
// row; backward: dp_ij = m_ij dA_ij - a_ij Dlt_i (m = the softmax, dA_ij = dO_i.v_j,
// Dlt_i = dO_i.o_i), which is softmax's P (dP - Dlt) when every sign is +1.
#include <math.h>
#include <string.h>

#include "core/io.h"
#include "model/kernels/gemm.h"
#include "model/kernels/vmath.h"
#include "model/mixers/qblock_mixer.h"

typedef struct {
    QMixer q;       // the qblock family's part (first; model/mixers/qblock_mixer.h)
    int is_signed;  // 0: this layer is one of the softmax ends
} Cog;

enum { A_LSE = QKV_N_SAVED };  // saved: log-sum-exp of |p| (or p) per row [B, H, T]

static const KeyDef cog_keys[] = {
    {"cog_softmax_ends", KEY_BOOL, "true", 0, 0, 0, "model",
     "cog: plain softmax attention in the first and the last layer, as Cogformer does"},
    {NULL, 0, NULL, 0, NULL, 0, NULL, NULL},
};

// Cogformer's rule, softmax in the first and the last layer, is for a stack named by one word
// (`mixer = cog`). A `mixer` key that lists every layer (`mixer = softmax, cog, cog, softmax`)
// already says what each layer is, so cog_softmax_ends steps aside there and every Cog layer of
// the list is signed: the choice per layer is Cog's, read from its own option and the list.
static int is_softmax_end(const MixerDims *d) {
    int end = d->layer == 0 || d->layer == d->n_layer - 1;
    const char *mixer = config_find(d->cfg, "mixer") ? cfg_str(d->cfg, "mixer") : "";
    int listed = strchr(mixer, ',') != NULL;  // model_parse_mixers: a list is names and commas
    return end && !listed && cfg_bool(d->cfg, "cog_softmax_ends");
}

// sign(p) as a real: +1, -1, or 0 for p = 0 (torch.sign)
static inline real sgn(real p) { return (real)((p > 0) - (p < 0)); }

// Weights of query rows [i0, i1) against keys [0, i1) (row stride i1, 0 above the diagonal):
// A = sign(p) m (signed) or m, with m = softmax of |p| (signed) or p, and M = m when not NULL.
// The row's log-sum-exp is computed into lse[i] (recompute = 0) or read from it.
static void block_weights(const Cog *c, const real *q, const real *k, int ldq, int i0, int i1, real *A, real *M,
                          real *lse, int recompute) {
    int nk = i1, sg = c->is_signed;
    real scale = 1 / sqrtr((real)c->q.s.D);
    gemm_serial(0, 1, i1 - i0, nk, c->q.s.D, q + (size_t)i0 * ldq, ldq, k, ldq, 0, A, nk);
    for (int i = i0; i < i1; i++) {
        real *row = A + (size_t)(i - i0) * nk, *mrow = M ? M + (size_t)(i - i0) * nk : NULL;
        if (!recompute) {  // one exp per weight: signed exponentials, then divided by their sum
            real mx = -INFINITY, sum = 0;
#pragma omp simd reduction(max : mx)
            for (int j = 0; j <= i; j++) {
                real p = row[j] *= scale, a = sg ? fabsr(p) : p;
                mx = a > mx ? a : mx;
            }
#pragma omp simd reduction(+ : sum)
            for (int j = 0; j <= i; j++) {
                real p = row[j], e = vexpr((sg ? fabsr(p) : p) - mx);
                sum += e;
                row[j] = sg ? e * sgn(p) : e;
            }
            real inv = 1 / sum;
#pragma omp simd
            for (int j = 0; j <= i; j++) row[j] *= inv;
            lse[i] = mx + logr(sum);
        } else if (mrow) {
            real l = lse[i];
#pragma omp simd
            for (int j = 0; j <= i; j++) {
                real p = row[j] * scale, w = vexpr((sg ? fabsr(p) : p) - l);
                mrow[j] = w;
                row[j] = sg ? w * sgn(p) : w;
            }
        } else {
            real l = lse[i];
#pragma omp simd
            for (int j = 0; j <= i; j++) {
                real p = row[j] * scale, w = vexpr((sg ? fabsr(p) : p) - l);
                row[j] = sg ? w * sgn(p) : w;
            }
        }
        for (int j = i + 1; j < nk; j++) {
            row[j] = 0;
            if (mrow) mrow[j] = 0;
        }
    }
}

// qblock hooks. The weights: A, and in the backward the softmax M (plane 1) as well.
static void cog_weights(const QBlock *qb, const QBlockHead *hd, int i0, int i1, real *A, int forward) {
    const Cog *m = qb->mixer;
    const MixerIO *io = qb->call;
    real *M = forward ? NULL : A + (size_t)QBLOCK_ROWS * qb->Tmax;
    block_weights(m, hd->q, hd->k, qb->ld, i0, i1, A, M, io->act[A_LSE] + (size_t)hd->bh * qb->T, !forward);
}

// dp = (m dA - a Dlt_i) / sqrt(D), Dlt_i = dO_i . o_i
static void cog_dscores(const QBlock *qb, const QBlockHead *hd, int i0, int i1, real *A, real *dP) {
    int D = qb->D, C = qb->ldo;
    real scale = 1 / sqrtr((real)D), *M = A + (size_t)QBLOCK_ROWS * qb->Tmax;
    for (int r = 0; r < i1 - i0; r++) {
        int i = i0 + r;
        const real *doi = hd->dout + (size_t)i * C, *oi = hd->o + (size_t)i * C;
        real dlt = 0;
        for (int d = 0; d < D; d++) dlt += doi[d] * oi[d];
        real *ar = A + (size_t)r * i1, *mr = M + (size_t)r * i1, *dpr = dP + (size_t)r * i1;
        for (int j = 0; j <= i; j++) dpr[j] = (mr[j] * dpr[j] - ar[j] * dlt) * scale;
        for (int j = i + 1; j < i1; j++) dpr[j] = 0;
    }
}

static void *cog_create(const MixerDims *d) {
    Cog *m = mallocCheck(sizeof *m);
    qmix_init(&m->q, d, 2, cog_weights, cog_dscores);  // planes A and M
    m->is_signed = !is_softmax_end(d);
    return m;
}

static void cog_buffers(const void *st, int B, int T, BufDecl *saved, int *n_saved, BufDecl *scratch, int *n_scratch) {
    const Cog *m = st;
    qmix_buffers(st, B, T, saved, n_saved, scratch, n_scratch);
    saved[A_LSE] = (BufDecl){"lse", (size_t)B * m->q.s.H * T};
    *n_saved = A_LSE + 1;
}

static void cog_attention(const void *st, const MixerIO *io, int b, int h, real *a) {
    const Cog *m = st;
    int T = io->T, C3 = 3 * m->q.s.C;
    const real *q = io->act[QKV_A_QKV] + (size_t)b * T * C3 + h * m->q.s.D;
    real *l = io->act[A_LSE] + ((size_t)b * m->q.s.H + h) * T;
    block_weights(m, q, q + m->q.s.C, C3, 0, T, a, NULL, l, 1);
}

// The KV cache and qkv (qmix_step_in), then o [C] and scores [T].
static size_t cog_state_size(const void *st) {
    const Cog *m = st;
    return qmix_state_size(&m->q, (size_t)m->q.s.C + (size_t)m->q.s.T);
}

static void cog_step(const void *st, real *const *p, real *state, int t, const real *x, real *y) {
    const Cog *m = st;
    int C = m->q.s.C, D = m->q.s.D;
    QMixStep k = qmix_step_in(&m->q, p, state, t, x);
    const real *kc = k.k, *vc = k.v, *qkv = k.qkv;
    real *o = k.scratch, *sc = o + C, scale = 1 / sqrtr((real)D);
    for (int h = 0; h < m->q.s.H; h++) {
        real mx = -INFINITY, sum = 0;
        for (int j = 0; j <= t; j++) {
            real d = 0;
            for (int i = 0; i < D; i++) d += qkv[h * D + i] * kc[(size_t)j * C + h * D + i];
            sc[j] = d * scale;
            real s = m->is_signed ? fabsr(sc[j]) : sc[j];
            mx = s > mx ? s : mx;
        }
        for (int j = 0; j <= t; j++) {
            real e = expr((m->is_signed ? fabsr(sc[j]) : sc[j]) - mx);
            sum += e;
            sc[j] = !m->is_signed || sc[j] > 0 ? e : sc[j] < 0 ? -e : 0;
        }
        for (int i = 0; i < D; i++) o[h * D + i] = 0;
        for (int j = 0; j <= t; j++)
            for (int i = 0; i < D; i++) o[h * D + i] += sc[j] / sum * vc[(size_t)j * C + h * D + i];
    }
    qkv_step_out(&m->q.s, p, o, y);
}

const MixerKind mixer_cog = {
    .name = "cog",
    .summary = "signed Cog attention a_ij = sign(p_ij) softmax_j(|p_ij|), softmax in the end layers (Cogformer, Lv et al. 2024)",
    .options = cog_keys,
    .create = cog_create,
    .destroy = qmix_destroy,
    .params = qmix_params,
    .buffers = cog_buffers,
    .forward = qmix_forward,
    .backward = qmix_backward,
    .n_maps = qmix_n_maps,
    .attention = cog_attention,
    .attention_values = qmix_attention_values,
    .finish = qmix_finish,
    .state_size = cog_state_size,
    .state_floats = qmix_state_floats,
    .step = cog_step,
    .flops = qmix_flops,
};
