// What a sweep point's run folder says (docs/sweeps.md#the-summary): its status, metrics.jsonl,
// sparsity.jsonl and intervention.jsonl, read into a RunSummary for the sweep's summary (summary.h) and selection.
#pragma once
#include "ablation/run_interventions.h"
#include "eval/derived.h"

#define SUMMARY_TARGET_ACC DERIVED_TARGET_ACC  // eval/derived.h

// RUN_NOT_SELECTED: a second-stage point of a two-stage sweep at a value the selection did not
// choose (docs/sweeps.md#two-stage-sweeps): never run, left out of the grouped figures.
// RUN_RUNNING: another process (a ./train of another engine, or started by hand) holds the run
// folder's lock: the point is neither failed nor finished (set by ./sweep, like RUN_FAILED).
typedef enum { RUN_MISSING, RUN_PARTIAL, RUN_DONE, RUN_FAILED, RUN_NOT_SELECTED, RUN_RUNNING, RUN_N_STATUS } RunStatus;

// A point's part in a two-stage sweep.
typedef enum { SEL_NONE, SEL_CHOSEN, SEL_NOT_CHOSEN } Selected;

#define SUMMARY_MAX_CELLS 32

// One layer's figures at one sparsity step, means over its heads (NAN: not measured): the query
// rows' S and effective tokens (n S^2) with the one-hot floor, the recall share (the answer
// window's, eval/derived.h) and argmax hit with a uniform row's chance, and the rows the model
// answered right and wrong apart.
typedef struct {
    long step;
    int layer;  // -1: none
    double S, share, hit, chance, eff_tokens, onehot;
    double S_right, S_wrong, share_right, share_wrong;
    double rows_right, rows_wrong;
} RecallAt;

typedef struct {
    RunStatus status;   // from the folder; RUN_FAILED is set by the caller that ran it
    int has_metrics;    // the folder has a metrics.jsonl
    int exit_code;      // RUN_FAILED: the exit status of ./train
    long running_pid;   // RUN_RUNNING: the process that holds the folder (0: unknown)
    long step;          // last step logged
    double final_loss;  // last eval record's loss (NAN: none)
    int protocol;       // the run record's (RUNLOG_PROTOCOL); 0: an older log, whose val records read the test set
    // the run record's provenance (core/provenance.h): "" when the record has none (an older log)
    char commit[64], compiler[128], cpu[128], gemm[32];
    double best_acc;           // highest validation accuracy (NAN: none)
    long best_step;            // its step (the first on ties; -1: none)
    double test_acc;           // the test set, read once at the end (NAN: not read)
    double test_lo, test_hi;   // its 95% interval over examples (eval/interval.h; NAN: an older log)
    long test_step;            // the step whose weights it read (-1: none)
    char test_selected[8];     // "best" or "last"
    long steps_to_target;      // first eval step with acc >= SUMMARY_TARGET_ACC; -1: never
    double minutes_to_target;  // training time to that step, from the train records (NAN: unknown)
    double minutes;            // training time to the last train record (NAN: no train records)
    double tok_per_s;          // mean over the train records (NAN: none)
    // sparsity.jsonl at its last step
    long S_step;  // -1: no sparsity records
    int n_layers;
    double *S_mean, *S_min, *S_recall;               // [n_layers]: mean and min over heads of S, mean S_recall
    double S_min_all, S_mean_all, S_recall_min_all;  // over every (layer, head)
    // per sparsity step: the most focused layer's S (the min over layers of the mean over heads)
    // and the recall layer's S_recall (the layer of the last step, mean over heads; NAN: none)
    int n_curve;
    double *curve_step, *curve_S, *curve_recall;
    // capacity (docs/mqar.md#mixtures-of-cells)
    double state_floats;                      // the run record's numbers carried per layer (NAN: none)
    int n_cells;                              // MQAR test cells with their own figures (0: one cell)
    char cell[SUMMARY_MAX_CELLS][24];         // "kv4_L64"
    double cell_acc[SUMMARY_MAX_CELLS];       // at the evaluation of the best mean accuracy
    double cell_S_recall[SUMMARY_MAX_CELLS];  // recall layer's mean over heads, last sparsity step
    int recall_layer;                         // the layer whose query rows put most weight on the answer (-1: none)
    // the recall layer at the last sparsity step, means over heads (NAN: no answer metrics)
    double recall_S, recall_ans_share, recall_ans_hit;
    RecallAt last, best;   // the recall layer's figures at the last sparsity step and the best step
    RecallAt *layer_last;  // [n_layers] every layer's at the last sparsity step
    int capped_improving;  // finished by its step cap below the target while still improving
    Selected selected;     // set by ./sweep for a two-stage sweep's first-stage points
    RunInterventions iv;   // intervention.jsonl (after_run's records; n = 0: none)
} RunSummary;

// Reads a run folder (missing files give RUN_MISSING; unreadable lines are skipped).
void run_summary_read(const char *dir, RunSummary *r);
void run_summary_free(RunSummary *r);
// 1 when the folder's metrics.jsonl ends with the {"type":"done"} record ./train writes when a
// run is complete (all its steps, or stop_at_acc reached).
int run_finished(const char *dir);
// 1 when a run folder has checkpoints but no metrics.jsonl: the run's records are lost, and a
// resume would log only what follows its checkpoint (a finished run: only its done record).
int run_records_lost(const char *dir);
