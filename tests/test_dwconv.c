// dwconv.h against short_conv (layers.h): a sequence's outputs made a piece at a time, on a slice
// of wider rows (the rest of each row NaN, and the outputs' rest left alone), and its backward in
// pieces from the last (as the mixers' tasks call it), give short_conv_forward's and
// short_conv_backward_set's values to rounding (the same sums; where the compiler fuses a
// multiply-add may differ between the two); at widths 1, 2, 4 (the register path) and 5, slices
// of 5, 16 and 35 channels (whole blocks and a tail), pieces of 1, 3 and 8 tokens.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "model/kernels/dwconv.h"
#include "model/layers.h"
#include "tests/test.h"

static real urand(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (real)((double)(*s >> 11) / 9007199254740992.0 * 2 - 1);
}

TEST(dwconv_equals_short_conv_in_pieces_on_a_slice) {
    const int Ks[] = {1, 2, 4, 5}, ncs[] = {5, 16, 35}, pieces[] = {1, 3, 8};
    const int T = 21, pad = 7;  // the slice starts pad channels into rows of nc + 2 pad
    uint64_t s = 42;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 3; c++) {
                int K = Ks[a], nc = ncs[b], L = pieces[c], ld = nc + 2 * pad;
                real *w = mallocCheck(sizeof(real) * nc * K), *bias = mallocCheck(sizeof(real) * nc);
                real *taps = mallocCheck(sizeof(real) * K * nc), *x = mallocCheck(sizeof(real) * T * nc);
                real *dy = mallocCheck(sizeof(real) * T * nc), *y0 = mallocCheck(sizeof(real) * T * nc);
                real *dx0 = mallocCheck(sizeof(real) * T * nc), *dw0 = callocCheck((size_t)nc * K, sizeof(real));
                real *db0 = callocCheck(nc, sizeof(real)), *xs = mallocCheck(sizeof(real) * T * ld);
                real *dys = mallocCheck(sizeof(real) * T * ld), *ys = mallocCheck(sizeof(real) * T * ld);
                real *dxs = mallocCheck(sizeof(real) * T * ld), *gt = callocCheck((size_t)K * nc, sizeof(real));
                real *gb = callocCheck(nc, sizeof(real));
                for (int i = 0; i < nc * K; i++) w[i] = urand(&s);
                for (int i = 0; i < nc; i++) bias[i] = urand(&s);
                for (int i = 0; i < T * nc; i++) x[i] = urand(&s), dy[i] = urand(&s);
                for (int t = 0; t < T; t++)  // the same values on the slice of wider rows
                    for (int i = 0; i < ld; i++) {
                        int in = i >= pad && i < pad + nc;
                        xs[t * ld + i] = in ? x[t * nc + i - pad] : (real)NAN;
                        dys[t * ld + i] = in ? dy[t * nc + i - pad] : (real)NAN;
                        ys[t * ld + i] = dxs[t * ld + i] = -7;
                    }
                short_conv_forward(y0, x, w, bias, 1, T, nc, K);
                short_conv_backward_set(dx0, dw0, db0, dy, x, w, 1, T, nc, K);
                dwconv_taps(w, nc, K, taps);
                for (int t0 = 0; t0 < T; t0 += L) {
                    int n = T - t0 < L ? T - t0 : L;
                    dwconv_forward(taps, nc, bias, xs + t0 * ld + pad, ld, ys + t0 * ld + pad, ld, nc, t0, n, K);
                }
                for (int t0 = (T - 1) / L * L; t0 >= 0; t0 -= L) {
                    int n = T - t0 < L ? T - t0 : L;
                    dwconv_backward(taps, nc, xs + t0 * ld + pad, ld, dys + t0 * ld + pad, ld, dxs + t0 * ld + pad, ld,
                                    nc, t0, n, T, K, gt, nc, gb);
                }
                for (int t = 0; t < T; t++)
                    for (int i = 0; i < ld; i++) {
                        if (i < pad || i >= pad + nc) {
                            CHECK(ys[t * ld + i] == -7 && dxs[t * ld + i] == -7, "K=%d nc=%d: column %d written", K, nc, i);
                            continue;
                        }
                        CHECK_CLOSE(ys[t * ld + i], y0[t * nc + i - pad], 1e-14);
                        CHECK_CLOSE(dxs[t * ld + i], dx0[t * nc + i - pad], 1e-14);
                    }
                for (int i = 0; i < nc; i++) {
                    CHECK_CLOSE(gb[i], db0[i], 1e-12);
                    for (int k = 0; k < K; k++) CHECK_CLOSE(gt[k * nc + i], dw0[i * K + k], 1e-12);
                }
                free(w), free(bias), free(taps), free(x), free(dy), free(y0), free(dx0), free(dw0), free(db0);
                free(xs), free(dys), free(ys), free(dxs), free(gt), free(gb);
            }
}
