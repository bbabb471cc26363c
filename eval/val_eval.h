// Validation loss and task accuracy: the model over the first eval_batches batches of B sequences
// of the validation set in loader order (all of it when eval_batches = 0; the last batch may be
// short), summed over the positions that carry a target.
#pragma once
#include "data/dataset.h"
#include "model/model.h"

HeadStats val_eval(Model *m, const Dataset *val, int B, int T, long eval_batches);
// Mean loss and accuracy of summed stats (0 when nothing was counted).
double val_loss(const HeadStats *s);
double val_acc(const HeadStats *s);
