// precision = bf16: the bf16 GEMM against a reference with bf16-rounded operands, and a short MQAR
// run through ./train whose loss curve must track fp32's. On a CPU without AVX512-BF16 the first
// two check nothing (there is no bf16 code to run) and the refusal is checked instead.
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/kernels/gemm_bf16.h"
#include "tests/test.h"

// Round to the nearest bf16, ties to even (finite inputs).
static float to_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&x, &u, sizeof x);
    return x;
}

static float urand(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return (float)((double)(*s >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

TEST(bf16_gemm_matches_rounded_operands_and_is_thread_invariant) {
    if (!gemm_bf16_supported()) return;  // nothing to run on this CPU (the refusal test covers it)
    const int sizes[][3] = {{1, 1, 1},      {7, 13, 5},   {33, 65, 129}, {15, 33, 300},
                            {97, 161, 515}, {3, 200, 40}, {200, 5, 41},  {29, 64, 33}};
    uint64_t seed = 88172645463325252ull;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int t = 0; t < 4; t++)
            for (int beta = 0; beta < 2; beta++) {
                int M = sizes[s][0], N = sizes[s][1], K = sizes[s][2], tA = t >> 1, tB = t & 1;
                int lda = (tA ? M : K) + 3, ldb = (tB ? K : N) + 1, ldc = N + 2;
                size_t na = (size_t)(tA ? K : M) * lda, nb = (size_t)(tB ? N : K) * ldb, nc = (size_t)M * ldc;
                float *A = mallocCheck(na * 4), *B = mallocCheck(nb * 4), *C0 = mallocCheck(nc * 4);
                float *C1 = mallocCheck(nc * 4), *C2 = mallocCheck(nc * 4);
                for (size_t i = 0; i < na; i++) A[i] = urand(&seed);
                for (size_t i = 0; i < nb; i++) B[i] = urand(&seed);
                for (size_t i = 0; i < nc; i++) C0[i] = urand(&seed);
                memcpy(C1, C0, nc * 4);
                memcpy(C2, C0, nc * 4);
                omp_set_num_threads(1);
                gemm_bf16(tA, tB, M, N, K, A, lda, B, ldb, (float)beta, C1, ldc);
                omp_set_num_threads(2);
                gemm_bf16(tA, tB, M, N, K, A, lda, B, ldb, (float)beta, C2, ldc);
                CHECK(!memcmp(C1, C2, nc * 4), "%dx%dx%d tA=%d tB=%d: 1 and 2 threads differ", M, N, K, tA, tB);
                double tol = 1.2e-7 * K + 1e-6;  // float accumulation of K exact bf16 products
                for (int i = 0; i < M; i++) {
                    for (int j = 0; j < N; j++) {
                        double ref = beta ? C0[(size_t)i * ldc + j] : 0, mag = fabs(ref);
                        for (int k = 0; k < K; k++) {
                            double a = to_bf16(tA ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]);
                            double b = to_bf16(tB ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j]);
                            ref += a * b, mag += fabs(a * b);
                        }
                        double err = fabs(C1[(size_t)i * ldc + j] - ref) / (mag + 1e-30);
                        CHECK(err <= tol, "%dx%dx%d tA=%d tB=%d beta=%d C[%d,%d]: rel err %g", M, N, K, tA, tB, beta, i,
                              j, err);
                    }
                    for (int j = N; j < ldc; j++)
                        CHECK(C1[(size_t)i * ldc + j] == C0[(size_t)i * ldc + j], "padding column written");
                }
                free(A), free(B), free(C0), free(C1), free(C2);
            }
}

// MQAR, 2 layers with the MLP so every kind of matmul (qkv, proj, fc, LM head) runs in bf16.
#define MQAR_ARGS                                                                                                      \
    "vocab_size=64 seq_len=32 mqar_kv_pairs=4 mqar_train_examples=1024 "                                               \
    "mqar_test_examples=64 mqar_val_examples=64 d_model=32 n_head=2 mlp=true batch_size=32 lr=3e-3 log_every=5 "       \
    "eval_every=0 save_every=0 steps=80 threads=2"

static void train_losses(const char *dir, double *loss, int *n) {
    char path[1100];  // dir may be up to 1023 bytes
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    char *text = read_file_text(path, NULL);
    CHECK(text, "cannot read %s", path);
    *n = 0;
    for (char *p = text; (p = strstr(p, "\"type\":\"train\"")) && *n < 64; p++)
        loss[(*n)++] = atof(strstr(p, "\"loss\":") + 7);
    free(text);
}

TEST(bf16_mqar_loss_curve_tracks_fp32) {
    if (!gemm_bf16_supported()) return;
    const char *conf = test_write_file("p.conf", "mixer = softmax\n");
    char out[4096], dir[2][512];
    double loss[2][64];
    int n[2];
    const char *prec[2] = {"fp32", "bf16"};
    for (int i = 0; i < 2; i++) {
        snprintf(dir[i], sizeof dir[i], "%s/%s", test_tmpdir(), prec[i]);
        int st = test_run(out, sizeof out, "./train %s " MQAR_ARGS " precision=%s out_dir=%s", conf, prec[i], dir[i]);
        CHECK(st == 0, "%s: exit %d: %s", prec[i], st, out);
        train_losses(dir[i], loss[i], &n[i]);
    }
    CHECK(n[0] == 16 && n[1] == 16, "%d and %d train records", n[0], n[1]);
    int differ = 0;
    for (int k = 0; k < n[0]; k++) {
        // bf16 keeps 8 bits of mantissa: the curves drift apart slowly, never by much
        CHECK(fabs(loss[1][k] - loss[0][k]) <= 0.03 * loss[0][k] + 0.02, "step %d: fp32 %.4f, bf16 %.4f", 5 * (k + 1),
              loss[0][k], loss[1][k]);
        differ |= loss[1][k] != loss[0][k];
    }
    CHECK(differ, "bf16 losses are identical to fp32: the bf16 path did not run");
    CHECK(loss[1][n[1] - 1] < loss[1][0] - 0.3, "bf16 loss %.4f -> %.4f does not fall", loss[1][0], loss[1][n[1] - 1]);
}

TEST(bf16_refused_with_one_line_without_cpu_support) {
    const char *conf = test_write_file("p.conf", "mixer = softmax\n");
    char out[4096];
    int st = test_run(out, sizeof out, "ATTNSCOPE_NO_BF16=1 ./train %s " MQAR_ARGS " precision=bf16 out_dir=%s/r", conf,
                      test_tmpdir());
    CHECK(st == 2, "exit %d: %s", st, out);
    CHECK(strstr(out, "precision: bf16 needs a CPU with AVX512-BF16") && strchr(out, '\n') == out + strlen(out) - 1,
          "%s", out);
}
