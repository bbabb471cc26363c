// H3, Hungry Hungry Hippos (Fu, Dao et al. 2022, arXiv 2212.14052; HazyResearch/H3's H3 layer):
//   q, k, v = x Wqkv^T + b;  ks = SSM_shift(k) (per channel);  o = q * SSM_diag(ks * v);
//   y = o Wproj^T + b.
// Channels form heads of P = h3_head_dim (2 by default, as Zoology's MQAR Figure 2 config runs
// H3; H3's own layer defaults to 1, which leaves the query a scalar gain per channel); head h owns
// channels h*P..h*P+P-1 and one diagonal SSM of h3_d_state states shared by its P*P products:
//   o_i[d2] = sum_{d1} q_i[d1] sum_{j <= i} Kbar_h(i-j) ks_j[d1] v_j[d2]
// with Kbar_h the head's kernel (model/mixers/h3_ssm.h; S4D-Real, its D skip in Kbar_h(0)). So
// each head is linear attention with a kernel decay, a_ij = Kbar_h(i-j) (q_i . ks_j) acting on
// v_j, which is the map the evaluator reads (one per head: C / P maps).
// Training materialises each head's kernel from its parameters every call and convolves it
// (directly, O(T^2) per channel product, or for long sequences by FFT, O(T log T); the products
// as vector lanes either way); generation steps both SSMs' states, O(1) per token. H3's output
// channel order (d2 outer) is a fixed permutation absorbed by the output projection; here output
// channel h*P + d2. docs/mixers.md#h3 has the derivations.
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/kernels/gemm.h"
#include "model/mixers/h3_ssm.h"
#include "model/mixers/qkv_common.h"

typedef struct {
    QkvShape s;    // C, model heads H, T, B (s.D is unused: heads of P channels below)
    int P, NH, N;  // channels per H3 head, H3 heads C / P, states per SSM
    int conv;      // h3_conv: CONV_AUTO, CONV_DIRECT or CONV_FFT
    int fft_bufs;  // a call of some length up to s.T convolves by FFT: its buffers are declared
} H3;

enum { CONV_AUTO, CONV_DIRECT, CONV_FFT };

// After the q/k/v tensors: shift SSM taps and skip per channel; diagonal SSM per H3 head.
enum { P_SK_W = QKV_NORM_W, P_SK_D, P_LOG_DT, P_A_LOG, P_SSM_C, P_SSM_D };
// The training path works on rows of lanes: channels [B,T,C] for the shift SSM, the M = C*P
// channel products m = (h*P + d1)*P + d2 (H3's ks[d1] * v[d2] of head h) [B,T,M] for the
// diagonal SSM, so every loop runs across lanes instead of down one channel.
// saved: ks [B,T,C] shifted keys; y [B,T,M] the diagonal SSM's output per product; the kernels
// K [NH,T] (kept per layer for the evaluator's maps, which would otherwise rebuild one per map)
enum { A_KS = QKV_N_SAVED, A_Y, A_KERNEL };
// scratch: the kernels per product [T,M]; dK per (batch row, head) [B,NH,T]; the shift SSM's
// gradients per batch row [B,N+1,C] (taps, then the skip); its taps transposed [N,C]; the
// gradient of ks [B,T,C]; the products, the gradients of y and of the products, and the kernels'
// gradients per batch row [B,T,M] each; for the FFT path (zero-sized without) the kernels'
// transforms [2,L,M] and the twiddles [L]; per-thread work [C], or the FFT's
enum { S_KE = QKV_N_SCRATCH, S_DK, S_DSHIFT, S_WT, S_DKS, S_U, S_DY, S_DU, S_DKE, S_KF, S_TW, S_WORK };

static const KeyDef h3_keys[] = {
    {"h3_d_state", KEY_INT, "64", RANGE_POS, 0, 0, "model",
     "h3: states N of the diagonal SSM and taps of the shift SSM (H3's d_state)"},
    {"h3_head_dim", KEY_INT, "2", RANGE_POS, 0, 0, "model",
     "h3: channels per H3 head (2 as in Zoology's MQAR config; 1 as H3's layer defaults); d_model / h3_head_dim must divide by n_head"},
    {"h3_conv", KEY_ENUM, "auto", 0, "auto|direct|fft", 0, "model",
     "h3: the SSM convolution directly, O(T^2), or by FFT, O(T log T); auto: whichever is cheaper at the call's length"},
    {NULL, 0, NULL, 0, NULL, 0, NULL, NULL},
};

// auto: the FFT when 30 L log2 L < T^2, L = h3_fft_len(T), a cost model fitted to both paths'
// timings (one thread, 128 products, forward and backward, T = 512 to 4096: the ratio FFT /
// direct over L log2 L / T^2 came out 28 to 34). Not monotone in T: L doubles past each power
// of two, so T = 823 .. 1024 take the FFT, 1025 .. 1214 the direct path, 1215 on the FFT.
static int use_fft(const H3 *m, int T) {
    if (m->conv != CONV_AUTO) return m->conv == CONV_FFT;
    double L = h3_fft_len(T);
    return 30 * L * log2(L) < (double)T * T;
}

// 1 when a call of some length up to T convolves by FFT (its buffers are then declared, sized
// for T: the transform length only grows with T).
static int may_fft(const H3 *m, int T) {
    for (int t = T; t >= 1; t--)
        if (use_fft(m, t)) return 1;
    return 0;
}

static void *h3_create(const MixerDims *d) {
    H3 *m = mallocCheck(sizeof *m);
    qkv_shape(&m->s, d, 0);
    long N = cfg_int(d->cfg, "h3_d_state"), P = cfg_int(d->cfg, "h3_head_dim");
    if (N > 1024) die_input("h3_d_state: expected 1..1024, got %ld", N);
    if (P > d->C || d->C % P) die_input("h3_head_dim: expected a divisor of d_model %d, got %ld", d->C, P);
    if ((d->C / P) % d->H)
        die_input("h3_head_dim: d_model / h3_head_dim = %ld heads must divide by n_head %d", d->C / P, d->H);
    m->P = (int)P, m->NH = d->C / (int)P, m->N = (int)N;
    const char *conv = cfg_str(d->cfg, "h3_conv");
    m->conv = !strcmp(conv, "fft") ? CONV_FFT : !strcmp(conv, "direct") ? CONV_DIRECT : CONV_AUTO;
    m->fft_bufs = may_fft(m, m->s.T);
    return m;
}

static void h3_destroy(void *st) { free(st); }

static int h3_params(const void *st, ParamDecl *out) {
    const H3 *m = st;
    int n = qkv_params(&m->s, out), C = m->s.C, N = m->N, NH = m->NH;
    out[n++] = (ParamDecl){"attn.ssm_k.weight", 2, {C, N}, INIT_UNIFORM, 1 / sqrt((double)N), 0};
    out[n++] = (ParamDecl){"attn.ssm_k.D", 1, {C}, INIT_NORMAL, 1, 0};
    out[n++] = (ParamDecl){"attn.ssm.log_dt", 1, {NH}, INIT_CUSTOM, 0, 1};
    out[n++] = (ParamDecl){"attn.ssm.A_log", 2, {NH, N}, INIT_CUSTOM, 0, 1};
    out[n++] = (ParamDecl){"attn.ssm.C", 2, {NH, N}, INIT_NORMAL, 1, 0};
    out[n++] = (ParamDecl){"attn.ssm.D", 1, {NH}, INIT_NORMAL, 1, 0};
    return n;
}

static void h3_init_custom(const void *st, int index, real *w, Rng *rng) {
    const H3 *m = st;
    if (index == P_A_LOG) {  // S4D-Real: a_n = -(n + 1)
        for (int h = 0; h < m->NH; h++)
            for (int n = 0; n < m->N; n++) w[(size_t)h * m->N + n] = (real)log(n + 1.0);
    } else if (index == P_LOG_DT) {  // dt log-uniform in [1e-3, 1e-1] (S4's dt_min, dt_max)
        for (int h = 0; h < m->NH; h++) w[h] = (real)(log(1e-3) + rng_uniform(rng) * (log(1e-1) - log(1e-3)));
    }
}

// 1 when a call of length T convolves by FFT.
static size_t work_per_thread(const H3 *m) {
    size_t fft = m->fft_bufs ? h3_fft_work(m->s.T) : 0;
    return fft > (size_t)m->s.C ? fft : (size_t)m->s.C;
}

static void h3_buffers(const void *st, int B, int T, BufDecl *saved, int *n_saved, BufDecl *scratch, int *n_scratch) {
    const H3 *m = st;
    size_t BT = (size_t)B * T, C = (size_t)m->s.C;
    qkv_buffers(&m->s, B, T, saved, n_saved, scratch, n_scratch);
    saved[A_KS] = (BufDecl){"k_shift", BT * C};
    saved[A_Y] = (BufDecl){"ssm_out", BT * C * m->P};
    saved[A_KERNEL] = (BufDecl){"kernel", (size_t)m->NH * T};
    *n_saved = A_KERNEL + 1;
    scratch[S_KE] = (BufDecl){"kernel_rows", (size_t)T * C * m->P};
    scratch[S_DK] = (BufDecl){"dkernel", (size_t)B * m->NH * T};
    scratch[S_DSHIFT] = (BufDecl){"dshift", (size_t)B * C * (m->N + 1)};
    scratch[S_WT] = (BufDecl){"shift_taps_t", (size_t)m->N * C};
    scratch[S_DKS] = (BufDecl){"dk_shift", BT * C};
    scratch[S_U] = (BufDecl){"products", BT * C * m->P};
    scratch[S_DY] = (BufDecl){"dssm_out", BT * C * m->P};
    scratch[S_DU] = (BufDecl){"dproducts", BT * C * m->P};
    scratch[S_DKE] = (BufDecl){"dkernel_rows", BT * C * m->P};
    size_t L = m->fft_bufs ? (size_t)h3_fft_len(T) : 0;
    scratch[S_KF] = (BufDecl){"kernel_fft", 2 * L * C * m->P};
    scratch[S_TW] = (BufDecl){"fft_twiddles", L};
    scratch[S_WORK] = (BufDecl){"work", (size_t)omp_get_max_threads() * work_per_thread(m)};
    *n_scratch = S_WORK + 1;
}

// Every head's kernel for this call's length, and as rows of the products (KE[l][m] = K of
// m's head at lag l).
static void kernels(const H3 *m, real *const *p, int T, real *K, real *KE) {
    int N = m->N, P = m->P, M = m->s.C * P;
#pragma omp parallel for schedule(static)
    for (int h = 0; h < m->NH; h++)
        h3_ssm_kernel(N, T, p[P_LOG_DT][h], p[P_A_LOG] + (size_t)h * N, p[P_SSM_C] + (size_t)h * N, p[P_SSM_D][h],
                      K + (size_t)h * T);
    for (int l = 0; l < T; l++)
        for (int mm = 0; mm < M; mm++) KE[(size_t)l * M + mm] = K[(size_t)(mm / (P * P)) * T + l];
}

// The shift SSM's taps [C,N] as rows of channels [N,C] (the row kernels' layout).
static void transpose_taps(const H3 *m, const real *w, real *wT) {
    for (int c = 0; c < m->s.C; c++)
        for (int l = 0; l < m->N; l++) wT[(size_t)l * m->s.C + c] = w[(size_t)c * m->N + l];
}

// The products U[t][(h*P + d1)*P + d2] = ks[t][h*P + d1] v[t][h*P + d2] of one batch row; ks rows
// at stride C, v rows at stride 3C.
static void products(int T, int C, int P, const real *ks, const real *v, real *U) {
    int M = C * P;
    for (int t = 0; t < T; t++) {
        const real *kt = ks + (size_t)t * C, *vt = v + (size_t)t * 3 * C;
        real *u = U + (size_t)t * M;
        if (P == 1) {  // H3's and Zoology's heads of one channel: one vector loop
#pragma omp simd
            for (int c = 0; c < C; c++) u[c] = kt[c] * vt[c];
            continue;
        }
        for (int c = 0; c < C; c++) {  // c = h*P + d1
            const real *vh = vt + (c / P) * P;
            for (int d2 = 0; d2 < P; d2++) u[c * P + d2] = kt[c] * vh[d2];
        }
    }
}

// The convolution's tasks: (batch row, strip of H3_CONV_LANES products), so a few long
// sequences still give every thread work.
static int n_strips(int M, int lanes) { return (M + lanes - 1) / lanes; }

// Task k of the convolution: batch row *b, products *m0 .. *m1-1 (S strips of `lanes` per row).
static void conv_task(int k, int S, int lanes, int M, int *b, int *m0, int *m1) {
    *b = k / S, *m0 = k % S * lanes;
    *m1 = *m0 + lanes < M ? *m0 + lanes : M;
}

// For the FFT path: the twiddles and every product's kernel transformed, a strip per task.
static void fft_kernels(const H3 *m, MixerIO *io, int T) {
    int M = m->s.C * m->P, S = n_strips(M, H3_CONV_LANES);
    h3_fft_twiddles(h3_fft_len(T), io->tmp[S_TW]);
#pragma omp parallel for schedule(static)
    for (int k = 0; k < S; k++) {
        int m0 = k * H3_CONV_LANES, m1 = m0 + H3_CONV_LANES < M ? m0 + H3_CONV_LANES : M;
        h3_fft_kernel_rows(T, M, m0, m1, io->tmp[S_KE], io->tmp[S_TW], io->tmp[S_KF],
                           io->tmp[S_WORK] + (size_t)omp_get_thread_num() * work_per_thread(m));
    }
}

static void h3_forward(const void *st, MixerIO *io) {
    const H3 *m = st;
    int B = io->B, T = io->T, C = m->s.C, C3 = 3 * C, P = m->P, N = m->N, M = C * P;
    qkv_in_forward(&m->s, io);
    kernels(m, io->p, T, io->act[A_KERNEL], io->tmp[S_KE]);
    const real *qkv = io->act[QKV_A_QKV], *KE = io->tmp[S_KE];
    real *ksa = io->act[A_KS], *ya = io->act[A_Y], *att = io->act[QKV_A_ATT], *wT = io->tmp[S_WT], *Ua = io->tmp[S_U];
    transpose_taps(m, io->p[P_SK_W], wT);
    // the shift SSM and the products, per batch row
#pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++) {
        const real *q = qkv + (size_t)b * T * C3;
        real *ks = ksa + (size_t)b * T * C;
        h3_shift_forward_rows(T, N, C, wT, io->p[P_SK_D], q + C, C3, ks);
        products(T, C, P, ks, q + 2 * C, Ua + (size_t)b * T * M);
    }
    // the diagonal SSM (by FFT two strips share a transform, so a task takes two)
    int fft = use_fft(m, T), lanes = fft ? 2 * H3_CONV_LANES : H3_CONV_LANES, S = n_strips(M, lanes);
    if (fft) fft_kernels(m, io, T);
#pragma omp parallel for schedule(static)
    for (int task = 0; task < B * S; task++) {
        int b, m0, m1;
        conv_task(task, S, lanes, M, &b, &m0, &m1);
        size_t o = (size_t)b * T * M;
        if (fft)
            h3_conv_forward_fft(T, M, m0, m1, io->tmp[S_KF], io->tmp[S_TW], Ua + o, ya + o,
                                io->tmp[S_WORK] + (size_t)omp_get_thread_num() * work_per_thread(m));
        else h3_conv_forward_rows(T, M, m0, m1, KE, Ua + o, ya + o);
    }
    // o[t][h*P + d2] = sum_d1 q[t][h*P + d1] y[t][(h*P + d1)*P + d2]
#pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            const real *qt = qkv + ((size_t)b * T + t) * C3, *yt = ya + ((size_t)b * T + t) * M;
            real *o = att + ((size_t)b * T + t) * C;
            // P == 1: the general loop below with one term, to the bit. Its sums start at 0 and add
            // products, which -ffp-contract=fast makes s = fma(a, b, 0): the rounded product, +0
            // for a -0 one. `0 + a * b` is that value (contracted to the same fma), and in
            // `x += 0 + a * b` it keeps the product out of an fma with x, as `x += s` does. Plain
            // `a * b` would differ: a -0 where the loop has +0, and in `x += a * b` one fma with x
            // (one rounding, not two). So the `0 +` stays, here and in h3_backward.
            if (P == 1) {
#pragma omp simd
                for (int c = 0; c < C; c++) o[c] = 0 + qt[c] * yt[c];
                continue;
            }
            for (int c = 0; c < C; c++) o[c] = 0;
            for (int c = 0; c < C; c++) {  // c = h*P + d1
                real *oh = o + (c / P) * P;
                for (int d2 = 0; d2 < P; d2++) oh[d2] += qt[c] * yt[c * P + d2];
            }
        }
    }
    qkv_out_forward(&m->s, io);
}

static void h3_backward(const void *st, MixerIO *io) {
    const H3 *m = st;
    int B = io->B, T = io->T, C = m->s.C, C3 = 3 * C, P = m->P, N = m->N, NH = m->NH, M = C * P;
    int S = n_strips(M, H3_CONV_LANES);
    const real *datt = qkv_out_backward(&m->s, io);
    kernels(m, io->p, T, io->act[A_KERNEL], io->tmp[S_KE]);
    const real *qkv = io->act[QKV_A_QKV], *ksa = io->act[A_KS], *ya = io->act[A_Y], *KE = io->tmp[S_KE];
    real *dqkv = io->tmp[QKV_S_DQKV], *dK = io->tmp[S_DK], *dshift = io->tmp[S_DSHIFT];
    real *wT = io->tmp[S_WT], *dksa = io->tmp[S_DKS], *Ua = io->tmp[S_U], *dYa = io->tmp[S_DY], *dUa = io->tmp[S_DU];
    real *dKEa = io->tmp[S_DKE];
    transpose_taps(m, io->p[P_SK_W], wT);
    memset(dshift, 0, sizeof(real) * B * C * (N + 1));
    memset(dKEa, 0, sizeof(real) * B * T * M);
    // through o = sum_d1 q[d1] y[d1, d2]: dq and dy; and the products again
#pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++) {
        const real *q = qkv + (size_t)b * T * C3, *y = ya + (size_t)b * T * M, *dout = datt + (size_t)b * T * C;
        real *dq = dqkv + (size_t)b * T * C3, *dY = dYa + (size_t)b * T * M;
        for (int t = 0; t < T; t++) {
            const real *qt = q + (size_t)t * C3, *yt = y + (size_t)t * M, *g = dout + (size_t)t * C;
            real *dqt = dq + (size_t)t * C3, *dyt = dY + (size_t)t * M;
            if (P == 1) {
#pragma omp simd
                for (int c = 0; c < C; c++) {
                    dqt[c] += 0 + g[c] * yt[c];  // `0 +`: as s below (h3_forward's P == 1)
                    dyt[c] = qt[c] * g[c];
                }
                continue;
            }
            for (int c = 0; c < C; c++) {  // c = h*P + d1
                const real *gh = g + (c / P) * P;
                real s = 0;
                for (int d2 = 0; d2 < P; d2++) {
                    s += gh[d2] * yt[c * P + d2];
                    dyt[c * P + d2] = qt[c] * gh[d2];
                }
                dqt[c] += s;
            }
        }
        products(T, C, P, ksa + (size_t)b * T * C, q + 2 * C, Ua + (size_t)b * T * M);
    }
    // through the diagonal SSM
    int fft = use_fft(m, T);
    if (fft) fft_kernels(m, io, T);
#pragma omp parallel for schedule(static)
    for (int task = 0; task < B * S; task++) {
        int b, m0, m1;
        conv_task(task, S, H3_CONV_LANES, M, &b, &m0, &m1);
        size_t o = (size_t)b * T * M;
        if (fft)
            h3_conv_backward_fft(T, M, m0, m1, io->tmp[S_KF], io->tmp[S_TW], Ua + o, dYa + o, dUa + o, dKEa + o,
                                 io->tmp[S_WORK] + (size_t)omp_get_thread_num() * work_per_thread(m));
        else h3_conv_backward_rows(T, M, m0, m1, KE, Ua + o, dYa + o, dUa + o, dKEa + o);
    }
#pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++) {
        const real *q = qkv + (size_t)b * T * C3, *ks = ksa + (size_t)b * T * C;
        const real *dU = dUa + (size_t)b * T * M, *dKE = dKEa + (size_t)b * T * M;
        real *dq = dqkv + (size_t)b * T * C3, *dks = dksa + (size_t)b * T * C;
        real *dKb = dK + (size_t)b * NH * T;
        for (int h = 0; h < NH; h++)
            for (int l = 0; l < T; l++) {
                real s = 0;
                for (int j = 0; j < P * P; j++) s += dKE[(size_t)l * M + h * P * P + j];
                dKb[(size_t)h * T + l] = s;
            }
        // through the products u = ks[d1] v[d2]: dks, and dv into dqkv
        for (int t = 0; t < T; t++) {
            const real *kt = ks + (size_t)t * C, *vt = q + (size_t)t * C3 + 2 * C, *du = dU + (size_t)t * M;
            real *dkt = dks + (size_t)t * C, *dvt = dq + (size_t)t * C3 + 2 * C;
            if (P == 1) {
#pragma omp simd
                for (int c = 0; c < C; c++) {
                    dkt[c] = 0 + du[c] * vt[c];  // `0 +`: as s below (h3_forward's P == 1)
                    dvt[c] += du[c] * kt[c];
                }
                continue;
            }
            for (int c = 0; c < C; c++) {  // c = h*P + d1
                const real *vh = vt + (c / P) * P;
                real *dvh = dvt + (c / P) * P, s = 0;
                for (int d2 = 0; d2 < P; d2++) {
                    s += du[c * P + d2] * vh[d2];
                    dvh[d2] += du[c * P + d2] * kt[c];
                }
                dkt[c] = s;
            }
        }
        // through the shift SSM: dk into dqkv, the taps' gradients into the row's slot of dshift
        real *dsh = dshift + (size_t)b * (N + 1) * C;
        h3_shift_backward_rows(T, N, C, wT, io->p[P_SK_D], q + C, C3, dks, dq + C, C3, dsh, dsh + (size_t)N * C,
                               io->tmp[S_WORK] + (size_t)omp_get_thread_num() * work_per_thread(m));
    }
    // Sums over batch rows in order (thread-count free), then the kernel parameters' gradients.
#pragma omp parallel for schedule(static)
    for (int h = 0; h < NH; h++) {
        real *acc = dK + (size_t)h * T;  // batch row 0's slot collects the sum
        for (int b = 1; b < B; b++)
            for (int l = 0; l < T; l++) acc[l] += dK[((size_t)b * NH + h) * T + l];
        h3_ssm_kernel_backward(N, T, io->p[P_LOG_DT][h], io->p[P_A_LOG] + (size_t)h * N, io->p[P_SSM_C] + (size_t)h * N,
                               acc, io->g[P_LOG_DT] + h, io->g[P_A_LOG] + (size_t)h * N, io->g[P_SSM_C] + (size_t)h * N,
                               io->g[P_SSM_D] + h);
    }
#pragma omp parallel for schedule(static)
    for (int l = 0; l <= N; l++) {
        real *acc = dshift + (size_t)l * C;  // batch row 0's slot collects the sum
        for (int b = 1; b < B; b++) {
            const real *part = dshift + ((size_t)b * (N + 1) + l) * C;
            for (int c = 0; c < C; c++) acc[c] += part[c];
        }
        for (int c = 0; c < C; c++) {
            if (l < N) io->g[P_SK_W][(size_t)c * N + l] += acc[c];
            else io->g[P_SK_D][c] += acc[c];
        }
    }
    qkv_in_backward(&m->s, io);
}

// ---------------------------------------------------------------------------------------------
// Maps: head h's a_ij = Kbar_h(i-j) (q_i . ks_j) over its P channels, acting on v_j (W = P).

static int h3_n_maps(const void *st) { return ((const H3 *)st)->NH; }

static void h3_attention(const void *st, const MixerIO *io, int b, int h, real *a) {
    const H3 *m = st;
    int T = io->T, C = m->s.C, P = m->P;
    const real *K = io->act[A_KERNEL] + (size_t)h * T;  // the forward's
    // q . ks for every (i, j) as one small GEMM (called inside the evaluator's parallel loop,
    // hence the serial one), then the kernel and the causal mask
    gemm_serial(0, 1, T, T, P, io->act[QKV_A_QKV] + (size_t)b * T * 3 * C + h * P, 3 * C,
                io->act[A_KS] + (size_t)b * T * C + h * P, C, 0, a, T);
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) a[(size_t)i * T + j] = j <= i ? a[(size_t)i * T + j] * K[i - j] : 0;
}

static void h3_finish(const void *st, MixerIO *io, const real *o) {
    const H3 *m = st;
    qkv_finish(&m->s, io, m->NH, o);
}

static int h3_attention_values(const void *st, const MixerIO *io, int b, int h, real *v, real *o) {
    const H3 *m = st;
    int T = io->T, C = m->s.C, P = m->P;
    for (int t = 0; t < T; t++) {
        size_t row = (size_t)b * T + t;
        memcpy(v + (size_t)t * P, io->act[QKV_A_QKV] + row * 3 * C + 2 * C + (size_t)h * P, sizeof(real) * P);
        memcpy(o + (size_t)t * P, io->act[QKV_A_ATT] + row * C + (size_t)h * P, sizeof(real) * P);
    }
    return P;
}

// ---------------------------------------------------------------------------------------------
// Generation. State: the shift SSM's window [C, N] (last N keys, newest first) and the diagonal
// SSM's states [NH, P, P, N]; then scratch for one token: qkv [3C], ks [C], o [C], r [N], bd [N].

static size_t h3_state_floats(const void *st) {
    const H3 *m = st;
    return (size_t)m->s.C * m->N + (size_t)m->s.C * m->P * m->N;  // the shift SSM window and the diagonal SSM states
}

static size_t h3_state_size(const void *st) {
    const H3 *m = st;
    size_t C = (size_t)m->s.C, N = (size_t)m->N;
    return C * N + C * m->P * N + 5 * C + 2 * N;
}

static void h3_step(const void *st, real *const *p, real *state, int t, const real *x, real *y) {
    const H3 *m = st;
    int C = m->s.C, P = m->P, N = m->N;
    real *win = state, *xs = win + (size_t)C * N, *qkv = xs + (size_t)C * P * N, *ks = qkv + 3 * C;
    real *o = ks + C, *r = o + C, *bd = r + N;
    (void)t;
    qkv_step_in(&m->s, p, x, qkv);
    for (int c = 0; c < C; c++)
        ks[c] = h3_shift_step(N, p[P_SK_W] + (size_t)c * N, p[P_SK_D][c], win + (size_t)c * N, qkv[C + c]);
    for (int h = 0; h < m->NH; h++) {
        h3_ssm_discretize(N, p[P_LOG_DT][h], p[P_A_LOG] + (size_t)h * N, r, bd);
        for (int d2 = 0; d2 < P; d2++) {
            real s = 0;
            for (int d1 = 0; d1 < P; d1++) {
                real *xh = xs + (((size_t)h * P + d1) * P + d2) * N;
                real u = ks[h * P + d1] * qkv[2 * C + h * P + d2];
                s += qkv[h * P + d1] * h3_ssm_step(N, r, bd, p[P_SSM_C] + (size_t)h * N, p[P_SSM_D][h], xh, u);
            }
            o[h * P + d2] = s;
        }
    }
    qkv_step_out(&m->s, p, o, y);
}

// Per token: the shift filter (N taps per channel), then per head P*P products convolved over the
// causal triangle and the contraction with q; the kernels (NH N T) are small beside them.
static void h3_flops(const void *st, int B, int T, double *fwd, double *bwd) {
    const H3 *m = st;
    double BT = (double)B * T, C = m->s.C, P = m->P, N = m->N < T ? m->N : T;
    // the convolution per product: directly the causal triangle; by FFT two transforms of
    // length L (5 L log2 L each, radix 2) and a complex product, and the kernel's transform
    double conv = (double)B * C * P * T * (T + 1.0);
    if (use_fft(m, T)) {
        double L = h3_fft_len(T), fft = 5 * L * log2(L);
        conv = (double)B * C * P * (2 * fft + 6 * L) + C * P * fft;
    }
    double mix = 2 * BT * C * N + conv + 4 * BT * C * P + 3.0 * m->NH * m->N * T;
    qkv_flops(&m->s, B, T, mix, fwd, bwd);
}

const MixerKind mixer_h3 = {
    .name = "h3",
    .summary = "H3: q * SSM_diag(SSM_shift(k) * v), S4D-Real diagonal SSM, heads of h3_head_dim channels (Fu, Dao et al. 2022)",
    .options = h3_keys,
    .create = h3_create,
    .destroy = h3_destroy,
    .params = h3_params,
    .init_custom = h3_init_custom,
    .buffers = h3_buffers,
    .forward = h3_forward,
    .backward = h3_backward,
    .n_maps = h3_n_maps,
    .attention = h3_attention,
    .attention_values = h3_attention_values,
    .finish = h3_finish,
    .state_size = h3_state_size,
    .state_floats = h3_state_floats,
    .step = h3_step,
    .flops = h3_flops,
};
