#include "eval/interval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/rng.h"
#include "data/mqar.h"

void examples_add_forward(ExampleCounts *ex, const Model *m, int b, int T, int cell) {
    if (ex->n + b > ex->cap) {
        ex->cap = ex->cap * 2 > ex->n + b ? ex->cap * 2 : ex->n + b + 256;
        ex->queries = reallocCheck(ex->queries, sizeof(int) * (size_t)ex->cap);
        ex->correct = reallocCheck(ex->correct, sizeof(int) * (size_t)ex->cap);
        ex->cell = reallocCheck(ex->cell, sizeof(int) * (size_t)ex->cap);
    }
    int *q = ex->queries + ex->n, *c = ex->correct + ex->n;
    memset(q, 0, sizeof(int) * (size_t)b);
    memset(c, 0, sizeof(int) * (size_t)b);
    for (int i = 0; i < b; i++) ex->cell[ex->n + i] = cell;
    for (int r = 0; r < m->n_rows; r++) {  // rows are b * T + t: the sequence is rows[r] / T
        int seq = m->rows[r] / T;
        q[seq]++;
        c[seq] += m->row_hit[r] != 0;
    }
    ex->n += b;
}

void examples_free(ExampleCounts *ex) {
    free(ex->queries), free(ex->correct), free(ex->cell);
    memset(ex, 0, sizeof *ex);
}

// The accuracy of the examples idx[0..n) (each an index into ex), cells as examples_acc.
static double acc_of(const ExampleCounts *ex, const long *idx, long n, int n_cells) {
    int k = n_cells > 1 ? n_cells : 1;
    double q[MQAR_MAX_CELLS] = {0}, c[MQAR_MAX_CELLS] = {0};
    for (long i = 0; i < n; i++) {
        int cell = n_cells > 1 ? ex->cell[idx[i]] : 0;
        q[cell] += ex->queries[idx[i]];
        c[cell] += ex->correct[idx[i]];
    }
    if (k == 1) return q[0] ? c[0] / q[0] : NAN;
    double sum = 0;
    for (int j = 0; j < k; j++) sum += q[j] ? c[j] / q[j] : 0;  // as val_acc: an empty cell counts 0
    return sum / k;
}

double examples_acc(const ExampleCounts *ex, int n_cells) {
    long *idx = mallocCheck(sizeof(long) * (size_t)(ex->n ? ex->n : 1));
    for (long i = 0; i < ex->n; i++) idx[i] = i;
    double a = acc_of(ex, idx, ex->n, n_cells);
    free(idx);
    return a;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void examples_interval(const ExampleCounts *ex, int n_cells, double *lo, double *hi) {
    *lo = *hi = NAN;
    if (ex->n == 0 || n_cells > MQAR_MAX_CELLS) return;
    // each cell's examples, so a resample keeps every cell's size (a stratified bootstrap)
    long *by_cell = mallocCheck(sizeof(long) * (size_t)ex->n), first[MQAR_MAX_CELLS + 1] = {0}, fill[MQAR_MAX_CELLS + 1];
    int k = n_cells > 1 ? n_cells : 1;
    for (long i = 0; i < ex->n; i++) first[(n_cells > 1 ? ex->cell[i] : 0) + 1]++;
    for (int j = 0; j < k; j++) first[j + 1] += first[j];
    memcpy(fill, first, sizeof fill);
    for (long i = 0; i < ex->n; i++) by_cell[fill[n_cells > 1 ? ex->cell[i] : 0]++] = i;
    long *idx = mallocCheck(sizeof(long) * (size_t)ex->n);
    double *acc = mallocCheck(sizeof(double) * INTERVAL_RESAMPLES);
    Rng rng;
    rng_seed(&rng, INTERVAL_SEED);
    for (int s = 0; s < INTERVAL_RESAMPLES; s++) {
        long n = 0;
        for (int j = 0; j < k; j++) {
            long size = first[j + 1] - first[j];
            for (long i = 0; i < size; i++) idx[n++] = by_cell[first[j] + (long)rng_below(&rng, (uint64_t)size)];
        }
        acc[s] = acc_of(ex, idx, n, n_cells);
    }
    qsort(acc, INTERVAL_RESAMPLES, sizeof(double), cmp_double);
    // the 2.5% and 97.5% quantiles: 50 resamples below the first, 50 above the second
    *lo = acc[(int)(0.025 * INTERVAL_RESAMPLES)];
    *hi = acc[(int)ceil(0.975 * INTERVAL_RESAMPLES) - 1];
    free(by_cell), free(idx), free(acc);
}
