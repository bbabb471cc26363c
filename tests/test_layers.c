// Finite-difference checks of the model's layers (double-precision build).
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/layers.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

#define RTOL 1e-6
#define ATOL 1e-8  // central differences of a sum of ~50 terms carry ~1e-9 of rounding noise

// Every layer check: loss = sum(out * R) for a fixed random R.
typedef struct {
    int N, C, OC, B, T, V;
    real *x, *w, *b, *out, *R, *mean, *rstd;
    int *tokens;
    int kind;
} LayerCtx;

enum { K_LAYERNORM, K_GELU, K_MATMUL, K_EMBED };

static double layer_loss(void *p) {
    LayerCtx *c = p;
    size_t n = 0;
    switch (c->kind) {
    case K_LAYERNORM:
        layernorm_forward(c->out, c->mean, c->rstd, c->x, c->w, c->b, c->N, c->C);
        n = (size_t)c->N * c->C;
        break;
    case K_GELU:
        gelu_forward(c->out, c->x, (size_t)c->N * c->C);
        n = (size_t)c->N * c->C;
        break;
    case K_MATMUL:
        matmul_forward(c->out, c->x, c->w, c->b, c->N, c->C, c->OC, PRECISION_FP32);
        n = (size_t)c->N * c->OC;
        break;
    case K_EMBED:
        embedding_forward(c->out, c->tokens, c->x, c->w, c->B, c->T, c->C);
        n = (size_t)c->B * c->T * c->C;
        break;
    }
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)c->out[i] * (double)c->R[i];
    return s;
}

static LayerCtx make_ctx(int kind, int N, int C, int OC) {
    LayerCtx c = {.N = N, .C = C, .OC = OC, .kind = kind};
    Rng rng;
    rng_seed(&rng, 7 + (uint64_t)kind);
    size_t big = (size_t)N * (C > OC ? C : OC) + (size_t)OC * C + 64;
    c.x = callocCheck(big, sizeof(real));
    c.w = callocCheck(big, sizeof(real));
    c.b = callocCheck(big, sizeof(real));
    c.out = callocCheck(big, sizeof(real));
    c.R = callocCheck(big, sizeof(real));
    c.mean = callocCheck(big, sizeof(real));
    c.rstd = callocCheck(big, sizeof(real));
    fill_normal(c.x, big, &rng, 1);
    fill_normal(c.w, big, &rng, 0.7);
    fill_normal(c.b, big, &rng, 0.5);
    fill_normal(c.R, big, &rng, 1);
    return c;
}

TEST(layernorm_backward_matches_finite_differences) {
    LayerCtx c = make_ctx(K_LAYERNORM, 5, 7, 0);
    real *dx = callocCheck(35, sizeof(real)), *dw = callocCheck(7, sizeof(real)), *db = callocCheck(7, sizeof(real));
    layer_loss(&c);
    layernorm_backward(dx, dw, db, c.R, c.x, c.w, c.mean, c.rstd, c.N, c.C);
    check_grad("layernorm dx", layer_loss, &c, c.x, dx, 35, 1e-6, RTOL, ATOL);
    check_grad("layernorm dw", layer_loss, &c, c.w, dw, 7, 1e-6, RTOL, ATOL);
    check_grad("layernorm db", layer_loss, &c, c.b, db, 7, 1e-6, RTOL, ATOL);
}

TEST(layernorm_normalises_rows) {
    LayerCtx c = make_ctx(K_LAYERNORM, 3, 16, 0);
    for (int i = 0; i < 16; i++) c.w[i] = 1, c.b[i] = 0;
    layernorm_forward(c.out, c.mean, c.rstd, c.x, c.w, c.b, 3, 16);
    for (int n = 0; n < 3; n++) {
        double m = 0, v = 0;
        for (int i = 0; i < 16; i++) m += c.out[n * 16 + i];
        for (int i = 0; i < 16; i++) v += c.out[n * 16 + i] * c.out[n * 16 + i];
        CHECK_CLOSE(m / 16, 0, 1e-12);
        CHECK_CLOSE(v / 16, 1, 1e-4);  // variance (1 - eps/(var+eps))
    }
}

TEST(gelu_backward_matches_finite_differences) {
    LayerCtx c = make_ctx(K_GELU, 4, 9, 0);
    for (int i = 0; i < 36; i++) c.x[i] *= 3;  // cover the tails
    real *dx = callocCheck(36, sizeof(real));
    gelu_backward(dx, c.x, c.R, 36);
    check_grad("gelu dx", layer_loss, &c, c.x, dx, 36, 1e-6, RTOL, ATOL);
    real y;
    real x0 = 1;
    gelu_forward(&y, &x0, 1);
    CHECK_CLOSE(y, 0.8411919906082768, 1e-12);  // 0.5 (1 + tanh(sqrt(2/pi) 1.044715))
}

TEST(matmul_backward_matches_finite_differences) {
    int N = 6, IC = 5, OC = 7;
    LayerCtx c = make_ctx(K_MATMUL, N, IC, OC);
    real *dx = callocCheck((size_t)N * IC, sizeof(real)), *dw = callocCheck((size_t)OC * IC, sizeof(real));
    real *db = callocCheck(OC, sizeof(real));
    layer_loss(&c);
    matmul_backward(dx, dw, db, c.R, c.x, c.w, N, IC, OC, PRECISION_FP32);
    check_grad("matmul dx", layer_loss, &c, c.x, dx, (size_t)N * IC, 1e-6, RTOL, ATOL);
    check_grad("matmul dw", layer_loss, &c, c.w, dw, (size_t)OC * IC, 1e-6, RTOL, ATOL);
    check_grad("matmul db", layer_loss, &c, c.b, db, OC, 1e-6, RTOL, ATOL);
    // out = x w^T + b, PyTorch layout
    layer_loss(&c);
    double o = c.b[2];
    for (int k = 0; k < IC; k++) o += c.x[1 * IC + k] * c.w[2 * IC + k];
    CHECK_CLOSE(c.out[1 * OC + 2], o, 1e-12);
}

TEST(embedding_backward_matches_finite_differences) {
    LayerCtx c = make_ctx(K_EMBED, 0, 4, 0);
    c.B = 2, c.T = 3, c.V = 5;
    int tokens[6] = {1, 4, 1, 0, 1, 3};  // repeated tokens accumulate
    c.tokens = tokens;
    c.x = callocCheck(20, sizeof(real));
    c.w = callocCheck(12, sizeof(real));
    Rng rng;
    rng_seed(&rng, 3);
    fill_normal(c.x, 20, &rng, 1);
    fill_normal(c.w, 12, &rng, 1);
    real *dwte = callocCheck(20, sizeof(real)), *dwpe = callocCheck(12, sizeof(real));
    embedding_backward(dwte, dwpe, c.R, tokens, 2, 3, 4);
    check_grad("embedding dwte", layer_loss, &c, c.x, dwte, 20, 1e-6, RTOL, ATOL);
    check_grad("embedding dwpe", layer_loss, &c, c.w, dwpe, 12, 1e-6, RTOL, ATOL);
}

// Over many row chunks with one token in most rows (as MQAR's filler token is): the same bits at
// 1, 2 and 3 threads, and the sums of the rows by token and by position.
TEST(embedding_backward_same_bits_at_any_thread_count_and_sums_the_rows) {
    int B = 41, T = 50, C = 5, V = 37, N = B * T;
    int *tokens = mallocCheck(sizeof(int) * (size_t)N);
    real *dout = mallocCheck(sizeof(real) * (size_t)N * C);
    Rng rng;
    rng_seed(&rng, 11);
    fill_normal(dout, (size_t)N * C, &rng, 1);
    for (int n = 0; n < N; n++) tokens[n] = n % 5 ? 0 : 1 + (n * 7) % (V - 1);
    real *dwte[3], *dwpe[3];
    int threads = omp_get_max_threads();
    for (int k = 0; k < 3; k++) {
        dwte[k] = callocCheck((size_t)V * C, sizeof(real)), dwpe[k] = callocCheck((size_t)T * C, sizeof(real));
        dwte[k][3] = 0.5;  // it adds to what is there
        omp_set_num_threads(k + 1);
        embedding_backward(dwte[k], dwpe[k], dout, tokens, B, T, C);
    }
    omp_set_num_threads(threads);
    for (int k = 1; k < 3; k++) {
        CHECK(!memcmp(dwte[0], dwte[k], sizeof(real) * (size_t)V * C), "dwte differs at %d threads", k + 1);
        CHECK(!memcmp(dwpe[0], dwpe[k], sizeof(real) * (size_t)T * C), "dwpe differs at %d threads", k + 1);
    }
    for (int v = 0; v < V; v++)
        for (int i = 0; i < C; i++) {
            double want = v == 0 && i == 3 ? 0.5 : 0;
            for (int n = 0; n < N; n++) want += tokens[n] == v ? dout[(size_t)n * C + i] : 0;
            CHECK_CLOSE(dwte[0][(size_t)v * C + i], want, 1e-10);
        }
    for (int t = 0; t < T; t++)
        for (int i = 0; i < C; i++) {
            double want = 0;
            for (int b = 0; b < B; b++) want += dout[((size_t)b * T + t) * C + i];
            CHECK_CLOSE(dwpe[0][(size_t)t * C + i], want, 1e-10);
        }
    for (int k = 0; k < 3; k++) free(dwte[k]), free(dwpe[k]);
    free(tokens), free(dout);
}

TEST(colsum_is_fixed_order_over_many_rows) {
    int N = 1000, C = 3;
    real *x = callocCheck((size_t)N * C, sizeof(real));
    for (int i = 0; i < N * C; i++) x[i] = (real)(i % 7) - 3;
    real out[3] = {1, 1, 1};
    colsum_accumulate(out, x, N, C);
    for (int c = 0; c < C; c++) {
        double s = 1;
        for (int n = 0; n < N; n++) s += x[n * C + c];
        CHECK_CLOSE(out[c], s, 1e-12);
    }
}
