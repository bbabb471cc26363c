// The run's scalars in TensorBoard (docs/outputs.md#tensorboard). With tensorboard = true the
// trainer mirrors its train, eval and sparsity records into an event file (core/tfevents.h)
// beside metrics.jsonl. Which record field becomes which tag is decided here, from the records
// themselves, one rule per record type:
//
//   train     train/loss, train/acc, train/lr, train/grad_norm, train/tok_per_s
//   eval      val/loss, val/acc and, on an MQAR mixture, val/acc_kv<K>_L<L> per test cell; the
//             test set's record at the end of a run: test/loss, test/acc, test/acc_kv<K>_L<L>
//   sparsity  sparsity/L<l>_H<h>/S_recall and sparsity/L<l>_H<h>/answer_share, the share of the
//             query rows' weight on the answer (derived_window_share: the answer window's behind
//             a short convolution, else the value position's); sparsity/L<l>_H<h>/S (every row),
//             .../eff_tokens and .../eff_tokens_recall (n S^2); sparsity_test/... on the test set
//   intervention  (./evaluate's mirror, below) intervention/<kind[:strength]>/L<l>[_H<h>]/acc,
//             .../loss, .../S_recall, .../eff_tokens_recall
//
// A record measured under other options (other cells, other data) and a field with no value
// (null, left out) give no scalar. Each value is the float32 of the number the record's text holds: the
// mirror renders a record with the run log's own writer, reads it back with the run log's reader
// and maps that, so TensorBoard and the jsonl files say the same number, bit for bit in float32.
#pragma once
#include "core/runlog.h"
#include "core/tfevents.h"
#include "eval/sparsity.h"
#include "eval/val_eval.h"

// Calls fn for each scalar of record r (tag, value as read from the record); returns the count.
typedef void (*TbScalarFn)(const char *tag, double value, void *ctx);
int tb_record_scalars(const RunlogRecord *r, TbScalarFn fn, void *ctx);

// The trainer's mirror, one event per record, written to w->f (the caller flushes and checks it):
// the train record, the eval record of v at step, and the sparsity records of r at step.
void tb_write_train(TfEvents *w, const RunlogTrain *rec);
// split: "val" or "test" (selected: the test record's "best" or "last"; NULL for val).
void tb_write_eval(TfEvents *w, long step, const ValStats *v, const char *split, const char *selected);
void tb_write_sparsity(TfEvents *w, long step, const char *mixer, const char *split, const SparsityResult *r);

// ./evaluate's mirror, for a run trained with tensorboard = true: the whole of run_dir/eval.jsonl
// and run_dir/intervention.jsonl as one event file in run_dir/evaluate/ (older ones there
// removed). 0, or -1 with a message in err.
int tb_mirror_evaluate(const char *run_dir, char *err, size_t errlen);
