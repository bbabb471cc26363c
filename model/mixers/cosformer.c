// cosFormer (Qin et al. 2022; OpenNLPLab/cosFormer; docs/mixers.md#cosformer), per head:
//   a_ij = relu(q_i).relu(k_j) cos(pi (i-j) / (2M)) / max(den_i, 1e-6),  o_i = sum_j a_ij v_j,
//   den_i = sum_{j<=i} relu(q_i).relu(k_j) cos(pi (i-j) / (2M)),
// with M = seq_len fixed (the configured length, the paper's max(src_len, tgt_len) for causal LM),
// positions counted from 1 as in the source. cos(a - b) = sin a sin b + cos a cos b makes this a
// linear attention on 2D features q'_i = [relu(q_i) sin(pi i/2M), relu(q_i) cos(pi i/2M)] (same
// for k'), so training runs model/mixers/linear_chunk.c on (q', k', v) for the numerator, and
// den_i = q'_i . z_i with z_i = sum_{j<=i} k'_j. O(T) time, no T x T buffer. No scale (it would
// cancel), no norm; the output projection follows.
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/mixers/linear_chunk.h"
#include "model/mixers/qkv_common.h"

#define COS_EPS 1e-6  // cosformer.py's clamp_min on the denominator
#define PI 3.14159265358979323846

typedef struct {
    QkvShape s;   // M = s.T
    real trig[];  // [T, 2]: sin and cos of pi/2 (t+1) / M for position t (0-based)
} Cosformer;

enum { A_DEN = QKV_N_SAVED };     // saved: den [B, H, T] before the clamp
enum { S_WORK = QKV_N_SCRATCH };  // scratch: per-thread features and chunk work

// Per-thread work: q', k', dq', dk' [T, 2D]; d num [T, D]; d den [T]; z [2D]; chunk work.
static size_t work_size(const Cosformer *c) {
    int T = c->s.T, D = c->s.D;
    return (size_t)T * (9 * D + 1) + 2 * D + lin_chunk_work(2 * D, D);
}

static void *cosformer_create(const MixerDims *d) {
    Cosformer *c = mallocCheck(sizeof *c + sizeof(real) * 2 * d->T);
    qkv_shape(&c->s, d, 0);
    for (int t = 0; t < d->T; t++) {
        double angle = PI / 2 * (t + 1) / d->T;
        c->trig[2 * t] = (real)sin(angle);
        c->trig[2 * t + 1] = (real)cos(angle);
    }
    return c;
}

static void cosformer_destroy(void *st) { free(st); }

static int cosformer_params(const void *st, ParamDecl *out) { return qkv_params(&((const Cosformer *)st)->s, out); }

static void cosformer_buffers(const void *st, int B, int T, BufDecl *saved, int *n_saved, BufDecl *scratch, int *n_scratch) {
    const Cosformer *c = st;
    qkv_buffers(&c->s, B, T, saved, n_saved, scratch, n_scratch);
    saved[A_DEN] = (BufDecl){"den", (size_t)B * c->s.H * T};
    *n_saved = A_DEN + 1;
    scratch[S_WORK] = (BufDecl){"work", (size_t)omp_get_max_threads() * work_size(c)};
    *n_scratch = S_WORK + 1;
}

// f[2D] = [relu(x) sin, relu(x) cos] of position t.
static void features(const Cosformer *c, const real *restrict x, int t, real *restrict f) {
    int D = c->s.D;
    real sn = c->trig[2 * t], cs = c->trig[2 * t + 1];
    for (int d = 0; d < D; d++) {
        real r = x[d] > 0 ? x[d] : 0;
        f[d] = r * sn;
        f[D + d] = r * cs;
    }
}

// dx[D] += relu'(x) (df[0:D] sin + df[D:2D] cos): the backward of features().
static void features_backward(const Cosformer *c, const real *restrict x, int t, const real *restrict df, real *restrict dx) {
    int D = c->s.D;
    real sn = c->trig[2 * t], cs = c->trig[2 * t + 1];
    const real *restrict dfc = df + D;
    for (int d = 0; d < D; d++) {
        real g = df[d] * sn + dfc[d] * cs;
        dx[d] += x[d] > 0 ? g : 0;
    }
}

// One head's features q', k' [T, 2D] from its q (row stride 3C; k follows at +C).
static void head_features(const Cosformer *c, const real *q, int T, real *qf, real *kf) {
    int C = c->s.C, D2 = 2 * c->s.D;
    for (int t = 0; t < T; t++) {
        features(c, q + (size_t)t * 3 * C, t, qf + (size_t)t * D2);
        features(c, q + (size_t)t * 3 * C + C, t, kf + (size_t)t * D2);
    }
}

static real clamp_den(real den) { return den > (real)COS_EPS ? den : (real)COS_EPS; }

static void cosformer_forward(const void *st, MixerIO *io) {
    const Cosformer *c = st;
    int T = io->T, C = c->s.C, H = c->s.H, D = c->s.D, C3 = 3 * C, D2 = 2 * D;
    qkv_in_forward(&c->s, io);
    const real *qkv = io->act[QKV_A_QKV];
    real *att = io->act[QKV_A_ATT], *den = io->act[A_DEN];
#pragma omp parallel for schedule(dynamic, 1)
    for (int bh = 0; bh < io->B * H; bh++) {
        int b = bh / H, h = bh % H;
        real *qf = io->tmp[S_WORK] + (size_t)omp_get_thread_num() * work_size(c);
        real *kf = qf + (size_t)T * D2, *z = kf + (size_t)T * D2, *work = z + D2;
        const real *q = qkv + (size_t)b * T * C3 + h * D;
        real *o = att + (size_t)b * T * C + h * D;
        head_features(c, q, T, qf, kf);
        lin_chunk_forward(T, D2, D, 1, 1, qf, D2, kf, D2, q + 2 * C, C3, o, C, work);
        for (int e = 0; e < D2; e++) z[e] = 0;
        for (int t = 0; t < T; t++) {  // den_t = q'_t . z_t, then o_t = num_t / max(den_t, eps)
            const real *qt = qf + (size_t)t * D2, *kt = kf + (size_t)t * D2;
            real dn = 0;
            for (int e = 0; e < D2; e++) dn += qt[e] * (z[e] += kt[e]);
            den[(size_t)bh * T + t] = dn;
            real inv = 1 / clamp_den(dn), *ot = o + (size_t)t * C;
            for (int d = 0; d < D; d++) ot[d] *= inv;
        }
    }
    qkv_out_forward(&c->s, io);
}

static void cosformer_backward(const void *st, MixerIO *io) {
    const Cosformer *c = st;
    int T = io->T, C = c->s.C, H = c->s.H, D = c->s.D, C3 = 3 * C, D2 = 2 * D;
    const real *datt = qkv_out_backward(&c->s, io);
    const real *qkv = io->act[QKV_A_QKV], *att = io->act[QKV_A_ATT], *den = io->act[A_DEN];
    real *dqkv = io->tmp[QKV_S_DQKV];
#pragma omp parallel for schedule(dynamic, 1)
    for (int bh = 0; bh < io->B * H; bh++) {
        int b = bh / H, h = bh % H;
        real *qf = io->tmp[S_WORK] + (size_t)omp_get_thread_num() * work_size(c);
        real *kf = qf + (size_t)T * D2, *dqf = kf + (size_t)T * D2, *dkf = dqf + (size_t)T * D2;
        real *dnum = dkf + (size_t)T * D2, *dden = dnum + (size_t)T * D, *z = dden + T, *work = z + D2;
        size_t off = (size_t)b * T * C3 + h * D;
        const real *q = qkv + off, *dn_saved = den + (size_t)bh * T;
        real *dq = dqkv + off;
        head_features(c, q, T, qf, kf);
        // o = num / max(den, eps): d num = dO / den', d den = -(dO . o) / den (0 when clamped).
        // The den path: dq'_t += d den_t z_t (forward time), dk'_j += sum_{i>=j} d den_i q'_i.
        for (int e = 0; e < D2; e++) z[e] = 0;
        for (int t = 0; t < T; t++) {
            const real *dot = datt + ((size_t)b * T + t) * C + h * D, *ot = att + ((size_t)b * T + t) * C + h * D;
            real dn = dn_saved[t], inv = 1 / clamp_den(dn), s = 0;
            for (int d = 0; d < D; d++) {
                dnum[(size_t)t * D + d] = dot[d] * inv;
                s += dot[d] * ot[d];
            }
            dden[t] = dn > (real)COS_EPS ? -s * inv : 0;
            const real *kt = kf + (size_t)t * D2;
            real *dqt = dqf + (size_t)t * D2;
            for (int e = 0; e < D2; e++) dqt[e] = dden[t] * (z[e] += kt[e]);
        }
        for (int e = 0; e < D2; e++) z[e] = 0;
        for (int t = T - 1; t >= 0; t--) {
            const real *qt = qf + (size_t)t * D2;
            real *dkt = dkf + (size_t)t * D2;
            for (int e = 0; e < D2; e++) dkt[e] = z[e] += dden[t] * qt[e];
        }
        lin_chunk_backward(T, D2, D, 1, 1, qf, D2, kf, D2, q + 2 * C, C3, dnum, D, dqf, dkf, dq + 2 * C, work);
        for (int t = 0; t < T; t++) {
            features_backward(c, q + (size_t)t * C3, t, dqf + (size_t)t * D2, dq + (size_t)t * C3);
            features_backward(c, q + (size_t)t * C3 + C, t, dkf + (size_t)t * D2, dq + (size_t)t * C3 + C);
        }
    }
    qkv_in_backward(&c->s, io);
}

static int cosformer_n_maps(const void *st) { return ((const Cosformer *)st)->s.H; }

static void cosformer_attention(const void *st, const MixerIO *io, int b, int h, real *a) {
    const Cosformer *c = st;
    int T = io->T, C3 = 3 * c->s.C, D = c->s.D;
    const real *q = io->act[QKV_A_QKV] + (size_t)b * T * C3 + h * D, *k = q + c->s.C;
    const real *den = io->act[A_DEN] + ((size_t)b * c->s.H + h) * T;
    for (int i = 0; i < T; i++) {
        real inv = 1 / clamp_den(den[i]);
        for (int j = 0; j < T; j++) {
            real s = 0;
            if (j <= i) {
                for (int d = 0; d < D; d++) {
                    real qd = q[(size_t)i * C3 + d], kd = k[(size_t)j * C3 + d];
                    s += (qd > 0 ? qd : 0) * (kd > 0 ? kd : 0);
                }
                s *= cosr((real)(PI / 2 * (i - j) / c->s.T)) * inv;
            }
            a[(size_t)i * T + j] = s;
        }
    }
}

static void cosformer_finish(const void *st, MixerIO *io, const real *o) {
    const Cosformer *m = st;
    qkv_finish(&m->s, io, m->s.H, o);
}

static int cosformer_attention_values(const void *st, const MixerIO *io, int b, int m, real *v, real *o) {
    return qkv_attention_values(&((const Cosformer *)st)->s, io, b, m, v, o);
}

// State: S [H, 2D, D+1] (the last column is the normaliser's z), then scratch qkv [3C], o [C],
// q', k' [2D], v', o' [D+1].
static size_t cosformer_state_floats(const void *st) {
    const Cosformer *c = st;
    return (size_t)c->s.H * 2 * c->s.D * (c->s.D + 1);  // per head S and z of the cos and sin halves
}

static size_t cosformer_state_size(const void *st) {
    const Cosformer *c = st;
    size_t D = (size_t)c->s.D;
    return c->s.H * 2 * D * (D + 1) + 4 * (size_t)c->s.C + 4 * D + 2 * (D + 1);
}

static void cosformer_step(const void *st, real *const *p, real *state, int t, const real *x, real *y) {
    const Cosformer *c = st;
    int C = c->s.C, D = c->s.D;
    real *S = state, *qkv = S + (size_t)c->s.H * 2 * D * (D + 1), *o = qkv + 3 * C;
    real *qf = o + C, *kf = qf + 2 * D, *vf = kf + 2 * D, *of = vf + D + 1;
    qkv_step_in(&c->s, p, x, qkv);
    for (int h = 0; h < c->s.H; h++) {
        features(c, qkv + h * D, t, qf);
        features(c, qkv + C + h * D, t, kf);
        memcpy(vf, qkv + 2 * C + h * D, sizeof(real) * D);
        vf[D] = 1;
        lin_recurrent_step(2 * D, D + 1, 1, 1, S + (size_t)h * 2 * D * (D + 1), qf, kf, vf, of);
        real inv = 1 / clamp_den(of[D]);
        for (int d = 0; d < D; d++) o[h * D + d] = of[d] * inv;
    }
    qkv_step_out(&c->s, p, o, y);
}

// The chunk kernel on 2D-wide features: per head and chunk of L rows q' k'^T (2 L^2 D multiply-
// adds), A v (L^2 D), q' S and the state update (4 L D^2).
static void cosformer_flops(const void *st, int B, int T, double *fwd, double *bwd) {
    const Cosformer *c = st;
    double L = T < LIN_CHUNK ? T : LIN_CHUNK;
    qkv_flops(&c->s, B, T, 2.0 * B * T * c->s.C * (3 * L + 4 * c->s.D), fwd, bwd);
}

const MixerKind mixer_cosformer = {
    .name = "cosformer",
    .summary = "cosFormer: ReLU linear attention reweighted by cos(pi (i-j) / 2M), M = seq_len, normalised (Qin et al. 2022)",
    .options = NULL,
    .length_bound = "M",  // M = seq_len
    .create = cosformer_create,
    .destroy = cosformer_destroy,
    .params = cosformer_params,
    .buffers = cosformer_buffers,
    .forward = cosformer_forward,
    .backward = cosformer_backward,
    .n_maps = cosformer_n_maps,
    .attention = cosformer_attention,
    .attention_values = cosformer_attention_values,
    .finish = cosformer_finish,
    .state_size = cosformer_state_size,
    .state_floats = cosformer_state_floats,
    .step = cosformer_step,
    .flops = cosformer_flops,
};
