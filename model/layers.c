#include "model/layers.h"

#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/kernels/gemm.h"
#include "model/kernels/gemm_bf16.h"
#include "model/kernels/vmath.h"

// Row-chunk size of every reduction over rows: fixed, so sums do not depend on the thread count.
#define ROW_CHUNK 256

void layernorm_forward(real *out, real *mean, real *rstd, const real *inp, const real *w, const real *b, int N, int C) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const real *x = inp + (size_t)n * C;
        real m = 0;
        for (int i = 0; i < C; i++) m += x[i];
        m /= C;
        real v = 0;
        for (int i = 0; i < C; i++) v += (x[i] - m) * (x[i] - m);
        v /= C;
        real s = 1 / sqrtr(v + (real)LAYERNORM_EPS);
        real *o = out + (size_t)n * C;
        for (int i = 0; i < C; i++) o[i] = (x[i] - m) * s * w[i] + b[i];
        mean[n] = m;
        rstd[n] = s;
    }
}

void layernorm_backward(real *dinp, real *dw, real *db, const real *dout, const real *inp, const real *w,
                        const real *mean, const real *rstd, int N, int C) {
    int n_chunks = (N + ROW_CHUNK - 1) / ROW_CHUNK;
    real *partial = callocCheck((size_t)n_chunks * 2 * C, sizeof(real));  // [chunk][dw | db]
#pragma omp parallel for schedule(static)
    for (int ch = 0; ch < n_chunks; ch++) {
        real *pw = partial + (size_t)ch * 2 * C, *pb = pw + C;
        int end = (ch + 1) * ROW_CHUNK < N ? (ch + 1) * ROW_CHUNK : N;
        for (int n = ch * ROW_CHUNK; n < end; n++) {
            const real *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
            real m = mean[n], s = rstd[n];
            // dnorm = dy * w; dx = s * (dnorm - mean(dnorm) - xhat * mean(dnorm * xhat))
            real mean_dn = 0, mean_dn_xhat = 0;
            for (int i = 0; i < C; i++) {
                real xhat = (x[i] - m) * s, dn = dy[i] * w[i];
                mean_dn += dn;
                mean_dn_xhat += dn * xhat;
                pw[i] += dy[i] * xhat;
                pb[i] += dy[i];
            }
            mean_dn /= C;
            mean_dn_xhat /= C;
            real *dx = dinp + (size_t)n * C;
            for (int i = 0; i < C; i++) {
                real xhat = (x[i] - m) * s;
                dx[i] += s * (dy[i] * w[i] - mean_dn - xhat * mean_dn_xhat);
            }
        }
    }
    for (int ch = 0; ch < n_chunks; ch++)
        for (int i = 0; i < C; i++) {
            dw[i] += partial[(size_t)ch * 2 * C + i];
            db[i] += partial[(size_t)ch * 2 * C + C + i];
        }
    free(partial);
}

#define GELU_SCALE 0.7978845608028654  // sqrt(2/pi)

// 0.5 x (1 + tanh(u)) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): one vectorized exp
// instead of a libm tanh call.
void gelu_forward(real *out, const real *inp, size_t n) {
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        real x = inp[i];
        real u = (real)GELU_SCALE * (x + (real)0.044715 * x * x * x);
        out[i] = x / (1 + vexpr(-2 * u));
    }
}

// d/dx [x s(2u)] = s + 2 x s (1 - s) du/dx, s = sigmoid(2u).
void gelu_backward(real *dinp, const real *inp, const real *dout, size_t n) {
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        real x = inp[i];
        real u = (real)GELU_SCALE * (x + (real)0.044715 * x * x * x);
        real s = 1 / (1 + vexpr(-2 * u));
        real du = (real)GELU_SCALE * (1 + 3 * (real)0.044715 * x * x);
        dinp[i] += dout[i] * (s + 2 * x * s * (1 - s) * du);
    }
}

void residual_forward(real *out, const real *a, const real *b, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void embedding_forward(real *out, const int *tokens, const real *wte, const real *wpe, int B, int T, int C) {
#pragma omp parallel for schedule(static)
    for (int bt = 0; bt < B * T; bt++) {
        const real *e = wte + (size_t)tokens[bt] * C;
        real *o = out + (size_t)bt * C;
        if (wpe) {
            const real *p = wpe + (size_t)(bt % T) * C;
            for (int i = 0; i < C; i++) o[i] = e[i] + p[i];
        } else {
            memcpy(o, e, sizeof(real) * C);
        }
    }
}

// dst[idx[n]] += src[n] for the N rows of src: the rows in fixed chunks of ROW_CHUNK, each chunk
// summing its rows per destination into partial rows of its own (in row order), then each
// destination adding its chunks' partials in chunk order. The same bits at any thread count, and
// the pieces are the chunks, not the channels: a destination as common as MQAR's filler token
// (about 52 of every 64 positions) is split over the chunks like the rest. (Whole 16-channel
// slices per thread, the way before, gave 4 pieces at d_model 64: at most 4 threads.)
static void scatter_add_rows(real *dst, const real *src, const int *idx, int N, int C) {
    if (N <= 0) return;
    int n_chunks = (N + ROW_CHUNK - 1) / ROW_CHUNK, n_dst = 0;
    for (int n = 0; n < N; n++)
        if (idx[n] >= n_dst) n_dst = idx[n] + 1;
    int *row_slot = mallocCheck(sizeof(int) * (size_t)N);          // the row's partial within its chunk
    int *off = mallocCheck(sizeof(int) * (size_t)(n_chunks + 1));  // each chunk's first partial
    // 1. each chunk's destinations in order of first appearance: a slot per distinct one
#pragma omp parallel
    {
        int *slot_of = mallocCheck(sizeof(int) * (size_t)n_dst);  // this thread's, -1 between chunks
        for (int d = 0; d < n_dst; d++) slot_of[d] = -1;
#pragma omp for schedule(static)
        for (int ch = 0; ch < n_chunks; ch++) {
            int lo = ch * ROW_CHUNK, hi = lo + ROW_CHUNK < N ? lo + ROW_CHUNK : N, k = 0;
            for (int n = lo; n < hi; n++) {
                if (slot_of[idx[n]] < 0) slot_of[idx[n]] = k++;
                row_slot[n] = slot_of[idx[n]];
            }
            off[ch + 1] = k;
            for (int n = lo; n < hi; n++) slot_of[idx[n]] = -1;
        }
        free(slot_of);
    }
    off[0] = 0;
    for (int ch = 0; ch < n_chunks; ch++) off[ch + 1] += off[ch];
    int total = off[n_chunks];
    real *partial = callocCheck((size_t)total * C, sizeof(real));  // [total, C]
    int *dest = mallocCheck(sizeof(int) * (size_t)total);          // each partial's destination
    // 2. the partial rows, each the sum of its chunk's rows for one destination, in row order
#pragma omp parallel for schedule(static)
    for (int ch = 0; ch < n_chunks; ch++) {
        int lo = ch * ROW_CHUNK, hi = lo + ROW_CHUNK < N ? lo + ROW_CHUNK : N;
        for (int n = lo; n < hi; n++) {
            int s = off[ch] + row_slot[n];
            real *p = partial + (size_t)s * C;
            const real *x = src + (size_t)n * C;
            dest[s] = idx[n];
            for (int i = 0; i < C; i++) p[i] += x[i];
        }
    }
    // 3. per destination, its partials in chunk order (a counting sort: the slots are in chunk order)
    int *start = callocCheck((size_t)n_dst + 1, sizeof(int)), *list = mallocCheck(sizeof(int) * (size_t)(total + 1));
    for (int s = 0; s < total; s++) start[dest[s] + 1]++;
    for (int d = 0; d < n_dst; d++) start[d + 1] += start[d];
    for (int s = 0; s < total; s++) list[start[dest[s]]++] = s;  // start[d] becomes d's end
        // 4. each destination row adds them (d's partials are list[start[d-1] .. start[d]))
#pragma omp parallel for schedule(static)
    for (int d = 0; d < n_dst; d++) {
        real *o = dst + (size_t)d * C;
        for (int j = d ? start[d - 1] : 0; j < start[d]; j++) {
            const real *p = partial + (size_t)list[j] * C;
            for (int i = 0; i < C; i++) o[i] += p[i];
        }
    }
    free(row_slot), free(off), free(partial), free(dest), free(start), free(list);
}

void embedding_backward(real *dwte, real *dwpe, const real *dout, const int *tokens, int B, int T, int C) {
    scatter_add_rows(dwte, dout, tokens, B * T, C);
    if (!dwpe) return;
    int *pos = mallocCheck(sizeof(int) * (size_t)B * T);  // each row's position
    for (int bt = 0; bt < B * T; bt++) pos[bt] = bt % T;
    scatter_add_rows(dwpe, dout, pos, B * T, C);
    free(pos);
}

Precision precision_parse(const char *name) {
    if (!strcmp(name, "fp32")) return PRECISION_FP32;
    if (strcmp(name, "bf16")) die_input("precision: expected fp32 or bf16, got '%s'", name);
#ifdef REAL_DOUBLE
    die_input("precision: bf16 needs the float build (this is the double-precision test build)");
#endif
    if (!gemm_bf16_supported())
        die_input("precision: bf16 needs a CPU with AVX512-BF16 (Intel Cooper Lake or Sapphire "
                  "Rapids and later, AMD Zen 4 and later); this one lacks it (use precision = fp32)");
    return PRECISION_BF16;
}

void matmul_gemm(int transA, int transB, int M, int N, int K, const real *A, int lda, const real *B, int ldb, real beta,
                 real *C, int ldc, Precision prec) {
#ifndef REAL_DOUBLE
    if (prec == PRECISION_BF16) {
        gemm_bf16(transA, transB, M, N, K, A, lda, B, ldb, beta, C, ldc);
        return;
    }
#endif
    (void)prec;
    gemm(transA, transB, M, N, K, A, lda, B, ldb, beta, C, ldc);
}

void matmul_forward(real *out, const real *inp, const real *w, const real *bias, int N, int IC, int OC, Precision prec) {
    matmul_gemm(0, 1, N, OC, IC, inp, IC, w, IC, 0, out, OC, prec);
    if (!bias) return;
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        real *o = out + (size_t)n * OC;
        for (int j = 0; j < OC; j++) o[j] += bias[j];
    }
}

void matmul_backward(real *dinp, real *dw, real *dbias, const real *dout, const real *inp, const real *w, int N, int IC,
                     int OC, Precision prec) {
    if (dinp) matmul_gemm(0, 0, N, IC, OC, dout, OC, w, IC, 1, dinp, IC, prec);
    if (dw) matmul_gemm(1, 0, OC, IC, N, dout, OC, inp, IC, 1, dw, IC, prec);
    if (dbias) colsum_accumulate(dbias, dout, N, OC);
}

void colsum_accumulate(real *out, const real *x, int N, int C) {
    int n_chunks = (N + ROW_CHUNK - 1) / ROW_CHUNK;
    real *partial = callocCheck((size_t)n_chunks * C, sizeof(real));
#pragma omp parallel for schedule(static)
    for (int ch = 0; ch < n_chunks; ch++) {
        real *p = partial + (size_t)ch * C;
        int end = (ch + 1) * ROW_CHUNK < N ? (ch + 1) * ROW_CHUNK : N;
        for (int n = ch * ROW_CHUNK; n < end; n++)
            for (int i = 0; i < C; i++) p[i] += x[(size_t)n * C + i];
    }
    for (int ch = 0; ch < n_chunks; ch++)
        for (int i = 0; i < C; i++) out[i] += partial[(size_t)ch * C + i];
    free(partial);
}

// The weights transposed to wt[k][C] (contiguous per tap, so the loops over channels vectorise);
// every sum runs in the order of the plain loops, so the results are the same bits.
static real *conv_taps(const real *w, int C, int K) {
    real *wt = mallocCheck(sizeof(real) * (size_t)K * C);
    for (int c = 0; c < C; c++)
        for (int k = 0; k < K; k++) wt[(size_t)k * C + c] = w[(size_t)c * K + k];
    return wt;
}

// Output channels CONV_BLOCK at a time, each block's sum held in registers over the taps and
// stored once (a row summed tap by tap in memory took 1.7 times as long: 3.8 against 2.2 ms for the
// zoology cell's 192 channels of 32768 rows at 1 thread); the channels past the last whole block
// one at a time. Every output adds the same terms in the same order (bias, then the taps).
#define CONV_BLOCK 16

void short_conv_forward(real *out, const real *inp, const real *w, const real *bias, int B, int T, int C, int K) {
    real *wt = conv_taps(w, C, K);
#pragma omp parallel for schedule(static)
    for (int bt = 0; bt < B * T; bt++) {
        int t = bt % T;
        int k0 = K - 1 - t > 0 ? K - 1 - t : 0;  // the first tap with an input: inp[t - back], back = K-1-k <= t
        real *o = out + (size_t)bt * C;
        int c0 = 0;
        for (; c0 + CONV_BLOCK <= C; c0 += CONV_BLOCK) {  // (a constant width, so it vectorises)
            real acc[CONV_BLOCK];
            for (int c = 0; c < CONV_BLOCK; c++) acc[c] = bias ? bias[c0 + c] : 0;
            for (int k = k0; k < K; k++) {
                const real *x = inp + (size_t)(bt - (K - 1 - k)) * C + c0, *wk = wt + (size_t)k * C + c0;
                for (int c = 0; c < CONV_BLOCK; c++) acc[c] += wk[c] * x[c];
            }
            for (int c = 0; c < CONV_BLOCK; c++) o[c0 + c] = acc[c];
        }
        for (int c = c0; c < C; c++) {  // the tail, channel by channel in the same order
            real a = bias ? bias[c] : 0;
            for (int k = k0; k < K; k++) a += wt[(size_t)k * C + c] * inp[(size_t)(bt - (K - 1 - k)) * C + c];
            o[c] = a;
        }
    }
    free(wt);
}

// The rows r0..r1-1 of channels c_from..c_to-1, row by row through memory: the general path, for
// any width, the channels past the last whole block and the rows at a sequence's ends. dinp:
// each row gathers from the K outputs it fed (no races); set: each row's first tap writes, the
// rest add (the bits of adding to zero but for the sign of an exact zero), else accumulated.
// p [K | bias][C]: the chunk's partial sums of dw and dbias, rows added in order.
static void conv_backward_rows(real *dinp, real *p, const real *dout, const real *inp, const real *wt, int r0, int r1,
                               int T, int C, int K, int c_from, int c_to, int set) {
    real *pb = p + (size_t)K * C;
    for (int bt = r0; bt < r1; bt++) {
        int t = bt % T;
        real *dx = dinp + (size_t)bt * C;
        int first = set;
        for (int k = 0; k < K; k++) {
            int ahead = K - 1 - k;  // out[t + ahead] used inp[t] with w[:, k]
            if (t + ahead >= T) continue;
            const real *dy = dout + (size_t)(bt + ahead) * C, *wk = wt + (size_t)k * C;
            if (first)
                for (int c = c_from; c < c_to; c++) dx[c] = wk[c] * dy[c];
            else
                for (int c = c_from; c < c_to; c++) dx[c] += wk[c] * dy[c];
            first = 0;
        }
        const real *dy = dout + (size_t)bt * C;
        for (int c = c_from; c < c_to; c++) pb[c] += dy[c];
        for (int k = 0; k < K; k++) {
            int back = K - 1 - k;
            if (back > t) continue;
            const real *x = inp + (size_t)(bt - back) * C;
            real *pk = p + (size_t)k * C;
            for (int c = c_from; c < c_to; c++) pk[c] += dy[c] * x[c];
        }
    }
}

// The same for width 4, CONV_BLOCK channels from c0 and rows r0..r1-1 inside their sequences
// (every tap has its input and its output), with the block's five partial sums and its dinp row
// in registers over the rows: the row-by-row path loads and stores them for every row. Every sum
// adds the same terms in the same order as conv_backward_rows, so the bits are the same. The
// block walks its rows at a stride of C, which the hardware prefetcher did not follow: without
// the prefetches this took as long as the row-by-row path. With them, the zoology cell's 192
// channels of 32768 rows take 5.5-5.9 against 7.1 ms at 1 thread, 3.1 against 3.5 at 2.
static void conv_backward_block4(real *restrict dinp, real *restrict p, const real *restrict dout, const real *restrict inp,
                                 const real *restrict wt, int r0, int r1, int C, int c0, int set) {
    real g0[CONV_BLOCK], g1[CONV_BLOCK], g2[CONV_BLOCK], g3[CONV_BLOCK], gb[CONV_BLOCK];  // dw[:, k], dbias
    const real *w0 = wt + c0, *w1 = wt + C + c0, *w2 = wt + 2 * (size_t)C + c0, *w3 = wt + 3 * (size_t)C + c0;
    for (int c = 0; c < CONV_BLOCK; c++) {
        g0[c] = p[c0 + c], g1[c] = p[C + c0 + c], g2[c] = p[2 * (size_t)C + c0 + c];
        g3[c] = p[3 * (size_t)C + c0 + c], gb[c] = p[4 * (size_t)C + c0 + c];
    }
    for (int bt = r0; bt < r1; bt++) {
        const real *restrict y0 = dout + (size_t)bt * C + c0, *restrict y1 = y0 + C, *restrict y2 = y1 + C,
                             *restrict y3 = y2 + C;  // out[t + ahead]
        const real *restrict x0 = inp + (size_t)bt * C + c0, *restrict x1 = x0 - C, *restrict x2 = x1 - C,
                             *restrict x3 = x2 - C;  // inp[t - back]
        real *restrict dx = dinp + (size_t)bt * C + c0;
        __builtin_prefetch(y3 + 8 * (size_t)C), __builtin_prefetch(x0 + 8 * (size_t)C);
        __builtin_prefetch(dx + 8 * (size_t)C, 1);
        for (int c = 0; c < CONV_BLOCK; c++) {
            real a = set ? w0[c] * y3[c] : dx[c] + w0[c] * y3[c];
            a += w1[c] * y2[c];
            a += w2[c] * y1[c];
            a += w3[c] * y0[c];
            dx[c] = a;
            gb[c] += y0[c];
            g0[c] += y0[c] * x3[c];
            g1[c] += y0[c] * x2[c];
            g2[c] += y0[c] * x1[c];
            g3[c] += y0[c] * x0[c];
        }
    }
    for (int c = 0; c < CONV_BLOCK; c++) {
        p[c0 + c] = g0[c], p[C + c0 + c] = g1[c], p[2 * (size_t)C + c0 + c] = g2[c];
        p[3 * (size_t)C + c0 + c] = g3[c], p[4 * (size_t)C + c0 + c] = gb[c];
    }
}

static void short_conv_backward_impl(real *dinp, real *dw, real *dbias, const real *dout, const real *inp,
                                     const real *w, int B, int T, int C, int K, int set) {
    int N = B * T, n_chunks = (N + ROW_CHUNK - 1) / ROW_CHUNK;
    real *wt = conv_taps(w, C, K);
    // one pass over row chunks: dinp, and dw, dbias as partial sums per chunk, added in chunk
    // order below (thread-count free)
    real *partial = callocCheck((size_t)n_chunks * C * (K + 1), sizeof(real));  // [chunk][K | bias][C]
    int blocked = K == 4 ? C / CONV_BLOCK * CONV_BLOCK : 0;                     // the channels the register path takes
#pragma omp parallel for schedule(static)
    for (int ch = 0; ch < n_chunks; ch++) {
        real *p = partial + (size_t)ch * C * (K + 1);
        int r0 = ch * ROW_CHUNK, r1 = (ch + 1) * ROW_CHUNK < N ? (ch + 1) * ROW_CHUNK : N;
        for (int s0 = r0; s0 < r1;) {  // the chunk's rows a piece of one sequence at a time
            int seq = s0 / T * T, s1 = seq + T < r1 ? seq + T : r1;
            // the rows [i0, i1) of the piece inside its sequence: t in [K - 1, T - K]
            int i0 = seq + K - 1 > s0 ? seq + K - 1 : s0, i1 = seq + T - (K - 1) < s1 ? seq + T - (K - 1) : s1;
            if (i1 < i0) i0 = i1 = s1;
            for (int c0 = 0; c0 < blocked; c0 += CONV_BLOCK) {
                conv_backward_rows(dinp, p, dout, inp, wt, s0, i0, T, C, K, c0, c0 + CONV_BLOCK, set);
                conv_backward_block4(dinp, p, dout, inp, wt, i0, i1, C, c0, set);
                conv_backward_rows(dinp, p, dout, inp, wt, i1, s1, T, C, K, c0, c0 + CONV_BLOCK, set);
            }
            conv_backward_rows(dinp, p, dout, inp, wt, s0, s1, T, C, K, blocked, C, set);
            s0 = s1;
        }
    }
    free(wt);
    for (int ch = 0; ch < n_chunks; ch++) {
        const real *p = partial + (size_t)ch * C * (K + 1);
        for (int c = 0; c < C; c++) {
            for (int k = 0; k < K; k++) dw[(size_t)c * K + k] += p[(size_t)k * C + c];
            if (dbias) dbias[c] += p[(size_t)K * C + c];
        }
    }
    free(partial);
}

void short_conv_backward(real *dinp, real *dw, real *dbias, const real *dout, const real *inp, const real *w, int B,
                         int T, int C, int K) {
    short_conv_backward_impl(dinp, dw, dbias, dout, inp, w, B, T, C, K, 0);
}

void short_conv_backward_set(real *dinp, real *dw, real *dbias, const real *dout, const real *inp, const real *w, int B,
                             int T, int C, int K) {
    short_conv_backward_impl(dinp, dw, dbias, dout, inp, w, B, T, C, K, 1);
}

void short_conv_step(real *out, real *state, const real *x, const real *w, const real *bias, int C, int K) {
    for (int c = 0; c < C; c++) {
        real o = bias ? bias[c] : 0;
        for (int k = 0; k < K - 1; k++) o += w[(size_t)c * K + k] * state[(size_t)k * C + c];
        out[c] = o + w[(size_t)c * K + K - 1] * x[c];
    }
    if (K < 2) return;
    memmove(state, state + C, sizeof(real) * (size_t)(K - 2) * C);
    memcpy(state + (size_t)(K - 2) * C, x, sizeof(real) * C);
}
