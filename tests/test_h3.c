// H3 beyond the generic checks: its SSM kernels (model/mixers/h3_ssm.c) against the recurrences
// they come from, the training path's row kernels against the per-sequence ones, finite differences of the kernel's parameters, the mixer with heads of several
// channels and past 64 tokens, the map against its definition, init, names and refused options.
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/mixers/h3_ssm.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

// The convolution with the kernel built from (log_dt, A_log, C, D) equals stepping the state,
// and the shift filter equals its shift register, over 150 tokens.
TEST(h3_kernels_match_their_recurrences) {
    int N = 6, T = 150;
    real A_log[6], Cc[6], r[6], bd[6], x[6] = {0}, w[6], s[6] = {0};
    real u[150], y[150], K[150], Krev[150], ks[150];
    Rng rng;
    rng_seed(&rng, 80);
    for (int n = 0; n < N; n++) {
        A_log[n] = (real)(log(n + 1.0) + 0.3 * rng_normal(&rng));
        Cc[n] = (real)rng_normal(&rng);
        w[n] = (real)rng_normal(&rng);
    }
    fill_normal(u, T, &rng, 1);
    real log_dt = (real)log(0.05), D = (real)0.7, Dk = (real)-0.4;
    h3_ssm_kernel(N, T, log_dt, A_log, Cc, D, K);
    for (int l = 0; l < T; l++) Krev[T - 1 - l] = K[l];
    h3_conv_forward(T, Krev, u, y);
    h3_shift_forward(T, N, w, Dk, u, ks);
    h3_ssm_discretize(N, log_dt, A_log, r, bd);
    for (int t = 0; t < T; t++) {
        CHECK_CLOSE(y[t], h3_ssm_step(N, r, bd, Cc, D, x, u[t]), 1e-12);
        CHECK_CLOSE(ks[t], h3_shift_step(N, w, Dk, s, u[t]), 1e-13);
    }
}

// The training path's shift SSM over rows of channels against the per-channel filter and its
// backward (the plain reference), with strided rows, more taps than tokens, and gradients that
// must be added to what is there; the third case's taps' gradients go through the blocks of 8 taps
// and 16 channels (h3_ssm.c: shift_dw_block) and the taps and channels they leave.
TEST(h3_shift_rows_match_the_per_channel_filter) {
    static const int cases[3][3] = {{5, 12, 4}, {3, 9, 15}, {19, 20, 12}};  // C, T, N
    for (int k = 0; k < 3; k++) {
        int C = cases[k][0], T = cases[k][1], N = cases[k][2], ld = 3 * C + 1;
        real *in = mallocCheck(sizeof(real) * T * ld), *w = mallocCheck(sizeof(real) * C * N);
        real *wT = mallocCheck(sizeof(real) * N * C), *Dk = mallocCheck(sizeof(real) * C);
        real *ks = mallocCheck(sizeof(real) * T * C), *dks = mallocCheck(sizeof(real) * T * C);
        real *dk = mallocCheck(sizeof(real) * T * ld), *dk0 = mallocCheck(sizeof(real) * T * ld);
        real *dwT = mallocCheck(sizeof(real) * N * C), *dDk = mallocCheck(sizeof(real) * C),
             *tmp = mallocCheck(sizeof(real) * C);
        real col[20], ksc[20], dksc[20], dkc[20], dw[16];
        Rng rng;
        rng_seed(&rng, 86 + k);
        fill_normal(in, T * ld, &rng, 1);
        fill_normal(w, C * N, &rng, 1);
        fill_normal(Dk, C, &rng, 1);
        fill_normal(dks, T * C, &rng, 1);
        fill_normal(dk0, T * ld, &rng, 1);
        fill_normal(dwT, N * C, &rng, 1);
        fill_normal(ks, T * C, &rng, 1);  // overwritten
        memcpy(dk, dk0, sizeof(real) * T * ld);
        for (int c = 0; c < C; c++)
            for (int l = 0; l < N; l++) wT[l * C + c] = w[c * N + l];
        real *dwT0 = mallocCheck(sizeof(real) * N * C), dDk0 = (real)0.25;
        memcpy(dwT0, dwT, sizeof(real) * N * C);
        for (int c = 0; c < C; c++) dDk[c] = dDk0;
        h3_shift_forward_rows(T, N, C, wT, Dk, in + 1, ld, ks);
        h3_shift_backward_rows(T, N, C, wT, Dk, in + 1, ld, dks, dk + 1, ld, dwT, dDk, tmp);
        for (int c = 0; c < C; c++) {
            for (int t = 0; t < T; t++)
                col[t] = in[t * ld + 1 + c], dksc[t] = dks[t * C + c], dkc[t] = dk0[t * ld + 1 + c];
            for (int l = 0; l < N; l++) dw[l] = dwT0[l * C + c];
            real dd = dDk0;
            h3_shift_forward(T, N, w + c * N, Dk[c], col, ksc);
            h3_shift_backward(T, N, w + c * N, Dk[c], col, dksc, dkc, dw, &dd);
            for (int t = 0; t < T; t++) {
                CHECK_CLOSE(ks[t * C + c], ksc[t], 1e-13);
                CHECK_CLOSE(dk[t * ld + 1 + c], dkc[t], 1e-13);
            }
            for (int l = 0; l < N; l++) CHECK_CLOSE(dwT[l * C + c], dw[l], 1e-13);
            CHECK_CLOSE(dDk[c], dd, 1e-13);
        }
        for (int t = 0; t < T; t++)  // outside the rows' lanes: untouched
            for (int c = 0; c < ld; c++)
                if (c < 1 || c > C) CHECK(dk[t * ld + c] == dk0[t * ld + c]);
        free(in), free(w), free(wT), free(Dk), free(ks), free(dks), free(dk), free(dk0), free(dwT), free(dDk),
            free(tmp), free(dwT0);
    }
}

// The diagonal SSM's convolution over rows of M sequences, each with its own kernel, against the
// one-sequence convolution and its backward (kernel gradients added to what is there): a whole
// vector strip with a plain-loop rest (M = 21), blocks of rows cut short (T = 13, T = 3), the plain
// loop alone (M = 5), and a lane range that starts inside the rows (lanes 16..36 of 37).
TEST(h3_conv_rows_match_the_per_sequence_convolution) {
    static const int cases[4][4] = {{21, 13, 0, 21}, {16, 3, 0, 16}, {5, 9, 0, 5}, {37, 11, 16, 37}};  // M, T, m0, m1
    for (int k = 0; k < 4; k++) {
        int M = cases[k][0], T = cases[k][1], m0 = cases[k][2], m1 = cases[k][3], n = M * T;
        real *KE = mallocCheck(sizeof(real) * n), *U = mallocCheck(sizeof(real) * n), *Y = mallocCheck(sizeof(real) * n);
        real *dY = mallocCheck(sizeof(real) * n), *dU = mallocCheck(sizeof(real) * n), *dKE = mallocCheck(sizeof(real) * n);
        real *dKE0 = mallocCheck(sizeof(real) * n), *Y0 = mallocCheck(sizeof(real) * n),
             *dU0 = mallocCheck(sizeof(real) * n);
        Rng rng;
        rng_seed(&rng, 88 + k);
        fill_normal(KE, n, &rng, 1);
        fill_normal(U, n, &rng, 1);
        fill_normal(dY, n, &rng, 1);
        fill_normal(dKE0, n, &rng, 1);
        fill_normal(Y0, n, &rng, 1);  // overwritten in the range, kept outside it
        fill_normal(dU0, n, &rng, 1);
        memcpy(dKE, dKE0, sizeof(real) * n), memcpy(Y, Y0, sizeof(real) * n), memcpy(dU, dU0, sizeof(real) * n);
        h3_conv_forward_rows(T, M, m0, m1, KE, U, Y);
        h3_conv_backward_rows(T, M, m0, m1, KE, U, dY, dU, dKE);
        for (int m = 0; m < M; m++) {
            real K[16], Krev[16], u[16], dy[16], y[16], du[16], dK[16];
            for (int t = 0; t < T; t++) {
                K[t] = KE[t * M + m], u[t] = U[t * M + m], dy[t] = dY[t * M + m], dK[t] = dKE0[t * M + m];
                Krev[T - 1 - t] = K[t];
            }
            h3_conv_forward(T, Krev, u, y);
            h3_conv_backward(T, K, u, dy, du, dK);
            int in = m >= m0 && m < m1;
            for (int t = 0; t < T; t++) {
                CHECK_CLOSE(Y[t * M + m], in ? y[t] : Y0[t * M + m], 1e-13);
                CHECK_CLOSE(dU[t * M + m], in ? du[t] : dU0[t * M + m], 1e-13);
                CHECK_CLOSE(dKE[t * M + m], in ? dK[t] : dKE0[t * M + m], 1e-13);
            }
        }
        free(KE), free(U), free(Y), free(dY), free(dU), free(dKE), free(dKE0), free(Y0), free(dU0);
    }
}

// The convolution by FFT against the direct one: forward, both correlations of the backward
// (kernel gradients added to what is there), a strip cut short, a lane range inside the rows,
// lengths that are and are not powers of two, and one token.
TEST(h3_conv_fft_matches_the_direct_convolution) {
    // M, T, m0, m1; T = 600: transforms of 2048 points, longer than the blocks the first stages
    // run in (1024 points in this build) and their sub-blocks (64), so the sub-blocked, the
    // blocked and the whole passes all run
    static const int cases[5][4] = {{21, 13, 0, 21}, {16, 32, 0, 16}, {37, 50, 16, 37}, {3, 1, 0, 3}, {16, 600, 0, 16}};
    for (int k = 0; k < 5; k++) {
        int M = cases[k][0], T = cases[k][1], m0 = cases[k][2], m1 = cases[k][3], n = M * T, L = h3_fft_len(T);
        CHECK(L >= 2 * T && (L & (L - 1)) == 0);
        real *KE = mallocCheck(sizeof(real) * n), *U = mallocCheck(sizeof(real) * n), *dY = mallocCheck(sizeof(real) * n);
        real *Y = mallocCheck(sizeof(real) * n), *Yf = mallocCheck(sizeof(real) * n), *dU = mallocCheck(sizeof(real) * n);
        real *dUf = mallocCheck(sizeof(real) * n), *dKE = mallocCheck(sizeof(real) * n),
             *dKEf = mallocCheck(sizeof(real) * n);
        real *tw = mallocCheck(sizeof(real) * L), *KF = mallocCheck(sizeof(real) * 2 * L * M);
        real *work = mallocCheck(sizeof(real) * h3_fft_work(T));
        Rng rng;
        rng_seed(&rng, 92 + k);
        fill_normal(KE, n, &rng, 1);
        fill_normal(U, n, &rng, 1);
        fill_normal(dY, n, &rng, 1);
        fill_normal(dKE, n, &rng, 1);
        fill_normal(Y, n, &rng, 1);  // lanes outside the range keep these
        memcpy(dKEf, dKE, sizeof(real) * n), memcpy(Yf, Y, sizeof(real) * n);
        memcpy(dU, Y, sizeof(real) * n), memcpy(dUf, Y, sizeof(real) * n);
        h3_fft_twiddles(L, tw);
        h3_fft_kernel_rows(T, M, m0, m1, KE, tw, KF, work);
        h3_conv_forward_rows(T, M, m0, m1, KE, U, Y);
        h3_conv_backward_rows(T, M, m0, m1, KE, U, dY, dU, dKE);
        h3_conv_forward_fft(T, M, m0, m1, KF, tw, U, Yf, work);
        h3_conv_backward_fft(T, M, m0, m1, KF, tw, U, dY, dUf, dKEf, work);
        for (int i = 0; i < n; i++) {
            CHECK_CLOSE(Yf[i], Y[i], 1e-12);
            CHECK_CLOSE(dUf[i], dU[i], 1e-12);
            CHECK_CLOSE(dKEf[i], dKE[i], 1e-12);
        }
        free(KE), free(U), free(dY), free(Y), free(Yf), free(dU), free(dUf), free(dKE), free(dKEf), free(tw), free(KF),
            free(work);
    }
}

// The FFT path packs two real signals into one complex transform (two strips of products in the
// forward, dy and u in the backward): a signal a million times smaller than its partner must
// keep its own relative precision, lane by lane.
TEST(h3_conv_fft_keeps_small_signals_exact) {
    enum { M = 32, T = 40 };
    int L = h3_fft_len(T), n = M * T;
    real *KE = mallocCheck(sizeof(real) * n), *U = mallocCheck(sizeof(real) * n), *dY = mallocCheck(sizeof(real) * n);
    real *Y = mallocCheck(sizeof(real) * n), *Yf = mallocCheck(sizeof(real) * n), *dU = mallocCheck(sizeof(real) * n);
    real *dUf = mallocCheck(sizeof(real) * n), *dKE = callocCheck(n, sizeof(real)), *dKEf = callocCheck(n, sizeof(real));
    real *tw = mallocCheck(sizeof(real) * L), *KF = mallocCheck(sizeof(real) * 2 * L * M);
    real *work = mallocCheck(sizeof(real) * h3_fft_work(T));
    Rng rng;
    rng_seed(&rng, 97);
    fill_normal(KE, n, &rng, 1);
    fill_normal(U, n, &rng, 1);
    fill_normal(dY, n, &rng, 1);
    for (int t = 0; t < T; t++)
        for (int m = 0; m < M; m++) {
            if (m >= 16) U[t * M + m] *= (real)1e-6;  // the second strip, beside the first
            dY[t * M + m] *= (real)1e-6;              // the gradient, beside u
        }
    h3_fft_twiddles(L, tw);
    h3_fft_kernel_rows(T, M, 0, M, KE, tw, KF, work);
    h3_conv_forward_rows(T, M, 0, M, KE, U, Y);
    h3_conv_backward_rows(T, M, 0, M, KE, U, dY, dU, dKE);
    h3_conv_forward_fft(T, M, 0, M, KF, tw, U, Yf, work);
    h3_conv_backward_fft(T, M, 0, M, KF, tw, U, dY, dUf, dKEf, work);
    const real *got[3] = {Yf, dUf, dKEf}, *want[3] = {Y, dU, dKE};
    for (int k = 0; k < 3; k++)
        for (int m = 0; m < M; m++) {
            double e = 0, nrm = 0;
            for (int t = 0; t < T; t++) {
                double d = (double)got[k][t * M + m] - (double)want[k][t * M + m];
                e += d * d, nrm += (double)want[k][t * M + m] * want[k][t * M + m];
            }
            CHECK(sqrt(e) <= 1e-12 * sqrt(nrm), "output %d lane %d: error %g of norm %g", k, m, sqrt(e), sqrt(nrm));
        }
    free(KE), free(U), free(dY), free(Y), free(Yf), free(dU), free(dUf), free(dKE), free(dKEf), free(tw), free(KF),
        free(work);
}

typedef struct {
    int N, T;
    real log_dt, D, A_log[5], C[5], R[40], K[40];
} KernelCase;

static double kernel_loss(void *ctx) {
    KernelCase *k = ctx;
    h3_ssm_kernel(k->N, k->T, k->log_dt, k->A_log, k->C, k->D, k->K);
    double s = 0;
    for (int l = 0; l < k->T; l++) s += (double)k->K[l] * k->R[l];
    return s;
}

TEST(h3_kernel_backward_matches_finite_differences) {
    KernelCase k = {.N = 5, .T = 40, .log_dt = (real)log(0.02), .D = (real)0.3};
    Rng rng;
    rng_seed(&rng, 81);
    for (int n = 0; n < k.N; n++)
        k.A_log[n] = (real)(log(n + 1.0) + 0.2 * rng_normal(&rng)), k.C[n] = (real)rng_normal(&rng);
    fill_normal(k.R, k.T, &rng, 1);
    real dlog_dt = 0, dA[5] = {0}, dC[5] = {0}, dD = 0;
    h3_ssm_kernel_backward(k.N, k.T, k.log_dt, k.A_log, k.C, k.R, &dlog_dt, dA, dC, &dD);
    check_grad("log_dt", kernel_loss, &k, &k.log_dt, &dlog_dt, 1, 1e-6, 1e-7, 1e-9);
    check_grad("A_log", kernel_loss, &k, k.A_log, dA, 5, 1e-6, 1e-7, 1e-9);
    check_grad("C", kernel_loss, &k, k.C, dC, 5, 1e-6, 1e-7, 1e-9);
    check_grad("D", kernel_loss, &k, &k.D, &dD, 1, 1e-6, 1e-7, 1e-9);
}

// Heads of several channels (products beyond one vector strip, a strip cut short) give the same
// bits with 1 and 2 threads, directly and by FFT; the default (one channel per head) is in
// test_mixers.c.
TEST(h3_heads_of_two_bit_identical_for_one_and_two_threads) {
    MixerRig r;
    omp_set_num_threads(2);  // before the rig sizes its buffers for the thread count
    rig_setup(&r, "h3", "h3_d_state=5 h3_head_dim=2", 12, 2, 3, 37, 0, 2, 89);  // M = 24 products
    rig_check_thread_invariance(&r);
    rig_free(&r);
    rig_setup(&r, "h3", "h3_d_state=5 h3_head_dim=2 h3_conv=fft", 12, 2, 3, 37, 0, 2, 89);  // by FFT
    rig_check_thread_invariance(&r);
    rig_free(&r);
}

TEST(h3_backward_heads_and_lengths) {
    rig_check_all("h3", "h3_d_state=5", 4, 1, 1, 70, 0, 2, 82);                // past 64 tokens
    rig_check_all("h3", "h3_d_state=3 h3_head_dim=2", 8, 2, 2, 9, 0, 2, 83);   // 4 heads of 2
    rig_check_all("h3", "h3_d_state=4 h3_head_dim=4", 8, 1, 1, 11, 0, 2, 84);  // 2 heads of 4
    // the convolution by FFT: finite differences, maps and steps through it
    rig_check_all("h3", "h3_d_state=5 h3_conv=fft", 4, 1, 1, 70, 0, 2, 90);
    rig_check_all("h3", "h3_d_state=3 h3_head_dim=2 h3_conv=fft", 8, 2, 2, 9, 0, 2, 91);
}

// a_ij = Kbar(i-j) q_i.ks_j rebuilt from the parameters for heads of 2 channels.
TEST(h3_map_is_the_kernel_times_q_dot_shifted_k) {
    MixerRig r;
    int C = 4, P = 2, N = 3, T = 10;
    rig_setup(&r, "h3", "h3_d_state=3 h3_head_dim=2", C, 1, 1, T, 0, 2, 85);
    CHECK(r.kind->n_maps && r.kind->n_maps(r.st) == 2);
    rig_loss(&r);
    MixerIO io = rig_io(&r);
    const real *w = rig_param(&r, "attn.qkv.weight"), *bias = rig_param(&r, "attn.qkv.bias");
    const real *sw = rig_param(&r, "attn.ssm_k.weight"), *sd = rig_param(&r, "attn.ssm_k.D");
    double qv[10][4], kv[10][4], ks[10][4];
    for (int t = 0; t < T; t++)
        for (int c = 0; c < C; c++) {
            qv[t][c] = bias[c], kv[t][c] = bias[C + c];
            for (int i = 0; i < C; i++)
                qv[t][c] += (double)w[c * C + i] * r.x[t * C + i], kv[t][c] += (double)w[(C + c) * C + i] * r.x[t * C + i];
        }
    for (int t = 0; t < T; t++)
        for (int c = 0; c < C; c++) {
            ks[t][c] = sd[c] * kv[t][c];
            for (int l = 0; l < N && l <= t; l++) ks[t][c] += sw[c * N + l] * kv[t - l][c];
        }
    real *a = mallocCheck(sizeof(real) * T * T);
    for (int h = 0; h < 2; h++) {
        double dt = exp(rig_param(&r, "attn.ssm.log_dt")[h]), K[10] = {0};
        const real *Al = rig_param(&r, "attn.ssm.A_log") + h * N, *Cc = rig_param(&r, "attn.ssm.C") + h * N;
        for (int l = 0; l < T; l++)
            for (int n = 0; n < N; n++) {
                double an = -exp(Al[n]);
                K[l] += Cc[n] * (exp(dt * an) - 1) / an * exp(dt * an * l);
            }
        K[0] += rig_param(&r, "attn.ssm.D")[h];
        r.kind->attention(r.st, &io, 0, h, a);
        for (int i = 0; i < T; i++)
            for (int j = 0; j <= i; j++) {
                double s = 0;
                for (int d = 0; d < P; d++) s += qv[i][h * P + d] * ks[j][h * P + d];
                CHECK_CLOSE(a[i * T + j], K[i - j] * s, 1e-12);
            }
    }
    free(a);
    rig_free(&r);
}

TEST(h3_init_names_and_shapes) {
    MixerRig r;
    int C = 8, N = 64;
    rig_setup(&r, "h3", "h3_head_dim=1", C, 2, 1, 3, 0, 2, 86);  // default d_state 64, head_dim 1
    const char *names[] = {"attn.qkv.weight",   "attn.qkv.bias", "attn.proj.weight", "attn.proj.bias",
                           "attn.ssm_k.weight", "attn.ssm_k.D",  "attn.ssm.log_dt",  "attn.ssm.A_log",
                           "attn.ssm.C",        "attn.ssm.D"};
    const int rows[] = {3 * C, 3 * C, C, C, C, C, C, C, C, C};
    CHECK(r.n_params == 10, "%d tensors", r.n_params);
    for (int i = 0; i < 10; i++)
        CHECK(!strcmp(r.decl[i].name, names[i]) && r.decl[i].shape[0] == rows[i], "tensor %d is %s", i, r.decl[i].name);
    CHECK(r.decl[4].shape[1] == N && r.decl[7].shape[1] == N && r.decl[8].shape[1] == N);
    const real *A_log = rig_param(&r, "attn.ssm.A_log"), *log_dt = rig_param(&r, "attn.ssm.log_dt");
    for (int h = 0; h < C; h++) {
        CHECK(log_dt[h] >= log(1e-3) && log_dt[h] <= log(1e-1));
        for (int n = 0; n < N; n++) CHECK_CLOSE(exp(A_log[h * N + n]), n + 1, 1e-12);  // S4D-Real
    }
    CHECK(r.kind->n_maps && r.kind->n_maps(r.st) == C && r.kind->step && r.kind->flops);
    rig_free(&r);
    rig_setup(&r, "h3", NULL, C, 2, 1, 3, 0, 2, 86);  // the default head_dim is 2, as Zoology's MQAR config
    CHECK(r.kind->n_maps(r.st) == C / 2, "%d maps", r.kind->n_maps(r.st));
    CHECK(rig_param(&r, "attn.ssm.log_dt") && r.decl[6].shape[0] == C / 2, "log_dt has %d rows", (int)r.decl[6].shape[0]);
    rig_free(&r);
}

TEST(h3_rejects_bad_options) {
    char err[512];
    CHECK(rig_create_status("h3", "h3_head_dim=3", 8, 1, 4, err, sizeof err) == 2);
    CHECK(strstr(err, "h3_head_dim"), "%s", err);
    CHECK(rig_create_status("h3", "h3_head_dim=8", 8, 2, 4, err, sizeof err) == 2);  // 1 head, 2 n_head
    CHECK(strstr(err, "h3_head_dim"), "%s", err);
    CHECK(rig_create_status("h3", "h3_d_state=5000", 8, 1, 4, err, sizeof err) == 2);
    CHECK(strstr(err, "h3_d_state"), "%s", err);
    CHECK(rig_create_status("h3", "h3_d_state=0", 8, 1, 4, err, sizeof err) == 2);
    CHECK(strstr(err, "h3_d_state"), "%s", err);
    CHECK(rig_create_status("h3", "h3_conv=fast", 8, 1, 4, err, sizeof err) == 2);
    CHECK(strstr(err, "h3_conv") && strstr(err, "auto|direct|fft"), "%s", err);
}
