// Focus forced or forbidden during training (docs/sparsity.md#focus-forced-or-forbidden): two
// terms on the attention maps of one layer (config keys focus_penalty = lambda,
// answer_supervision = mu, focus_layer), added to the training loss after the forward:
//   lambda x (1 - mean S(a_i))  over the layer's query rows i (target >= 0) and maps, with
//                          S = mean_j |a_ij| / sqrt(mean_j a_ij^2) over j <= i (eval/sparsity.h):
//                          a penalty on focus, so lambda > 0 pushes the maps broad (S up) and
//                          lambda < 0 focused;
//   mu x mean -log w_iv    over the query rows that have an MQAR answer (data/mqar.h's
//                          mqar_value_pos, v) and the maps, w_ij = |a_ij| / sum_l |a_il|.
// Their gradient w.r.t. the maps goes to the mixer's backward as MixerIO.dmap; only softmax and
// linear take it, so any other mixer at the chosen layer refuses a nonzero term (exit 2).
#pragma once
#include "core/config.h"
#include "core/real.h"
#include "model/mixers/mixer.h"

// The answer's weight below this counts as this in the cross-entropy (-log 1e-30 = 69): an
// answer weight that underflowed to 0 gives a finite term.
#define FOCUS_W_MIN 1e-30

typedef struct {
    double lambda, mu;  // focus_penalty, answer_supervision (0: off)
    int layer;          // focus_layer (-1 in the config: the last layer)
    int on;             // a term is nonzero
    // The last focus_compute: mean S over the query rows and maps (NaN: none), the mean answer
    // cross-entropy (NaN: no row has an answer), and how many (row, map) pairs each averaged.
    double S_recall, answer_ce;
    long rows_S, rows_answer;
    // The terms they add to the loss: lambda (1 - S_recall) and mu answer_ce (0 without rows).
    double penalty_term, answer_term;
} FocusTerms;

// The buffers focus_compute uses (the model owns them; NULL when the terms are off).
typedef struct {
    real *dmap;      // [B, n_maps, T, T] the maps' gradient, for the chosen layer's backward
    real *maps;      // [threads, T, T] one map per thread
    real *row_S;     // [rows_max * n_maps] S of each query row and map (NaN: an all-zero row)
    real *row_ce;    // [rows_max * n_maps] its answer cross-entropy (NaN: none)
    int *vpos;       // [rows_max] each query row's answer value position (-1: none)
    int *seq_start;  // [B + 1] each sequence's first query row
} FocusWork;

// Reads focus_penalty, answer_supervision and focus_layer from cfg (NULL: off) for a stack of
// n_layer layers with mixers mixer[]. Dies with one line naming the key, exit 2, on a focus_layer
// outside the stack, or on a nonzero term whose layer's mixer is not softmax or linear.
void focus_config(FocusTerms *f, const Config *cfg, int n_layer, const MixerKind *const *mixer);

// After a forward of the layer's mixer k (state st, call io): S and the answer cross-entropy of
// the query rows rows[n_rows] (flat b * T + t, ascending) of inputs and targets [io->B, io->T]
// into f. With want_grad, also w->dmap: the gradient of lambda (1 - mean S) + mu mean CE w.r.t.
// the maps (zero outside the query rows). Returns the two terms' sum (a term with no rows adds 0). Parallel over (sequence, map) and (row, map), sums in a fixed order:
// the same bits at any thread count.
double focus_compute(FocusTerms *f, const MixerKind *k, const void *st, const MixerIO *io, const int *inputs,
                     const int *targets, const int *rows, int n_rows, FocusWork *w, int want_grad);
// penalty_term + answer_term of the last focus_compute.
double focus_loss(const FocusTerms *f);
