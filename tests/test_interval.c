// The interval of a test accuracy over examples (eval/interval.h, docs/mqar.md#verdicts).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/interval.h"
#include "tests/test.h"

// n examples of q queries each; `wrong` of them wrong, spread as `per` wrong queries in each of
// wrong / per examples (per = q: whole examples wrong, the correlated case).
static void fill(ExampleCounts *ex, long n, int q, long wrong, int per) {
    memset(ex, 0, sizeof *ex);
    ex->n = ex->cap = n;
    ex->queries = malloc(sizeof(int) * n), ex->correct = malloc(sizeof(int) * n), ex->cell = calloc(n, sizeof(int));
    for (long i = 0; i < n; i++) {
        ex->queries[i] = q;
        ex->correct[i] = q - (i * 7919 % n < wrong / per ? per : 0);  // the wrong examples spread over the set
    }
}

// The bootstrap over examples: at the accuracy the counts give, inside [lo, hi]; the same on a
// second call (a fixed seed); errors that come in whole examples (4 wrong queries of one
// sequence) widen it to about twice the width of the same errors spread one per example, as the
// standard errors say (0.0036 and 0.0018 half-widths at 0.99 over 3000 x 4 queries); no error: [1, 1].
TEST(interval_bootstrap_over_examples_widens_for_correlated_queries) {
    ExampleCounts whole, spread;
    fill(&whole, 3000, 4, 120, 4);
    fill(&spread, 3000, 4, 120, 1);
    double acc = examples_acc(&whole, 0);
    CHECK(fabs(acc - 0.99) < 1e-12 && fabs(examples_acc(&spread, 0) - 0.99) < 1e-12, "%.6f", acc);
    double lo, hi, lo2, hi2, slo, shi;
    examples_interval(&whole, 0, &lo, &hi);
    examples_interval(&whole, 0, &lo2, &hi2);
    examples_interval(&spread, 0, &slo, &shi);
    CHECK(lo == lo2 && hi == hi2, "not deterministic: [%.6f, %.6f] then [%.6f, %.6f]", lo, hi, lo2, hi2);
    CHECK(lo < acc && acc < hi && slo < acc && acc < shi, "[%.6f, %.6f] [%.6f, %.6f]", lo, hi, slo, shi);
    // 95% half-widths: whole examples 1.96 sqrt(0.01 * 0.99 / 3000) = 0.00356; spread 1.96 x 0.00089 = 0.00175
    CHECK(fabs((hi - lo) / 2 - 0.00356) < 0.0006 && fabs((shi - slo) / 2 - 0.00175) < 0.0004,
          "half-widths %.5f (whole) %.5f (spread)", (hi - lo) / 2, (shi - slo) / 2);
    examples_free(&whole), examples_free(&spread);
    ExampleCounts all;
    fill(&all, 500, 4, 0, 1);
    examples_interval(&all, 0, &lo, &hi);
    CHECK(lo == 1 && hi == 1, "[%g, %g]", lo, hi);
    examples_free(&all);
}

// A mixture: the accuracy is the mean of the cells' (as val_acc), not the pooled one (the cells
// differ in size here: 500 perfect examples, 1000 at 0.95), and a resample draws within each cell,
// so the perfect cell adds no spread: the interval is about half the other cell's alone.
TEST(interval_of_a_mixture_is_over_the_mean_of_its_cells) {
    ExampleCounts one, mix;
    fill(&one, 1000, 4, 200, 4);  // cell 1 alone: 0.95
    fill(&mix, 1500, 4, 0, 1);
    for (long i = 0; i < 500; i++) mix.cell[i] = 0;
    for (long i = 500; i < 1500; i++) mix.cell[i] = 1, mix.correct[i] = one.correct[i - 500];
    double a1 = examples_acc(&one, 0), am = examples_acc(&mix, 2), lo1, hi1, lo, hi;
    CHECK(fabs(a1 - 0.95) < 1e-12 && fabs(am - 0.975) < 1e-12, "cell %.6f, mixture %.6f (pooled would be 0.9667)", a1, am);
    examples_interval(&one, 0, &lo1, &hi1);
    examples_interval(&mix, 2, &lo, &hi);
    CHECK(lo < am && am < hi && fabs((hi - lo) - (hi1 - lo1) / 2) < 0.2 * (hi1 - lo1) / 2,
          "mixture [%.5f, %.5f], cell alone [%.5f, %.5f]", lo, hi, lo1, hi1);
    examples_free(&one), examples_free(&mix);
}
