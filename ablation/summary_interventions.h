// The summary's interventions (docs/sweeps.md#interventions-in-the-summary): what after_run's
// `./evaluate intervene=...` records say per group, over its held-out seeds, at each run's
// causal recall layer. Tables in summary.md, every record in summary_interventions.csv (summary.c
// writes both through these), and a figure per kind (summary_figures.c's plot_interventions).
#pragma once
#include <stdio.h>

#include "ablation/summary_data.h"

// 1 when a point's records count in the intervention tables: a finished run that counts in the
// grouped table (summary_data.h), not a two-stage sweep's selection seed, with records.
int summary_iv_counts(const RunSummary *r);
// 1 when some point's do.
int summary_has_interventions(const Summary *s);
// Group g's curve for `kind` at its runs' causal layers: the distinct strengths in increasing
// order (one NAN for a kind without) and per strength the mean over the runs that have it of
// the accuracy and S_recall (n_runs: how many). Returns how many strengths (at most max).
int summary_iv_curve(const Summary *s, int g, int kind, double *strength, double *acc, double *S, int *n_runs, int max);
void write_interventions_md(const Summary *s, FILE *f);
void write_interventions_csv(const Summary *s, FILE *f);
