// Where the weight of an MQAR query row lands (docs/sparsity.md, "Where the weight lands"). An
// MQAR example holds key-value pairs at positions (2p, 2p + 1) and later queries the keys again;
// at a query row i the target is the value of the matching pair. With w_j = |a_ij| / sum_l |a_il|:
#pragma once
#include "core/real.h"

typedef struct {
    int value_pos, key_pos;  // the matching pair's positions (< i)
    double ans_share;        // w at the value position
    double key_share;        // w at the key position
    int hit;                 // 1 when argmax_j |a_ij| is the value position (the first maximum on ties)
    int rank;                // 1 + the number of positions with more weight than the value position
    double top1, top4;       // weight held by the 1 and the 4 largest |a_ij|
    int n90;                 // fewest positions whose weights sum to at least 0.9
    // Behind a short convolution of width K the value is also read from the K - 1 positions after
    // it (their convolution windows hold it): the answer window [value_pos, value_pos + K - 1].
    double window_share;  // w summed over the answer window (= ans_share for K = 1)
    int window_hit;       // 1 when argmax_j |a_ij| lies in the answer window
} AnswerStats;

// The value position of query row i of an MQAR sequence inputs[T] whose target is `target`: the
// first j < i with inputs[j] == inputs[i] (the key) whose next token inputs[j + 1] == target and
// j + 1 < i; -1 when there is none.
int answer_value_pos(const int *inputs, int i, int target);
// The answer window's positions inside row i's causal prefix (n = i + 1): those of
// [value_pos, value_pos + window - 1] below n.
int answer_window_positions(int n, int value_pos, int window);
// Fills st for row a[0..n) (n = i + 1) given the value position (< n) and the answer window's
// width (the model's short_conv, 1 without one); 0 when the row is all zero. scratch holds n
// doubles.
int answer_row(const real *a, int n, int value_pos, int window, double *scratch, AnswerStats *st);
