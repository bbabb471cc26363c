// Mamba block (Gu & Dao 2023; mamba_simple's defaults; docs/mixers.md#mamba):
//   [x, z] = h W_in^T;  v = causal depthwise conv(x) + b_conv;  u = SiLU(v)
//   [dt_low, B, C] = u W_x^T;  delta = softplus(dt_low W_dt^T + b_dt) (linear above 20)
//   selective scan with A = -exp(A_log) (model/mixers/mamba_scan.c): ys_t = sum_n C_t[n] h_t[n]
//   y = ys + D u;  out = (y * SiLU(z)) W_out^T
// Widths: E = expand * d_model channels, N = d_state states per channel, R = dt_rank.
// The scan saves its state only every MAMBA_CHUNK tokens and backward recomputes the rest
// (see mamba_scan.h), so the saved activations are O(B T E), not O(B T E N).
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/kernels/gemm.h"
#include "model/layers.h"
#include "model/mixers/mamba_scan.h"
#include "model/mixers/mixer.h"

typedef struct {
    int C, E, N, K, R;  // d_model, inner width, d_state, d_conv, dt_rank
    int n_layer, mlp;   // for out_proj's init scale
    Precision prec;     // of the matmuls
} Mamba;

enum { P_IN_W, P_CONV_W, P_CONV_B, P_XPROJ_W, P_DT_W, P_DT_B, P_A_LOG, P_D, P_OUT_W };
// saved: xz [B,T,2E], v [B,T,E] conv output, u [B,T,E] = SiLU(v), xdbl [B,T,R+2N], dt [B,T,E]
// (pre-softplus), delta [B,T,E], ys [B,T,E] (scan output before D), hs [mamba_states_size]
enum { A_XZ, A_V, A_U, A_XDBL, A_DT, A_DELTA, A_YS, A_HS };
// scratch: A [E,N], g [B,T,E] gated output, dg [B,T,E], dxz [B,T,2E], du [B,T,E], ddt [B,T,E],
// dxdbl [B,T,R+2N], dbc [B,T,groups,2N], dA [B,E,N], dD [B,E], per-thread scan work, conv
// weight transposed [K,E], per-sequence conv weight and bias gradients [B,K+1,E]
enum { S_A, S_G, S_DG, S_DXZ, S_DU, S_DDT, S_DXDBL, S_DBC, S_DA, S_DD, S_WORK, S_WT, S_DCONV };

static const KeyDef mamba_keys[] = {
    {"d_state", KEY_INT, "16", RANGE_POS, 0, 0, "model", "mamba: SSM states N per channel"},
    {"d_conv", KEY_INT, "4", RANGE_POS, 0, 0, "model", "mamba: width of the causal depthwise conv"},
    {"expand", KEY_INT, "2", RANGE_POS, 0, 0, "model", "mamba: channels E = expand * d_model"},
    {"dt_rank", KEY_INT, "0", RANGE_NONNEG, 0, 0, "model", "mamba: rank R of the delta projection (0 = ceil(d_model/16))"},
    {NULL, 0, NULL, 0, NULL, 0, NULL, NULL},
};

static void *mamba_create(const MixerDims *d) {
    Mamba *m = mallocCheck(sizeof *m);
    long N = cfg_int(d->cfg, "d_state"), K = cfg_int(d->cfg, "d_conv");
    long ex = cfg_int(d->cfg, "expand"), R = cfg_int(d->cfg, "dt_rank");
    if (N > 1024) die_input("d_state: expected 1..1024, got %ld", N);
    if (K > 64) die_input("d_conv: expected 1..64, got %ld", K);  // conv_token's row table
    if (ex > 64) die_input("expand: expected 1..64, got %ld", ex);
    if (R > 4096) die_input("dt_rank: expected 0..4096, got %ld", R);
    // clang-format off
    *m = (Mamba){.C = d->C, .E = (int)ex * d->C, .N = (int)N, .K = (int)K,
                 .R = R ? (int)R : (d->C + 15) / 16, .n_layer = d->n_layer,
                 .mlp = cfg_bool(d->cfg, "mlp"), .prec = d->prec};
    // clang-format on
    return m;
}

static void mamba_destroy(void *st) { free(st); }

static int mamba_params(const void *st, ParamDecl *out) {
    const Mamba *m = st;
    int C = m->C, E = m->E, N = m->N, R = m->R;
    // PyTorch's default Linear/Conv1d init is U(+-1/sqrt(fan_in)); mixer_seq_simple re-draws
    // out_proj the same way and divides it by sqrt(residual branches per layer * n_layer).
    double out_scale = 1 / sqrt((double)E) / sqrt((m->mlp ? 2.0 : 1.0) * m->n_layer);
    out[P_IN_W] = (ParamDecl){"mamba.in_proj.weight", 2, {2 * E, C}, INIT_UNIFORM, 1 / sqrt((double)C), 0};
    out[P_CONV_W] = (ParamDecl){"mamba.conv.weight", 2, {E, m->K}, INIT_UNIFORM, 1 / sqrt((double)m->K), 0};
    out[P_CONV_B] = (ParamDecl){"mamba.conv.bias", 1, {E}, INIT_UNIFORM, 1 / sqrt((double)m->K), 0};
    out[P_XPROJ_W] = (ParamDecl){"mamba.x_proj.weight", 2, {R + 2 * N, E}, INIT_UNIFORM, 1 / sqrt((double)E), 0};
    out[P_DT_W] = (ParamDecl){"mamba.dt_proj.weight", 2, {E, R}, INIT_UNIFORM, 1 / sqrt((double)R), 0};
    out[P_DT_B] = (ParamDecl){"mamba.dt_proj.bias", 1, {E}, INIT_CUSTOM, 0, 0};
    out[P_A_LOG] = (ParamDecl){"mamba.A_log", 2, {E, N}, INIT_CUSTOM, 0, 1};
    out[P_D] = (ParamDecl){"mamba.D", 1, {E}, INIT_ONE, 0, 0};
    out[P_OUT_W] = (ParamDecl){"mamba.out_proj.weight", 2, {C, E}, INIT_UNIFORM, out_scale, 0};
    return 9;
}

static void mamba_init_custom(const void *st, int index, real *w, Rng *rng) {
    const Mamba *m = st;
    if (index == P_A_LOG) {  // S4D-real: A[e,n] = -(n+1)
        for (int e = 0; e < m->E; e++)
            for (int n = 0; n < m->N; n++) w[(size_t)e * m->N + n] = (real)log(n + 1.0);
    } else if (index == P_DT_B) {  // softplus(bias) = dt, log-uniform in [1e-3, 1e-1]
        for (int e = 0; e < m->E; e++) {
            double dt = exp(log(1e-3) + rng_uniform(rng) * (log(1e-1) - log(1e-3)));
            dt = dt < 1e-4 ? 1e-4 : dt;
            w[e] = (real)(dt + log(-expm1(-dt)));  // inverse softplus
        }
    }
}

static void mamba_buffers(const void *st, int B, int T, BufDecl *saved, int *n_saved, BufDecl *scratch, int *n_scratch) {
    const Mamba *m = st;
    size_t BT = (size_t)B * T, E = (size_t)m->E, N = (size_t)m->N, L = (size_t)(m->R + 2 * m->N);
    saved[A_XZ] = (BufDecl){"xz", BT * 2 * E};
    saved[A_V] = (BufDecl){"conv", BT * E};
    saved[A_U] = (BufDecl){"u", BT * E};
    saved[A_XDBL] = (BufDecl){"x_dbl", BT * L};
    saved[A_DT] = (BufDecl){"dt", BT * E};
    saved[A_DELTA] = (BufDecl){"delta", BT * E};
    saved[A_YS] = (BufDecl){"ys", BT * E};
    saved[A_HS] = (BufDecl){"chunk_states", mamba_states_size(B, T, m->E, m->N)};
    *n_saved = 8;
    scratch[S_A] = (BufDecl){"A", E * N};
    scratch[S_G] = (BufDecl){"gated", BT * E};
    scratch[S_DG] = (BufDecl){"dgated", BT * E};
    scratch[S_DXZ] = (BufDecl){"dxz", BT * 2 * E};
    scratch[S_DU] = (BufDecl){"du", BT * E};
    scratch[S_DDT] = (BufDecl){"ddt", BT * E};
    scratch[S_DXDBL] = (BufDecl){"dx_dbl", BT * L};
    scratch[S_DBC] = (BufDecl){"dBC_groups", BT * mamba_n_groups(m->E) * 2 * N};
    scratch[S_DA] = (BufDecl){"dA_seq", (size_t)B * E * N};
    scratch[S_DD] = (BufDecl){"dD_seq", (size_t)B * E};
    scratch[S_WORK] = (BufDecl){"scan_work", (size_t)omp_get_max_threads() * mamba_scan_work(m->E, m->N)};
    scratch[S_WT] = (BufDecl){"conv_wT", (size_t)m->K * E};
    scratch[S_DCONV] = (BufDecl){"dconv_seq", (size_t)B * (m->K + 1) * E};
    *n_scratch = 13;
}

// ---------------------------------------------------------------------------------------------
// Pieces shared by forward and step.

// The conv weight transposed to [K][E], so the conv's loops run over contiguous channels.
static void conv_weight_t(const Mamba *m, const real *w, real *wT) {
    for (int k = 0; k < m->K; k++)
        for (int e = 0; e < m->E; e++) wT[(size_t)k * m->E + e] = w[(size_t)e * m->K + k];
}

// v[E] of one token: bias + sum_j wT[K-1-j] * x_j, where rows[j] = x of the token j steps back,
// j = 0..n_back (n_back < K-1 near the start of the sequence: earlier inputs are zero).
static void conv_token(const Mamba *m, const real *wT, const real *bias, const real *const *rows, int n_back, real *v) {
    int E = m->E, K = m->K;
    for (int e = 0; e < E; e++) v[e] = bias[e];
    for (int j = 0; j <= n_back; j++) {
        const real *w = wT + (size_t)(K - 1 - j) * E, *x = rows[j];
#pragma omp simd
        for (int e = 0; e < E; e++) v[e] += w[e] * x[e];
    }
}

static void conv_forward(const Mamba *m, const real *wT, const real *bias, const real *xz, real *v, real *u, int B, int T) {
    int E = m->E, K = m->K;
#pragma omp parallel for schedule(static)
    for (int bt = 0; bt < B * T; bt++) {
        int t = bt % T, n_back = t < K - 1 ? t : K - 1;
        const real *rows[64];
        for (int j = 0; j <= n_back; j++) rows[j] = xz + (size_t)(bt - j) * 2 * E;
        real *vr = v + (size_t)bt * E, *ur = u + (size_t)bt * E;
        conv_token(m, wT, bias, rows, n_back, vr);
#pragma omp simd
        for (int e = 0; e < E; e++) ur[e] = vr[e] * mamba_sigmoid(vr[e]);
    }
}

// delta = softplus(dt_low W_dt^T + b_dt) for n rows; dt keeps the argument of softplus.
static void dt_forward(const Mamba *m, real *const *p, const real *xdbl, real *dt, real *delta, int n) {
    int E = m->E, R = m->R;
    gemm(0, 1, n, E, R, xdbl, R + 2 * m->N, p[P_DT_W], R, 0, dt, E);
#pragma omp parallel for schedule(static)
    for (int r = 0; r < n; r++) {
        real *dr = dt + (size_t)r * E, *del = delta + (size_t)r * E;
#pragma omp simd
        for (int e = 0; e < E; e++) {
            dr[e] += p[P_DT_B][e];
            del[e] = mamba_softplus(dr[e]);  // linear above 20, as mamba's kernels
        }
    }
}

static void compute_A(const Mamba *m, const real *A_log, real *A) {
    for (size_t i = 0; i < (size_t)m->E * m->N; i++) A[i] = -expr(A_log[i]);
}

// g = (ys + D u) * SiLU(z) for n rows; z sits at column E of xz's rows.
static void gate_forward(const Mamba *m, const real *D, const real *ys, const real *u, const real *xz, real *g, int n) {
    int E = m->E;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < n; r++) {
        const real *yr = ys + (size_t)r * E, *ur = u + (size_t)r * E, *z = xz + (size_t)r * 2 * E + E;
        real *gr = g + (size_t)r * E;
#pragma omp simd
        for (int e = 0; e < E; e++) gr[e] = (yr[e] + D[e] * ur[e]) * z[e] * mamba_sigmoid(z[e]);
    }
}

// ---------------------------------------------------------------------------------------------

static MambaScan scan_args(const Mamba *m, const MixerIO *io) {
    // clang-format off
    return (MambaScan){.B = io->B, .T = io->T, .E = m->E, .N = m->N, .u = io->act[A_U],
                       .delta = io->act[A_DELTA], .bc = io->act[A_XDBL] + m->R,
                       .ld = m->R + 2 * m->N, .A = io->tmp[S_A]};
    // clang-format on
}

// y from the scan's outputs ys: the D skip, the z gate and out_proj (forward's tail; finish's).
static void mamba_out(const Mamba *m, MixerIO *io) {
    int BT = io->B * io->T;
    gate_forward(m, io->p[P_D], io->act[A_YS], io->act[A_U], io->act[A_XZ], io->tmp[S_G], BT);
    matmul_forward(io->y, io->tmp[S_G], io->p[P_OUT_W], NULL, BT, m->E, m->C, m->prec);
}

static void mamba_forward(const void *st, MixerIO *io) {
    const Mamba *m = st;
    int BT = io->B * io->T, C = m->C, E = m->E, L = m->R + 2 * m->N;
    real **a = io->act;
    matmul_forward(a[A_XZ], io->x, io->p[P_IN_W], NULL, BT, C, 2 * E, m->prec);
    conv_weight_t(m, io->p[P_CONV_W], io->tmp[S_WT]);
    conv_forward(m, io->tmp[S_WT], io->p[P_CONV_B], a[A_XZ], a[A_V], a[A_U], io->B, io->T);
    matmul_forward(a[A_XDBL], a[A_U], io->p[P_XPROJ_W], NULL, BT, E, L, m->prec);
    dt_forward(m, io->p, a[A_XDBL], a[A_DT], a[A_DELTA], BT);
    compute_A(m, io->p[P_A_LOG], io->tmp[S_A]);
    MambaScan s = scan_args(m, io);
    mamba_scan_forward(&s, a[A_YS], a[A_HS], io->tmp[S_WORK]);
    mamba_out(m, io);
}

// dg (in place) becomes dLoss/dy (y = ys + D u); dz goes to column E.. of dxz's rows.
static void gate_backward(const Mamba *m, const real *D, const real *ys, const real *u, const real *xz, real *dg,
                          real *dxz, int n) {
    int E = m->E;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < n; r++) {
        const real *yr = ys + (size_t)r * E, *ur = u + (size_t)r * E, *z = xz + (size_t)r * 2 * E + E;
        real *d = dg + (size_t)r * E, *dz = dxz + (size_t)r * 2 * E + E;
#pragma omp simd
        for (int e = 0; e < E; e++) {
            real s = mamba_sigmoid(z[e]);
            dz[e] = d[e] * (yr[e] + D[e] * ur[e]) * s * (1 + z[e] * (1 - s));
            d[e] = d[e] * z[e] * s;
        }
    }
}

// Per sequence (contiguous rows): dv = du * SiLU'(v) formed in du; the conv input's gradient
// (columns 0..E-1 of dxz) dx_s = sum_k w[k] dv_{s+K-1-k}; the weight and bias sums of the
// sequence. Then the sums over sequences, in order.
static void conv_backward(const Mamba *m, const MixerIO *io, real *du, real *dxz) {
    int B = io->B, T = io->T, E = m->E, K = m->K;
    const real *v = io->act[A_V], *xz = io->act[A_XZ], *wT = io->tmp[S_WT];
    real *part = io->tmp[S_DCONV];
#pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++) {
        real *dwT = part + (size_t)b * (K + 1) * E, *db = dwT + (size_t)K * E;  // [K][E], [E]
        memset(dwT, 0, sizeof(real) * (K + 1) * E);
        real *dus = du + (size_t)b * T * E;
        const real *vs = v + (size_t)b * T * E;
#pragma omp simd
        for (int i = 0; i < T * E; i++) {
            real sg = mamba_sigmoid(vs[i]);
            dus[i] *= sg * (1 + vs[i] * (1 - sg));
        }
        for (int t = 0; t < T; t++) {
            const real *dv = dus + (size_t)t * E;
            for (int e = 0; e < E; e++) db[e] += dv[e];
            for (int k = 0; k < K; k++) {
                int s = t - (K - 1) + k;  // the input that column k multiplies
                if (s < 0) continue;
                const real *xs = xz + ((size_t)b * T + s) * 2 * E;
#pragma omp simd
                for (int e = 0; e < E; e++) dwT[(size_t)k * E + e] += dv[e] * xs[e];
            }
            real *dx = dxz + ((size_t)b * T + t) * 2 * E;
            for (int e = 0; e < E; e++) dx[e] = 0;
            for (int k = 0; k < K; k++) {
                int s = t + (K - 1) - k;  // the output that sees this input in column k
                if (s >= T) continue;
                const real *dvs = dus + (size_t)s * E, *w = wT + (size_t)k * E;
#pragma omp simd
                for (int e = 0; e < E; e++) dx[e] += w[e] * dvs[e];
            }
        }
    }
#pragma omp parallel for schedule(static)
    for (int i = 0; i < (K + 1) * E; i++) {
        real acc = 0;
        for (int b = 0; b < B; b++) acc += part[(size_t)b * (K + 1) * E + i];
        int k = i / E, e = i % E;
        if (k < K) io->g[P_CONV_W][(size_t)e * K + k] += acc;
        else io->g[P_CONV_B][e] += acc;
    }
}

static void mamba_backward(const void *st, MixerIO *io) {
    const Mamba *m = st;
    int B = io->B, BT = B * io->T, C = m->C, E = m->E, N = m->N, R = m->R, L = R + 2 * N;
    int nb = mamba_n_groups(E);
    real **a = io->act, **t = io->tmp, **g = io->g;
    compute_A(m, io->p[P_A_LOG], t[S_A]);
    // out_proj, then the gate
    gate_forward(m, io->p[P_D], a[A_YS], a[A_U], a[A_XZ], t[S_G], BT);
    gemm(0, 0, BT, E, C, io->dy, C, io->p[P_OUT_W], E, 0, t[S_DG], E);  // dg = dy W_out
    matmul_backward(NULL, g[P_OUT_W], NULL, io->dy, t[S_G], io->p[P_OUT_W], BT, E, C, m->prec);
    gate_backward(m, io->p[P_D], a[A_YS], a[A_U], a[A_XZ], t[S_DG], t[S_DXZ], BT);
    // the scan (with the D skip and softplus'), then its sums over blocks and sequences
    MambaScan s = scan_args(m, io);
    mamba_scan_backward(&s, a[A_HS], a[A_DT], io->p[P_D], t[S_DG], t[S_DU], t[S_DDT], t[S_DBC], t[S_DA], t[S_DD], t[S_WORK]);
#pragma omp parallel for schedule(static)
    for (int r = 0; r < BT; r++)
        for (int j = 0; j < 2 * N; j++) {
            real acc = 0;
            for (int blk = 0; blk < nb; blk++) acc += t[S_DBC][((size_t)r * nb + blk) * 2 * N + j];
            t[S_DXDBL][(size_t)r * L + R + j] = acc;
        }
#pragma omp parallel for schedule(static)
    for (int i = 0; i < E * N; i++) {
        real acc = 0;
        for (int b = 0; b < B; b++) acc += t[S_DA][(size_t)b * E * N + i];
        g[P_A_LOG][i] += acc * t[S_A][i];  // dA/dA_log = A
    }
    for (int e = 0; e < E; e++) {
        real acc = 0;
        for (int b = 0; b < B; b++) acc += t[S_DD][(size_t)b * E + e];
        g[P_D][e] += acc;
    }
    // dt_proj: delta's argument = dt_low W_dt^T + b_dt, dt_low = columns 0..R-1 of x_dbl
    colsum_accumulate(g[P_DT_B], t[S_DDT], BT, E);
    gemm(1, 0, E, R, BT, t[S_DDT], E, a[A_XDBL], L, 1, g[P_DT_W], R);
    gemm(0, 0, BT, R, E, t[S_DDT], E, io->p[P_DT_W], R, 0, t[S_DXDBL], L);
    // x_proj, conv + SiLU, in_proj
    matmul_backward(t[S_DU], g[P_XPROJ_W], NULL, t[S_DXDBL], a[A_U], io->p[P_XPROJ_W], BT, E, L, m->prec);
    conv_weight_t(m, io->p[P_CONV_W], t[S_WT]);
    conv_backward(m, io, t[S_DU], t[S_DXZ]);
    matmul_backward(io->dx, g[P_IN_W], NULL, t[S_DXZ], io->x, io->p[P_IN_W], BT, C, 2 * E, m->prec);
}

// ---------------------------------------------------------------------------------------------
// Attention maps (docs/mixers.md#mamba): channel e is a one-dimensional linear RNN with
//   alpha_ij = sum_n C_i[n] exp(A[e,n] sum_{t=j+1..i} delta_t) delta_j B_j[n],
// so ys_i = sum_j alpha_ij u_j. Rows walk j from i down with a running product of exp(delta A).

static int mamba_n_maps(const void *st) { return ((const Mamba *)st)->E; }

static void mamba_attention(const void *st, const MixerIO *io, int b, int e, real *att) {
    const Mamba *m = st;
    int N = m->N;
    // A of channel e alone (row e of the scan's [E, N]; the other rows are never read)
    real *work = mallocCheck(sizeof(real) * (mamba_map_work(io->T, N) + (size_t)(e + 1) * N));
    real *A = work + mamba_map_work(io->T, N);
    for (int n = 0; n < N; n++) A[(size_t)e * N + n] = -expr(io->p[P_A_LOG][(size_t)e * N + n]);
    MambaScan s = scan_args(m, io);
    s.A = A;
    mamba_scan_map(&s, b, e, att, work);
    free(work);
}

// The scan input u_j is the causal conv of x over j-K+1 .. j: token p is in u_p .. u_{p+K-1}.
static int mamba_value_window(const void *st) { return ((const Mamba *)st)->K; }

// Channel e's values are its scan inputs u_j[e] (W = 1); its outputs the scan output before the
// D skip and the z gate.
static void mamba_finish(const void *st, MixerIO *io, const real *o) {
    const Mamba *m = st;
    mixer_put_outputs(io->act[A_YS], m->E, io->B, io->T, m->E, 1, o);
    mamba_out(m, io);
}

static int mamba_attention_values(const void *st, const MixerIO *io, int b, int e, real *v, real *o) {
    const Mamba *m = st;
    int T = io->T, E = m->E;
    for (int t = 0; t < T; t++) {
        v[t] = io->act[A_U][((size_t)b * T + t) * E + e];
        o[t] = io->act[A_YS][((size_t)b * T + t) * E + e];
    }
    return 1;
}

// ---------------------------------------------------------------------------------------------
// Generation: the state is the last K-1 conv inputs [K-1][E] (oldest first) and the scan state
// [E][N]; then scratch for one token: xz [2E], x_dbl [R+2N], dt [E], delta [E], v [E], u [E],
// y [E], g [E], A [N], the conv weight transposed [K][E].

static size_t mamba_state_floats(const void *st) {
    const Mamba *m = st;
    return (size_t)(m->K - 1) * m->E + (size_t)m->E * m->N;  // the conv window and h [E, N]
}

static size_t mamba_state_size(const void *st) {
    const Mamba *m = st;
    size_t E = (size_t)m->E;
    return (size_t)(m->K - 1) * E + E * m->N + 2 * E + (size_t)(m->R + 2 * m->N) + 7 * E + m->N + (size_t)m->K * E;
}

static void mamba_step(const void *st, real *const *p, real *state, int t, const real *x, real *y) {
    const Mamba *m = st;
    int E = m->E, N = m->N, K = m->K, R = m->R, L = R + 2 * N;
    real *win = state, *h = win + (size_t)(K - 1) * E, *xz = h + (size_t)E * N, *xdbl = xz + 2 * E;
    real *dt = xdbl + L, *delta = dt + E, *v = delta + E, *u = v + E, *ys = u + E, *g = ys + E;
    real *A = g + E, *wT = A + N;
    matmul_forward(xz, x, p[P_IN_W], NULL, 1, m->C, 2 * E, m->prec);
    int n_back = t < K - 1 ? t : K - 1;
    const real *rows[64] = {xz};
    for (int j = 1; j <= n_back; j++) rows[j] = win + (size_t)(K - 1 - j) * E;
    conv_weight_t(m, p[P_CONV_W], wT);
    conv_token(m, wT, p[P_CONV_B], rows, n_back, v);
    if (K > 1) {  // slide the window: drop the oldest input, append this one
        memmove(win, win + E, sizeof(real) * (size_t)(K - 2) * E);
        memcpy(win + (size_t)(K - 2) * E, xz, sizeof(real) * E);
    }
    for (int e = 0; e < E; e++) u[e] = v[e] * mamba_sigmoid(v[e]);
    matmul_forward(xdbl, u, p[P_XPROJ_W], NULL, 1, E, L, m->prec);
    dt_forward(m, p, xdbl, dt, delta, 1);
    for (int e = 0; e < E; e++) {
        real *he = h + (size_t)e * N;
        for (int n = 0; n < N; n++) A[n] = -expr(p[P_A_LOG][(size_t)e * N + n]);
        mamba_scan_token(he, he, A, xdbl + R, delta[e], u[e], N);
        ys[e] = mamba_dot(xdbl + R + N, he, N);
    }
    gate_forward(m, p[P_D], ys, u, xz, g, 1);
    matmul_forward(y, g, p[P_OUT_W], NULL, 1, E, m->C, m->prec);
}

// Per token: the four projections (in_proj C -> 2E, x_proj E -> R+2N, dt_proj R -> E, out_proj
// E -> C), the depthwise conv, and the scan, whose update h = exp(delta A) h + delta B x and read
// y = C.h cost about 6 FLOPs per state (the exp counted as one). Backward: twice the projections
// and conv; the scan's reverse pass about twice its forward, plus the forward recomputed from
// the saved states, which the note on FLOPs in mixer.h leaves out.
static void mamba_flops(const void *st, int B, int T, double *fwd, double *bwd) {
    const Mamba *m = st;
    double BT = (double)B * T, C = m->C, E = m->E, N = m->N, K = m->K, R = m->R;
    double proj = 2 * BT * (C * 2 * E + E * (R + 2 * N) + R * E + E * C) + 2 * BT * E * K;
    double scan = BT * E * N * 6;
    *fwd = proj + scan;
    *bwd = 2 * proj + 2 * scan;
}

const MixerKind mixer_mamba = {
    .name = "mamba",
    .summary = "Mamba block: selective scan S6 with conv, gate and D skip (Gu & Dao 2023, mamba_simple)",
    .options = mamba_keys,
    .create = mamba_create,
    .destroy = mamba_destroy,
    .params = mamba_params,
    .init_custom = mamba_init_custom,
    .buffers = mamba_buffers,
    .forward = mamba_forward,
    .backward = mamba_backward,
    .n_maps = mamba_n_maps,
    .attention = mamba_attention,
    .attention_values = mamba_attention_values,
    .finish = mamba_finish,
    .value_window = mamba_value_window,
    .theory = THEORY_NONE,
    .state_size = mamba_state_size,
    .state_floats = mamba_state_floats,
    .step = mamba_step,
    .flops = mamba_flops,
};
