// One training step, the same for ./train and the bench (bench/bench.c): forward and backward on
// one batch, the gradient's global norm, clipping, the optimizer's update. What goes around it
// (the batch, the learning rate's schedule, what to do with a non-finite loss, the logs) is the
// caller's: train.c draws batches from the loader and follows nan_policy; the bench feeds random
// tokens or the task's batches at a constant learning rate and times each step.
#pragma once
#include <stdint.h>

#include "model/model.h"
#include "trainer/optim.h"

typedef struct {
    double loss;                 // mean cross-entropy over the batch's positions with a target (0 when none)
    double acc;                  // the share of those positions whose argmax is the target
    double norm;                 // the gradient's global L2 norm, before clipping
    double lr;                   // the learning rate of the update
    double fwd_s, bwd_s, upd_s;  // wall-clock seconds: forward, backward, then norm + clip + update
    double head_s;               // of fwd_s: the LM head, whose gradient the forward computes (model.c)
    // focus_penalty or answer_supervision on (model/focus.h; focus = 1): the terms added to the
    // loss above (lambda x (1 - S_recall), mu x answer_ce; 0 for a term without rows) and their parts
    // (NaN: no such row in the batch). loss stays the cross-entropy alone.
    int focus;
    double focus_penalty, answer_supervision, S_recall, answer_ce;
} StepStats;

// A step on inputs/targets [B, T] (targets < 0 are not counted) at learning rate lr, gradients
// clipped to a global norm of clip (0: not clipped). Returns 1 when the parameters were updated,
// 0 when the loss or the norm is not finite: then nothing is updated, the optimizer's step count
// included, and the gradients are left for the caller to find where the non-finite value is.
int train_step(Model *m, Optimizer *opt, const int32_t *inputs, const int32_t *targets, int B, int T, double lr,
               double clip, StepStats *r);
