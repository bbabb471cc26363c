// Attention sparsity S(a) per (layer, head) (docs/sparsity.md), with the seeds' per-row theory
// beside the measurement and, on MQAR, where the weight of the query rows lands. For query row i
// of a map with weights a_i1..a_in (n = i+1, the causal prefix):
//   S = (sum_j |a_ij| / n) / sqrt(sum_j a_ij^2 / n)          in [1/sqrt(n), 1]: one-hot .. flat
//   S_norm = (S - 1/sqrt(n)) / (1 - 1/sqrt(n))                in [0, 1] for n >= 2, so lengths compare
//   entropy = H(w) / log n of w_j = |a_ij| / sum_l |a_il|     in [0, 1] (1 when n = 1, like S)
//   max_weight = max_j w_j, neg_mass = sum of w_j where a_ij < 0 (signed mixers)
// Rows whose weights are all zero are skipped, and so are the pad rows after an MQAR cell's
// length. Per (layer, head) every field is the mean over the rows evaluated. Row sets: query rows (the positions that carry a target: S_recall; on text every
// row), and on MQAR the key-value rows (positions < 2 * mqar_kv_pairs) and the other rows. Mixers
// with more maps than heads (Mamba: one map per channel) average over the maps of a head as well.
#pragma once
#include <stdio.h>

#include "core/real.h"
#include "data/dataset.h"
#include "eval/theory.h"
#include "eval/val_eval.h"
#include "model/model.h"

// One row's statistics.
typedef struct {
    double S, entropy, max_weight, neg_mass;
} RowStats;

// Fills st for the weights a[0..n), n >= 1; returns 0 when every weight is zero (row skipped).
int sparsity_row(const real *a, int n, RowStats *st);

#define SPARSITY_POS_BINS 16  // S by position: at most this many bins of equal width

// Per (layer, head) means over the rows evaluated (NAN where a set has no rows).
typedef struct {
    long rows, rows_recall, rows_kv, rows_other;  // rows evaluated (maps of a head averaged: rows per map)
    long rows_zero, rows_recall_zero;             // rows (query rows) with no weight at all: skipped by every mean
    double S, S_recall, S_kv, S_other;
    double S_norm, S_recall_norm;  // mean S_norm over the (query) rows with n >= 2
    double entropy, max_weight, neg_mass;
    double S_onehot, S_recall_onehot;  // mean of 1/sqrt(n) over the same rows: S of one-hot rows
    // theory, over the rows that have a prediction
    long rows_pred, rows_recall_pred;
    double S_pred, S_recall_pred;                            // mean prediction
    double S_meas_pred, S_recall_meas_pred;                  // mean measured S over the same rows
    double S_pred_ratio_median, S_recall_pred_ratio_median;  // median over rows of measured / predicted
    double S_pred_spearman, S_recall_pred_spearman;          // rank correlation over rows
    double S_inf, S_recall_inf;                              // softmax: mean n -> infinity limit exp(-gamma^2/2)
    // MQAR query rows whose matching pair was found (eval/answer.h)
    long rows_answer;
    double ans_share, key_share, ans_hit, ans_rank, top1, top4, n90;
    double ans_window_share, ans_window_hit;  // over the answer window (eval/answer.h)
    // chance: what a uniform row (1/n on each causal position) puts on the value position and on
    // the answer window (clipped at the row), mean over the same rows; also the chance of a hit
    double ans_chance, ans_window_chance;
    // effective tokens: per row n S^2 (1 for a one-hot row, n for a flat one), mean over the rows
    double eff_tokens, eff_tokens_recall;
    // the answer rows split by whether the model answered them right (argmax = target) or wrong
    long rows_right, rows_wrong;
    double S_recall_right, S_recall_wrong;
    double window_share_right, window_share_wrong, window_hit_right, window_hit_wrong;
    // by position: bin b holds rows i in [b * bin_width, (b+1) * bin_width)
    long bin_rows[SPARSITY_POS_BINS], bin_rows_pred[SPARSITY_POS_BINS];
    double bin_S[SPARSITY_POS_BINS], bin_pred[SPARSITY_POS_BINS];
} HeadSparsity;

typedef struct {
    int L, H;
    Theory theory[MAX_LAYERS];      // of each layer's mixer
    const char *mixer[MAX_LAYERS];  // each layer's mixer name
    int hybrid;                     // the layers' mixers differ: records name each layer's own
    int kv_pairs;                   // MQAR key-value pairs (0: not MQAR: no kv/other sets, no answer metrics)
    int answer_window[MAX_LAYERS];  // per layer, the answer window's width (sparsity_answer_window)
    int n_bins, bin_width;
    HeadSparsity *heads;  // [L * H], heads[l * H + h]
    // an MQAR mixture (2 or more cells): the same figures per cell (0 cells otherwise)
    int n_cells;
    MqarCell cells[MQAR_MAX_CELLS];
    HeadSparsity *cell_heads;  // [n_cells * L * H], cell_heads[(c * L + l) * H + h]
    ValStats stats;            // val loss and accuracy of the same forward passes
    long sequences;            // sequences run through the model
} SparsityResult;

// The width of layer l's answer window: the positions from the value on where the value is still
// in what the maps act on. The model's short convolution (width short_conv) and the mixer's own
// (value_window) compose: short_conv + value_window - 1; 1 with neither.
int sparsity_answer_window(const Model *m, int l);

// 1 when the model's mixer has an attention extractor (sparsity_eval needs one).
int sparsity_supported(const Model *m);

// The validation sequences a pass measures (of each MQAR cell on its own: pass it dataset_cell's
// view): the first eval_batches x B of val (all of them when eval_batches = 0), or with
// sparsity_rows = N > 0 every row of ceil(N / rows) of those sequences, rows = the query rows of a
// sequence (MQAR: its pairs; text: T), so at least N query rows, taken at an even stride
// (sequence floor(k * n / m), k < m): every position is covered equally.
// Returns the count and fills seq (allocated; free it).
long sparsity_sequences(const Dataset *val, int B, int T, long eval_batches, long sparsity_rows, long **seq);

// The sparsity pass over those sequences, in batches of B: measures every row of every head of
// every layer. out is (re)allocated as needed; free with sparsity_result_free. Deterministic and
// identical for any thread count (maps are measured in parallel, sums are added in a fixed
// order). Requires the mixer's attention extractor (and attention_qk for the predictions) to be
// safe to call concurrently for different (b, m) after one forward. out->stats holds the loss
// and accuracy sums of the same forward passes: with sparsity_rows = 0 they are bit-identical to
// val_eval(m, val, B, T, eval_batches), so a step that does both can skip val_eval.
void sparsity_eval(Model *m, const Dataset *val, int B, int T, long eval_batches, long sparsity_rows, SparsityResult *out);
void sparsity_result_free(SparsityResult *r);

// Writes one sparsity record per (layer, head) (core/runlog.h; fields: docs/sparsity.md):
// {"type":"sparsity","step":..,"layer":..,"head":..,"mixer":"softmax","S":..,"S_recall":..,...}
// S and S_recall are null without rows; other fields are left out when they have no value.
// options: what an evaluation changed from the run's own (NULL or "": the run's own).
// split: the set measured ("val", "test"; NULL: "val").
void sparsity_write_records(FILE *f, long step, const char *mixer, const char *split, const char *options,
                            const SparsityResult *r);
// One compact line per layer for the training log: S_recall per head, the query rows' mean
// effective tokens (n S^2) per head and, on MQAR, their mean answer share (answer window share
// behind a convolution) per head with a uniform row's share; the recall layer is starred, e.g.
// "step    392 | L1* S_recall 0.256 0.301 | tokens 1.4 2.0 | answer share 0.812 0.120 (chance 0.061)".
void sparsity_print_layers(FILE *f, long step, const SparsityResult *r);
// The layer whose query rows put the largest mean share of their weight on the answer window
// (mean over heads; the answer position itself without a short convolution); -1 without answer
// metrics.
int sparsity_recall_layer(const SparsityResult *r);
// "softmax", "relu2", "identity", "linear_check", "decay" or "none".
const char *theory_name(Theory t);
