// Per-example counts of a pass over a data set, and the 95% interval of its accuracy
// (docs/mqar.md#verdicts). The queries of one MQAR example share its sequence and are correlated,
// so the interval resamples whole examples (a bootstrap over examples), which widens it where
// they are: a binomial interval over queries would count 4 queries of one example as 4
// independent trials.
#pragma once
#include "model/model.h"

// The resamples of the bootstrap and its seed: fixed, so an interval is a function of the counts
// alone (the same at any thread count, on any machine).
#define INTERVAL_RESAMPLES 2000
#define INTERVAL_SEED 56

// Each example's positions with a target (queries) and how many the model answered right, in
// the order of the pass, with the MQAR cell it belongs to (0 without cells).
typedef struct {
    long n, cap;
    int *queries, *correct, *cell;
} ExampleCounts;

// Appends the b sequences of the last model_forward (b x T, with targets) from its rows
// (m->rows, m->row_hit), all of cell `cell`.
void examples_add_forward(ExampleCounts *ex, const Model *m, int b, int T, int cell);
void examples_free(ExampleCounts *ex);
// The accuracy the counts give: over every query, or with n_cells > 1 the mean of the cells'
// accuracies (as val_acc). NAN without queries.
double examples_acc(const ExampleCounts *ex, int n_cells);
// The 95% percentile bootstrap interval of that accuracy: INTERVAL_RESAMPLES resamples of the
// examples with replacement (within each cell for a mixture), the 2.5% and 97.5% quantiles of
// their accuracies. NAN, NAN without examples. With no error at all the interval is [1, 1]
// (every resample is perfect).
void examples_interval(const ExampleCounts *ex, int n_cells, double *lo, double *hi);
