// Optimizers over the model's parameter arena (PyTorch semantics), gradient clipping and the
// learning-rate schedule.
#pragma once
#include <stddef.h>

#include "core/real.h"
#include "model/model.h"

typedef enum { OPT_ADAMW, OPT_SGD } OptimizerKind;
typedef enum { LR_CONSTANT, LR_LINEAR, LR_COSINE } LrSchedule;

typedef struct {
    OptimizerKind kind;
    double beta1, beta2, eps, weight_decay;
    real *m, *v;  // AdamW moments [n_params] (NULL for sgd)
    size_t n;
    long t;  // steps taken
} Optimizer;

void optim_init(Optimizer *o, OptimizerKind kind, size_t n_params, double beta1, double beta2, double eps,
                double weight_decay);
// The optimizer the config's keys describe (optimizer, beta1, beta2, eps, weight_decay), for the
// n_params parameters of a model; its moments start at zero.
void optim_from_config(Optimizer *o, const Config *cfg, size_t n_params);
// The config's `optimizer` key (what memory_plan counts: AdamW keeps two moments per parameter).
OptimizerKind optim_kind_from_config(const Config *cfg);
void optim_free(Optimizer *o);
// One step on every tensor of the model's table. AdamW: p *= 1 - lr*wd (tensors with decay),
// then the bias-corrected Adam update. SGD: p -= lr * (g + wd*p on decay tensors).
void optim_step(Optimizer *o, Model *m, double lr);

// Global L2 norm of the gradient arena, summed in a fixed order (thread-count independent).
double grad_global_norm(const real *g, size_t n);
// Scales g so its norm is at most max_norm (PyTorch's clip_grad_norm_: coef = max/(norm+1e-6)).
void grad_clip(real *g, size_t n, double norm, double max_norm);

// Learning rate for the step that follows `step` completed steps out of `total`: linear warmup
// from lr/warmup to lr over warmup steps, then constant / linear / cosine decay to min_lr.
double lr_at(LrSchedule sched, long step, long total, long warmup, double lr, double min_lr);
