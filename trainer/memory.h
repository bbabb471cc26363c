// The memory a run needs, estimated before anything big is allocated or generated
// (docs/reliability.md#memory): a run that cannot fit is refused at the start, naming the key that
// makes it large, instead of stalling in the data generator and dying "out of memory" minutes in.
#pragma once
#include "core/config.h"
#include "data/task.h"

typedef struct {
    double params;  // parameters, gradients and the optimizer's state (AdamW: two moments)
    double acts;    // the activation arena and the batch copies (the model's and the trainer's)
    double data;    // the task's data in memory (TaskPlan.data_bytes)
    double total;
    int lower_bound;  // 1: far above the limit, only the embedding and the residual stream were counted
    double limit;     // max_memory, or this machine's memory (the cgroup's limit when lower)
    const char *key;  // the key of the largest part: vocab_size or d_model, batch_size or seq_len, the data's
} MemoryPlan;

// The plan of a run of `cfg` with the task's vocabulary resolved (task->vocab_size > 0).
MemoryPlan memory_plan(const Config *cfg, const TaskPlan *task);
// Refuses a plan above its limit: one line naming the key and the bytes, exit 2.
void memory_check(const MemoryPlan *p, const Config *cfg);
// This machine's memory in bytes (0 when unknown): physical memory, or a cgroup's lower limit.
double memory_available(void);
