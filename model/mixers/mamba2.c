// Mamba-2 block (Dao and Gu 2024, "Transformers are SSMs", arXiv 2405.21060; mamba_ssm's Mamba2
// and fla's Mamba2 layer with one group; docs/mixers.md#mamba2). E = mamba2_expand * d_model
// channels in NH = E / P heads of P = mamba2_head_dim channels, N = mamba2_d_state:
//   [z, xBC, dt] = x W_in^T                    [E], [E + 2N], [NH]  (no bias)
//   [xs, B, C] = SiLU(causal depthwise conv_4(xBC) + b_conv)        (xs [E], B [N], C [N])
//   dt = softplus(dt + dt_bias) [NH],  A = -exp(A_log) [NH]
//   per head h (channels hP .. hP+P-1 of xs): S_t = exp(dt_t A_h) S_{t-1} + dt_t B_t xs_t^T,
//   ys_t = S_t^T C_t                           (model/mixers/mamba2_ssd.c, chunked)
//   y = ys + D_h xs;  g = y * SiLU(z);  u = RMSNorm(g) * w  (over all E, eps 1e-5)
//   out = u W_out^T                            (no bias)
// The SSD runs in chunks of mamba2_chunk tokens with its chunk-entry states saved; backward is
// that kernel's reverse pass, then the norm, gate, skip, softplus, conv and projections by hand.
// The conv and SiLU of a head's xs run in the SSD's per-chunk hook on rows in cache (B and C,
// which every head reads, a sequence at a time before it), forward and backward, the conv's
// output made again in the backward rather than saved.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/kernels/dwconv.h"
#include "model/kernels/gemm.h"
#include "model/kernels/vmath.h"
#include "model/layers.h"
#include "model/mixers/mamba2_ssd.h"
#include "model/mixers/mixer.h"
#include "model/mixers/qkv_common.h"

#define M2_CONV 4         // the depthwise conv's width (mamba_ssm's d_conv, fla's conv_kernel)
#define M2_NORM_EPS 1e-5  // the gated RMSNorm's eps
// Sequences a thread takes at a time in the SSD's loops: it prefetches the next one's rows
// within the block (the one after a block's last is another thread's).
#define M2_SEQ_BLOCK 8
#define M2_SEQ_TASKS 4  // blocks of sequences per thread from which a task is a sequence (seq_tasks)
#define M2_NEAR 4       // rows ahead the norm's backward prefetches within its sequence

typedef struct {
    int C, E, P, NH, N, L;  // d_model, inner width, head width, heads, d_state, chunk
    int XW;                 // E + 2N: the conv's channels (xs, B, C)
    int n_layer, mlp;       // for out_proj's init scale
    Precision prec;         // of the projections
} Mamba2;

enum { P_IN, P_CONV_W, P_CONV_B, P_DT_B, P_A_LOG, P_D, P_NORM, P_OUT };
// saved: z [B,T,E], xbc_pre [B,T,XW] (in_proj's xBC rows), xbc [B,T,XW] (after the conv and
// SiLU), dtr [B,T,NH] (softplus's argument, bias in), dt [B,T,NH], ys [B,T,E] (the SSD's output
// before the D skip), rstd [B,T], chunk-entry states [B,NH,n_states,N,P]
enum { A_Z, A_XBCP, A_XBC, A_DTR, A_DT, A_YS, A_RSTD, A_ST };
// scratch: rows [threads, 3E] (a thread's g, y and sigma(z) of one row), nrm [B,T,E] (out_proj's
// input, recomputed in backward), dnrm [B,T,E] (then dy, the gradient of ys + D xs, in place),
// the gradient of in_proj's output [B,T,dzx_ld] (dz, dxbc_pre and ddt side by side: one product),
// ddt [B,T,NH], dbc per head [B,T,NH,2N] (sequence tasks use a thread's [T,NH,2N] of it), dA and
// dD per (sequence, head) [B,NH,2], the norm weight's partials per sequence [B,E], per-thread SSD
// work, the conv's taps [4,XW] (its weights transposed), per thread a task's rows (a head's dxs
// [T,P] and conv outputs [L,P], a sequence's dB, dC [T,2N] and their conv outputs [T,2N]), the
// conv's weight and bias gradient partials per (sequence, head) task [B*NH,5,P] then per sequence
// [B,5,2N], per thread out_proj's rows in the task [2,T,E] (du then dy, and nrm: proj_in_task),
// dWout's partials per block of sequences [B/M2_SEQ_BLOCK,C,E], in_proj's [B/M2_SEQ_BLOCK,OC,C]
// (OC = E + XW + NH, its output width), the projections' weights transposed for the forward's
// sequence tasks (in_proj's [C,OC], out_proj's [E,C]: proj_in_task), and per thread a sequence's
// C B^T per chunk [ceil(T/L),L,L] (shared_g)
enum {
    S_ROWS,
    S_NRM,
    S_DNRM,
    S_DZX,
    S_DDT,
    S_DBC,
    S_DAD,
    S_PART,
    S_WORK,
    S_TAPS,
    S_TROWS,
    S_GCONV,
    S_OROWS,
    S_WOUT,
    S_WIN,
    S_WT,
    S_GSH
};

static const KeyDef mamba2_keys[] = {
    {"mamba2_expand", KEY_INT, "2", RANGE_POS, 0, 0, "model", "mamba2: channels E = mamba2_expand * d_model"},
    {"mamba2_head_dim", KEY_INT, "64", RANGE_POS, 0, 0, "model",
     "mamba2: channels P per SSM head (E / P heads, a multiple of n_head)"},
    {"mamba2_d_state", KEY_INT, "16", RANGE_POS, 0, 0, "model", "mamba2: states N of B_t and C_t (one group)"},
    {"mamba2_chunk", KEY_INT, "64", RANGE_POS, 0, 0, "model",
     "mamba2: tokens per chunk of the SSD algorithm (speed and rounding only, not the function)"},
    {NULL, 0, NULL, 0, NULL, 0, NULL, NULL},
};

static void *mamba2_create(const MixerDims *d) {
    long ex = cfg_int(d->cfg, "mamba2_expand"), P = cfg_int(d->cfg, "mamba2_head_dim");
    long N = cfg_int(d->cfg, "mamba2_d_state"), L = cfg_int(d->cfg, "mamba2_chunk");
    if (ex > 64) die_input("mamba2_expand: expected 1..64, got %ld", ex);
    if (N > 1024) die_input("mamba2_d_state: expected 1..1024, got %ld", N);
    if (L > 1024) die_input("mamba2_chunk: expected 1..1024, got %ld", L);
    long E = ex * d->C;
    if (P > E || E % P) die_input("mamba2_head_dim: %ld does not divide d_inner = mamba2_expand x d_model = %ld", P, E);
    if ((E / P) % d->H)
        die_input("mamba2_head_dim: d_inner %ld / head dim %ld = %ld heads, not a multiple of n_head %d", E, P, E / P, d->H);
    Mamba2 *m = mallocCheck(sizeof *m);
    *m = (Mamba2){.C = d->C,
                  .E = (int)E,
                  .P = (int)P,
                  .NH = (int)(E / P),
                  .N = (int)N,
                  .L = (int)L,
                  .XW = (int)(E + 2 * N),
                  .n_layer = d->n_layer,
                  .mlp = cfg_bool(d->cfg, "mlp"),
                  .prec = d->prec};
    return m;
}

static void mamba2_destroy(void *st) { free(st); }

// mamba_ssm's init: PyTorch's default Linear and Conv1d draws U(+-1/sqrt(fan_in)) (the depthwise
// conv's fan_in is its width), out_proj divided by sqrt(residual branches per layer * n_layer);
// dt_bias the inverse softplus of dt log-uniform in [1e-3, 0.1] floored at 1e-4, A ~ U(1, 16),
// D = 1, the norm's weight 1. A_log, D and dt_bias are not weight-decayed.
static int mamba2_params(const void *st, ParamDecl *out) {
    const Mamba2 *m = st;
    int C = m->C, E = m->E, NH = m->NH;
    double out_scale = 1 / sqrt((double)E) / sqrt((m->mlp ? 2.0 : 1.0) * m->n_layer);
    out[P_IN] =
        (ParamDecl){"mamba2.in_proj.weight", 2, {2 * E + 2 * m->N + NH, C}, INIT_UNIFORM, 1 / sqrt((double)C), 0};
    out[P_CONV_W] = (ParamDecl){"mamba2.conv.weight", 2, {m->XW, M2_CONV}, INIT_UNIFORM, 1 / sqrt((double)M2_CONV), 0};
    out[P_CONV_B] = (ParamDecl){"mamba2.conv.bias", 1, {m->XW}, INIT_UNIFORM, 1 / sqrt((double)M2_CONV), 0};
    out[P_DT_B] = (ParamDecl){"mamba2.dt_bias", 1, {NH}, INIT_CUSTOM, 0, 1};
    out[P_A_LOG] = (ParamDecl){"mamba2.A_log", 1, {NH}, INIT_CUSTOM, 0, 1};
    out[P_D] = (ParamDecl){"mamba2.D", 1, {NH}, INIT_ONE, 0, 1};
    out[P_NORM] = (ParamDecl){"mamba2.norm.weight", 1, {E}, INIT_ONE, 0, 0};
    out[P_OUT] = (ParamDecl){"mamba2.out_proj.weight", 2, {C, E}, INIT_UNIFORM, out_scale, 0};
    return 8;
}

static void mamba2_init_custom(const void *st, int index, real *w, Rng *rng) {
    const Mamba2 *m = st;
    for (int h = 0; h < m->NH; h++)
        if (index == P_A_LOG) {  // A ~ U(1, 16)
            w[h] = (real)log(1 + 15 * rng_uniform(rng));
        } else if (index == P_DT_B) {  // softplus(dt_bias) = dt
            double dt = exp(log(1e-3) + rng_uniform(rng) * (log(1e-1) - log(1e-3)));
            dt = dt < 1e-4 ? 1e-4 : dt;
            w[h] = (real)(dt + log(-expm1(-dt)));
        }
}

static size_t work_size(const Mamba2 *m) { return ssd_work(m->P, m->N, m->L); }

// The gradient of in_proj's output, [B, T, dzx_ld]: dz [E], dxbc_pre [XW] and ddt [NH] side by
// side, so that in_proj's backward is one product; rows padded to a multiple of 16 floats, so each
// starts on a cache line (the MQAR cell's 290 would not: in a test of the forward's in_proj as one
// 290-wide product, unaligned rows cost more than the one product saved).
static int dzx_ld(const Mamba2 *m) { return (m->E + m->XW + m->NH + 15) / 16 * 16; }

// The conv's weight and bias gradient partials (S_GCONV): (sequence, head) task bh's [5, P] (its
// xs channels' taps, then their bias), then after all of them sequence b's [5, 2N] (B's and C's).
static real *conv_partial_head(const Mamba2 *m, const MixerIO *io, int bh) {
    return io->tmp[S_GCONV] + (size_t)bh * (M2_CONV + 1) * m->P;
}
static real *conv_partial_seq(const Mamba2 *m, const MixerIO *io, int b) {
    return conv_partial_head(m, io, io->B * m->NH) + (size_t)b * (M2_CONV + 1) * 2 * m->N;
}

// A thread's rows (S_TROWS): a head's dxs [T, P] and conv outputs [L, P] in the SSD's tasks; a
// sequence's dB, dC [T, 2N] and their conv outputs [T, 2N] in the pass after them.
static size_t task_rows(const Mamba2 *m, int T) {
    size_t head = (size_t)T * m->P + (size_t)m->L * m->P, bc = 2 * (size_t)T * 2 * m->N;
    return head > bc ? head : bc;
}

static void mamba2_buffers(const void *st, int B, int T, BufDecl *saved, int *n_saved, BufDecl *scratch, int *n_scratch) {
    const Mamba2 *m = st;
    size_t BT = (size_t)B * T, E = (size_t)m->E, XW = (size_t)m->XW, NH = (size_t)m->NH;
    saved[A_Z] = (BufDecl){"z", BT * E};
    saved[A_XBCP] = (BufDecl){"xbc_pre", BT * XW};
    saved[A_XBC] = (BufDecl){"xbc", BT * XW};
    saved[A_DTR] = (BufDecl){"dt_raw", BT * NH};
    saved[A_DT] = (BufDecl){"dt", BT * NH};
    saved[A_YS] = (BufDecl){"ys", BT * E};
    saved[A_RSTD] = (BufDecl){"rstd", BT};
    saved[A_ST] = (BufDecl){"chunk_states", (size_t)B * NH * ssd_n_states(T, m->L) * m->N * m->P};
    *n_saved = A_ST + 1;
    scratch[S_ROWS] = (BufDecl){"gate_rows", (size_t)omp_get_max_threads() * 3 * E};
    scratch[S_NRM] = (BufDecl){"nrm", BT * E};
    scratch[S_DNRM] = (BufDecl){"dnrm", BT * E};
    scratch[S_DZX] = (BufDecl){"dz_dxbc_pre_ddt", BT * dzx_ld(m)};
    scratch[S_DDT] = (BufDecl){"ddt", BT * NH};
    scratch[S_DBC] = (BufDecl){"dBC_heads", BT * NH * 2 * m->N};  // (sequence tasks: a thread's slice)
    scratch[S_DAD] = (BufDecl){"dA_dD_tasks", (size_t)B * NH * 2};
    scratch[S_PART] = (BufDecl){"norm_partials", (size_t)B * E};
    scratch[S_WORK] = (BufDecl){"ssd_work", (size_t)omp_get_max_threads() * work_size(m)};
    scratch[S_TAPS] = (BufDecl){"conv_taps", (size_t)M2_CONV * XW};
    scratch[S_TROWS] = (BufDecl){"task_rows", (size_t)omp_get_max_threads() * task_rows(m, T)};
    scratch[S_GCONV] = (BufDecl){"conv_grad_partials", (size_t)B * (M2_CONV + 1) * (NH * m->P + 2 * m->N)};
    scratch[S_OROWS] = (BufDecl){"out_rows", (size_t)omp_get_max_threads() * 2 * T * E};
    scratch[S_WOUT] = (BufDecl){"out_proj_grad_partials", (size_t)(B + M2_SEQ_BLOCK - 1) / M2_SEQ_BLOCK * m->C * E};
    scratch[S_WIN] =
        (BufDecl){"in_proj_grad_partials", (size_t)(B + M2_SEQ_BLOCK - 1) / M2_SEQ_BLOCK * (E + XW + NH) * m->C};
    scratch[S_WT] = (BufDecl){"proj_weights_t", (E + XW + NH) * m->C + E * m->C};
    scratch[S_GSH] = (BufDecl){"shared_CB", (size_t)omp_get_max_threads() * ssd_n_states(T, m->L) * m->L * m->L};
    *n_scratch = S_GSH + 1;
}

static real sigmoidr(real x) { return vsigmoidr(x); }

// The D skip's loop walks one head's P channels of rows E and XW apart, which the hardware
// prefetcher did not follow: it prefetches M2_AHEAD rows ahead.
#define M2_AHEAD 6

// w floats of n rows ld apart, prefetched (to L1; the L2-only hint measured 2% slower on the
// cell). The sequence tasks prefetch the next sequence's rows, one row per row of the gated
// norm's pass, while the one before it is worked on: they read a head's columns of rows XW or E
// floats apart, which the hardware prefetcher did not follow across tasks, so the rows arrived
// from memory one miss at a time (a sequence's SSD took twice as long cold as hot).
static void prefetch_rows(const real *p, int n, size_t ld, int w, int write) {
    for (int i = 0; i < n; i++) {
        const real *r = p + (size_t)i * ld;
        for (int c = 0; c < w; c += 64 / (int)sizeof(real))
            if (write) __builtin_prefetch(r + c, 1, 3);
            else __builtin_prefetch(r + c, 0, 3);
    }
}

// torch's softplus (threshold 20: the identity above), as mamba_ssm's F.softplus; below it
// vmath.h's vectorizable form (libm's log1p is a call: two a token were a tenth of B's, C's and
// dt's pass).
static real softplusr(real z) { return z > 20 ? z : vsoftplusr(z); }

// ---------------------------------------------------------------------------------------------
// Pieces shared by forward, backward and step, one token at a time.

// The in_proj's three row blocks: z, xBC, dt (mamba_ssm's order; B and C follow xs in xBC).
static void in_proj(const Mamba2 *m, real *const *p, const real *x, real *z, real *xbcp, real *dtr, int n) {
    const real *W = p[P_IN];
    matmul_forward(z, x, W, NULL, n, m->C, m->E, m->prec);
    matmul_forward(xbcp, x, W + (size_t)m->E * m->C, NULL, n, m->C, m->XW, m->prec);
    matmul_forward(dtr, x, W + (size_t)(m->E + m->XW) * m->C, NULL, n, m->C, m->NH, m->prec);
}

// n tokens' dt (rows of NH): dtr += dt_bias; dt = softplus(dtr).
static void dt_rows(const Mamba2 *m, const real *dt_bias, real *dtr, real *dt, int n) {
    int NH = m->NH;
    for (int r = 0; r < n; r++)
        for (int h = 0; h < NH; h++) dtr[(size_t)r * NH + h] += dt_bias[h];
#pragma omp simd
    for (int i = 0; i < n * NH; i++) dt[i] = softplusr(dtr[i]);
}

// One token after the conv (generation): xbc = SiLU(conv), then dt.
static void act_token(const Mamba2 *m, const real *dt_bias, const real *conv, real *xbc, real *dtr, real *dt) {
#pragma omp simd
    for (int i = 0; i < m->XW; i++) xbc[i] = vsilur(conv[i]);
    dt_rows(m, dt_bias, dtr, dt, 1);
}

// One token's output before out_proj: g = (ys + D xs) * SiLU(z), nrm = g rstd w; writes rstd (the
// backward recomputes from it: gate_norm_backward_rows); g [E] is scratch. Head by head (D is per
// head), each a SIMD loop over its channels. SiLU(z) = z sigma(z), as the backward's.
static void gate_norm_token(const Mamba2 *m, real *const *p, const real *ys, const real *xbc, const real *z, real *g,
                            real *rstd, real *nrm) {
    int E = m->E, P = m->P;
    real ss = 0;
    for (int h = 0; h < m->NH; h++) {
        real Dh = p[P_D][h];
        const real *yh = ys + h * P, *xh = xbc + h * P, *zh = z + h * P;
        real *gh = g + h * P;
#pragma omp simd reduction(+ : ss)
        for (int c = 0; c < P; c++) {
            real sg = vsigmoidr(zh[c]), gv = (yh[c] + Dh * xh[c]) * (zh[c] * sg);
            gh[c] = gv;
            ss += gv * gv;
        }
    }
    real r = *rstd = 1 / sqrtr(ss / E + (real)M2_NORM_EPS);
    const real *w = p[P_NORM];
#pragma omp simd
    for (int e = 0; e < E; e++) nrm[e] = g[e] * r * w[e];
}

// The backward from dnrm (the gradient of out_proj's input; rows r0 .. r1-1 from dn0, E apart) to
// the gate's and the skip's inputs, one pass a row: g and nrm recomputed (nrm written from nrm0,
// for dWout), then the RMSNorm's backward, d g = rstd (dnrm w - g rstd^2 mean(dnrm w g)), and the
// gate's, dz = d g y SiLU'(z) with y = ys + D xs, and dy = d g SiLU(z) written over dnrm. The norm weight's
// gradient dnrm g rstd summed into pw [E] row by row. row [3E] is scratch (g, y, sigma(z)).
static void gate_norm_backward_rows(const Mamba2 *m, real *const *p, real *const *a, real *const *t, int r0, int r1,
                                    real *dn0, real *nrm0, real *pw, real *row, int ahead) {
    int E = m->E, XW = m->XW, P = m->P;
    const real *w = p[P_NORM];
    real *gr = row, *yr = row + E, *sr = row + 2 * (size_t)E;
    for (int r = r0; r < r1; r++) {
        const real *ys = a[A_YS] + (size_t)r * E, *xs = a[A_XBC] + (size_t)r * XW, *z = a[A_Z] + (size_t)r * E;
        real *nrm = nrm0 + (size_t)(r - r0) * E, *dn = dn0 + (size_t)(r - r0) * E, *dz = t[S_DZX] + (size_t)r * dzx_ld(m);
        real rs = a[A_RSTD][r], dot = 0;
        if (r + M2_NEAR < r1) {  // and M2_NEAR rows ahead of this one: its loads of these waited
            size_t q = (size_t)r + M2_NEAR;
            prefetch_rows(a[A_YS] + q * E, 1, E, E, 0), prefetch_rows(a[A_Z] + q * E, 1, E, E, 0);
            prefetch_rows(a[A_XBC] + q * XW, 1, XW, E, 0);
        }
        if (ahead) {
            size_t q = (size_t)r + ahead;
            prefetch_rows(a[A_YS] + q * E, 1, E, E, 0), prefetch_rows(a[A_Z] + q * E, 1, E, E, 0);
            prefetch_rows(t[S_DZX] + q * dzx_ld(m), 1, dzx_ld(m), dzx_ld(m), 1);
            prefetch_rows(a[A_XBC] + q * XW, 1, XW, XW, 0), prefetch_rows(a[A_XBCP] + q * XW, 1, XW, XW, 0);
        }
        for (int h = 0; h < m->NH; h++) {
            real Dh = p[P_D][h];
#pragma omp simd
            for (int c = h * P; c < (h + 1) * P; c++) {
                real sg = vsigmoidr(z[c]), y = ys[c] + Dh * xs[c];
                gr[c] = y * (z[c] * sg), yr[c] = y, sr[c] = sg;
            }
        }
#pragma omp simd reduction(+ : dot)
        for (int e = 0; e < E; e++) {
            nrm[e] = gr[e] * rs * w[e];
            dot += dn[e] * w[e] * gr[e];
            pw[e] += dn[e] * gr[e] * rs;
        }
        real cc = rs * rs * dot / E;
#pragma omp simd
        for (int e = 0; e < E; e++) {
            real dg = rs * (dn[e] * w[e] - gr[e] * cc), sg = sr[e];
            dz[e] = dg * yr[e] * sg * (1 + z[e] * (1 - sg));
            dn[e] = dg * (z[e] * sg);
        }
    }
}

// ---------------------------------------------------------------------------------------------

// SiLU in place on n rows of nc channels (row stride ld): x / (1 + exp(-x)), act_token's form.
static void silu_rows(real *x, int ld, int n, int nc) {
    for (int i = 0; i < n; i++) {
        real *xi = x + (size_t)i * ld;
#pragma omp simd
        for (int c = 0; c < nc; c++) xi[c] = vsilur(xi[c]);
    }
}

// d (n rows of nc, stride ldd) *= SiLU'(cv) (stride ldc) = sigma(cv) (1 + cv (1 - sigma(cv))).
static void silu_backward_rows(real *d, int ldd, const real *cv, int ldc, int n, int nc) {
    for (int i = 0; i < n; i++) {
        real *di = d + (size_t)i * ldd;
        const real *ci = cv + (size_t)i * ldc;
#pragma omp simd
        for (int c = 0; c < nc; c++) {
            real s = vsigmoidr(ci[c]);
            di[c] *= s * (1 + ci[c] * (1 - s));
        }
    }
}

// B and C (every head reads them) and dt, for sequence b, before its heads' tasks: the conv of
// xBC's last 2N channels with its bias, SiLU; dtr += dt_bias, dt = softplus(dtr).
static void bc_dt_forward(const Mamba2 *m, MixerIO *io, int b) {
    int T = io->T, XW = m->XW, E = m->E, NH = m->NH;
    real **a = io->act, **p = io->p;
    size_t r0 = (size_t)b * T;
    dwconv_forward(io->tmp[S_TAPS] + E, XW, p[P_CONV_B] + E, a[A_XBCP] + r0 * XW + E, XW, a[A_XBC] + r0 * XW + E, XW,
                   2 * m->N, 0, T, M2_CONV);
    silu_rows(a[A_XBC] + r0 * XW + E, XW, T, 2 * m->N);
    dt_rows(m, p[P_DT_B], a[A_DTR] + r0 * NH, a[A_DT] + r0 * NH, T);
}

// Row r of dxbc_pre in S_DZX (ddt follows it at column XW).
static real *dxbcp(const Mamba2 *m, const MixerIO *io, size_t r) { return io->tmp[S_DZX] + r * dzx_ld(m) + m->E; }

// One (sequence, head) task for the SSD's per-chunk hook (mamba2_ssd.h).
typedef struct {
    const Mamba2 *m;
    MixerIO *io;
    int b, h;
    const real *dy;  // backward: the sequence's gradient of ys + D xs [T, E] (its head's P columns read)
    real *dxs, *cv;  // backward: the thread's dxs [T, P] and a chunk's conv outputs [L, P]
    real *gconv;     // backward: the task's conv weight gradient [4, P], then its bias's [P]
    real dD;         // backward: the task's sum of dy . xs
} SsdTask;

// Forward: the chunk's xs of head h (tokens s .. s + n - 1): the conv with its bias, SiLU.
static void chunk_xs(void *ctx, int s, int n, int after) {
    const SsdTask *k = ctx;
    const Mamba2 *m = k->m;
    int XW = m->XW, P = m->P;
    size_t o = ((size_t)k->b * k->io->T + s) * XW + (size_t)k->h * P;
    real *xs = k->io->act[A_XBC] + o;
    (void)after;
    dwconv_forward(k->io->tmp[S_TAPS] + k->h * P, XW, k->io->p[P_CONV_B] + k->h * P, k->io->act[A_XBCP] + o, XW, xs, XW,
                   P, s, n, M2_CONV);
    silu_rows(xs, XW, n, P);
}

// Rows [r0, r1)'s input to out_proj from the scan's outputs ys: the D skip and the gated RMSNorm
// into nrm (g in the thread's row of S_ROWS: only nrm is read after).
static void gate_norm_rows(const Mamba2 *m, MixerIO *io, size_t r0, size_t r1, int ahead) {
    int E = m->E, XW = m->XW;
    real **a = io->act;
    for (size_t r = r0; r < r1; r++) {
        if (ahead) {
            size_t q = r + ahead;
            prefetch_rows(a[A_XBCP] + q * XW, 1, XW, XW, 0), prefetch_rows(a[A_XBC] + q * XW, 1, XW, XW, 1);
            prefetch_rows(a[A_YS] + q * E, 1, E, E, 1), prefetch_rows(a[A_Z] + q * E, 1, E, E, 0);
            prefetch_rows(io->tmp[S_NRM] + q * E, 1, E, E, 1);
        }
        gate_norm_token(m, io->p, a[A_YS] + r * E, a[A_XBC] + r * XW, a[A_Z] + r * E,
                        io->tmp[S_ROWS] + (size_t)omp_get_thread_num() * 3 * E, a[A_RSTD] + r, io->tmp[S_NRM] + r * E);
    }
}

// Head h of sequence b through the SSD, forward: xs's conv and SiLU in the per-chunk hook.
static void head_forward(const Mamba2 *m, MixerIO *io, int b, int h, const SsdShared *sh) {
    int T = io->T, NH = m->NH, P = m->P, N = m->N, XW = m->XW, E = m->E, bh = b * NH + h;
    real **a = io->act;
    size_t row = (size_t)b * T;
    const real *x = a[A_XBC] + row * XW, *dt = a[A_DT] + row * NH + h;
    SsdTask task = {m, io, b, h, NULL, NULL, NULL, NULL, 0};
    ssd_forward_hook(T, P, N, m->L, x + h * P, XW, dt, NH, -expr(io->p[P_A_LOG][h]), x + E, XW, x + E + N, XW,
                     a[A_YS] + row * E + h * P, E, a[A_ST] + (size_t)bh * ssd_n_states(T, m->L) * N * P,
                     io->tmp[S_WORK] + (size_t)omp_get_thread_num() * work_size(m), chunk_xs, &task, sh);
}

// The thread's C B^T of each chunk of its sequence [ceil(T/L), L, L] (S_GSH), shared by the
// sequence's heads in its task (mamba2_ssd.h's SsdShared).
static real *shared_g(const Mamba2 *m, const MixerIO *io) {
    return io->tmp[S_GSH] + (size_t)omp_get_thread_num() * ssd_n_states(io->T, m->L) * m->L * m->L;
}

// A task per sequence when there are at least M2_SEQ_TASKS blocks of M2_SEQ_BLOCK sequences per
// thread (the MQAR cell's 512 on up to 16 threads): B, C and dt, the heads and the gated norm on
// the sequence's rows while they are in cache, the next sequence's rows prefetched. With fewer
// (long sequences in small batches) a task per (sequence, head), so that every thread has work,
// and the per-sequence steps as passes of their own. Each element's arithmetic is the same either
// way, so the bits are too.
static int seq_tasks(int B) { return B >= M2_SEQ_TASKS * M2_SEQ_BLOCK * omp_get_max_threads(); }

// The projections in the sequence tasks (fp32: bf16 products are whole-batch), while the
// sequence's rows are in cache. Forward: its in_proj rows where its task starts and its out_proj
// rows where it ends, from the weights transposed (S_WT, made once a forward), so that no product
// packs a transposed operand per sequence; each output is the same FMA chain over the input's
// channels as in one product over all rows, so the bits are the same. Backward: out_proj's du =
// dy Wout and the norm's nrm in the thread's rows (S_OROWS), never in memory, in_proj's dx rows,
// and both weights' partial sums over each block of M2_SEQ_BLOCK sequences (S_WOUT, S_WIN).
static int proj_in_task(const Mamba2 *m, int B) { return seq_tasks(B) && m->prec == PRECISION_FP32; }

// S_WT: in_proj's weight [OC, C] transposed to [C, OC], then out_proj's [C, E] to [E, C].
static void transpose_proj_weights(const Mamba2 *m, real *const *p, real *wt) {
    int C = m->C, E = m->E, OC = E + m->XW + m->NH;
    const real *W = p[P_IN], *Wo = p[P_OUT];
    real *wo = wt + (size_t)OC * C;
    for (int j = 0; j < OC; j++)
        for (int c = 0; c < C; c++) wt[(size_t)c * OC + j] = W[(size_t)j * C + c];
    for (int c = 0; c < C; c++)
        for (int e = 0; e < E; e++) wo[(size_t)e * C + c] = Wo[(size_t)c * E + e];
}

// Sequence b's in_proj rows: z, xbc_pre and dtr = x_b W^T's three column blocks.
static void in_proj_seq(const Mamba2 *m, MixerIO *io, int b) {
    int T = io->T, C = m->C, E = m->E, XW = m->XW, NH = m->NH, OC = E + XW + NH;
    size_t row = (size_t)b * T;
    const real *x = io->x + row * C, *wt = io->tmp[S_WT];
    real **a = io->act;
    gemm_serial(0, 0, T, E, C, x, C, wt, OC, 0, a[A_Z] + row * E, E);
    gemm_serial(0, 0, T, XW, C, x, C, wt + E, OC, 0, a[A_XBCP] + row * XW, XW);
    gemm_serial(0, 0, T, NH, C, x, C, wt + E + XW, OC, 0, a[A_DTR] + row * NH, NH);
}

// Sequence b's out_proj rows: y_b = nrm_b Wout^T.
static void out_proj_seq(const Mamba2 *m, MixerIO *io, int b) {
    int T = io->T, C = m->C, E = m->E, OC = E + m->XW + m->NH;
    size_t row = (size_t)b * T;
    gemm_serial(0, 0, T, C, E, io->tmp[S_NRM] + row * E, E, io->tmp[S_WT] + (size_t)OC * C, C, 0, io->y + row * C, C);
}

// The forward up to out_proj's input: B, C and dt, each head's SSD and, in sequence tasks, the
// gated norm's rows (else mamba2_out's pass makes them), and with proj_in_task both projections.
static void ssd_all_forward(const Mamba2 *m, MixerIO *io, int proj) {
    int B = io->B, T = io->T, NH = m->NH;
    if (seq_tasks(B)) {
#pragma omp parallel for schedule(dynamic, M2_SEQ_BLOCK)
        for (int b = 0; b < B; b++) {
            if (proj) in_proj_seq(m, io, b);
            bc_dt_forward(m, io, b);
            for (int h = 0; h < NH; h++) {
                SsdShared sh = {shared_g(m, io), h > 0};  // C B^T made by head 0, read by the others
                head_forward(m, io, b, h, &sh);
            }
            gate_norm_rows(m, io, (size_t)b * T, (size_t)(b + 1) * T, (b + 1) % M2_SEQ_BLOCK && b + 1 < B ? T : 0);
            if (proj) out_proj_seq(m, io, b);
        }
        return;
    }
#pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++) bc_dt_forward(m, io, b);
#pragma omp parallel for schedule(dynamic, 1)
    for (int bh = 0; bh < B * NH; bh++) head_forward(m, io, bh / NH, bh % NH, NULL);
}

// y from the scan's outputs ys: the gated norm of every row, then out_proj (finish's; the forward
// makes each sequence's norm rows in its SSD task, while ys is in cache).
static void mamba2_out(const Mamba2 *m, MixerIO *io) {
    int B = io->B, T = io->T;
#pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++) gate_norm_rows(m, io, (size_t)b * T, (size_t)(b + 1) * T, 0);
    matmul_forward(io->y, io->tmp[S_NRM], io->p[P_OUT], NULL, B * T, m->E, m->C, m->prec);
}

static void mamba2_forward(const void *st, MixerIO *io) {
    const Mamba2 *m = st;
    int B = io->B, T = io->T;
    real **a = io->act, **p = io->p;
    int proj = proj_in_task(m, B);
    if (proj) transpose_proj_weights(m, p, io->tmp[S_WT]);
    else in_proj(m, p, io->x, a[A_Z], a[A_XBCP], a[A_DTR], B * T);
    dwconv_taps(p[P_CONV_W], m->XW, M2_CONV, io->tmp[S_TAPS]);
    ssd_all_forward(m, io, proj);  // with sequence tasks the gated norm's rows too, and the projections
    if (seq_tasks(B)) {
        if (!proj) matmul_forward(io->y, io->tmp[S_NRM], p[P_OUT], NULL, B * T, m->E, m->C, m->prec);
    } else {
        mamba2_out(m, io);
    }
}

// Backward, the SSD's hook for head h's chunk (tokens s .. s + n - 1): before it, dxs = D_h dy
// (the SSD adds to it) and the task's dD += dy . xs; after it (the chunk's dxs final), xs's conv
// output made again into cv, dxs through SiLU, and the conv's backward into dxbcp's head columns
// and the task's weight and bias gradients.
static void chunk_xs_grads(void *ctx, int s, int n, int after) {
    SsdTask *k = ctx;
    const Mamba2 *m = k->m;
    int XW = m->XW, P = m->P, E = m->E, T = k->io->T, h = k->h;
    real **a = k->io->act, **t = k->io->tmp;
    size_t o = ((size_t)k->b * T + s) * XW + (size_t)h * P;
    real *dxs = k->dxs + (size_t)s * P;
    if (!after) {
        const real *dy = k->dy + (size_t)s * E + (size_t)h * P, *xs = a[A_XBC] + o;
        real Dh = k->io->p[P_D][h], dD = k->dD;
        for (int i = 0; i < n; i++) {
            const real *dyi = dy + (size_t)i * E, *xi = xs + (size_t)i * XW;
            real *di = dxs + (size_t)i * P;
            if (i + M2_AHEAD < n)
                prefetch_rows(dyi + (size_t)M2_AHEAD * E, 1, 0, P, 0),
                    prefetch_rows(xi + (size_t)M2_AHEAD * XW, 1, 0, P, 0);
#pragma omp simd reduction(+ : dD)
            for (int c = 0; c < P; c++) {
                dD += dyi[c] * xi[c];
                di[c] = Dh * dyi[c];
            }
        }
        k->dD = dD;
        return;
    }
    const real *taps = t[S_TAPS] + h * P, *pre = a[A_XBCP] + o;
    dwconv_forward(taps, XW, k->io->p[P_CONV_B] + h * P, pre, XW, k->cv, P, P, s, n, M2_CONV);
    silu_backward_rows(dxs, P, k->cv, P, n, P);
    dwconv_backward(taps, XW, pre, XW, dxs, P, dxbcp(m, k->io, (size_t)k->b * T + s) + (size_t)h * P, dzx_ld(m), P, s,
                    n, T, M2_CONV, k->gconv, P, k->gconv + (size_t)M2_CONV * P);
}

// Backward, sequence b after its heads' tasks: dB and dC (the heads' sums in head order), through
// SiLU (the conv's output made again) and the conv's backward into dxbcp's last 2N columns and the
// sequence's gradient partials (conv_partial_seq); dt through softplus. dbc_heads: the
// sequence's [T, NH, 2N] from the heads; the sums and the conv outputs in the thread's rows.
static void bc_dt_backward(const Mamba2 *m, MixerIO *io, int b, const real *dbc_heads) {
    int T = io->T, XW = m->XW, E = m->E, NH = m->NH, N2 = 2 * m->N;
    real **a = io->act, **t = io->tmp;
    size_t r0 = (size_t)b * T;
    real *rows = t[S_TROWS] + (size_t)omp_get_thread_num() * task_rows(m, T);
    real *gc = conv_partial_seq(m, io, b);
    real *dbc = rows, *cv = rows + (size_t)T * N2;
    for (int i = 0; i < T; i++)
        for (int j = 0; j < N2; j++) {
            real acc = 0;
            for (int h = 0; h < NH; h++) acc += dbc_heads[((size_t)i * NH + h) * N2 + j];
            dbc[(size_t)i * N2 + j] = acc;
        }
    const real *taps = t[S_TAPS] + E, *pre = a[A_XBCP] + r0 * XW + E;
    dwconv_forward(taps, XW, io->p[P_CONV_B] + E, pre, XW, cv, N2, N2, 0, T, M2_CONV);
    silu_backward_rows(dbc, N2, cv, N2, T, N2);
    memset(gc, 0, sizeof(real) * (M2_CONV + 1) * N2);
    dwconv_backward(taps, XW, pre, XW, dbc, N2, dxbcp(m, io, r0) + E, dzx_ld(m), N2, 0, T, T, M2_CONV, gc, N2,
                    gc + (size_t)M2_CONV * N2);
    real *ddt = t[S_DDT] + r0 * NH;
    const real *z = a[A_DTR] + r0 * NH;
#pragma omp simd
    for (int i = 0; i < T * NH; i++) ddt[i] *= z[i] > 20 ? 1 : sigmoidr(z[i]);
    for (int r = 0; r < T; r++)  // in_proj's dt rows' gradient, after xBC's
        for (int h = 0; h < NH; h++) dxbcp(m, io, r0 + r)[XW + h] = ddt[(size_t)r * NH + h];
}

// dWout's partial of sequence b's block += dy_b^T nrm_b (nrm: its rows, E apart), the block's
// sequences in order from its first (which writes it), whichever path and thread runs it: in a
// task gemm_serial, from serial code gemm over the threads (the same bits: model/kernels/gemm.h).
static void out_weight_partial(const Mamba2 *m, MixerIO *io, int b, const real *nrm, int in_task) {
    int T = io->T, C = m->C, E = m->E;
    real *part = io->tmp[S_WOUT] + (size_t)(b / M2_SEQ_BLOCK) * C * E, beta = b % M2_SEQ_BLOCK ? 1 : 0;
    const real *dy = io->dy + (size_t)b * T * C;
    if (in_task) gemm_serial(1, 0, C, E, T, dy, C, nrm, E, beta, part, E);
    else gemm(1, 0, C, E, T, dy, C, nrm, E, beta, part, E);
}

// Backward, sequence b's out_proj (in_task: its dx and dW partial, in the thread's rows) and gated
// norm and gate (gate_norm_backward_rows), the norm weight's partial sums in its row of S_PART.
// Returns the sequence's dy rows (the gradient of ys + D xs, [T, E]) for its heads.
static const real *out_backward(const Mamba2 *m, MixerIO *io, int b, int ahead, int in_task) {
    int T = io->T, E = m->E;
    size_t row = (size_t)b * T;
    real *pw = io->tmp[S_PART] + (size_t)b * E, *dn = io->tmp[S_DNRM] + row * E, *nrm = io->tmp[S_NRM] + row * E;
    if (in_task) {
        dn = io->tmp[S_OROWS] + (size_t)omp_get_thread_num() * 2 * T * E, nrm = dn + (size_t)T * E;
        gemm_serial(0, 0, T, E, m->C, io->dy + row * m->C, m->C, io->p[P_OUT], E, 0, dn, E);
    }
    memset(pw, 0, sizeof(real) * E);
    gate_norm_backward_rows(m, io->p, io->act, io->tmp, (int)row, (int)row + T, dn, nrm, pw,
                            io->tmp[S_ROWS] + (size_t)omp_get_thread_num() * 3 * E, ahead);
    if (in_task) out_weight_partial(m, io, b, nrm, 1);
    return dn;
}

// in_proj's weight gradient as dWout's: the partial of sequence b's block += dzx_b^T x_b, the
// block's sequences in order from its first. With in_task (fp32 sequence tasks) also its dx rows,
// dx_b += dzx_b W, while the sequence's dzx rows are in cache (each dx element the same FMA chain
// over in_proj's outputs as in one product over all rows: the same bits); else dx is one product
// after the tasks.
static void in_backward_seq(const Mamba2 *m, MixerIO *io, int b, int in_task) {
    int T = io->T, C = m->C, OC = m->E + m->XW + m->NH, ld = dzx_ld(m);
    size_t row = (size_t)b * T;
    const real *dzx = io->tmp[S_DZX] + row * ld, *x = io->x + row * C;
    real *part = io->tmp[S_WIN] + (size_t)(b / M2_SEQ_BLOCK) * OC * C, beta = b % M2_SEQ_BLOCK ? 1 : 0;
    if (in_task) {
        gemm_serial(0, 0, T, C, OC, dzx, ld, io->p[P_IN], C, 1, io->dx + row * C, C);
        gemm_serial(1, 0, OC, C, T, dzx, ld, x, C, beta, part, C);
    } else {
        gemm(1, 0, OC, C, T, dzx, ld, x, C, beta, part, C);
    }
}

// g += the sum of n_blk partials [n_blk, n], in block order: slices of 256 over the threads.
static void add_block_partials(real *g, const real *parts, int n, int n_blk) {
#pragma omp parallel for schedule(static)
    for (int i0 = 0; i0 < n; i0 += 256)
        for (int blk = 0; blk < n_blk; blk++) {
            const real *part = parts + (size_t)blk * n;
            for (int i = i0; i < i0 + 256 && i < n; i++) g[i] += part[i];
        }
}

// Backward, head h of sequence b through the SSD (its D skip, SiLU and conv in the hook, its dB
// and dC added into its columns of dbc_heads, the sequence's [T, NH, 2N], its conv gradient
// partial, dA and dD into its own slots), from the sequence's dy rows.
static void head_backward(const Mamba2 *m, MixerIO *io, int b, int h, const real *dy, real *dbc_heads, const SsdShared *sh) {
    int T = io->T, NH = m->NH, P = m->P, N = m->N, XW = m->XW, E = m->E, bh = b * NH + h;
    real **a = io->act, **t = io->tmp;
    size_t row = (size_t)b * T;
    real *rows = t[S_TROWS] + (size_t)omp_get_thread_num() * task_rows(m, T);
    const real *x = a[A_XBC] + row * XW, *dt = a[A_DT] + row * NH + h;
    real *dbc = dbc_heads + (size_t)h * 2 * N;
    SsdTask task = {m, io, b, h, dy, rows, rows + (size_t)T * P, conv_partial_head(m, io, bh), 0};
    memset(task.gconv, 0, sizeof(real) * (M2_CONV + 1) * P);
    t[S_DAD][2 * bh] = 0;
    ssd_backward_hook(T, P, N, m->L, x + h * P, XW, dt, NH, -expr(io->p[P_A_LOG][h]), x + E, XW, x + E + N, XW,
                      a[A_ST] + (size_t)bh * ssd_n_states(T, m->L) * N * P, dy + h * P, E, task.dxs, P,
                      t[S_DDT] + row * NH + h, dbc, dbc + N, NH * 2 * N, t[S_DAD] + 2 * bh,
                      t[S_WORK] + (size_t)omp_get_thread_num() * work_size(m), chunk_xs_grads, &task, sh);
    t[S_DAD][2 * bh + 1] = task.dD;
}

static void mamba2_backward(const void *st, MixerIO *io) {
    const Mamba2 *m = st;
    int B = io->B, T = io->T, BT = B * T, C = m->C, E = m->E, XW = m->XW, NH = m->NH, P = m->P, N = m->N;
    real **t = io->tmp, **p = io->p, **g = io->g;
    // a sequence at a time (or in passes: seq_tasks): out_proj's dx, du = dy Wout (in the task, or
    // one product first), the norm and the gate in one pass a row (nrm recomputed, du becomes dy,
    // the gradient of ys + D xs, dz written; out_backward), the SSD of each head a chunk at a time
    // (before a chunk the D skip: its dxs = D_h dy, dD_h += dy . xs; after it xs's SiLU and conv
    // backward: chunk_xs_grads), then B, C and dt (bc_dt_backward). After them the partial sums
    // in sequence and task order.
    int in_task = proj_in_task(m, B), n_wblk = (B + M2_SEQ_BLOCK - 1) / M2_SEQ_BLOCK;
    if (!in_task) matmul_gemm(0, 0, BT, E, C, io->dy, C, p[P_OUT], E, 0, t[S_DNRM], E, m->prec);
    memset(t[S_DDT], 0, sizeof(real) * BT * NH);
    size_t dbc_seq = (size_t)T * NH * 2 * N;  // a sequence's dB and dC from each head
    dwconv_taps(p[P_CONV_W], XW, M2_CONV, t[S_TAPS]);
    if (seq_tasks(B)) {
#pragma omp parallel for schedule(dynamic, M2_SEQ_BLOCK)
        for (int b = 0; b < B; b++) {
            int ahead = (b + 1) % M2_SEQ_BLOCK && b + 1 < B ? T : 0;  // the next sequence is this thread's
            const real *dy = out_backward(m, io, b, ahead, in_task);
            real *dbc = t[S_DBC] + (size_t)omp_get_thread_num() * dbc_seq;  // the thread's, in cache
            memset(dbc, 0, sizeof(real) * dbc_seq);
            for (int h = 0; h < NH; h++) {
                SsdShared sh = {shared_g(m, io), h > 0};
                head_backward(m, io, b, h, dy, dbc, &sh);
            }
            bc_dt_backward(m, io, b, dbc);
            if (in_task) in_backward_seq(m, io, b, 1);
        }
    } else {
        memset(t[S_DBC], 0, sizeof(real) * B * dbc_seq);
#pragma omp parallel for schedule(static)
        for (int b = 0; b < B; b++) out_backward(m, io, b, 0, 0);
#pragma omp parallel for schedule(dynamic, 1)
        for (int bh = 0; bh < B * NH; bh++)
            head_backward(m, io, bh / NH, bh % NH, t[S_DNRM] + (size_t)bh / NH * T * E,
                          t[S_DBC] + (size_t)bh / NH * dbc_seq, NULL);
#pragma omp parallel for schedule(static)
        for (int b = 0; b < B; b++) bc_dt_backward(m, io, b, t[S_DBC] + (size_t)b * dbc_seq);
    }
#pragma omp parallel for schedule(static)
    for (int e0 = 0; e0 < E; e0 += 16)  // the norm weight's partials, each channel's in sequence order
        for (int b = 0; b < B; b++)
            for (int e = e0; e < e0 + 16 && e < E; e++) g[P_NORM][e] += t[S_PART][(size_t)b * E + e];
    // dWout += dy^T nrm: in fp32 from the blocks' partials (made in the tasks, or here in a pass of
    // the same products), in block order, so both paths give the same bits; else one product
    if (m->prec == PRECISION_FP32) {
        if (!in_task)  // (few sequences: each product over the threads)
            for (int b = 0; b < B; b++) out_weight_partial(m, io, b, t[S_NRM] + (size_t)b * T * E, 0);
        add_block_partials(g[P_OUT], t[S_WOUT], C * E, n_wblk);
    } else {
        matmul_gemm(1, 0, C, E, BT, io->dy, C, t[S_NRM], E, 1, g[P_OUT], E, m->prec);
    }
    // the conv's gradients: each slice of 16 channels over the threads, its partials (xs's from
    // the (sequence, head) tasks, B's and C's from the sequences) added in sequence order
    int sp = (P + 15) / 16, sbc = (2 * N + 15) / 16;  // slices of a head's channels, of B's and C's
#pragma omp parallel for schedule(static)
    for (int i = 0; i < NH * sp + sbc; i++) {
        int h = i < NH * sp ? i / sp : -1, off = h >= 0 ? i % sp * 16 : (i - NH * sp) * 16;
        int c0 = h >= 0 ? h * P + off : E + off, ld = h >= 0 ? P : 2 * N, nc = ld - off < 16 ? ld - off : 16;
        for (int b = 0; b < B; b++) {
            const real *gc = h >= 0 ? conv_partial_head(m, io, b * NH + h) : conv_partial_seq(m, io, b);
            dwconv_grads_add(gc + off, ld, gc + (size_t)M2_CONV * ld + off, nc, M2_CONV,
                             g[P_CONV_W] + (size_t)c0 * M2_CONV, g[P_CONV_B] + c0);
        }
    }
    for (int h = 0; h < NH; h++) {  // sums over sequences, in order
        real dA = 0, dD = 0, A = -expr(p[P_A_LOG][h]);
        for (int b = 0; b < B; b++) dA += t[S_DAD][2 * (b * NH + h)], dD += t[S_DAD][2 * (b * NH + h) + 1];
        g[P_A_LOG][h] += dA * A;  // dA/dA_log = A
        g[P_D][h] += dD;
    }
    colsum_accumulate(g[P_DT_B], t[S_DDT], BT, NH);
    // in_proj: in fp32 dW from the blocks' partials (in the tasks, or here a product a sequence)
    // in block order, dx made in the tasks or here in one product; in bf16 two whole products
    int OC = E + XW + NH;  // all of in_proj's rows in one product
    if (!in_task) matmul_gemm(0, 0, BT, C, OC, t[S_DZX], dzx_ld(m), p[P_IN], C, 1, io->dx, C, m->prec);
    if (m->prec == PRECISION_FP32) {
        if (!in_task)
            for (int b = 0; b < B; b++) in_backward_seq(m, io, b, 0);
        add_block_partials(g[P_IN], t[S_WIN], OC * C, n_wblk);
    } else {
        matmul_gemm(1, 0, OC, C, BT, t[S_DZX], dzx_ld(m), io->x, C, 1, g[P_IN], C, m->prec);
    }
}

// ---------------------------------------------------------------------------------------------
// Attention maps (docs/mixers.md#mamba2): one per SSM head, shared by its P channels,
//   a_ij = (C_i . B_j) exp(A_h sum_{t=j+1..i} dt_t) dt_j,
// so ys_i = sum_j a_ij xs_j for the head's channels (before the D skip, the gate and the norm).

static int mamba2_n_maps(const void *st) { return ((const Mamba2 *)st)->NH; }

static void mamba2_attention(const void *st, const MixerIO *io, int b, int h, real *att) {
    const Mamba2 *m = st;
    int T = io->T, XW = m->XW;
    const real *x = io->act[A_XBC] + (size_t)b * T * XW, *dt = io->act[A_DT] + (size_t)b * T * m->NH + h;
    real A = -expr(io->p[P_A_LOG][h]);
    for (int i = 0; i < T; i++) {
        ssd_map_row(T, m->N, i, dt, m->NH, A, x + m->E, XW, x + m->E + m->N, XW, att + (size_t)i * T);
        for (int j = i + 1; j < T; j++) att[(size_t)i * T + j] = 0;
    }
}

// The map acts on xs after the causal conv of width 4: token p is in xs_p .. xs_{p+3}.
static int mamba2_value_window(const void *st) {
    (void)st;
    return M2_CONV;
}

// Head h's values are its P channels of xs; its outputs ys before the D skip.
static void mamba2_finish(const void *st, MixerIO *io, const real *o) {
    const Mamba2 *m = st;
    mixer_put_outputs(io->act[A_YS], m->E, io->B, io->T, m->NH, m->P, o);
    mamba2_out(m, io);
}

static int mamba2_attention_values(const void *st, const MixerIO *io, int b, int h, real *v, real *o) {
    const Mamba2 *m = st;
    int T = io->T, P = m->P;
    for (int t = 0; t < T; t++) {
        size_t row = (size_t)b * T + t;
        memcpy(v + (size_t)t * P, io->act[A_XBC] + row * m->XW + (size_t)h * P, sizeof(real) * P);
        memcpy(o + (size_t)t * P, io->act[A_YS] + row * m->E + (size_t)h * P, sizeof(real) * P);
    }
    return P;
}

// ---------------------------------------------------------------------------------------------
// Generation: the state is the conv window (the last 3 xBC projections [3, E + 2N], oldest first)
// and S [NH, N, P]; then scratch for one token: z [E], xbc_pre, conv, xbc [E + 2N], dtr, dt [NH],
// ys, g, nrm [E], rstd [1].

static size_t mamba2_state_floats(const void *st) {
    const Mamba2 *m = st;
    // S is E N (Zoology's 2 d N at mamba2_expand 2); the conv window rides along
    return (size_t)m->NH * m->N * m->P + (size_t)(M2_CONV - 1) * m->XW;
}

static size_t mamba2_state_size(const void *st) {
    const Mamba2 *m = st;
    return mamba2_state_floats(st) + 4 * (size_t)m->E + 3 * (size_t)m->XW + 2 * (size_t)m->NH + 1;
}

static void mamba2_step(const void *st, real *const *p, real *state, int t, const real *x, real *y) {
    const Mamba2 *m = st;
    int E = m->E, XW = m->XW, NH = m->NH, P = m->P, N = m->N;
    real *win = state, *S = win + (size_t)(M2_CONV - 1) * XW, *z = S + (size_t)NH * N * P;
    real *xbcp = z + E, *conv = xbcp + XW, *xbc = conv + XW, *dtr = xbc + XW, *dt = dtr + NH, *ys = dt + NH;
    real *g = ys + E, *nrm = g + E, *rstd = nrm + E;
    (void)t;  // the window is zero at position 0, as the state
    in_proj(m, p, x, z, xbcp, dtr, 1);
    short_conv_step(conv, win, xbcp, p[P_CONV_W], p[P_CONV_B], XW, M2_CONV);
    act_token(m, p[P_DT_B], conv, xbc, dtr, dt);
    for (int h = 0; h < NH; h++)
        ssd_step(P, N, S + (size_t)h * N * P, xbc + h * P, dt[h], -expr(p[P_A_LOG][h]), xbc + E, xbc + E + N, ys + h * P);
    gate_norm_token(m, p, ys, xbc, z, g, rstd, nrm);
    matmul_forward(y, nrm, p[P_OUT], NULL, 1, E, m->C, m->prec);
}

// Per token: the projections (in_proj C -> 2E + 2N + NH, out_proj E -> C), the conv (2 K (E +
// 2N)), the gate and norm (about 10 E); per head and chunk of L (per token): C B^T (2 L N), the
// decays (L exponentials, each counted as 1), M X (2 L P), the entry state's read C S0 and the
// chunk state's update B^T X (2 N P each). Backward: twice the projections and conv, about 2.5
// times the SSD (its recomputed forward left out).
static void mamba2_flops(const void *st, int B, int T, double *fwd, double *bwd) {
    const Mamba2 *m = st;
    double BT = (double)B * T, C = m->C, E = m->E, N = m->N, P = m->P, NH = m->NH, L = T < m->L ? T : m->L;
    double proj = 2 * BT * (C * (2 * E + 2 * N + NH) + E * C) + 2 * BT * m->XW * M2_CONV + 10 * BT * E;
    double kern = BT * NH * (2 * L * N + L + 2 * L * P + 4 * N * P);
    *fwd = proj + kern;
    *bwd = 2 * proj + 2.5 * kern;
}

const MixerKind mixer_mamba2 = {
    .name = "mamba2",
    .summary = "Mamba-2: the scalar-decay SSM S = exp(dt A) S + dt B x^T per head, SSD chunked form, conv, gated RMSNorm (Dao & Gu 2024)",
    .options = mamba2_keys,
    .create = mamba2_create,
    .destroy = mamba2_destroy,
    .params = mamba2_params,
    .init_custom = mamba2_init_custom,
    .buffers = mamba2_buffers,
    .forward = mamba2_forward,
    .backward = mamba2_backward,
    .n_maps = mamba2_n_maps,
    .attention = mamba2_attention,
    .attention_values = mamba2_attention_values,
    .finish = mamba2_finish,
    .value_window = mamba2_value_window,
    .theory = THEORY_NONE,
    .state_size = mamba2_state_size,
    .state_floats = mamba2_state_floats,
    .step = mamba2_step,
    .flops = mamba2_flops,
};
