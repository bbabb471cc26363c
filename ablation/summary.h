// A sweep's summary (docs/sweeps.md#the-summary): what each point's run folder says (metrics.jsonl,
// sparsity.jsonl; run_summary.c), tables per point and grouped over seeds (summary.md,
// summary.csv, summary_groups.csv; summary.c) and figures (accuracy against d_model and state
// size, accuracy and S_recall per test cell, S and S_recall over steps; summary_figures.c).
#pragma once
#include <stdio.h>

#include "ablation/run_summary.h"
#include "ablation/sweep_file.h"
#include "core/config.h"

// Writes summary.md, summary.csv, summary_groups.csv and the figures into sw->out. configs are
// the points' effective configs (for mixer, plot_x, ...), runs what their folders hold. Prints
// what it wrote to `log` (when not NULL). 0, or -1 when a file could not be written.
// selection_md (may be NULL): a section of summary.md on a two-stage sweep's choices.
int sweep_write_summary(const SweepFile *sw, Config *configs, const RunSummary *runs, const char *selection_md, FILE *log);
