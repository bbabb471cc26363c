// Interventions on trained maps (docs/interventions.md): in the chosen layers, every map's a_ij
// (the exact map of the mixer's `attention`, acting on the values of `attention_values`) is
// replaced by a transformed a'_ij, o'_i = sum_j a'_ij v_j, and the layer is finished from o'
// through the mixer's `finish` slot exactly as its forward finishes it from o; the forward pass
// then continues. The kinds act on each row's absolute mass r_i = sum_j |a_ij| with the signs kept,
// so signed and near-zero-sum rows (Cog, Mamba, the delta rule) are well defined:
//   flatten:eps   |a'| = (1 - eps)|a| + eps r_i / n on each causal position (n = i + 1), signs of
//                 a kept (+ where a_ij = 0): S rises continuously to 1 at eps = 1
//   topk:k        the k largest |a_ij| kept (the rest 0), rescaled so that sum |a'| = r_i
//   sharpen:p     |a'| proportional to |a|^p, sum |a'| = r_i
//   temperature:t softmax layers only: the logits divided by t, which for a row of softmax is
//                 exactly sharpen:1/t
//   derange       the weights on the row's value positions (2p + 1 < 2 kv_pairs) permuted among
//                 themselves by a random cyclic permutation (every weight moves; S unchanged)
//   oracle        the row's mass r_i on the answer's value position, with the sign of the row's
//                 sum; oracle_window spreads it evenly over the answer window; oracle_wrong puts it
//                 on the next pair's value position outside the answer window (another value)
//   ablate        flatten:1 on one layer (or one head) at a time: the causal recall layer is the
//                 one whose ablation costs the most accuracy
//   oracle_lag:k  the row's mass r_i on vp + k, lag k inside the answer window (k < w), with the
//                 sign of the map's own weight there (the row sum's where it is 0): a map fed by a
//                 convolution reads the answer at a lag of its choice, which the point oracle
//                 (k = 0) does not know; rows with vp + k >= n, or k >= w, are left alone
//   derange_values  the clean input's maps of the layer kept, then the input run again with its
//                 values permuted among the pairs (a derangement: every pair gets another's value,
//                 each query's answer changing with it) and the layer's query rows given the kept
//                 maps: the layer looks where it looked and finds other values. acc is against
//                 the clean answers, acc_permuted against the permuted ones. Whole value tokens
//                 move, so it is defined behind a convolution too, where `derange` (map space) is
//                 refused: a window wider than one spans neighbouring pairs
//   patch         activation patching (the causal test of TransformerLens and ROME): A' is the
//                 sequence A with one pair's value replaced by a token not otherwise in it; A'
//                 is run and the layer's output y (after finish, before the residual add) kept
//                 at the query row of the changed key; A is run with that row of y replaced by
//                 A''s. patch_follows: the share of those rows (where A and A' predict apart)
//                 whose prediction becomes A''s; patch_control: the share of the other query
//                 rows whose prediction moved. The causal recall layer is the one patching
//                 moves most. Any mixer: it touches y alone
//   oracle_lag_control:k  the same mass at lag k behind another pair's value position whose
//                 window does not overlap the answer's: the control of oracle_lag:k (the lag
//                 oracle is a valid probe of a map only where it beats this; eval/derived.h)
// A row the kind does not apply to (oracle on a row with no answer, derange with fewer than two
// value positions in its prefix) keeps its weights and its o.
#pragma once
#include <stdint.h>
#include <stdio.h>

#include "core/real.h"
#include "data/dataset.h"
#include "eval/val_eval.h"
#include "model/model.h"

#define X_INTERVENTIONS(X)                                                                                             \
    X(NONE, "none")                                                                                                    \
    X(FLATTEN, "flatten")                                                                                              \
    X(TOPK, "topk")                                                                                                    \
    X(SHARPEN, "sharpen")                                                                                              \
    X(TEMPERATURE, "temperature")                                                                                      \
    X(DERANGE, "derange")                                                                                              \
    X(ORACLE, "oracle")                                                                                                \
    X(ORACLE_WINDOW, "oracle_window")                                                                                  \
    X(ORACLE_WRONG, "oracle_wrong")                                                                                    \
    X(ABLATE, "ablate")                                                                                                \
    X(ORACLE_LAG, "oracle_lag")                                                                                        \
    X(ORACLE_LAG_CONTROL, "oracle_lag_control")                                                                        \
    X(DERANGE_VALUES, "derange_values")                                                                                \
    X(PATCH, "patch")

typedef enum {
#define IV_ENUM(id, name) IV_##id,
    X_INTERVENTIONS(IV_ENUM)
#undef IV_ENUM
        IV_N_KINDS
} InterventionKind;

#define INTERVENTION_MAX_STRENGTHS 32

const char *intervention_name(InterventionKind k);
// 1 when the kind takes strengths (flatten, topk, sharpen, temperature; the lag kinds' lags).
int intervention_has_strength(InterventionKind k);
// Parses the value of `intervene=KIND[:S1,S2,...]` into *kind and strengths[]; returns how many
// (the kind's defaults when no list is given, 1 for a kind without strengths). Exit 2 naming the
// key `intervene` on an unknown kind, a list on a kind without strengths, or a strength out of
// range (flatten in [0, 1], topk an integer >= 1, sharpen and temperature > 0, a lag an integer in
// [0, 63]). The lag kinds' default is every lag 0..15; a pass runs those inside the changed
// layer's window (intervention_lags).
#define INTERVENTION_MAX_LAG 63
int intervention_parse(const char *value, InterventionKind *kind, double *strengths);

typedef struct {
    InterventionKind kind;
    double strength;  // eps, k, p or tau (unused by the other kinds)
    int layer;        // -1: every layer
    int head;         // -1: every head
    int all_rows;     // 1: every row; 0: the query rows (positions with a target)
} Intervention;

// What one row's transform needs besides its weights (MQAR; kv_pairs 0 elsewhere).
typedef struct {
    int kv_pairs;   // the sequence's pairs: value positions 2p + 1, p < kv_pairs
    int value_pos;  // the answer's value position, -1 when the row has none
    int window;     // the layer's answer window width (eval/sparsity.h)
    uint64_t seed;  // derange's draw for this row
} RowContext;

// Transforms the row a[0..n) in place (positions past n untouched). Returns 1 when the kind
// applies to the row (its o is then recomputed from a'), 0 when it leaves it as it is. scratch
// holds 2 n doubles.
int intervene_row(const Intervention *iv, real *a, int n, const RowContext *rc, double *scratch);

// What a pass measured after the change.
typedef struct {
    ValStats stats;  // loss and accuracy of the changed forward passes
    long sequences;
    // over the query rows of the intervened maps (every map of a head counted): their number, the
    // mean S, effective tokens n S^2, and (MQAR, the rows whose pair was found) answer share,
    // answer-window share and a uniform row's shares (chance)
    long rows_recall, rows_answer;
    double S_recall, eff_tokens_recall, ans_share, ans_window_share, ans_chance, ans_window_chance;
    // the accuracy's 95% bootstrap interval over the sequences (eval/interval.h)
    double acc_lo, acc_hi;
    double acc_permuted;  // derange_values: the share answered with the permuted input's value (NAN: other kinds)
    // over the answer rows: the contribution shares |a_ij| ||v_j|| / sum_l |a_il| ||v_l|| of the
    // answer and of its window with a uniform row's (chance: ||v|| shares), and the margins of the
    // answer's weight share (its window's) over the largest other pair's value's (window's)
    double contrib_share, contrib_chance, contrib_window_share, contrib_window_chance, ans_margin, ans_window_margin;
    // patch: the changed-key rows where A and A' predict apart, the share of them that follows
    // A', and the share of the other query rows whose prediction moved (NAN: other kinds)
    long patch_rows;
    double patch_follows, patch_control;
} InterventionResult;

// derange_values's input: the values of the K pairs of an MQAR sequence in[0..T) (at 2p + 1)
// permuted by a random cyclic permutation drawn from seed (every pair gets another's value), in
// place, and the labels of the queries changed with them: tg_perm[i] is the value the permuted
// sequence pairs with query i's key (-100 where tg has no target). Fewer than 2 pairs: unchanged.
void intervene_permute_values(int *in, const int *tg, int *tg_perm, int T, int K, uint64_t seed);

// The lags of strengths[0..n) that fall inside the answer window of layer (every layer: the
// widest), in order, into lags[]; returns how many. A point-window map (softmax) has lag 0 only.
int intervention_lags(const Model *m, int layer, const double *strengths, int n, double *lags);

// The validation pass of sparsity_eval's sequences (eval_batches, sparsity_rows) with iv applied
// at every forward. Deterministic for any thread count. Exit 2 (naming `intervene`) for
// temperature on a layer whose mixer has no softmax logits (theory other than exp).
void intervene_eval(Model *m, const Dataset *val, int B, int T, long eval_batches, long sparsity_rows,
                    const Intervention *iv, InterventionResult *out);

// The intervention record (core/runlog.h; fields: docs/interventions.md#interventionjsonl) of one
// pass at `step`: options is the key's "intervene=KIND[:S] rows=R[ other options]" (the caller's:
// intervention_options), split "val" or "test", seconds the pass's time.
void intervention_write_record(FILE *f, long step, const Intervention *iv, const InterventionResult *r, const char *split,
                               const char *checkpoint, const char *mixer, const char *options, double seconds);
// "intervene=flatten:0.3 rows=query" and, after a space, `rest` (the evaluation's other options).
void intervention_options(char *buf, size_t n, const Intervention *iv, const char *rest);
