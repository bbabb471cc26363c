// The task named by the config: its training, validation and test datasets and its vocabulary
// (docs/mqar.md#splits). MQAR has three splits, each from its own seed: train (mqar_seed), val
// (mqar_val_seed, the test cells) and test (mqar_test_seed, Zoology's test set). Validation
// chooses everything that is chosen (stop_at_acc, the best step, the learning rate of a sweep);
// the test set is read once, at the end of a run, on the best-validation weights. No validation
// sequence is also a training or a test sequence: the few a small cell draws twice are left out
// of val (by dataset_sequence_hash). Text (task = shards) has val_data only: no test split.
#pragma once
#include "core/config.h"
#include "data/dataset.h"

typedef struct {
    Dataset train, val, test;
    int has_train, has_val, has_test;
    long val_dropped;     // MQAR: validation sequences left out because train or test holds the same
    long test_in_train;   // MQAR: test sequences train also holds (kept: the test set is Zoology's);
                          // -1 when not counted (train or test not built)
    int vocab_size;       // resolved (the config's vocab_size, or from the task / data when 0)
    int targets_per_seq;  // most positions with a target in one sequence (MQAR: the largest K; text: T)
} Task;

// Which splits task_open builds.
enum { TASK_TRAIN = 1, TASK_VAL = 2, TASK_TEST = 4, TASK_ALL = 7 };

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

// Opens the splits asked for (TASK_TRAIN | TASK_VAL | TASK_TEST). When the config's vocab_size is
// 0 it is set to the resolved value, so the effective config records it. MQAR's validation set is
// the same whichever splits are asked for: train and test are built to check it against, then
// dropped if not asked for.
void task_open(Task *t, Config *c, int splits);
void task_close(Task *t);
