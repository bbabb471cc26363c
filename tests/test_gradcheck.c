// The finite-difference check itself: a gradient that is wrong by more than the tolerance fails;
// a right one passes even where the central difference drowns in the loss's rounding noise.

#include <math.h>
#include <string.h>

#include "tests/gradcheck.h"
#include "tests/test.h"

enum { N = 64 };

// L = sum x^3 / 3 on a grid of 2^-44 (about 6e-14): rounding noise as a long float sum has it,
// which divided by the central difference's 2h = 2e-6 is up to 3e-8, over the 1e-8 tolerance.
static double noisy_cubic(void *ctx) {
    const real *x = ctx;
    double s = 20;
    for (int i = 0; i < N; i++) s += (double)x[i] * x[i] * x[i] / 3;
    return ldexp(nearbyint(ldexp(s, 44)), -44);
}

typedef struct {
    real x[N], g[N];
} Cubic;

static void cubic_init(Cubic *c) {
    for (int i = 0; i < N; i++) {
        c->x[i] = (real)(0.01 * sin(1.7 * i + 0.3));  // small x: the gradient x^2 is under 1e-4
        c->g[i] = c->x[i] * c->x[i];
    }
}

static void check_wrong_gradient(void *arg) {
    Cubic *c = arg;
    c->g[5] += 5e-8;
    check_grad("cubic", noisy_cubic, c->x, c->x, c->g, N, 1e-6, 1e-6, 1e-8);
}

TEST(gradcheck_fails_a_wrong_gradient_and_passes_rounding_noise) {
    Cubic c;
    cubic_init(&c);
    int central_misses = 0;
    for (int i = 0; i < N; i++) central_misses += fabs(numeric_grad(noisy_cubic, c.x, c.x, i, 1e-6) - c.g[i]) > 1.01e-8;
    CHECK(central_misses > 0, "the noise is too small to test the five-point fallback");
    check_grad("cubic", noisy_cubic, c.x, c.x, c.g, N, 1e-6, 1e-6, 1e-8);  // passes: five-point agrees
    char err[512];
    CHECK(test_fork(check_wrong_gradient, &c, err, sizeof err) == 1 && strstr(err, "cubic[5]: analytic"), "%s", err);
}
