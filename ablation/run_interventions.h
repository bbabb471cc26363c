// A run folder's intervention.jsonl (./evaluate intervene=..., run by a sweep's after_run on the
// best-validation checkpoint; docs/interventions.md) as the sweep's summary reads it: the causal
// recall layer (the layer whose ablation costs the most validation accuracy) and what each
// intervention did to the validation accuracy and the query rows' S_recall there.
#pragma once

typedef struct {
    int kind;               // InterventionKind (eval/intervene.h)
    int layer;              // the layer changed (-1: every layer)
    double strength;        // NAN: a kind without strengths (derange, the oracles, ablate, none)
    double acc, S_recall;   // validation accuracy, and the changed layer's query rows' S_recall
    double acc_lo, acc_hi;  // the accuracy's 95% interval (NAN: an older record)
    double acc_permuted;    // derange_values: against the permuted answers (NAN: another kind)
    double share;           // the answer's weight share (ans_share)
    double patch_follows;   // patch: the share of changed answers its patch moved to A''s (NAN: another kind)
    // the contribution shares of the answer and its window with their chance, the margins (NAN: older)
    double contrib, contrib_chance, contrib_window, contrib_window_chance, margin, window_margin;
    double eff_tokens;      // of those rows, n S^2 (1: one-hot)
    double window, chance;  // the answer window's share of their weight, and a uniform row's
} IvRecord;

typedef struct {
    IvRecord *v;  // the validation records of every head on the query rows, in file order
    int n;        // (a record measured again replaces the earlier one)
    long step;    // the checkpoint's step (-1: no records)
    // the causal recall layer: the layer whose patch moved the most changed answers to A''s (the
    // first on ties), where a patch moved any; else the layer whose ablation cost the most
    // accuracy (the first on ties); -1: neither record
    int causal_layer;
    int ablation_layer;  // the ablation rule's layer alone (-1: no ablate record)
    int patch_layer;     // the patching rule's alone (-1: no patch record moved an answer)
    double acc_trained;  // the model as trained (kind none; NAN: none)
} RunInterventions;

// Reads dir/intervention.jsonl; a folder without it gives n = 0. Records of other splits, rows,
// heads or options (another cell, another data set) are left out: they are not the summary's.
void run_interventions_read(const char *dir, RunInterventions *iv);
void run_interventions_free(RunInterventions *iv);
// The record of `kind` on `layer` at `strength` (NAN for a kind without), NULL when none.
const IvRecord *run_intervention(const RunInterventions *iv, int kind, int layer, double strength);
