// Figures derived from the run log's records (core/runlog.h), one definition each, used by the
// trainer, ./evaluate, report.html and ./sweep's summary alike (docs/sparsity.md#where-the-weight-lands,
// docs/sweeps.md#the-summary). A consumer reads the records and asks here; none computes its own.
#pragma once
#include "core/runlog.h"

// The accuracy a run must reach to count as solving its task (Zoology's 0.99).
#define DERIVED_TARGET_ACC 0.99

// A seed's verdict on its task from the 95% interval of its test accuracy (acc_lo, acc_hi of the
// test record; docs/mqar.md#verdicts): "solves" when the lower end is at DERIVED_TARGET_ACC or
// above, "fails" when the upper end is below it, else "undecided"; NULL without an interval.
typedef enum { VERDICT_NONE = -1, VERDICT_SOLVES, VERDICT_UNDECIDED, VERDICT_FAILS, VERDICT_N } Verdict;
Verdict derived_verdict(double acc_lo, double acc_hi);
const char *derived_verdict_name(Verdict v);  // "solves", "undecided", "fails"; "" for none

// The lag oracle's reading (docs/interventions.md#the-lag-oracle) from its passes at lags
// 0..n-1 of one layer: acc[k] the accuracy of oracle_lag:k, ctrl[k], ctrl_lo[k], ctrl_hi[k] its
// control's with the control's 95% interval (NAN: not measured). The best lag is the one of the
// highest oracle accuracy (the first on ties; -1: none measured). The probe is valid for the map
// only when that accuracy beats its control's by more than the control's interval is wide
// (acc - ctrl > ctrl_hi - ctrl_lo); otherwise the map is not one the oracle can probe, and its
// accuracy is no result.
typedef struct {
    int best;        // the best lag, -1 when none
    double acc;      // its accuracy
    double control;  // its control's
    int valid;       // 1: the best lag beats its control beyond the control's interval
} LagReading;
LagReading derived_lag_oracle(const double *acc, const double *ctrl, const double *ctrl_lo, const double *ctrl_hi, int n);

// The share of a head's query-row weight that recall can use: the answer window's when the
// layer's window is wider than the value position (a short convolution, Mamba's d_conv: the
// record then has ans_window_share), else the value position's (ans_share). NAN when neither.
double derived_window_share(const RunlogRecord *sparsity_record);

// The recall layer: the layer whose heads put the largest mean window share on the answer.
// share[l * H + h] (NAN: not measured). -1 when no layer has a share. The sparsity pass computes it
// once at full precision and writes it into every record of its step (`recall_layer`); readers
// take the recorded layer (derived_recorded_recall_layer) and compute it from the records' shares
// only for logs older than the field, so a near tie rounded in the text cannot flip it.
int derived_recall_layer(const double *share, int L, int H);
// The `recall_layer` a sparsity record carries, -1 when it has none (an older log).
int derived_recorded_recall_layer(const RunlogRecord *sparsity_record);

// A validation curve, eval records in log order: step[i], acc[i] (NAN: not measured).
typedef struct {
    long best_step;        // the step of the best accuracy (the first, on ties); -1: none
    double best_acc;       // NAN: none
    long steps_to_target;  // the first step with acc >= target; -1: never
    int still_improving;   // the best of the last quarter of steps beats the best before by > 0.01
                           // (a run capped below the target that had not levelled off)
} DerivedCurve;
void derived_curve(const double *step, const double *acc, long n, double target, DerivedCurve *out);
