// Two-stage sweeps (`select = KEY`, docs/sweeps.md#two-stage-sweeps), Zoology's protocol for the
// learning rate: the first stage runs every value of KEY at the first value of each group_over
// key (seed 0); per group of the other keys the value that did best on the validation set is
// chosen (reached the target; then fewest steps to it; then the higher best accuracy; then the
// smaller value); the second stage runs the other group_over values (seeds 1,
// 2) at the chosen value only. The choice is read from the run folders, so it survives restarts
// and works for --print, --slurm and --collect alike.
#pragma once
#include <stdio.h>

#include "ablation/run_summary.h"
#include "ablation/sweep_file.h"

typedef struct {
    int on;         // the sweep has select = KEY
    int n;          // points
    int *stage;     // [n] 1: every group_over key at its first value; 2: the others
    int *value;     // [n] the point's value index on the select axis
    int *rep;       // [n] the point with its select and group_over choices at 0 (names its group)
    int *choice;    // [n] the value index chosen for the point's group; -1 while a first-stage run
                    // of the group is unfinished
    double *acc;    // [n] best validation accuracy of a finished first-stage point (NAN otherwise)
    long *steps;    // [n] its steps to the target (-1: never, or not finished)
    char *on_test;  // [n] 1: its log is older than the validation split (the accuracy is the test set's)
    char *unread;   // [n] 1: a finished first-stage point whose log has no accuracy (its eval
                    // records lost): its group's choice is not made (-1), never a guess
} Selection;

// Reads the first-stage run folders dirs[] and makes the choices. A finished first-stage run
// without an accuracy is not compared as a NaN (which lost to every number and chose another
// value): its group waits, and selection_unread names it for the caller to report.
void selection_make(const SweepFile *sw, char *const *dirs, Selection *s);
void selection_free(Selection *s);
// The first finished first-stage point whose accuracy cannot be read, -1 when none.
int selection_unread(const Selection *s);
// 1 when the point is to run: a first-stage point, or a second-stage one at its group's choice.
int selection_runs(const Selection *s, int point);
// Second-stage points whose group's choice waits for first-stage runs.
int selection_pending(const Selection *s);
// Marks the runs for the summary: first-stage points chosen or not, second-stage points at another
// value RUN_NOT_SELECTED.
void selection_mark(const Selection *s, RunSummary *runs);
// One line's text for the group of point rep (s->rep[rep] == rep): "mixer=gla: lr = 1e-2, best
// accuracy (0.9000 against 0.7000)", or that it waits.
void selection_put_choice(const SweepFile *sw, const Selection *s, int rep, FILE *f);
// summary.md's section on the choices: per group the values, their accuracies, the choice and
// why; allocated (NULL without a selection).
char *selection_markdown(const SweepFile *sw, const Selection *s);
