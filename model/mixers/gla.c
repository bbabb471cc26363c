// Gated linear attention layer with the defaults of flash-linear-attention's GatedLinearAttention
// (docs/mixers.md#gla), Kd = C/2 and Vd = C over n_head heads:
//   q = x Wq^T, k = x Wk^T [Kd];  v = x Wv^T, r = x Wg^T [Vd]     (no biases)
//   gk = (x W1^T) W2^T + b2 [Kd] (rank gla_gate_rank);  g = logsigmoid(gk) / gla_gate_norm <= 0
//   per head: S_t = diag(exp(g_t)) S_{t-1} + k_t v_t^T,  o_t = S_t^T q_t / sqrt(Kd/n_head)
//   u = RMSNorm_head(o) * w * swish(r)  (eps 1e-5, w [Vd/n_head] shared by the heads);  y = u Wo^T
// The scan is model/mixers/gla_scan.c: chunkwise in fp32 with chunk-entry states saved (memory
// O(B T (C + state / GLA_CHUNK))), hand-written backward. Saved: the projections, the log gates,
// o and the norm's rstd; the gated output u is recomputed in backward.
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/mixers/gla_scan.h"
#include "model/layers.h"
#include "model/mixers/mixer.h"
#include "model/kernels/vmath.h"

#define GLA_CHUNK 64      // tokens per chunk of the scan (see the report in gla_scan.h)
#define GLA_MAX_RANGE 40  // a chunk whose gates sum below -40 in some channel runs the recurrence
#define GLA_NORM_EPS 1e-5
#define ROW_CHUNK 256  // rows per partial sum of the norm weight's gradient (thread-count free)

typedef struct {
    int C, H, Kd, Vd, dk, dv, R;  // d_model, heads, key/value widths, per head, gate rank
    real gate_norm, scale;        // gla_gate_norm; dk^-1/2
    Precision prec;               // of the matmuls
} Gla;

enum { P_Q, P_K, P_V, P_GK1, P_GK2, P_GK2_B, P_G, P_NORM, P_O };
// saved: q, k [B,T,Kd], v, r [B,T,Vd], gl [B,T,R] = x W1^T, g [B,T,Kd] log gates, att [B,T,Vd]
// (o before the norm), rstd [B,T,H], chunk-entry states [B,H,n_states,dk,dv]
enum { A_Q, A_K, A_V, A_R, A_GL, A_G, A_ATT, A_RSTD, A_ST };
// scratch: u [B,T,Vd] gated output, du, datt, dv, dr [B,T,Vd], dq, dk, dg [B,T,Kd], dgl [B,T,R],
// norm weight partials [row chunks, dv], per-thread scan work
enum { S_U, S_DU, S_DATT, S_DV, S_DR, S_DQ, S_DK, S_DG, S_DGL, S_PART, S_WORK };

// clang-format off
static const KeyDef gla_keys[] = {
    {"gla_gate_rank", KEY_INT, "16", RANGE_POS, 0, 0, "model", "gla: rank of the gate projection (gk1 [rank, C], gk2 [Kd, rank])"},
    {"gla_gate_norm", KEY_FLOAT, "16", RANGE_POS, 0, 0, "model", "gla: g = logsigmoid(gk) / gla_gate_norm; larger means slower decay"},
    {NULL, 0, NULL, 0, NULL, 0, NULL, NULL},
};
// clang-format on

static void *gla_create(const MixerDims *d) {
    long R = cfg_int(d->cfg, "gla_gate_rank");
    double norm = cfg_float(d->cfg, "gla_gate_norm");
    if (d->C % 2 || (d->C / 2) % d->H)
        die_input("n_head: gla needs d_model/2 (%d/2) divisible by n_head %d", d->C, d->H);
    if (R > 4096) die_input("gla_gate_rank: expected 1..4096, got %ld", R);
    Gla *s = mallocCheck(sizeof *s);
    int Kd = d->C / 2, Vd = d->C;
    // clang-format off
    *s = (Gla){.C = d->C, .H = d->H, .Kd = Kd, .Vd = Vd, .dk = Kd / d->H, .dv = Vd / d->H, .R = (int)R,
               .gate_norm = (real)norm, .scale = (real)(1 / sqrt((double)(Kd / d->H))), .prec = d->prec};
    // clang-format on
    return s;
}

static void gla_destroy(void *st) { free(st); }

static int gla_params(const void *st, ParamDecl *out) {
    const Gla *s = st;
    int C = s->C, Kd = s->Kd, Vd = s->Vd, R = s->R;
    out[P_Q] = (ParamDecl){"gla.q.weight", 2, {Kd, C}, INIT_NORMAL, 0, 0};
    out[P_K] = (ParamDecl){"gla.k.weight", 2, {Kd, C}, INIT_NORMAL, 0, 0};
    out[P_V] = (ParamDecl){"gla.v.weight", 2, {Vd, C}, INIT_NORMAL, 0, 0};
    out[P_GK1] = (ParamDecl){"gla.gk1.weight", 2, {R, C}, INIT_NORMAL, 0, 0};
    out[P_GK2] = (ParamDecl){"gla.gk2.weight", 2, {Kd, R}, INIT_NORMAL, 0, 0};
    out[P_GK2_B] = (ParamDecl){"gla.gk2.bias", 1, {Kd}, INIT_ZERO, 0, 0};
    out[P_G] = (ParamDecl){"gla.g.weight", 2, {Vd, C}, INIT_NORMAL, 0, 0};
    out[P_NORM] = (ParamDecl){"gla.norm.weight", 1, {s->dv}, INIT_ONE, 0, 0};
    out[P_O] = (ParamDecl){"gla.o.weight", 2, {C, Vd}, INIT_NORMAL_OUT, 0, 0};
    return 9;
}

static void gla_buffers(const void *st, int B, int T, BufDecl *saved, int *n_saved, BufDecl *scratch, int *n_scratch) {
    const Gla *s = st;
    size_t BT = (size_t)B * T, Kd = (size_t)s->Kd, Vd = (size_t)s->Vd, R = (size_t)s->R;
    saved[A_Q] = (BufDecl){"q", BT * Kd};
    saved[A_K] = (BufDecl){"k", BT * Kd};
    saved[A_V] = (BufDecl){"v", BT * Vd};
    saved[A_R] = (BufDecl){"r", BT * Vd};
    saved[A_GL] = (BufDecl){"gate_low", BT * R};
    saved[A_G] = (BufDecl){"log_gate", BT * Kd};
    saved[A_ATT] = (BufDecl){"att", BT * Vd};
    saved[A_RSTD] = (BufDecl){"rstd", BT * s->H};
    saved[A_ST] = (BufDecl){"chunk_states", (size_t)B * s->H * gla_n_states(T, GLA_CHUNK) * s->dk * s->dv};
    *n_saved = A_ST + 1;
    scratch[S_U] = (BufDecl){"u", BT * Vd};
    scratch[S_DU] = (BufDecl){"du", BT * Vd};
    scratch[S_DATT] = (BufDecl){"datt", BT * Vd};
    scratch[S_DV] = (BufDecl){"dv", BT * Vd};
    scratch[S_DR] = (BufDecl){"dr", BT * Vd};
    scratch[S_DQ] = (BufDecl){"dq", BT * Kd};
    scratch[S_DK] = (BufDecl){"dk", BT * Kd};
    scratch[S_DG] = (BufDecl){"dg", BT * Kd};
    scratch[S_DGL] = (BufDecl){"dgate_low", BT * R};
    scratch[S_PART] = (BufDecl){"norm_partials", (BT + ROW_CHUNK - 1) / ROW_CHUNK * s->dv};
    scratch[S_WORK] = (BufDecl){"scan_work", (size_t)omp_get_max_threads() * gla_scan_work(s->dk, s->dv)};
    *n_scratch = S_WORK + 1;
}

static real sigmoidr(real x) { return 1 / (1 + vexpr(-x)); }

// logsigmoid(x) / gate_norm, logsigmoid(x) = -softplus(-x) (vmath.h's, vectorizable).
static real log_gate(const Gla *s, real x) { return -vsoftplusr(-x) / s->gate_norm; }

// One token: rstd[H] of o (when rstd_out) and u = o rstd w * r sigmoid(r), per head.
static void norm_gate_row(const Gla *s, const real *o, const real *r, const real *w, const real *rstd_in,
                          real *rstd_out, real *u) {
    for (int h = 0; h < s->H; h++) {
        const real *oh = o + h * s->dv, *rh = r + h * s->dv;
        real *uh = u + h * s->dv, rs;
        if (rstd_out) {
            real ss = 0;
#pragma omp simd reduction(+ : ss)
            for (int d = 0; d < s->dv; d++) ss += oh[d] * oh[d];
            rs = rstd_out[h] = 1 / sqrtr(ss / s->dv + (real)GLA_NORM_EPS);
        } else {
            rs = rstd_in[h];
        }
#pragma omp simd
        for (int d = 0; d < s->dv; d++) uh[d] = oh[d] * rs * w[d] * rh[d] * sigmoidr(rh[d]);
    }
}

// u [N, Vd] from att, r and rstd (rstd computed and saved when `fresh`).
static void norm_gate_forward(const Gla *s, MixerIO *io, int fresh) {
    int N = io->B * io->T, Vd = s->Vd, H = s->H;
    const real *att = io->act[A_ATT], *r = io->act[A_R], *w = io->p[P_NORM];
    real *rstd = io->act[A_RSTD], *u = io->tmp[S_U];
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++)
        norm_gate_row(s, att + (size_t)n * Vd, r + (size_t)n * Vd, w, rstd + (size_t)n * H,
                      fresh ? rstd + (size_t)n * H : NULL, u + (size_t)n * Vd);
}

// The scan of every (sequence, head), in parallel: forward writes att and the chunk states;
// backward (from datt) accumulates dq, dk, dv and dg. Heads are strided column slices of the
// [B,T,Kd] and [B,T,Vd] tensors.
static void scan_heads(const Gla *s, MixerIO *io, int backward) {
    int B = io->B, T = io->T, H = s->H, Kd = s->Kd, Vd = s->Vd, dk = s->dk, dv = s->dv;
    const real *q = io->act[A_Q], *k = io->act[A_K], *v = io->act[A_V], *g = io->act[A_G];
    size_t st_head = (size_t)gla_n_states(T, GLA_CHUNK) * dk * dv;
#pragma omp parallel for schedule(dynamic, 1)
    for (int bh = 0; bh < B * H; bh++) {
        int b = bh / H, h = bh % H;
        size_t ok = (size_t)b * T * Kd + (size_t)h * dk, ov = (size_t)b * T * Vd + (size_t)h * dv;
        real *states = io->act[A_ST] + bh * st_head;
        real *work = io->tmp[S_WORK] + (size_t)omp_get_thread_num() * gla_scan_work(dk, dv);
        if (!backward)
            gla_scan_forward(T, dk, dv, GLA_CHUNK, GLA_MAX_RANGE, s->scale, q + ok, Kd, k + ok, Kd, v + ov, Vd, g + ok,
                             Kd, io->act[A_ATT] + ov, Vd, states, work);
        else
            gla_scan_backward(T, dk, dv, GLA_CHUNK, GLA_MAX_RANGE, s->scale, q + ok, Kd, k + ok, Kd, v + ov, Vd, g + ok,
                              Kd, io->tmp[S_DATT] + ov, Vd, states, io->tmp[S_DQ] + ok, io->tmp[S_DK] + ok,
                              io->tmp[S_DV] + ov, io->tmp[S_DG] + ok, work);
    }
}

// y from att: the per-head norm, the output gate and the projection (forward's tail; finish's).
static void gla_out(const Gla *s, MixerIO *io) {
    norm_gate_forward(s, io, 1);
    matmul_forward(io->y, io->tmp[S_U], io->p[P_O], NULL, io->B * io->T, s->Vd, s->C, s->prec);
}

static void gla_forward(const void *st, MixerIO *io) {
    const Gla *s = st;
    int N = io->B * io->T, C = s->C, Kd = s->Kd, Vd = s->Vd;
    real *q = io->act[A_Q], *k = io->act[A_K], *v = io->act[A_V], *g = io->act[A_G];
    matmul_forward(q, io->x, io->p[P_Q], NULL, N, C, Kd, s->prec);
    matmul_forward(k, io->x, io->p[P_K], NULL, N, C, Kd, s->prec);
    matmul_forward(v, io->x, io->p[P_V], NULL, N, C, Vd, s->prec);
    matmul_forward(io->act[A_R], io->x, io->p[P_G], NULL, N, C, Vd, s->prec);
    matmul_forward(io->act[A_GL], io->x, io->p[P_GK1], NULL, N, C, s->R, s->prec);
    matmul_forward(g, io->act[A_GL], io->p[P_GK2], io->p[P_GK2_B], N, s->R, Kd, s->prec);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < (size_t)N * Kd; i++) g[i] = log_gate(s, g[i]);
    scan_heads(s, io, 0);
    gla_out(s, io);
}

// From du: datt (overwritten), dr (overwritten) and the norm weight's gradient (accumulated).
static void norm_gate_backward(const Gla *s, MixerIO *io) {
    int N = io->B * io->T, Vd = s->Vd, H = s->H, dv = s->dv;
    const real *att = io->act[A_ATT], *r = io->act[A_R], *rstd = io->act[A_RSTD], *w = io->p[P_NORM];
    const real *du = io->tmp[S_DU];
    real *datt = io->tmp[S_DATT], *dr = io->tmp[S_DR], *part = io->tmp[S_PART];
    int n_chunks = (N + ROW_CHUNK - 1) / ROW_CHUNK;
#pragma omp parallel for schedule(static)
    for (int ch = 0; ch < n_chunks; ch++) {
        real *pw = part + (size_t)ch * dv;
        for (int d = 0; d < dv; d++) pw[d] = 0;
        int end = (ch + 1) * ROW_CHUNK < N ? (ch + 1) * ROW_CHUNK : N;
        for (int n = ch * ROW_CHUNK; n < end; n++)
            for (int h = 0; h < H; h++) {
                size_t off = (size_t)n * Vd + (size_t)h * dv;
                const real *o = att + off, *rh = r + off, *duh = du + off;
                real rs = rstd[(size_t)n * H + h], dot = 0;
#pragma omp simd reduction(+ : dot)
                for (int d = 0; d < dv; d++) {
                    real sg = sigmoidr(rh[d]), dn = duh[d] * rh[d] * sg;  // d(normed o)
                    dr[off + d] = duh[d] * o[d] * rs * w[d] * sg * (1 + rh[d] * (1 - sg));
                    datt[off + d] = dn;
                    pw[d] += dn * o[d] * rs;
                    dot += dn * w[d] * o[d];
                }
                real c = rs * rs * dot / dv;
#pragma omp simd
                for (int d = 0; d < dv; d++) datt[off + d] = rs * (datt[off + d] * w[d] - o[d] * c);
            }
    }
    real *dw = io->g[P_NORM];
    for (int ch = 0; ch < n_chunks; ch++)
        for (int d = 0; d < dv; d++) dw[d] += part[(size_t)ch * dv + d];
}

static void gla_backward(const void *st, MixerIO *io) {
    const Gla *s = st;
    int N = io->B * io->T, C = s->C, Kd = s->Kd, Vd = s->Vd, R = s->R;
    const real *g = io->act[A_G];
    real *dq = io->tmp[S_DQ], *dk = io->tmp[S_DK], *dv = io->tmp[S_DV], *dg = io->tmp[S_DG];
    real *du = io->tmp[S_DU], *dgl = io->tmp[S_DGL];
    // y = u Wo^T, u recomputed
    norm_gate_forward(s, io, 0);
    memset(du, 0, sizeof(real) * N * Vd);
    matmul_backward(du, io->g[P_O], NULL, io->dy, io->tmp[S_U], io->p[P_O], N, Vd, C, s->prec);
    norm_gate_backward(s, io);
    // the scan
    memset(dq, 0, sizeof(real) * N * Kd);
    memset(dk, 0, sizeof(real) * N * Kd);
    memset(dg, 0, sizeof(real) * N * Kd);
    memset(dv, 0, sizeof(real) * N * Vd);
    scan_heads(s, io, 1);
    // g = logsigmoid(gk) / norm: dgk = dg sigmoid(-gk) / norm, sigmoid(-gk) = -expm1(norm g)
    real inv = 1 / s->gate_norm;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < (size_t)N * Kd; i++) dg[i] *= -expm1r(s->gate_norm * g[i]) * inv;
    memset(dgl, 0, sizeof(real) * N * R);
    matmul_backward(dgl, io->g[P_GK2], io->g[P_GK2_B], dg, io->act[A_GL], io->p[P_GK2], N, R, Kd, s->prec);
    matmul_backward(io->dx, io->g[P_GK1], NULL, dgl, io->x, io->p[P_GK1], N, C, R, s->prec);
    matmul_backward(io->dx, io->g[P_Q], NULL, dq, io->x, io->p[P_Q], N, C, Kd, s->prec);
    matmul_backward(io->dx, io->g[P_K], NULL, dk, io->x, io->p[P_K], N, C, Kd, s->prec);
    matmul_backward(io->dx, io->g[P_V], NULL, dv, io->x, io->p[P_V], N, C, Vd, s->prec);
    matmul_backward(io->dx, io->g[P_G], NULL, io->tmp[S_DR], io->x, io->p[P_G], N, C, Vd, s->prec);
}

static int gla_n_maps(const void *st) { return ((const Gla *)st)->H; }

// a_ij = scale sum_c q_ic k_jc prod_{t=j+1..i} exp(g_tc): the decay as a running product in
// double, walking j down from i (every factor <= 1, no cancellation).
static void gla_attention(const void *st, const MixerIO *io, int b, int m, real *a) {
    const Gla *s = st;
    int T = io->T, Kd = s->Kd, dk = s->dk;
    size_t off = (size_t)b * T * Kd + (size_t)m * dk;
    const real *q = io->act[A_Q] + off, *k = io->act[A_K] + off, *g = io->act[A_G] + off;
    double *al = mallocCheck(sizeof(double) * ((size_t)T + 1) * dk), *p = al + (size_t)T * dk;
    for (int t = 0; t < T; t++)
        for (int c = 0; c < dk; c++) al[(size_t)t * dk + c] = exp((double)g[(size_t)t * Kd + c]);
    for (int i = 0; i < T; i++) {
        const real *qi = q + (size_t)i * Kd;
        real *row = a + (size_t)i * T;
        for (int c = 0; c < dk; c++) p[c] = 1;
        for (int j = i; j >= 0; j--) {
            if (j < i)
                for (int c = 0; c < dk; c++) p[c] *= al[(size_t)(j + 1) * dk + c];
            const real *kj = k + (size_t)j * Kd;
            double sum = 0;
            for (int c = 0; c < dk; c++) sum += (double)qi[c] * kj[c] * p[c];
            row[j] = (real)(sum * s->scale);
        }
        for (int j = i + 1; j < T; j++) row[j] = 0;
    }
    free(al);
}

// v of head m and its output before the norm and the gate: o_i = sum_j a_ij v_j.
static void gla_finish(const void *st, MixerIO *io, const real *o) {
    const Gla *s = st;
    mixer_put_outputs(io->act[A_ATT], s->Vd, io->B, io->T, s->H, s->dv, o);
    gla_out(s, io);
}

static int gla_attention_values(const void *st, const MixerIO *io, int b, int m, real *v, real *o) {
    const Gla *s = st;
    int T = io->T, Vd = s->Vd, dv = s->dv;
    for (int t = 0; t < T; t++) {
        size_t row = ((size_t)b * T + t) * Vd + (size_t)m * dv;
        memcpy(v + (size_t)t * dv, io->act[A_V] + row, sizeof(real) * dv);
        memcpy(o + (size_t)t * dv, io->act[A_ATT] + row, sizeof(real) * dv);
    }
    return dv;
}

// State: S [H, dk, dv], then scratch q, k, g [Kd], v, r, o, u [Vd], gl [R], rstd [H].
static size_t gla_state_floats(const void *st) {
    const Gla *s = st;
    return (size_t)s->H * s->dk * s->dv;  // per head S [dk, dv]
}

static size_t gla_state_size(const void *st) {
    const Gla *s = st;
    return (size_t)s->H * s->dk * s->dv + 3 * (size_t)s->Kd + 4 * (size_t)s->Vd + s->R + s->H;
}

static void gla_step(const void *st, real *const *p, real *state, int t, const real *x, real *y) {
    const Gla *s = st;
    int C = s->C, Kd = s->Kd, Vd = s->Vd, dk = s->dk, dv = s->dv;
    real *S = state, *q = S + (size_t)s->H * dk * dv, *k = q + Kd, *g = k + Kd;
    real *v = g + Kd, *r = v + Vd, *o = r + Vd, *u = o + Vd, *gl = u + Vd, *rstd = gl + s->R;
    matmul_forward(q, x, p[P_Q], NULL, 1, C, Kd, s->prec);
    matmul_forward(k, x, p[P_K], NULL, 1, C, Kd, s->prec);
    matmul_forward(v, x, p[P_V], NULL, 1, C, Vd, s->prec);
    matmul_forward(r, x, p[P_G], NULL, 1, C, Vd, s->prec);
    matmul_forward(gl, x, p[P_GK1], NULL, 1, C, s->R, s->prec);
    matmul_forward(g, gl, p[P_GK2], p[P_GK2_B], 1, s->R, Kd, s->prec);
    for (int c = 0; c < Kd; c++) g[c] = log_gate(s, g[c]);
    for (int h = 0; h < s->H; h++)
        gla_scan_step(dk, dv, s->scale, S + (size_t)h * dk * dv, q + h * dk, k + h * dk, v + h * dv, g + h * dk, o + h * dv);
    norm_gate_row(s, o, r, p[P_NORM], NULL, rstd, u);
    matmul_forward(y, u, p[P_O], NULL, 1, Vd, C, s->prec);
}

// Projections (q, k, v, r, the two gate factors, o) and the chunked scan: per chunk of n tokens
// and head, the state read and update (2 n dk dv each) and the n x n scores and their product
// (2 n^2 dk + 2 n^2 dv); the backward counts its nine products.
static void gla_flops(const void *st, int B, int T, double *fwd, double *bwd) {
    const Gla *s = st;
    double BT = (double)B * T, C = s->C, Kd = s->Kd, Vd = s->Vd, R = s->R, dk = s->dk, dv = s->dv;
    double lin = 2 * BT * C * (2 * Kd + 2 * Vd + R) + 2 * BT * R * Kd + 2 * BT * Vd * C;
    double mf = 0, mb = 0;
    for (int t0 = 0; t0 < T; t0 += GLA_CHUNK) {
        double n = T - t0 < GLA_CHUNK ? T - t0 : GLA_CHUNK;
        mf += 4 * n * dk * dv + 2 * n * n * (dk + dv);
        mb += 8 * n * dk * dv + n * n * (6 * dk + 4 * dv);
    }
    *fwd = lin + (double)B * s->H * mf;
    *bwd = 2 * lin + (double)B * s->H * mb;
}

const MixerKind mixer_gla = {
    .name = "gla",
    .summary = "gated linear attention, fla's GLA layer: low-rank log-sigmoid key gate / gla_gate_norm, per-head RMSNorm, swish output gate (Yang et al. 2023)",
    .options = gla_keys,
    .create = gla_create,
    .destroy = gla_destroy,
    .params = gla_params,
    .buffers = gla_buffers,
    .forward = gla_forward,
    .backward = gla_backward,
    .n_maps = gla_n_maps,
    .attention = gla_attention,
    .attention_values = gla_attention_values,
    .finish = gla_finish,
    .state_size = gla_state_size,
    .state_floats = gla_state_floats,
    .step = gla_step,
    .flops = gla_flops,
};
