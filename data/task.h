// The task named by the config: its training and validation datasets and its vocabulary.
#pragma once
#include "core/config.h"
#include "data/dataset.h"

typedef struct {
    Dataset train, val;
    int has_train, has_val;
    int vocab_size;       // resolved (the config's vocab_size, or from the task / data when 0)
    int targets_per_seq;  // most positions with a target in one sequence (MQAR: the largest K; text: T)
} Task;

// The MQAR cells of a split from the config: key is "mqar_cells" (training) or "mqar_test_cells"
// (empty: the training cells); with mqar_cells empty, one cell of mqar_kv_pairs pairs in seq_len
// tokens. Each cell must fit the model (length <= seq_len) and the vocabulary; otherwise exit 2
// with a line naming the key and the cell. Returns the count.
int task_mqar_cells(const Config *c, const char *key, MqarCell *cells);

// What task_open will resolve and hold, known before it builds anything (the memory check runs
// first: generating a large MQAR set takes minutes). MQAR: the vocabulary (8192 when vocab_size is
// 0), the most targets per sequence, and the bytes of both splits plus the generator's largest
// working set, with data_key the split's key that holds the most. Shards are memory-mapped (0
// bytes); vocab_size stays 0 when the data sets it.
typedef struct {
    int vocab_size;
    int targets_per_seq;
    double data_bytes;
    const char *data_key;
} TaskPlan;
TaskPlan task_plan(const Config *c);

// Opens the task. When the config's vocab_size is 0 it is set to the resolved value, so the
// effective config records it. need_train = 0 skips building the training set.
void task_open(Task *t, Config *c, int need_train);
void task_close(Task *t);
