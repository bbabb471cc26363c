// The figures of a sweep's summary (docs/sweeps.md#the-summary), SVG through eval/svg_plot.h:
// accuracy against d_model and state size, accuracy and S_recall per test cell, S and S_recall
// over steps, and what each intervention did (a figure per kind). Called by summary.c's sweep_write_summary.
#pragma once
#include <stdio.h>

#include "ablation/summary_data.h"

// Each point's plot_series value as the figures name it: the value, then any zip partner that
// varies with it ("linear, short_conv=4"). For Summary.series_of.
char **summary_point_series(const Summary *s);
// The figures, each 1 when drawn, 0 when there is nothing to draw (the caller removes the file),
// -1 when the file cannot be written; what they wrote goes to log.
int plot_accuracy(const Summary *s, const char *path, FILE *log);
int plot_sparsity(const Summary *s, const char *path, int recall, FILE *log);
int plot_acc_vs_state(const Summary *s, const char *path, FILE *log);
int plot_cells(const Summary *s, const char *path, int what, FILE *log);
int plot_interventions(const Summary *s, int kind, const char *path, FILE *log);
