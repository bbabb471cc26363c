// gemm / gemm_serial against a naive triple loop: all transpose combinations, beta 0 (C pre-filled
// with NaN) and 1, odd sizes and sizes that cross the kernel's tile and cache-block edges, padded
// leading dimensions; bit-identity between gemm and gemm_serial and across thread counts; the
// triangular products of gemm_tri.h bit-identical to the full ones.
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/kernels/gemm.h"
#include "model/kernels/gemm_tri.h"
#include "tests/test.h"

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static double urand(void) {  // uniform in [-1, 1)
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

static real *alloc_fill(size_t n) {
    real *p = malloc((n ? n : 1) * sizeof(real));
    CHECK(p != NULL);
    for (size_t i = 0; i < n; i++) p[i] = (real)urand();
    return p;
}

// Stored shapes: A is [M,K] (rows M) or [K,M] when transA; B is [K,N] or [N,K] when transB.
typedef struct {
    int tA, tB, M, N, K, lda, ldb, ldc;
    real *A, *B, *C0;  // C0: initial C (for beta = 1)
} Case;

static void case_make(Case *c, int tA, int tB, int M, int N, int K, int pad) {
    c->tA = tA, c->tB = tB, c->M = M, c->N = N, c->K = K;
    c->lda = (tA ? M : K) + pad;
    c->ldb = (tB ? K : N) + pad;
    c->ldc = N + pad;
    c->A = alloc_fill((size_t)(tA ? K : M) * c->lda);
    c->B = alloc_fill((size_t)(tB ? N : K) * c->ldb);
    c->C0 = alloc_fill((size_t)M * c->ldc);
}

static void case_free(Case *c) { free(c->A), free(c->B), free(c->C0); }

static double ref_elem(const Case *c, int i, int j) {
    double s = 0;
    for (int k = 0; k < c->K; k++) {
        double a = c->tA ? c->A[(size_t)k * c->lda + i] : c->A[(size_t)i * c->lda + k];
        double b = c->tB ? c->B[(size_t)j * c->ldb + k] : c->B[(size_t)k * c->ldb + j];
        s += a * b;
    }
    return s;
}

// Runs gemm (serial = 0) or gemm_serial (serial = 1) on a copy of C0, or on NaNs when beta = 0.
static real *case_run(const Case *c, int beta, int serial) {
    size_t n = (size_t)c->M * c->ldc;
    real *C = malloc((n ? n : 1) * sizeof(real));
    CHECK(C != NULL);
    for (size_t i = 0; i < n; i++) C[i] = beta ? c->C0[i] : (real)NAN;
    if (serial) gemm_serial(c->tA, c->tB, c->M, c->N, c->K, c->A, c->lda, c->B, c->ldb, (real)beta, C, c->ldc);
    else gemm(c->tA, c->tB, c->M, c->N, c->K, c->A, c->lda, c->B, c->ldb, (real)beta, C, c->ldc);
    return C;
}

static void case_check(const Case *c, int beta, const real *C) {
    for (int i = 0; i < c->M; i++) {
        for (int j = 0; j < c->N; j++) {
            double want = ref_elem(c, i, j) + (beta ? (double)c->C0[(size_t)i * c->ldc + j] : 0.0);
            double got = C[(size_t)i * c->ldc + j];
            if (!test_close(got, want, 1e-12))
                test_fail(__FILE__, __LINE__, "tA=%d tB=%d M=%d N=%d K=%d beta=%d: C[%d,%d] = %.17g, want %.17g", c->tA,
                          c->tB, c->M, c->N, c->K, beta, i, j, got, want);
        }
        // Padding columns of C must be untouched.
        for (int j = c->N; j < c->ldc; j++) {
            double got = C[(size_t)i * c->ldc + j];
            double want = beta ? (double)c->C0[(size_t)i * c->ldc + j] : NAN;
            CHECK((isnan(got) && isnan(want)) || got == want, "padding C[%d,%d] changed", i, j);
        }
    }
}

// Full check of one shape: 4 transpose combos x beta {0,1} x {gemm, gemm_serial}, plus bit-identity.
static void check_shape(int M, int N, int K, int pad) {
    for (int tA = 0; tA < 2; tA++)
        for (int tB = 0; tB < 2; tB++) {
            Case c;
            case_make(&c, tA, tB, M, N, K, pad);
            for (int beta = 0; beta < 2; beta++) {
                real *Cp = case_run(&c, beta, 0);
                real *Cs = case_run(&c, beta, 1);
                case_check(&c, beta, Cp);
                CHECK(memcmp(Cp, Cs, (size_t)M * c.ldc * sizeof(real)) == 0,
                      "gemm and gemm_serial differ: tA=%d tB=%d M=%d N=%d K=%d beta=%d", tA, tB, M, N, K, beta);
                free(Cp), free(Cs);
            }
            case_free(&c);
        }
}

TEST(gemm_tiny) {
    check_shape(1, 1, 1, 0);
    check_shape(1, 1, 7, 0);
    check_shape(2, 3, 1, 0);
    check_shape(7, 13, 5, 0);
    check_shape(5, 1, 17, 3);
    check_shape(1, 37, 9, 1);
}

TEST(gemm_odd_sizes) {
    check_shape(33, 65, 129, 0);
    check_shape(31, 47, 3, 0);
    check_shape(17, 96, 64, 0);
    check_shape(65, 33, 64, 5);
}

TEST(gemm_padded_strides) {
    check_shape(13, 29, 31, 7);
    check_shape(40, 50, 60, 16);
}

// Sizes that cross the micro-tile (rows 4..14, columns 4..64) and cache-block edges (KC 256..512,
// NC 256..512).
TEST(gemm_block_edges) {
    check_shape(97, 161, 515, 0);
    check_shape(193, 67, 257, 1);
    check_shape(14, 32, 1100, 0);
    check_shape(15, 33, 513, 0);
    check_shape(241, 17, 24, 0);
}

TEST(gemm_wide_and_tall) {
    check_shape(3, 1500, 40, 0);   // M small, N large: threads must split over N
    check_shape(1500, 5, 40, 2);   // M large, N small
    check_shape(9, 11, 4100, 0);   // long K (the dW shape)
    check_shape(600, 20, 700, 0);  // transA rows >= 4 KB apart: smaller K block, A packed
    check_shape(611, 21, 300, 1);  // the same with a partial block and a partial panel of A
    check_shape(30, 700, 50, 3);   // transB = 0 rows > 4 KB apart: B packed, not read in place
}

TEST(gemm_k_zero) {
    // K = 0: C = beta * C, with beta = 0 overwriting NaN.
    for (int tA = 0; tA < 2; tA++)
        for (int tB = 0; tB < 2; tB++) {
            Case c;
            case_make(&c, tA, tB, 5, 7, 0, 1);
            for (int beta = 0; beta < 2; beta++) {
                real *C = case_run(&c, beta, 0);
                case_check(&c, beta, C);
                free(C);
                C = case_run(&c, beta, 1);
                case_check(&c, beta, C);
                free(C);
            }
            case_free(&c);
        }
    gemm(0, 0, 0, 0, 0, NULL, 1, NULL, 1, 0, NULL, 1);  // empty: no access
    gemm_serial(0, 0, 0, 5, 5, NULL, 5, NULL, 5, 1, NULL, 5);
}

// Bit-identical across thread counts (1, 2, 3) and inside a parallel region via gemm_serial.
TEST(gemm_deterministic_threads) {
    const int shapes[][3] = {{256, 192, 300}, {64, 1000, 64}, {300, 40, 2000}, {130, 130, 700}, {611, 21, 300}};
    for (int s = 0; s < 5; s++)
        for (int tA = 0; tA < 2; tA++)
            for (int tB = 0; tB < 2; tB++) {
                Case c;
                case_make(&c, tA, tB, shapes[s][0], shapes[s][1], shapes[s][2], 0);
                size_t n = (size_t)c.M * c.ldc;
                omp_set_num_threads(1);
                real *C1 = case_run(&c, 1, 0);
                omp_set_num_threads(2);
                real *C2 = case_run(&c, 1, 0);
                omp_set_num_threads(3);
                real *C3 = case_run(&c, 1, 0);
                CHECK(memcmp(C1, C2, n * sizeof(real)) == 0, "1 vs 2 threads differ (shape %d)", s);
                CHECK(memcmp(C1, C3, n * sizeof(real)) == 0, "1 vs 3 threads differ (shape %d)", s);
                // gemm_serial called from each thread of a parallel region, on private outputs.
                real *Cq[2];
                for (int t = 0; t < 2; t++) {
                    Cq[t] = malloc(n * sizeof(real));
                    memcpy(Cq[t], c.C0, n * sizeof(real));
                }
                // (a build without OpenMP runs the region on one thread, which does both)
#pragma omp parallel num_threads(2)
                for (int t = omp_get_thread_num(); t < 2; t += omp_get_num_threads())
                    gemm_serial(c.tA, c.tB, c.M, c.N, c.K, c.A, c.lda, c.B, c.ldb, 1, Cq[t], c.ldc);
                for (int t = 0; t < 2; t++) {
                    CHECK(memcmp(C1, Cq[t], n * sizeof(real)) == 0, "gemm_serial in region differs");
                    free(Cq[t]);
                }
                free(C1), free(C2), free(C3);
                case_free(&c);
            }
}

// gemm_tri.h: each product with a lower-triangular factor (zeros above its diagonal, garbage
// nowhere it is read) the same bits as gemm_serial's full product, at sizes on and off the row
// blocks' edges, beta 0 and 1, padded strides; gemm_lower_c's lower triangle for both op(B).
TEST(gemm_triangular_products_equal_the_full_ones) {
    const int ns[] = {1, 5, 16, 17, 37, 64}, Ns[] = {3, 19, 64};
    for (int a = 0; a < 6; a++)
        for (int b = 0; b < 3; b++) {
            int n = ns[a], N = Ns[b], lda = n + 3, ldb = N + 2, ldc = N + 1;
            real *A = alloc_fill((size_t)n * lda), *B = alloc_fill((size_t)n * ldb), *C0 = alloc_fill((size_t)n * ldc);
            real *C1 = malloc(sizeof(real) * n * ldc), *C2 = malloc(sizeof(real) * n * ldc);
            for (int i = 0; i < n; i++)
                for (int j = i + 1; j < n; j++) A[(size_t)i * lda + j] = 0;
            for (int beta = 0; beta < 2; beta++)
                for (int t = 0; t < 2; t++) {  // A B, then A^T B
                    memcpy(C1, C0, sizeof(real) * n * ldc), memcpy(C2, C0, sizeof(real) * n * ldc);
                    gemm_serial(t, 0, n, N, n, A, lda, B, ldb, (real)beta, C1, ldc);
                    if (t) gemm_lower_at(n, N, A, lda, B, ldb, (real)beta, C2, ldc);
                    else gemm_lower_a(n, N, A, lda, B, ldb, (real)beta, C2, ldc);
                    CHECK(memcmp(C1, C2, sizeof(real) * n * ldc) == 0, "gemm_lower_a%s n=%d N=%d beta=%d differs",
                          t ? "t" : "", n, N, beta);
                }
            // C = A op(B) with A [n, K = N] (row stride ldb) and op(B) from B [n, N] transposed
            // (transB 1) or from its transpose Bt [N, n] (transB 0)
            real *Bt = malloc(sizeof(real) * N * n), *G1 = malloc(sizeof(real) * n * n), *G2 = malloc(sizeof(real) * n * n);
            for (int i = 0; i < n; i++)
                for (int k = 0; k < N; k++) Bt[(size_t)k * n + i] = B[(size_t)i * ldb + k];
            gemm_serial(0, 1, n, n, N, C0, ldc, B, ldb, 0, G1, n);
            for (int tB = 0; tB < 2; tB++) {
                for (int i = 0; i < n * n; i++) G2[i] = (real)NAN;
                gemm_lower_c(n, N, C0, ldc, tB, tB ? B : Bt, tB ? ldb : n, G2, n);
                for (int i = 0; i < n; i++)
                    CHECK(memcmp(G1 + (size_t)i * n, G2 + (size_t)i * n, sizeof(real) * (i + 1)) == 0,
                          "gemm_lower_c transB=%d n=%d K=%d: row %d differs", tB, n, N, i);
            }
            free(A), free(B), free(C0), free(C1), free(C2), free(Bt), free(G1), free(G2);
        }
}
