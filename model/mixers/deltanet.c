// DeltaNet layer with the defaults of flash-linear-attention's DeltaNet (Yang, Wang, Zhang, Shen,
// Kim 2024, arXiv 2406.06484; docs/mixers.md#deltanet): per head d_k = d_v = D = C / H,
//   [q, k, v] = x Wqkv^T                         [3C] (no bias; fla's q_proj, k_proj, v_proj)
//   [q, k, v] = SiLU(causal depthwise conv(.))   width K = deltanet_conv (4), no bias, one filter
//                                                per channel of each of q, k, v (fla's q/k/v_conv1d)
//   per head: q = q / sqrt(|q|^2 + 1e-6) / sqrt(D),  k = k / sqrt(|k|^2 + 1e-6)   (fla's l2norm)
//   beta = sigmoid(x Wb^T)                       [H], one scalar per head and token
//   per head: S_t = (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T,  o_t = S_t^T q_t
//   u = RMSNorm_head(o) * w                      (eps 1e-5, w [D] shared by the heads)
//   y = u Wo^T                                   (no bias)
// The delta rule runs chunked (model/mixers/delta_chunk.c: the WY / UT transform, chunks of
// deltanet_chunk = 64 tokens) with its chunk-entry states saved; backward is that kernel's reverse
// pass, then the norms, SiLU, the convolution and the projections by hand. The convolution, SiLU
// and the L2 norms run inside the kernel's per-chunk hook on rows in cache, forward and backward
// (the conv's output is recomputed there from pre, not saved). The plain recurrence
// it is tested against is model/mixers/delta_naive.c.
//
// Gated DeltaNet (Yang, Kautz, Hatamizadeh 2024, arXiv 2412.06464; fla's GatedDeltaNet layer;
// docs/mixers.md#gated_deltanet) is the same layer with, per head and token, a decay and a gate:
//   g = -exp(A_log) * softplus(x Wa^T + dt_bias)  [H]   alpha = exp(g) in (0, 1]
//   S_t = alpha_t (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T
//   u = RMSNorm_head(o) * w * SiLU(x Wg^T)       (gdn_gate = true, fla's FusedRMSNormGated)
// The one kernel (delta_chunk.c) takes the log-decays g, or NULL for DeltaNet, so the two mixers
// share every line but the decay's and the gate's.
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
#include "model/mixers/delta_chunk.h"
#include "model/mixers/qkv_common.h"
#include "model/mixers/mixer.h"

#define DN_L2_EPS 1e-6    // fla's l2norm: x / sqrt(sum x^2 + eps)
#define DN_NORM_EPS 1e-5  // fla's RMSNorm on o

typedef struct {
    int C, H, D, K, L;  // d_model, heads, head width, conv width, chunk
    int gated, gate;    // Gated DeltaNet (the decay), and its output gate
    real scale;         // D^-1/2 on q
    Precision prec;     // of the projections
} DeltaNet;

// Gated DeltaNet adds after these: Wa [H, C], A_log [H], dt_bias [H], and with the gate Wg [C, C].
enum { P_QKV, P_CONV, P_BETA, P_NORM, P_O, P_A, P_ALOG, P_DT, P_GATE };
// saved: pre [B,T,3C] = x Wqkv^T, qkv [B,T,3C] the kernel's inputs (q normalised and scaled, k
// normalised, v = SiLU(conv(pre))), rn [B,T,2H] the 1/norm of q and k per head, beta [B,T,H], att
// [B,T,C] (o before the norm), rstd [B,T,H], chunk-entry states [B,H,n_states,D,D]
// Gated DeltaNet adds z [B,T,H] = x Wa^T + dt_bias, g [B,T,H] the log-decays, gpre [B,T,C] = x Wg^T
// (an empty buffer without the gate).
enum { A_PRE, A_QKV, A_RN, A_BETA, A_ATT, A_RSTD, A_ST, A_Z, A_G, A_GPRE };
// scratch: nrm [B,T,C] (the normed o, recomputed in backward), dnrm, datt [B,T,C], the gradient
// of the input projections' outputs [B,T,din_ld] (din_cols), dbeta [B,T,H], norm weight partials
// [row chunks, D], per-thread kernel work, per thread a sequence's dqkv [T,3C] (a task's
// gradients of the kernel's inputs, then of the conv's outputs) and conv output rows
// [DN_CONV_ROWS,3C], the conv's taps [K,3C] (its weights transposed), its weight gradient's
// partials per (sequence, head) task [B*H,3,K,D], and the input projections' weights stacked and
// their gradient [2, din_cols, C]
// Gated DeltaNet adds dg [B,T,H] (then dz in place).
// Gated DeltaNet also has ba [B,T,2H] with its weights [Wb; Wa] [2H, C] (the forward's beta and
// decay projections as one product).
#define DN_CONV_ROWS 8  // rows of the conv's output made at a time (conv_rows)
enum { S_NRM, S_DNRM, S_DATT, S_DIN, S_DBETA, S_PART, S_WORK, S_DQKV, S_CROW, S_TAPS, S_DCONV, S_WIN, S_DG, S_BA };

static const KeyDef deltanet_keys[] = {
    {"deltanet_conv", KEY_INT, "4", RANGE_POS, 0, 0, "model",
     "deltanet: width of its causal depthwise conv on q, k and v (fla's conv_size)"},
    {"deltanet_chunk", KEY_INT, "64", RANGE_POS, 0, 0, "model",
     "deltanet: tokens per chunk of the chunked delta rule (speed and rounding only, not the function)"},
    {NULL, 0, NULL, 0, NULL, 0, NULL, NULL},
};

static const KeyDef gdn_keys[] = {
    {"gdn_conv", KEY_INT, "4", RANGE_POS, 0, 0, "model",
     "gated_deltanet: width of its causal depthwise conv on q, k and v (fla's conv_size)"},
    {"gdn_chunk", KEY_INT, "64", RANGE_POS, 0, 0, "model",
     "gated_deltanet: tokens per chunk of the chunked gated delta rule (speed and rounding only)"},
    {"gdn_gate", KEY_BOOL, "true", 0, 0, 0, "model",
     "gated_deltanet: the output gate RMSNorm(o) * SiLU(x Wg^T) (fla's use_gate)"},
    {NULL, 0, NULL, 0, NULL, 0, NULL, NULL},
};

static DeltaNet *create(const MixerDims *d, const char *name, const char *conv_key, const char *chunk_key) {
    long K = cfg_int(d->cfg, conv_key), L = cfg_int(d->cfg, chunk_key);
    if (d->C % d->H) die_input("n_head: %s needs d_model %d divisible by n_head %d", name, d->C, d->H);
    if (K > 64) die_input("%s: expected 1..64, got %ld", conv_key, K);
    if (L > 1024) die_input("%s: expected 1..1024, got %ld", chunk_key, L);
    DeltaNet *m = mallocCheck(sizeof *m);
    int D = d->C / d->H;
    *m = (DeltaNet){
        .C = d->C, .H = d->H, .D = D, .K = (int)K, .L = (int)L, .scale = (real)(1 / sqrt((double)D)), .prec = d->prec};
    return m;
}

static void *deltanet_create(const MixerDims *d) { return create(d, "deltanet", "deltanet_conv", "deltanet_chunk"); }

static void *gdn_create(const MixerDims *d) {
    DeltaNet *m = create(d, "gated_deltanet", "gdn_conv", "gdn_chunk");
    m->gated = 1, m->gate = cfg_bool(d->cfg, "gdn_gate");
    return m;
}

static void deltanet_destroy(void *st) { free(st); }

// fla's init: every Linear and Conv1d weight N(0, 0.02), o_proj rescaled for the residual stream
// (INIT_NORMAL_OUT), the norm's weight 1.
// Gated DeltaNet's as fla's GatedDeltaNet: A_log = log A with A ~ U(0, 16) per head, dt_bias
// the inverse softplus of dt log-uniform in [1e-3, 0.1] (floored at 1e-4), neither weight-decayed.
static ParamDecl decl(const DeltaNet *m, const char *name, int ndim, int d0, int d1, InitKind init, int no_decay) {
    ParamDecl p = {"", ndim, {d0, d1}, init, 0, no_decay};
    snprintf(p.name, sizeof p.name, "%s.%s", m->gated ? "gdn" : "deltanet", name);
    return p;
}

static int deltanet_params(const void *st, ParamDecl *out) {
    const DeltaNet *m = st;
    int C = m->C, H = m->H;
    out[P_QKV] = decl(m, "qkv.weight", 2, 3 * C, C, INIT_NORMAL, 0);
    out[P_CONV] = decl(m, "conv.weight", 2, 3 * C, m->K, INIT_NORMAL, 0);
    out[P_BETA] = decl(m, "b.weight", 2, H, C, INIT_NORMAL, 0);
    out[P_NORM] = decl(m, "norm.weight", 1, m->D, 0, INIT_ONE, 0);
    out[P_O] = decl(m, "o.weight", 2, C, C, INIT_NORMAL_OUT, 0);
    if (!m->gated) return 5;
    out[P_A] = decl(m, "a.weight", 2, H, C, INIT_NORMAL, 0);
    out[P_ALOG] = decl(m, "A_log", 1, H, 0, INIT_CUSTOM, 1);
    out[P_DT] = decl(m, "dt_bias", 1, H, 0, INIT_CUSTOM, 1);
    if (!m->gate) return 8;
    out[P_GATE] = decl(m, "g.weight", 2, C, C, INIT_NORMAL, 0);
    return 9;
}

static void gdn_init_custom(const void *st, int index, real *w, Rng *rng) {
    const DeltaNet *m = st;
    for (int h = 0; h < m->H; h++)
        if (index == P_ALOG) {  // A = 16 (1 - u) in (0, 16] for u in [0, 1): never log(0)
            w[h] = (real)log(16 * (1 - rng_uniform(rng)));
        } else if (index == P_DT) {  // softplus(dt_bias) = dt
            double dt = exp(log(1e-3) + rng_uniform(rng) * (log(1e-1) - log(1e-3)));
            dt = dt < 1e-4 ? 1e-4 : dt;
            w[h] = (real)(dt + log(-expm1(-dt)));
        }
}

static size_t work_size(const DeltaNet *m) { return delta_chunk_work(m->D, m->L); }

// The gradient of the input projections' outputs, one row a token: dpre [3C], then Gated
// DeltaNet's dgate [C] (with its gate), dbeta [H], and Gated DeltaNet's dz [H], so that their
// backward into dx and the weights is one product (the weights stacked the same way: in_weights);
// rows padded to a multiple of 16 floats, each starting on a cache line.
static int din_cols(const DeltaNet *m) { return 3 * m->C + (m->gate ? m->C : 0) + m->H + (m->gated ? m->H : 0); }
static int din_ld(const DeltaNet *m) { return (din_cols(m) + 15) / 16 * 16; }
static int din_gate(const DeltaNet *m) { return 3 * m->C; }                         // dgate's column
static int din_beta(const DeltaNet *m) { return 3 * m->C + (m->gate ? m->C : 0); }  // dbeta's
static int din_z(const DeltaNet *m) { return din_beta(m) + m->H; }                  // dz's

static void deltanet_buffers(const void *st, int B, int T, BufDecl *saved, int *n_saved, BufDecl *scratch, int *n_scratch) {
    const DeltaNet *m = st;
    size_t BT = (size_t)B * T, C = (size_t)m->C, H = (size_t)m->H, D = (size_t)m->D;
    saved[A_PRE] = (BufDecl){"pre", BT * 3 * C};
    saved[A_QKV] = (BufDecl){"qkv", BT * 3 * C};
    saved[A_RN] = (BufDecl){"qk_rnorm", BT * 2 * H};
    saved[A_BETA] = (BufDecl){"beta", BT * H};
    saved[A_ATT] = (BufDecl){"att", BT * C};
    saved[A_RSTD] = (BufDecl){"rstd", BT * H};
    saved[A_ST] = (BufDecl){"chunk_states", (size_t)B * H * delta_n_states(T, m->L) * D * D};
    *n_saved = A_ST + 1;
    if (m->gated) {
        saved[A_Z] = (BufDecl){"z", BT * H};
        saved[A_G] = (BufDecl){"g", BT * H};
        saved[A_GPRE] = (BufDecl){"gate_pre", m->gate ? BT * C : 0};
        *n_saved = A_GPRE + 1;
    }
    scratch[S_NRM] = (BufDecl){"nrm", BT * C};
    scratch[S_DNRM] = (BufDecl){"dnrm", BT * C};
    scratch[S_DATT] = (BufDecl){"datt", BT * C};
    scratch[S_DIN] = (BufDecl){"dpre_dgate_dbeta_dz", BT * din_ld(m)};
    scratch[S_DBETA] = (BufDecl){"dbeta", BT * H};
    scratch[S_PART] = (BufDecl){"norm_partials", (BT + QKV_NORM_ROWS - 1) / QKV_NORM_ROWS * D};
    scratch[S_WORK] = (BufDecl){"delta_work", (size_t)omp_get_max_threads() * work_size(m)};
    scratch[S_DQKV] = (BufDecl){"dqkv_seq", (size_t)omp_get_max_threads() * T * 3 * C};
    scratch[S_CROW] = (BufDecl){"conv_rows", (size_t)omp_get_max_threads() * DN_CONV_ROWS * 3 * C};
    scratch[S_TAPS] = (BufDecl){"conv_taps", (size_t)m->K * 3 * C};
    scratch[S_DCONV] = (BufDecl){"conv_grad_partials", (size_t)B * H * 3 * m->K * D};
    scratch[S_WIN] = (BufDecl){"in_weights_stacked", 2 * (size_t)din_cols(m) * C};
    *n_scratch = S_WIN + 1;
    if (m->gated) {
        scratch[S_DG] = (BufDecl){"dg", BT * H};
        scratch[S_BA] = (BufDecl){"beta_a", BT * 2 * H + 2 * H * C};
        *n_scratch = S_BA + 1;
    }
}

static real sigmoidr(real x) { return vsigmoidr(x); }

// torch's softplus (threshold 20: the identity above), as fla's F.softplus.
static real softplusr(real z) { return z > 20 ? z : log1pr(expr(z)); }

// Gated DeltaNet's log-decay of head h from z = x Wa^T + dt_bias: g = -exp(A_log) softplus(z).
static real log_decay(real z, real A_log) { return -expr(A_log) * softplusr(z); }

// ---------------------------------------------------------------------------------------------
// Pieces shared by forward, backward and step, one token at a time.

// One token and head h: from its conv output c [3C], head h's slices of the kernel's inputs qkv
// [3C] (SiLU, then q and k L2-normalised, q scaled) and rn [2H] (1/norm of its q at h, of its k
// at H + h).
static void features_head(const DeltaNet *m, int h, const real *c, real *qkv, real *rn) {
    int C = m->C, H = m->H, D = m->D;
    for (int p = 0; p < 3; p++) {  // q, k, v
        const real *cp = c + p * C + h * D;
        real *x = qkv + p * C + h * D;
#pragma omp simd
        for (int d = 0; d < D; d++) x[d] = cp[d] * sigmoidr(cp[d]);
        if (p == 2) break;
        real r = 1 / sqrtr(delta_dot(D, x, x) + (real)DN_L2_EPS), f = r * (p == 0 ? m->scale : 1);
        rn[p * H + h] = r;
        for (int d = 0; d < D; d++) x[d] *= f;
    }
}

// All heads of one token (generation).
static void features_token(const DeltaNet *m, const real *c, real *qkv, real *rn) {
    for (int h = 0; h < m->H; h++) features_head(m, h, c, qkv, rn);
}

// Its backward: head h's slices of dqkv [3C] in place from d(kernel inputs) to d(conv output) c.
static void features_head_backward(const DeltaNet *m, int h, const real *c, const real *qkv, const real *rn, real *dqkv) {
    int C = m->C, H = m->H, D = m->D;
    // y = x r (r = (|x|^2 + eps)^-1/2): dx = r (dy - y (y . dy)); q's saved value is scale y
    for (int p = 0; p < 2; p++) {
        const real *y = qkv + p * C + h * D;
        real *dy = dqkv + p * C + h * D, s = p == 0 ? m->scale : 1;
        real dot = delta_dot(D, y, dy);  // = (y/s) . (s dy)
        real r = rn[p * H + h];
        for (int d = 0; d < D; d++) dy[d] = r * (s * dy[d] - y[d] / s * dot);
    }
    for (int p = 0; p < 3; p++) {  // SiLU'(c) = sigma(c) (1 + c (1 - sigma(c)))
        const real *cp = c + p * C + h * D;
        real *dp = dqkv + p * C + h * D;
#pragma omp simd
        for (int d = 0; d < D; d++) {
            real sg = sigmoidr(cp[d]);
            dp[d] *= sg * (1 + cp[d] * (1 - sg));
        }
    }
}

// One token's per-head RMSNorm: out = o rstd w, rstd[h] written (the backward recomputes out from
// it: out_backward_rows).
static void norm_token(const DeltaNet *m, const real *o, const real *w, real *rstd, real *out) {
    for (int h = 0; h < m->H; h++) {
        const real *oh = o + h * m->D;
        real r = rstd[h] = 1 / sqrtr(delta_dot(m->D, oh, oh) / m->D + (real)DN_NORM_EPS);
        for (int d = 0; d < m->D; d++) out[h * m->D + d] = oh[d] * r * w[d];
    }
}

// Gated DeltaNet's output gate on one token, in place: u *= SiLU(gpre).
static void gate_token(const DeltaNet *m, const real *gpre, real *u) {
#pragma omp simd
    for (int i = 0; i < m->C; i++) u[i] *= gpre[i] * sigmoidr(gpre[i]);
}

// ---------------------------------------------------------------------------------------------

// y from att: the per-head RMSNorm, Gated DeltaNet's output gate and the projection (forward's
// tail; finish's).
static void deltanet_out(const DeltaNet *m, MixerIO *io) {
    int BT = io->B * io->T, C = m->C, H = m->H;
    real **a = io->act, **p = io->p;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < BT; r++) {
        norm_token(m, a[A_ATT] + (size_t)r * C, p[P_NORM], a[A_RSTD] + (size_t)r * H, io->tmp[S_NRM] + (size_t)r * C);
        if (m->gate) gate_token(m, a[A_GPRE] + (size_t)r * C, io->tmp[S_NRM] + (size_t)r * C);
    }
    matmul_forward(io->y, io->tmp[S_NRM], p[P_O], NULL, BT, C, C, m->prec);
}

// One (sequence, head) task's rows for the kernel's per-chunk hook (delta_chunk.h): the forward
// makes the chunk's inputs (the conv, SiLU, the L2 norms, beta, the decays) right before the
// kernel reads them, the backward takes the chunk's gradients back through them once they are
// final, each while its rows are in cache (at T = 4096 a sequence's rows of one head are 3 MB).
// The conv's output is made again in the backward from pre (4 FMAs an element) rather than saved,
// and the kernel's input gradients go to a per-thread [T, 3C] buffer: neither is a [B, T, 3C]
// buffer any more (25 MB each a layer on the zoology cell; 70 MB less activation memory there,
// and no speed change measured: docs/performance.md).
typedef struct {
    const DeltaNet *m;
    MixerIO *io;
    int b, h;
    real *crow;        // the thread's conv output rows [DN_CONV_ROWS, 3C] (head h's slices used)
    real *dqkv;        // backward: the thread's [T, 3C], row t the sequence's token t
    real *dconv;       // backward: the task's partial of the conv weight's gradient, [3, K, D]
    real dA_log, ddt;  // backward, Gated DeltaNet: the task's terms of dA_log[h] and ddt_bias[h]
    int next;          // the thread's next task (b H + h), or -1: its first chunk's rows are prefetched
} ChunkTask;

// Tasks a thread takes at a time (task_block): with at least DN_TASK_BLOCK of them per thread
// 4 times over, blocks of DN_TASK_BLOCK, each task knowing the next one in its block (the one
// after a block's last is another thread's), whose rows it prefetches during its own last
// chunk's hook, one row per row: they come from memory (written a whole pass before), and the
// kernel's loads of a task's first rows waited on them (in a timed build its backward took 43 us
// a sequence in the layer against 29 us on rows in cache). With fewer tasks (a small batch of
// long sequences) one at a time, so that every thread has work, and no prefetch.
#define DN_TASK_BLOCK 8
static int task_block(int n) { return n >= 4 * DN_TASK_BLOCK * omp_get_max_threads() ? DN_TASK_BLOCK : 1; }
static int next_task(int bh, int n, int block) { return (bh + 1) % block && bh + 1 < n ? bh + 1 : -1; }

// Head h's slices of q, k and v in row r + DN_AHEAD of a [B, T, 3C] buffer, prefetched: at long T
// the rows come from memory, and a row's three slices of D far apart (3C wide rows, one head's
// slices a task) were not prefetched by the hardware (most of the features' time waited on them).
#define DN_AHEAD 6
static void prefetch_row(const DeltaNet *m, const real *row, int write) {
    for (int p = 0; p < 3; p++)
        for (int d = 0; d < m->D; d += 64 / (int)sizeof(real))
            if (write) __builtin_prefetch(row + p * m->C + d, 1, 3);
            else __builtin_prefetch(row + p * m->C + d, 0, 3);
}

// Head h's conv of nr tokens' rows from token t (pre at its row) into crow [nr, 3C], made right
// before their one use, DN_CONV_ROWS rows at a time: a chunk's outputs made together spilled out
// of L1 (4% of the cell's step); 8 rows take the 3 calls a row took (no step-time change was
// resolved by measurement: docs/performance.md).
static void conv_rows(const DeltaNet *m, int h, const real *taps, const real *pre, int t, int nr, real *crow) {
    int C3 = 3 * m->C;
    for (int p = 0; p < 3; p++) {
        size_t cb = (size_t)p * m->C + h * m->D;
        dwconv_forward(taps + cb, C3, NULL, pre + cb, C3, crow + cb, C3, m->D, t, nr, m->K);
    }
}

// Forward: head h's conv and features of rows t0 .. t0 + n - 1 of sequence b, its beta and decays.
static void chunk_inputs(void *ctx, int t0, int n, int after) {
    const ChunkTask *k = ctx;
    const DeltaNet *m = k->m;
    int H = m->H, h = k->h, C3 = 3 * m->C;
    real **a = k->io->act, **p = k->io->p, *taps = k->io->tmp[S_TAPS];
    int first = k->b * k->io->T, end = first + t0 + n;
    (void)after;
    // the next task's first chunk, row by row during this task's last (its rows r - first)
    int nf = k->next >= 0 && t0 + n == k->io->T ? k->next / H * k->io->T : -1, nh = k->next % H, nL = m->L;
    for (int r = first + t0; r < end; r++) {
        if ((r - first - t0) % DN_CONV_ROWS == 0)
            conv_rows(m, h, taps, a[A_PRE] + (size_t)r * C3, r - first, end - r < DN_CONV_ROWS ? end - r : DN_CONV_ROWS,
                      k->crow);
        if (r + DN_AHEAD < end) {
            prefetch_row(m, a[A_PRE] + (size_t)(r + DN_AHEAD) * C3 + h * m->D, 0);
            prefetch_row(m, a[A_QKV] + (size_t)(r + DN_AHEAD) * C3 + h * m->D, 1);
        }
        if (nf >= 0 && r - first - t0 < nL) {
            size_t q = (size_t)nf + (size_t)(r - first - t0);
            prefetch_row(m, a[A_PRE] + q * C3 + nh * m->D, 0), prefetch_row(m, a[A_QKV] + q * C3 + nh * m->D, 1);
        }
        features_head(m, h, k->crow + (size_t)((r - first - t0) % DN_CONV_ROWS) * C3, a[A_QKV] + (size_t)r * C3,
                      a[A_RN] + (size_t)r * 2 * H);
        a[A_BETA][(size_t)r * H + h] = sigmoidr(a[A_BETA][(size_t)r * H + h]);
        if (!m->gated) continue;
        real *z = a[A_Z] + (size_t)r * H + h;  // z = x Wa^T + dt_bias, g = -exp(A_log) softplus(z)
        *z += p[P_DT][h];
        a[A_G][(size_t)r * H + h] = log_decay(*z, p[P_ALOG][h]);
    }
}

// Backward: before the kernel, zero the chunk's rows of head h's slices of the thread's dqkv (the
// kernel accumulates into them); after it, back through the L2 norms and SiLU (the conv's output
// made again) and beta = sigmoid(z): dz = dbeta beta (1 - beta); then the conv's backward.
static void chunk_grads(void *ctx, int t0, int n, int after) {
    ChunkTask *k = ctx;
    const DeltaNet *m = k->m;
    int C = m->C, H = m->H, D = m->D, h = k->h, C3 = 3 * C, T = k->io->T, ld = din_ld(m);
    real **a = k->io->act, **t = k->io->tmp, *taps = t[S_TAPS];
    int first = k->b * T, end = first + t0 + n;
    if (!after) {
        for (int i = t0; i < t0 + n; i++)
            for (int p3 = 0; p3 < 3; p3++) memset(k->dqkv + (size_t)i * C3 + p3 * C + h * D, 0, sizeof(real) * D);
        return;
    }
    // the next task's last chunk (the first it works on), row by row during this task's first
    int nl = (T - 1) / m->L * m->L, nf = k->next >= 0 && t0 == 0 ? k->next / H * T + nl : -1, nh = k->next % H;
    for (int r = first + t0; r < end; r++) {
        if (r + DN_AHEAD < end) {
            prefetch_row(m, a[A_PRE] + (size_t)(r + DN_AHEAD) * C3 + h * D, 0);
            prefetch_row(m, a[A_QKV] + (size_t)(r + DN_AHEAD) * C3 + h * D, 0);
        }
        if (nf >= 0 && r - first - t0 < T - nl) {
            size_t q = (size_t)nf + (size_t)(r - first - t0);
            prefetch_row(m, a[A_PRE] + q * C3 + nh * D, 0), prefetch_row(m, a[A_QKV] + q * C3 + nh * D, 0);
            for (int d = 0; d < D; d += 64 / (int)sizeof(real))
                __builtin_prefetch(t[S_DATT] + q * C + nh * D + d, 0, 3);
        }
        if ((r - first - t0) % DN_CONV_ROWS == 0)
            conv_rows(m, h, taps, a[A_PRE] + (size_t)r * C3, r - first, end - r < DN_CONV_ROWS ? end - r : DN_CONV_ROWS,
                      k->crow);
        features_head_backward(m, h, k->crow + (size_t)((r - first - t0) % DN_CONV_ROWS) * C3, a[A_QKV] + (size_t)r * C3,
                               a[A_RN] + (size_t)r * 2 * H, k->dqkv + (size_t)(r - first) * C3);
        real bt = a[A_BETA][(size_t)r * H + h];
        t[S_DBETA][(size_t)r * H + h] *= bt * (1 - bt);
        t[S_DIN][(size_t)r * ld + din_beta(m) + h] = t[S_DBETA][(size_t)r * H + h];
    }
    for (int r = first + t0; r < end; r++) prefetch_row(m, t[S_DIN] + (size_t)r * ld + h * D, 1);
    for (int p3 = 0; p3 < 3; p3++) {  // the conv's backward: dpre and the task's weight gradient
        size_t cb = (size_t)p3 * C + h * D, r0 = (size_t)(first + t0);
        dwconv_backward(taps + cb, C3, a[A_PRE] + r0 * C3 + cb, C3, k->dqkv + (size_t)t0 * C3 + cb, C3,
                        t[S_DIN] + r0 * ld + cb, ld, D, t0, n, T, m->K, k->dconv + (size_t)p3 * m->K * D, D, NULL);
    }
    if (!m->gated) return;
    // g = -exp(A_log) softplus(z): dA_log += dg g, dz = -dg exp(A_log) sigmoid(z) (1 above the
    // softplus threshold) in dg's place, ddt_bias += dz; the task's sums in its fixed order
    real eA = expr(k->io->p[P_ALOG][h]);
    for (int r = first + t0; r < end; r++) {
        size_t i = (size_t)r * H + h;
        real dgl = t[S_DG][i], z = a[A_Z][i], dz = -dgl * eA * (z > 20 ? 1 : sigmoidr(z));
        k->dA_log += dgl * a[A_G][i];
        k->ddt += dz;
        t[S_DG][i] = dz;
        t[S_DIN][(size_t)r * ld + din_z(m) + h] = dz;
    }
}

static void deltanet_forward(const void *st, MixerIO *io) {
    const DeltaNet *m = st;
    int B = io->B, T = io->T, BT = B * T, C = m->C, H = m->H, D = m->D, C3 = 3 * C;
    real **a = io->act, **p = io->p;
    matmul_forward(a[A_PRE], io->x, p[P_QKV], NULL, BT, C, C3, m->prec);
    dwconv_taps(p[P_CONV], C3, m->K, io->tmp[S_TAPS]);
    if (m->gated) {  // beta's and the decay's projections in one product: x [Wb; Wa]^T, then split
        real *ba = io->tmp[S_BA], *w = ba + (size_t)BT * 2 * H;
        memcpy(w, p[P_BETA], sizeof(real) * H * C);
        memcpy(w + (size_t)H * C, p[P_A], sizeof(real) * H * C);
        matmul_forward(ba, io->x, w, NULL, BT, C, 2 * H, m->prec);
#pragma omp parallel for schedule(static)
        for (int r = 0; r < BT; r++)
            for (int h = 0; h < H; h++)
                a[A_BETA][(size_t)r * H + h] = ba[(size_t)r * 2 * H + h],
                                          a[A_Z][(size_t)r * H + h] = ba[(size_t)r * 2 * H + H + h];
    } else {
        matmul_forward(a[A_BETA], io->x, p[P_BETA], NULL, BT, C, H, m->prec);
    }
    if (m->gate) matmul_forward(a[A_GPRE], io->x, p[P_GATE], NULL, BT, C, C, m->prec);
    int ns = delta_n_states(T, m->L), block = task_block(B * H);
#pragma omp parallel for schedule(dynamic, block)
    for (int bh = 0; bh < B * H; bh++) {
        int b = bh / H, h = bh % H;
        // head h of sequence b's inputs, a chunk at a time
        ChunkTask task = {m,    io,   b, h, io->tmp[S_CROW] + (size_t)omp_get_thread_num() * DN_CONV_ROWS * C3,
                          NULL, NULL, 0, 0, next_task(bh, B * H, block)};
        const real *q = a[A_QKV] + (size_t)b * T * C3 + h * D;
        const real *gl = m->gated ? a[A_G] + (size_t)b * T * H + h : NULL;
        gdelta_chunk_forward_hook(T, D, m->L, q, C3, q + C, C3, q + 2 * C, C3, a[A_BETA] + (size_t)b * T * H + h, H, gl,
                                  H, a[A_ATT] + (size_t)b * T * C + h * D, C, a[A_ST] + (size_t)bh * ns * D * D,
                                  io->tmp[S_WORK] + (size_t)omp_get_thread_num() * work_size(m), chunk_inputs, &task);
    }
    deltanet_out(m, io);
}

// The output projection's input and the backward through it, for rows r0 .. r1-1, one pass a row:
// from du = dy Wo (in dnrm) the normed o n = o rstd w recomputed, with the gate u = n SiLU(c) (c =
// x Wg^T) written to nrm for dWo (u = n without it), dc = du n SiLU'(c) to dgate and dn = du SiLU(c)
// over du; then the per-head RMSNorm's backward, d o = rstd (dn w - o rstd^2 mean(dn w o)), to
// datt, and the norm weight's gradient dn o rstd summed into pw [D] row by row.
static void out_backward_rows(const DeltaNet *m, const MixerIO *io, int r0, int r1, real *pw) {
    int C = m->C, H = m->H, D = m->D;
    real *const *a = io->act, *const *t = io->tmp;
    const real *w = io->p[P_NORM];
    for (int r = r0; r < r1; r++)
        for (int h = 0; h < H; h++) {
            size_t o = (size_t)r * C + (size_t)h * D;
            const real *at = a[A_ATT] + o;
            real *dn = t[S_DNRM] + o;  // du, then dn in its place
            real *u = t[S_NRM] + o, *datt = t[S_DATT] + o, rs = a[A_RSTD][(size_t)r * H + h], dot = 0;
            if (m->gate) {
                const real *c = a[A_GPRE] + o;
                real *dc = t[S_DIN] + (size_t)r * din_ld(m) + din_gate(m) + (size_t)h * D;
#pragma omp simd reduction(+ : dot)
                for (int d = 0; d < D; d++) {
                    real n = at[d] * rs * w[d], sg = sigmoidr(c[d]), du = dn[d];
                    u[d] = n * (c[d] * sg);
                    dc[d] = du * n * sg * (1 + c[d] * (1 - sg));
                    dn[d] = du * (c[d] * sg);
                    dot += dn[d] * w[d] * at[d];
                }
            } else {
#pragma omp simd reduction(+ : dot)
                for (int d = 0; d < D; d++) {
                    u[d] = at[d] * rs * w[d];
                    dot += dn[d] * w[d] * at[d];
                }
            }
            real cc = rs * rs * dot / D;
#pragma omp simd
            for (int d = 0; d < D; d++) {
                pw[d] += dn[d] * at[d] * rs;
                datt[d] = rs * (dn[d] * w[d] - at[d] * cc);
            }
        }
}

static void deltanet_backward(const void *st, MixerIO *io) {
    const DeltaNet *m = st;
    int B = io->B, T = io->T, BT = B * T, C = m->C, H = m->H, D = m->D, C3 = 3 * C;
    real **a = io->act, **t = io->tmp, **p = io->p, **g = io->g;
    // the output projection: du = dy Wo first (into dnrm, written: no zeroing), then the gate and
    // the norm back to datt in one pass a row (out_backward_rows), row blocks of QKV_NORM_ROWS with
    // the norm weight's partial sums added in block order, then dWo += dy^T u
    matmul_gemm(0, 0, BT, C, C, io->dy, C, p[P_O], C, 0, t[S_DNRM], C, m->prec);
    int n_blocks = (BT + QKV_NORM_ROWS - 1) / QKV_NORM_ROWS;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < n_blocks; blk++) {
        real *pw = t[S_PART] + (size_t)blk * D;
        memset(pw, 0, sizeof(real) * D);
        out_backward_rows(m, io, blk * QKV_NORM_ROWS, (blk + 1) * QKV_NORM_ROWS < BT ? (blk + 1) * QKV_NORM_ROWS : BT, pw);
    }
    for (int blk = 0; blk < n_blocks; blk++)
        for (int d = 0; d < D; d++) g[P_NORM][d] += t[S_PART][(size_t)blk * D + d];
    matmul_gemm(1, 0, C, C, BT, io->dy, C, t[S_NRM], C, 1, g[P_O], C, m->prec);
    // the delta rule, chunked, in reverse time
    memset(t[S_DBETA], 0, sizeof(real) * BT * H);
    if (m->gated) memset(t[S_DG], 0, sizeof(real) * BT * H);
    int ns = delta_n_states(T, m->L);
    real *dsum = m->gated ? callocCheck((size_t)B * H * 2, sizeof(real)) : NULL;  // per task: dA_log, ddt_bias
    dwconv_taps(p[P_CONV], C3, m->K, t[S_TAPS]);
    int block = task_block(B * H);
#pragma omp parallel for schedule(dynamic, block)
    for (int bh = 0; bh < B * H; bh++) {
        int b = bh / H, h = bh % H;
        size_t off = (size_t)b * T * C3 + h * D, ob = (size_t)b * T * H + h;
        const real *q = a[A_QKV] + off;
        // the thread's dqkv zeroed, then back through the features and the conv, a chunk at a time
        int th = omp_get_thread_num();
        real *dqkv = t[S_DQKV] + (size_t)th * T * C3, *dq = dqkv + h * D, *part = t[S_DCONV] + (size_t)bh * 3 * m->K * D;
        memset(part, 0, sizeof(real) * 3 * m->K * D);
        ChunkTask task = {m,    io,   b, h, t[S_CROW] + (size_t)th * DN_CONV_ROWS * C3,
                          dqkv, part, 0, 0, next_task(bh, B * H, block)};
        gdelta_chunk_backward_hook(
            T, D, m->L, q, C3, q + C, C3, q + 2 * C, C3, a[A_BETA] + ob, H, m->gated ? a[A_G] + ob : NULL, H,
            a[A_ST] + (size_t)bh * ns * D * D, t[S_DATT] + (size_t)b * T * C + h * D, C, dq, dq + C, dq + 2 * C,
            t[S_DBETA] + ob, m->gated ? t[S_DG] + ob : NULL, t[S_WORK] + (size_t)th * work_size(m), chunk_grads, &task);
        if (dsum) dsum[2 * bh] = task.dA_log, dsum[2 * bh + 1] = task.ddt;
    }
    // the conv weight's gradient, the tasks' partials in task order; then the projections into dx
    for (int bh = 0; bh < B * H; bh++)
        for (int p3 = 0; p3 < 3; p3++)
            dwconv_grads_add(t[S_DCONV] + ((size_t)bh * 3 + p3) * m->K * D, D, NULL, D, m->K,
                             g[P_CONV] + (size_t)(p3 * C + (bh % H) * D) * m->K, NULL);
    if (m->gated) {
        for (int bh = 0; bh < B * H; bh++)  // the tasks' sums (chunk_grads), in task order
            g[P_ALOG][bh % H] += dsum[2 * bh], g[P_DT][bh % H] += dsum[2 * bh + 1];
        free(dsum);
    }
    // the input projections as one product: dx += din W_in, dW_in = din^T x, W_in = [Wqkv; Wg;
    // Wb; Wa] stacked as din's columns, the stacked gradient added to each weight's
    int OC = din_cols(m);
    real *w = t[S_WIN], *dw = w + (size_t)OC * C;
    const int rows[4] = {C3, m->gate ? C : 0, H, m->gated ? H : 0}, ids[4] = {P_QKV, P_GATE, P_BETA, P_A};
    for (int i = 0, o = 0; i < 4; o += rows[i], i++)
        if (rows[i]) memcpy(w + (size_t)o * C, p[ids[i]], sizeof(real) * rows[i] * C);
    matmul_gemm(0, 0, BT, C, OC, t[S_DIN], din_ld(m), w, C, 1, io->dx, C, m->prec);
    matmul_gemm(1, 0, OC, C, BT, t[S_DIN], din_ld(m), io->x, C, 0, dw, C, m->prec);
    for (int i = 0, o = 0; i < 4; o += rows[i], i++)
        for (size_t e = 0; e < (size_t)rows[i] * C; e++) g[ids[i]][e] += dw[(size_t)o * C + e];
}

// ---------------------------------------------------------------------------------------------
// Attention maps (docs/mixers.md#deltanet): with zero initial state o = A v exactly, where
//   A = (Q K^T ⊙ M) (I + tril(diag(beta) K K^T, -1))^{-1} diag(beta)
// over the whole sequence (not the per-chunk inverse): signed, not row-stochastic. Gated DeltaNet
// (docs/mixers.md#gated_deltanet): Q K^T and K K^T both ⊙ Gamma, Gamma_ij = exp(gamma_i -
// gamma_j) = alpha_{j+1} ... alpha_i with gamma the cumulative log-decay over the whole sequence.

static int deltanet_n_maps(const void *st) { return ((const DeltaNet *)st)->H; }

static void deltanet_attention(const void *st, const MixerIO *io, int b, int h, real *att) {
    const DeltaNet *m = st;
    int T = io->T, C = m->C, C3 = 3 * C, H = m->H;
    const real *q = io->act[A_QKV] + (size_t)b * T * C3 + h * m->D, *beta = io->act[A_BETA] + (size_t)b * T * H + h;
    const real *gl = m->gated ? io->act[A_G] + (size_t)b * T * H + h : NULL;
    double *Akk = mallocCheck(sizeof(double) * ((size_t)T * T + 2 * T)), *x = Akk + (size_t)T * T, *gam = x + T;
    gdelta_map_prepare(T, m->D, q + C, C3, beta, H, gl, H, Akk, gam);
    for (int i = 0; i < T; i++) {
        gdelta_map_row(T, m->D, i, q, C3, q + C, C3, beta, H, gl ? gam : NULL, Akk, x, att + (size_t)i * T);
        for (int j = i + 1; j < T; j++) att[(size_t)i * T + j] = 0;
    }
    free(Akk);
}

// The map acts on v after the mixer's own causal conv: token p is in v_p .. v_{p+K-1}.
static int deltanet_value_window(const void *st) { return ((const DeltaNet *)st)->K; }

// Head h's values v_j (after the conv and SiLU) and its outputs o before the norm.
static void deltanet_finish(const void *st, MixerIO *io, const real *o) {
    const DeltaNet *m = st;
    mixer_put_outputs(io->act[A_ATT], m->C, io->B, io->T, m->H, m->D, o);
    deltanet_out(m, io);
}

static int deltanet_attention_values(const void *st, const MixerIO *io, int b, int h, real *v, real *o) {
    const DeltaNet *m = st;
    int T = io->T, C = m->C, D = m->D;
    for (int t = 0; t < T; t++) {
        size_t row = (size_t)b * T + t;
        memcpy(v + (size_t)t * D, io->act[A_QKV] + row * 3 * C + 2 * C + (size_t)h * D, sizeof(real) * D);
        memcpy(o + (size_t)t * D, io->act[A_ATT] + row * C + (size_t)h * D, sizeof(real) * D);
    }
    return D;
}

// ---------------------------------------------------------------------------------------------
// Generation: the state is the conv window (the last K-1 projections [K-1, 3C], oldest first)
// and S [H, D, D]; then scratch for one token: pre, conv, qkv [3C], rn [2H], beta, rstd [H],
// o, nrm [C]; Gated DeltaNet's z [H] and gpre [C] after them.

static size_t deltanet_state_floats(const void *st) {
    const DeltaNet *m = st;
    // Zoology's convention counts S alone, H D D; the conv window rides along
    return (size_t)m->H * m->D * m->D + (size_t)(m->K - 1) * 3 * m->C;
}

static size_t deltanet_state_size(const void *st) {
    const DeltaNet *m = st;
    return deltanet_state_floats(st) + 9 * (size_t)m->C + 4 * (size_t)m->H + 2 * (size_t)m->C +
        (m->gated ? (size_t)m->H + m->C : 0);
}

static void deltanet_step(const void *st, real *const *p, real *state, int t, const real *x, real *y) {
    const DeltaNet *m = st;
    int C = m->C, H = m->H, D = m->D, C3 = 3 * C;
    real *win = state, *S = win + (size_t)(m->K - 1) * C3, *pre = S + (size_t)H * D * D;
    real *c = pre + C3, *qkv = c + C3, *rn = qkv + C3, *beta = rn + 2 * H, *rstd = beta + H;
    real *o = rstd + H, *nrm = o + C, *z = nrm + C, *gpre = z + H;
    (void)t;  // the window is zero at position 0, as the state
    matmul_forward(pre, x, p[P_QKV], NULL, 1, C, C3, m->prec);
    short_conv_step(c, win, pre, p[P_CONV], NULL, C3, m->K);
    features_token(m, c, qkv, rn);
    matmul_forward(beta, x, p[P_BETA], NULL, 1, C, H, m->prec);
    if (m->gated) matmul_forward(z, x, p[P_A], NULL, 1, C, H, m->prec);
    for (int h = 0; h < H; h++) {
        real alpha = m->gated ? expr(log_decay(z[h] + p[P_DT][h], p[P_ALOG][h])) : 1;
        gdelta_recurrent_step(D, S + (size_t)h * D * D, qkv + h * D, qkv + C + h * D, qkv + 2 * C + h * D,
                              sigmoidr(beta[h]), alpha, o + h * D);
    }
    norm_token(m, o, p[P_NORM], rstd, nrm);
    if (m->gate) {
        matmul_forward(gpre, x, p[P_GATE], NULL, 1, C, C, m->prec);
        gate_token(m, gpre, nrm);
    }
    matmul_forward(y, nrm, p[P_O], NULL, 1, C, C, m->prec);
}

// Per token: the projections (qkv C -> 3C, beta C -> H, out C -> C), the conv (2 K 3C), the norms;
// per head and chunk of L (per token): K K^T and Q K^T (2 L D each, half used), the inverse by
// forward substitution (L^2 / 3), W, U = Tm K, Tm V (4 L D), W S0 and Q S0 and K^T U' (6 D^2),
// P U' (2 L D). Backward: twice the projections and conv, about 2.5 times the kernel (its
// recomputed forward left out). Gated DeltaNet adds the a projection (C -> H) and the gate's (C ->
// C), and per head and chunk the decays (L^2 exponentials, counted as 1 each, and about 4 L D).
static void deltanet_flops(const void *st, int B, int T, double *fwd, double *bwd) {
    const DeltaNet *m = st;
    double BT = (double)B * T, C = m->C, H = m->H, D = m->D, L = T < m->L ? T : m->L;
    double proj = 2 * BT * (C * 3 * C + C * H + C * C) + 2 * BT * 3 * C * m->K + 10 * BT * C;
    double kern = BT * H * (10 * L * D + 6 * D * D + L * L / 3);
    if (m->gated) proj += 2 * BT * (C * H + (m->gate ? C * C : 0)) + 4 * BT * C, kern += BT * H * (L + 4 * D);
    *fwd = proj + kern;
    *bwd = 2 * proj + 2.5 * kern;
}

const MixerKind mixer_deltanet = {
    .name = "deltanet",
    .summary = "DeltaNet: the delta rule S = (I - beta k k^T) S + beta k v^T, chunked WY form, conv + L2 norm (Yang et al. 2024, fla)",
    .options = deltanet_keys,
    .create = deltanet_create,
    .destroy = deltanet_destroy,
    .params = deltanet_params,
    .buffers = deltanet_buffers,
    .forward = deltanet_forward,
    .backward = deltanet_backward,
    .n_maps = deltanet_n_maps,
    .attention = deltanet_attention,
    .attention_values = deltanet_attention_values,
    .finish = deltanet_finish,
    .value_window = deltanet_value_window,
    .theory = THEORY_NONE,
    .state_size = deltanet_state_size,
    .state_floats = deltanet_state_floats,
    .step = deltanet_step,
    .flops = deltanet_flops,
};

const MixerKind mixer_gated_deltanet = {
    .name = "gated_deltanet",
    .summary = "Gated DeltaNet: S = alpha (I - beta k k^T) S + beta k v^T, alpha = exp(g), chunked WY form, output gate (Yang et al. 2024, fla)",
    .options = gdn_keys,
    .create = gdn_create,
    .destroy = deltanet_destroy,
    .params = deltanet_params,
    .init_custom = gdn_init_custom,
    .buffers = deltanet_buffers,
    .forward = deltanet_forward,
    .backward = deltanet_backward,
    .n_maps = deltanet_n_maps,
    .attention = deltanet_attention,
    .attention_values = deltanet_attention_values,
    .finish = deltanet_finish,
    .value_window = deltanet_value_window,
    .theory = THEORY_NONE,
    .state_size = deltanet_state_size,
    .state_floats = deltanet_state_floats,
    .step = deltanet_step,
    .flops = deltanet_flops,
};
