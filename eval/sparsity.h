// Attention sparsity S(a) per (layer, head) (docs/sparsity.md#definition), with the seeds'
// closed-form predictions beside the measurement. For query row i of a map with weights a_i1..a_in
// (n = i+1, the causal prefix):
//   S = (sum_j |a_ij| / n) / sqrt(sum_j a_ij^2 / n)          in [1/sqrt(n), 1]: one-hot .. flat
//   entropy = H(w) / log n of w_j = |a_ij| / sum_l |a_il|     in [0, 1] (1 when n = 1, like S)
//   max_weight = max_j w_j, neg_mass = sum of w_j where a_ij < 0 (signed mixers)
// Rows whose weights are all zero are skipped. Per (layer, head) every field is the mean over the
// rows evaluated; S_recall is the mean of S over the rows whose position carries a target (MQAR:
// the query positions; text: every row). Mixers with more maps than heads (Mamba: one map per
// channel) average over the maps of a head as well.
#pragma once
#include <stdio.h>

#include "core/real.h"
#include "data/dataset.h"
#include "model/model.h"

// One row's statistics.
typedef struct {
    double S, entropy, max_weight, neg_mass;
} RowStats;

// Fills st for the weights a[0..n), n >= 1; returns 0 when every weight is zero (row skipped).
int sparsity_row(const real *a, int n, RowStats *st);

// Closed forms (docs/sparsity.md#closed-forms).
// Fixed decay a_ij = lambda^(i-j) over n positions: sqrt((1-l^n)/(n(1-l)) (1+l)/(1+l^n)).
double theory_decay_S(double lambda, int n);
// Gaussian keys with per-dimension variance sigma2, scaled query of squared norm q2:
// exp(-sigma2 q2 / 2).
double theory_exp_S(double sigma2, double q2);
// Per-row predictions pred[T] from a map's theory queries and keys q[T*K], k[T*K]
// (MixerKind.attention_qk). Statistics are over each row's causal prefix j <= i.
// THEORY_EXP: sigma^2 = mean over the K dimensions of the (population) variance of k_j over the
// prefix, pred_i = exp(-sigma^2 |q_i|^2 / 2).
void theory_exp_rows(const real *q, const real *k, int T, int K, double *pred);
// THEORY_LINEAR: mu, Sigma = mean and (population) covariance of phi(k_j) over the prefix,
// pred_i = 1/sqrt(1 + q_i' Sigma q_i / (q_i' mu)^2); NAN where q_i' mu = 0.
void theory_linear_rows(const real *q, const real *k, int T, int K, double *pred);

// Per (layer, head) means over the rows evaluated.
typedef struct {
    long rows;          // rows evaluated (maps of the head averaged: rows per map)
    long rows_recall;   // of which at positions that carry a target
    double S, S_recall, entropy, max_weight, neg_mass;
    double S_onehot, S_recall_onehot;  // mean of 1/sqrt(n) over the same rows: S of one-hot rows
    long rows_pred;     // rows with a prediction (0: the mixer has no closed form)
    double S_pred;      // mean prediction over the rows that have one
    double S_recall_pred;
    double S_meas_pred;        // mean measured S over the same rows as S_pred (for the ratio)
    double S_recall_meas_pred;
} HeadSparsity;

typedef struct {
    int L, H;
    Theory theory[MAX_LAYERS];      // of each layer's mixer
    const char *mixer[MAX_LAYERS];  // each layer's mixer name
    int hybrid;                     // the layers' mixers differ: records name the layer's own
    HeadSparsity *heads;  // [L * H], heads[l * H + h]
    HeadStats stats;      // val loss and accuracy of the same forward passes
    long sequences;       // sequences run through the model
} SparsityResult;

// 1 when the model's mixer has an attention extractor (sparsity_eval needs one).
int sparsity_supported(const Model *m);

// The sparsity pass: runs the model over the first eval_batches x B sequences of val (all of
// them when eval_batches = 0; the last batch may be short) and measures every row of every head
// of every layer, or, when sparsity_rows = N > 0, N rows evenly spaced over those sequences'
// rows (flat index r = floor(k * rows / N)); only the batches holding a chosen row are run.
// out is (re)allocated as needed; free with sparsity_result_free. Deterministic and identical
// for any thread count (maps are measured in parallel, sums are added in a fixed order).
// Requires the mixer's attention extractor (and attention_qk for the predictions) to be safe to
// call concurrently for different (b, m) after one forward. out->stats holds the loss and
// accuracy sums of the same forward passes: with sparsity_rows = 0 they are bit-identical to
// val_eval(m, val, B, T, eval_batches), so a step that does both can skip val_eval.
void sparsity_eval(Model *m, const Dataset *val, int B, int T, long eval_batches, long sparsity_rows,
                   SparsityResult *out);
void sparsity_result_free(SparsityResult *r);

// Writes one sparsity.jsonl record per (layer, head) (docs/sparsity.md#sparsityjsonl):
// {"step":..,"layer":..,"head":..,"mixer":"softmax","S":..,"S_recall":..,"rows":..,
//  "rows_recall":..,"entropy":..,"max_weight":..,"neg_mass":..,"S_onehot":..,"S_recall_onehot":..,
//  "theory":"exp","S_pred":..,
//  "S_pred_ratio":..,"S_recall_pred":..,"S_recall_pred_ratio":..}
// S_recall is null without target rows; the prediction fields are left out without a closed form.
// In a hybrid stack "mixer" is the layer's own mixer (e.g. "linear" for layer 0 of linear,softmax).
// S_pred_ratio = measured S / S_pred over the rows that have a prediction.
void sparsity_write_jsonl(FILE *f, long step, const char *mixer, const SparsityResult *r);
// The same records with "type":"<type>" first (eval.jsonl).
void sparsity_write_records(FILE *f, const char *type, long step, const char *mixer, const SparsityResult *r);
// "exp", "linear", "decay" or "none".
const char *theory_name(Theory t);
