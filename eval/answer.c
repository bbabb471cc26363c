#include "eval/answer.h"

#include <math.h>
#include <stdlib.h>

#include "data/mqar.h"

int answer_value_pos(const int *inputs, int i, int target) { return mqar_value_pos(inputs, i, target); }

static int cmp_desc(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

// Descending. A query row is short on the MQAR cell (at most 64 weights) and a pass sorts millions
// of them (Mamba: one per query row and channel), where qsort's calls through cmp_desc were a
// tenth of the pass: insertion sort up to 64, qsort past that. Equal values are equal, so the
// order among them changes nothing that is summed.
static void sort_desc(double *w, int n) {
    if (n > 64) {
        qsort(w, (size_t)n, sizeof(double), cmp_desc);
        return;
    }
    for (int i = 1; i < n; i++) {
        double v = w[i];
        int j = i;
        for (; j > 0 && w[j - 1] < v; j--) w[j] = w[j - 1];
        w[j] = v;
    }
}

int answer_window_positions(int n, int value_pos, int window) {
    int end = value_pos + (window > 1 ? window : 1);  // the window, cut at the row's end
    return (end < n ? end : n) - value_pos;
}

int answer_row(const real *a, int n, int value_pos, int window, double *w, AnswerStats *st) {
    double l1 = 0;
    for (int j = 0; j < n; j++) l1 += fabs((double)a[j]);
    if (l1 == 0) return 0;
    int arg = 0;
    double av = fabs((double)a[value_pos]);
    st->value_pos = value_pos;
    st->key_pos = value_pos - 1;
    st->rank = 1;
    for (int j = 0; j < n; j++) {
        w[j] = fabs((double)a[j]) / l1;
        if (fabs((double)a[j]) > fabs((double)a[arg])) arg = j;
        st->rank += fabs((double)a[j]) > av;
    }
    st->ans_share = w[value_pos];
    st->key_share = value_pos > 0 ? w[value_pos - 1] : 0;
    st->hit = arg == value_pos;
    int end = value_pos + answer_window_positions(n, value_pos, window);
    st->window_share = 0;
    for (int j = value_pos; j < end; j++) st->window_share += w[j];
    st->window_hit = arg >= value_pos && arg < end;
    sort_desc(w, n);
    st->top1 = w[0];
    st->top4 = 0;
    for (int j = 0; j < n && j < 4; j++) st->top4 += w[j];
    double cum = 0;
    st->n90 = n;
    for (int j = 0; j < n; j++) {
        cum += w[j];
        if (cum >= 0.9 - 1e-12) {  // a flat row of 10 reaches 0.9 at 9 despite rounding
            st->n90 = j + 1;
            break;
        }
    }
    return 1;
}
