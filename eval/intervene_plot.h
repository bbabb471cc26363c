// The figures of a run folder's intervention.jsonl (docs/interventions.md#figures): per kind,
// dir/intervention_<kind>.svg, accuracy against S_recall after the change, one line per series
// (layer, head, rows and other options, at each step) through its strengths in order, with the
// model as it is (kind none) as a grey point.
#pragma once

// Returns the number of figures written (0 when the file has no records).
int intervention_plot(const char *dir);

// The same over several run folders into out_dir, a line per run and series, labelled names[r] and
// coloured by run (the model as it is in the run's colour): one figure per kind with a line per
// mixer. Returns the number of figures written.
int intervention_plot_runs(const char *out_dir, const char *const *dirs, const char *const *names, int n_runs);
