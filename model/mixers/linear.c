// Causal linear attention (Katharopoulos et al. 2020; fast-transformers' CausalLinearAttention;
// docs/mixers.md#linear), per head, phi(x) = elu(x) + 1 > 0, no scale:
//   S_t = S_{t-1} + phi(k_t) v_t^T,  z_t = z_{t-1} + phi(k_t),
//   o_t = S_t^T phi(q_t) / (phi(q_t) . z_t + 1e-6),   a_ij = phi(q_i).phi(k_j) / den_i,
// with attn.qkv and attn.proj exactly as softmax (model/mixers/qkv_common.c, no norm). Training: the
// numerator is model/mixers/linear_chunk.c without decay (chunks of 64 tokens, K x V state, backward
// = its two passes), the denominator the running key sum; phi(q) and phi(k) are recomputed per
// head from the saved q/k/v, the denominators are saved. O(T) time, no T x T buffer.
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/kernels/gemm.h"
#include "model/mixers/linear_chunk.h"
#include "model/mixers/qkv_common.h"
#include "model/kernels/vmath.h"

#define LIN_EPS 1e-6  // fast-transformers' eps in Z = 1 / (Q . cumsum(K) + eps)

typedef struct {
    QkvShape s;
} Linear;

enum { A_DEN = QKV_N_SAVED };     // saved: den [B, H, T]
enum { S_WORK = QKV_N_SCRATCH };  // scratch: per-thread features and chunk work

// Per-thread work: phi(q), phi(k), their gradients and d num [T, D]; the key sum z [D]; chunk work;
// the rows' d den [T] of the maps' extra gradient (MixerIO.dmap).
static size_t work_size(const Linear *m) {
    int T = m->s.T, D = m->s.D;
    return (size_t)T * 5 * D + D + lin_chunk_work(D, D) + T;
}

static void *linear_create(const MixerDims *d) {
    Linear *m = mallocCheck(sizeof *m);
    qkv_shape(&m->s, d, 0);
    return m;
}

static void linear_destroy(void *st) { free(st); }

static int linear_params(const void *st, ParamDecl *out) { return qkv_params(&((const Linear *)st)->s, out); }

static void linear_buffers(const void *st, int B, int T, BufDecl *saved, int *n_saved, BufDecl *scratch, int *n_scratch) {
    const Linear *m = st;
    qkv_buffers(&m->s, B, T, saved, n_saved, scratch, n_scratch);
    saved[A_DEN] = (BufDecl){"den", (size_t)B * m->s.H * T};
    *n_saved = A_DEN + 1;
    scratch[S_WORK] = (BufDecl){"work", (size_t)omp_get_max_threads() * work_size(m)};
    *n_scratch = S_WORK + 1;
}

static real phi(real x) { return x > 0 ? x + 1 : vexpr(x); }

// One head's phi(q), phi(k) [T, D] from its q (row stride ld; k follows at +C).
static void head_features(const Linear *m, const real *q, int ld, int T, real *pq, real *pk) {
    int C = m->s.C, D = m->s.D;
    for (int t = 0; t < T; t++) {
        const real *qt = q + (size_t)t * ld, *kt = qt + C;
        real *a = pq + (size_t)t * D, *b = pk + (size_t)t * D;
#pragma omp simd
        for (int d = 0; d < D; d++) {
            a[d] = phi(qt[d]);
            b[d] = phi(kt[d]);
        }
    }
}

// dx[D] += phi'(x) df, phi'(x) = 1 (x > 0) or exp(x).
static void features_backward(const real *x, const real *df, int D, real *dx) {
#pragma omp simd
    for (int d = 0; d < D; d++) dx[d] += df[d] * (x[d] > 0 ? 1 : vexpr(x[d]));
}

static void linear_forward(const void *st, MixerIO *io) {
    const Linear *m = st;
    int T = io->T, C = m->s.C, H = m->s.H, D = m->s.D, C3 = 3 * C;
    qkv_in_forward(&m->s, io);
    const real *qkv = io->act[QKV_A_QKV];
    real *att = io->act[QKV_A_ATT], *den = io->act[A_DEN];
#pragma omp parallel for schedule(dynamic, 1)
    for (int bh = 0; bh < io->B * H; bh++) {
        int b = bh / H, h = bh % H;
        real *pq = io->tmp[S_WORK] + (size_t)omp_get_thread_num() * work_size(m);
        real *pk = pq + (size_t)T * D, *z = pk + (size_t)T * D, *work = z + D;
        const real *q = qkv + (size_t)b * T * C3 + h * D;
        real *o = att + (size_t)b * T * C + h * D;
        head_features(m, q, C3, T, pq, pk);
        lin_chunk_forward(T, D, D, 1, 1, pq, D, pk, D, q + 2 * C, C3, o, C, work);
        for (int d = 0; d < D; d++) z[d] = 0;
        for (int t = 0; t < T; t++) {  // den_t = phi(q_t) . z_t + eps, o_t = num_t / den_t
            const real *qt = pq + (size_t)t * D, *kt = pk + (size_t)t * D;
            real dn = 0;
            for (int d = 0; d < D; d++) dn += qt[d] * (z[d] += kt[d]);
            dn += (real)LIN_EPS;
            den[(size_t)bh * T + t] = dn;
            real *ot = o + (size_t)t * C;
            for (int d = 0; d < D; d++) ot[d] /= dn;
        }
    }
    qkv_out_forward(&m->s, io);
}

// The maps' extra gradient G [T, T] of one head (MixerIO.dmap) through the materialised form
// a_ij = phi(q_i).phi(k_j) / den_i, den_i = phi(q_i).z_i + eps, z_i = sum_{l<=i} phi(k_l):
//   d num_ij = G_ij / den_i,  d den_i = -sum_j G_ij a_ij / den_i,
//   dphi(q_i) += sum_j d num_ij phi(k_j) + d den_i z_i,
//   dphi(k_j) += sum_{i>=j} d num_ij phi(q_i) + sum_{i>=j} d den_i phi(q_i).
// Rows of G that are all zero (every row but the query rows, in training) cost one scan.
static void dmap_backward(int T, int D, const real *G, const real *pq, const real *pk, const real *den, real *dpq,
                          real *dpk, real *z, real *dd) {
    for (int d = 0; d < D; d++) z[d] = 0;
    for (int i = 0; i < T; i++) {
        const real *qi = pq + (size_t)i * D, *g = G + (size_t)i * T;
        for (int d = 0; d < D; d++) z[d] += pk[(size_t)i * D + d];
        int any = 0;
        for (int j = 0; j <= i; j++) any |= g[j] != 0;
        dd[i] = 0;
        if (!any) continue;
        real ga = 0, *dqi = dpq + (size_t)i * D;
        for (int j = 0; j <= i; j++) {
            if (g[j] == 0) continue;
            const real *kj = pk + (size_t)j * D;
            real *dkj = dpk + (size_t)j * D, num = 0, dn = g[j] / den[i];
            for (int d = 0; d < D; d++) num += qi[d] * kj[d];
            ga += g[j] * num;
            for (int d = 0; d < D; d++) {
                dqi[d] += dn * kj[d];
                dkj[d] += dn * qi[d];
            }
        }
        dd[i] = -ga / (den[i] * den[i]);
        for (int d = 0; d < D; d++) dqi[d] += dd[i] * z[d];
    }
    for (int d = 0; d < D; d++) z[d] = 0;
    for (int j = T - 1; j >= 0; j--) {  // dphi(k_j) += sum_{i>=j} d den_i phi(q_i)
        const real *qj = pq + (size_t)j * D;
        real *dkj = dpk + (size_t)j * D;
        for (int d = 0; d < D; d++) dkj[d] += z[d] += dd[j] * qj[d];
    }
}

static void linear_backward(const void *st, MixerIO *io) {
    const Linear *m = st;
    int T = io->T, C = m->s.C, H = m->s.H, D = m->s.D, C3 = 3 * C;
    const real *datt = qkv_out_backward(&m->s, io);
    const real *qkv = io->act[QKV_A_QKV], *att = io->act[QKV_A_ATT], *den = io->act[A_DEN];
    real *dqkv = io->tmp[QKV_S_DQKV];
#pragma omp parallel for schedule(dynamic, 1)
    for (int bh = 0; bh < io->B * H; bh++) {
        int b = bh / H, h = bh % H;
        real *pq = io->tmp[S_WORK] + (size_t)omp_get_thread_num() * work_size(m);
        real *pk = pq + (size_t)T * D, *dpq = pk + (size_t)T * D, *dpk = dpq + (size_t)T * D;
        real *dnum = dpk + (size_t)T * D, *z = dnum + (size_t)T * D, *work = z + D;
        size_t off = (size_t)b * T * C3 + h * D;
        const real *q = qkv + off, *dn = den + (size_t)bh * T;
        real *dq = dqkv + off;
        head_features(m, q, C3, T, pq, pk);
        // o = num / den: d num_t = dO_t / den_t, d den_t = -(dO_t . o_t) / den_t, then
        // dphi(q_t) = d den_t z_t (forward time), dphi(k_j) = sum_{i>=j} d den_i phi(q_i) (reverse).
        for (int d = 0; d < D; d++) z[d] = 0;
        for (int t = 0; t < T; t++) {
            const real *dot = datt + ((size_t)b * T + t) * C + h * D, *ot = att + ((size_t)b * T + t) * C + h * D;
            real s = 0;
            for (int d = 0; d < D; d++) {
                dnum[(size_t)t * D + d] = dot[d] / dn[t];
                s += dot[d] * ot[d];
            }
            real dden = -s / dn[t];
            const real *kt = pk + (size_t)t * D;
            real *dqt = dpq + (size_t)t * D;
            for (int d = 0; d < D; d++) dqt[d] = dden * (z[d] += kt[d]);
            dpk[(size_t)t * D] = dden;  // kept for the reverse pass (overwritten there)
        }
        for (int d = 0; d < D; d++) z[d] = 0;
        for (int t = T - 1; t >= 0; t--) {
            real dden = dpk[(size_t)t * D], *dkt = dpk + (size_t)t * D;
            const real *qt = pq + (size_t)t * D;
            for (int d = 0; d < D; d++) dkt[d] = z[d] += dden * qt[d];
        }
        // the numerator's two passes (dphi(q) forward time, dphi(k) and dv reverse time)
        lin_chunk_backward(T, D, D, 1, 1, pq, D, pk, D, q + 2 * C, C3, dnum, D, dpq, dpk, dq + 2 * C, work);
        if (io->dmap)
            dmap_backward(T, D, io->dmap + (size_t)bh * T * T, pq, pk, dn, dpq, dpk, z, work + lin_chunk_work(D, D));
        for (int t = 0; t < T; t++) {
            features_backward(q + (size_t)t * C3, dpq + (size_t)t * D, D, dq + (size_t)t * C3);
            features_backward(q + (size_t)t * C3 + C, dpk + (size_t)t * D, D, dq + (size_t)t * C3 + C);
        }
    }
    qkv_in_backward(&m->s, io);
}

static int linear_n_maps(const void *st) { return ((const Linear *)st)->s.H; }

static void linear_attention(const void *st, const MixerIO *io, int b, int h, real *a) {
    const Linear *m = st;
    int T = io->T, C3 = 3 * m->s.C, D = m->s.D;
    const real *q = io->act[QKV_A_QKV] + (size_t)b * T * C3 + h * D;
    const real *den = io->act[A_DEN] + ((size_t)b * m->s.H + h) * T;
    real *pq = mallocCheck(sizeof(real) * 2 * (size_t)T * D), *pk = pq + (size_t)T * D;
    head_features(m, q, C3, T, pq, pk);
    gemm_serial(0, 1, T, T, D, pq, D, pk, D, 0, a, T);  // phi(q) phi(k)^T, then the causal rows / den
    for (int i = 0; i < T; i++) {
        real *ai = a + (size_t)i * T;
        for (int j = 0; j <= i; j++) ai[j] /= den[i];
        for (int j = i + 1; j < T; j++) ai[j] = 0;
    }
    free(pq);
}

static void linear_finish(const void *st, MixerIO *io, const real *o) {
    const Linear *m = st;
    qkv_finish(&m->s, io, m->s.H, o);
}

static int linear_attention_values(const void *st, const MixerIO *io, int b, int m, real *v, real *o) {
    return qkv_attention_values(&((const Linear *)st)->s, io, b, m, v, o);
}

// THEORY_LINEAR's queries and keys: phi(q), phi(k) of head h.
static int linear_attention_qk(const void *st, const MixerIO *io, int b, int h, real *q, real *k) {
    const Linear *m = st;
    int T = io->T, C3 = 3 * m->s.C, D = m->s.D;
    head_features(m, io->act[QKV_A_QKV] + (size_t)b * T * C3 + h * D, C3, T, q, k);
    return D;
}

// State: S [H, D, D+1] (the last column is the key sum z), then scratch qkv [3C], o [C],
// phi(q), phi(k) [D], v' = [v, 1] and o' [D+1].
static size_t linear_state_floats(const void *st) {
    const Linear *m = st;
    return (size_t)m->s.H * m->s.D * (m->s.D + 1);  // per head S [D, D] and the normaliser z [D]
}

static size_t linear_state_size(const void *st) {
    const Linear *m = st;
    size_t D = (size_t)m->s.D;
    return m->s.H * D * (D + 1) + 4 * (size_t)m->s.C + 2 * D + 2 * (D + 1);
}

static void linear_step(const void *st, real *const *p, real *state, int t, const real *x, real *y) {
    const Linear *m = st;
    int C = m->s.C, D = m->s.D;
    real *S = state, *qkv = S + (size_t)m->s.H * D * (D + 1), *o = qkv + 3 * C;
    real *pq = o + C, *pk = pq + D, *vf = pk + D, *of = vf + D + 1;
    qkv_step_in(&m->s, p, x, qkv);
    for (int h = 0; h < m->s.H; h++) {
        head_features(m, qkv + h * D, 0, 1, pq, pk);
        memcpy(vf, qkv + 2 * C + h * D, sizeof(real) * D);
        vf[D] = 1;
        lin_recurrent_step(D, D + 1, 1, 1, S + (size_t)h * D * (D + 1), pq, pk, vf, of);
        real dn = of[D] + (real)LIN_EPS;
        for (int d = 0; d < D; d++) o[h * D + d] = of[d] / dn;
    }
    qkv_step_out(&m->s, p, o, y);
}

// The chunked numerator (per token and head: 2 L D scores, 2 L D for their product, 4 D^2 for
// the state read and update) and the denominator (2 D).
static void linear_flops(const void *st, int B, int T, double *fwd, double *bwd) {
    const Linear *m = st;
    double L = T < LIN_CHUNK ? T : LIN_CHUNK;
    qkv_flops(&m->s, B, T, 4.0 * B * T * m->s.C * (L + m->s.D) + 2.0 * B * T * m->s.C, fwd, bwd);
}

const MixerKind mixer_linear = {
    .name = "linear",
    .summary = "causal linear attention, phi = elu+1, normalised by phi(q).z + 1e-6 (Katharopoulos et al. 2020)",
    .options = NULL,
    .create = linear_create,
    .destroy = linear_destroy,
    .params = linear_params,
    .buffers = linear_buffers,
    .forward = linear_forward,
    .backward = linear_backward,
    .n_maps = linear_n_maps,
    .attention = linear_attention,
    .attention_values = linear_attention_values,
    .finish = linear_finish,
    .theory = THEORY_LINEAR,
    .attention_qk = linear_attention_qk,
    .state_size = linear_state_size,
    .state_floats = linear_state_floats,
    .step = linear_step,
    .flops = linear_flops,
};
