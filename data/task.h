// The task named by the config: its training and validation datasets and its vocabulary.
#pragma once
#include "core/config.h"
#include "data/dataset.h"

typedef struct {
    Dataset train, val;
    int has_train, has_val;
    int vocab_size;      // resolved (the config's vocab_size, or from the task / data when 0)
    int targets_per_seq; // most positions with a target in one sequence (MQAR: K; text: T)
} Task;

// Opens the task. When the config's vocab_size is 0 it is set to the resolved value, so the
// effective config records it. need_train = 0 skips building the training set.
void task_open(Task *t, Config *c, int need_train);
void task_close(Task *t);
