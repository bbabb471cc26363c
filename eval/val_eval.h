// Validation loss and task accuracy: the model over the validation set in loader order, summed over
// the positions that carry a target. On an MQAR mixture every cell is measured on its own (the
// first eval_batches batches of B sequences of each cell; all of them when eval_batches = 0; a
// cell's last batch may be short) and the accuracy is the mean over the cells, as Zoology reports
// it; a one-cell set gives exactly the accuracy of its positions.
#pragma once
#include <stdio.h>

#include "core/runlog.h"
#include "data/dataset.h"
#include "eval/interval.h"
#include "model/model.h"

typedef struct {
    HeadStats all;  // summed over every sequence evaluated
    int n_cells;    // MQAR cells measured (0: not MQAR)
    MqarCell cells[MQAR_MAX_CELLS];
    HeadStats cell[MQAR_MAX_CELLS];  // per cell
} ValStats;

ValStats val_eval(Model *m, const Dataset *val, int B, int T, long eval_batches);
// The same pass, appending each sequence's counts to ex (eval/interval.h; NULL: none): the test
// pass at the end of a run, whose accuracy gets its interval over examples.
ValStats val_eval_examples(Model *m, const Dataset *val, int B, int T, long eval_batches, ExampleCounts *ex);
// Adds one batch's stats to the total and, on MQAR, to cell c's.
void val_stats_add(ValStats *v, int c, const HeadStats *s);
// Mean loss over every position with a target (0 when nothing was counted).
double val_loss(const ValStats *v);
// The mean of the cells' accuracies (Zoology's number); without cells the accuracy of all positions.
double val_acc(const ValStats *v);
// Accuracy of the positions of one HeadStats (0 when nothing was counted).
double head_acc(const HeadStats *s);
// The sequences a pass over cell c of val measures: the first eval_batches x B of the cell (all of
// them when eval_batches = 0), as indices into val. Returns the count.
long val_cell_range(const Dataset *val, int c, int B, long eval_batches, long *first);
// The eval record of v at step (core/runlog.h): loss, accuracy and, on a mixture (2 or more cells),
// each cell's accuracy (acc_kv4_L64, ...). rec holds ./evaluate's own fields (checkpoint, mixer,
// sequences, options; NULL / -1 for the trainer's record); the rest is filled here.
void val_write_record(FILE *f, long step, const ValStats *v, RunlogEval *rec);
// The same with the per-example counts of the pass (ex: val_eval_examples's) and the 95%
// interval of the accuracy over them (examples_interval).
void val_write_record_examples(FILE *f, long step, const ValStats *v, const ExampleCounts *ex, RunlogEval *rec);
// The same as text for the log: "kv4_L64 0.990 | kv8_L128 0.871" (empty without a mixture).
void val_format_cells(char *buf, size_t n, const ValStats *v);
