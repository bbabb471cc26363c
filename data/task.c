#include "data/task.h"

#include <stdio.h>
#include <string.h>

#include "core/io.h"

static MqarSpec mqar_spec(const Config *c, int vocab, uint32_t seed, long n) {
    MqarSpec s = {
        .vocab_size = vocab,
        .seq_len = (int)cfg_int(c, "seq_len"),
        .kv_pairs = (int)cfg_int(c, "mqar_kv_pairs"),
        .power_a = cfg_float(c, "mqar_power_a"),
        .random_filler = cfg_bool(c, "mqar_random_filler"),
        .seed = seed,
        .n_examples = n,
    };
    return s;
}

int task_mqar_cells(const Config *c, const char *key, MqarCell *cells) {
    const char *text = cfg_str(c, key);
    int T = (int)cfg_int(c, "seq_len");
    if (!*text && !strcmp(key, "mqar_test_cells")) key = "mqar_cells", text = cfg_str(c, key);
    int vocab = (int)cfg_int(c, "vocab_size");
    if (vocab == 0) vocab = 8192;  // zoology's MQAR vocabulary
    if (!*text) {
        MqarSpec one = mqar_spec(c, vocab, 0, 1);
        const char *err = mqar_spec_error(&one);
        if (err) die_input("mqar: %s (vocab_size %d, seq_len %d, mqar_kv_pairs %d)", err, vocab, T, one.kv_pairs);
        cells[0] = (MqarCell){one.kv_pairs, T};
        return 1;
    }
    char err[256];
    int n = mqar_cells_parse(text, cells, MQAR_MAX_CELLS, err, sizeof err);
    if (n < 0) die_input("%s: %s: %s", cfg_origin(c, key), key, err);
    for (int i = 0; i < n; i++) {
        int K = cells[i].kv_pairs, L = cells[i].seq_len;
        if (L > T)
            die_input("%s: %s: cell %dx%d is %d tokens long, above seq_len = %d (the model's positions; "
                      "expected lengths <= seq_len)",
                      cfg_origin(c, key), key, K, L, L, T);
        if (4 * K > L)
            die_input("%s: %s: cell %dx%d: %d pairs do not fit in %d tokens (expected 4 x pairs <= length)",
                      cfg_origin(c, key), key, K, L, K, L);
        if (L % 2) die_input("%s: %s: cell %dx%d: expected an even length", cfg_origin(c, key), key, K, L);
        if (vocab <= L)
            die_input("%s: %s: cell %dx%d: vocab_size %d must be greater than the length", cfg_origin(c, key), key, K,
                      L, vocab);
    }
    return n;
}

// The config's vocab_size (0: from the task), within the bound of shards and the tokenizer; MQAR
// shuffles the whole vocabulary for every example (2147483647 spun for minutes at 4 GB before
// printing anything).
static int checked_vocab(const Config *c) {
    int vocab = (int)cfg_int(c, "vocab_size");
    if (vocab > DATASET_MAX_VOCAB)
        die_input("%s: vocab_size: expected at most %d (the largest vocabulary of shards and tokenizers), got %d",
                  cfg_origin(c, "vocab_size"), DATASET_MAX_VOCAB, vocab);
    return vocab;
}

// mqar_generate's working set for one cell of N examples (keys, values, gaps [N, K]; the vocabulary
// half it draws from; the gap distribution) and, for a cell shorter than the rows, its unpadded copy.
static double mqar_generator_bytes(MqarCell cell, long N, int vocab, int T) {
    double space = (cell.seq_len - 2.0 * cell.kv_pairs) / 2;
    double b = 3.0 * N * cell.kv_pairs * sizeof(int) + (vocab - vocab / 2) * (double)sizeof(int) + space * 24;
    if (cell.seq_len < T) b += 2.0 * N * cell.seq_len * sizeof(int32_t);
    return b;
}

TaskPlan task_plan(const Config *c) {
    TaskPlan p = {0};
    int T = (int)cfg_int(c, "seq_len");
    p.vocab_size = checked_vocab(c);
    if (strcmp(cfg_str(c, "task"), "mqar")) {  // shards: memory-mapped, the vocabulary may come from them
        p.targets_per_seq = T;
        return p;
    }
    if (p.vocab_size == 0) p.vocab_size = 8192;
    MqarCell cells[2][MQAR_MAX_CELLS];
    int n[2] = {task_mqar_cells(c, "mqar_cells", cells[0]), task_mqar_cells(c, "mqar_test_cells", cells[1])};
    static const char *keys[2] = {"mqar_train_examples", "mqar_test_examples"};
    double held[2], gen = 0;
    for (int split = 0; split < 2; split++) {
        long N = cfg_int(c, keys[split]);
        held[split] = 2.0 * N * n[split] * T * sizeof(int32_t);  // inputs and labels [n_cells * N, T]
        for (int i = 0; i < n[split]; i++) {
            double g = mqar_generator_bytes(cells[split][i], N, p.vocab_size, T);
            if (g > gen) gen = g;
            if (cells[split][i].kv_pairs > p.targets_per_seq) p.targets_per_seq = cells[split][i].kv_pairs;
        }
    }
    p.data_bytes = held[0] + held[1] + gen;  // both splits held, the largest cell's generator on top
    p.data_key = held[1] > held[0] ? keys[1] : keys[0];
    return p;
}

void task_open(Task *t, Config *c, int need_train) {
    memset(t, 0, sizeof *t);
    int T = (int)cfg_int(c, "seq_len");
    int vocab = checked_vocab(c);
    char buf[32];
    if (!strcmp(cfg_str(c, "task"), "mqar")) {
        if (vocab == 0) vocab = 8192;  // zoology's MQAR vocabulary
        MqarCell train_cells[MQAR_MAX_CELLS], test_cells[MQAR_MAX_CELLS];
        // (./evaluate, need_train = 0, may have raised seq_len to its longest test cell: the training
        // cells are not built, nor checked against it)
        int n_train = need_train ? task_mqar_cells(c, "mqar_cells", train_cells) : 0;
        int n_test = task_mqar_cells(c, "mqar_test_cells", test_cells);
        if (need_train) {
            MqarSpec train = mqar_spec(c, vocab, (uint32_t)cfg_int(c, "mqar_seed"), cfg_int(c, "mqar_train_examples"));
            dataset_mqar_cells(&t->train, &train, train_cells, n_train, T);
            t->has_train = 1;
        }
        MqarSpec test = mqar_spec(c, vocab, (uint32_t)cfg_int(c, "mqar_test_seed"), cfg_int(c, "mqar_test_examples"));
        dataset_mqar_cells(&t->val, &test, test_cells, n_test, T);
        t->has_val = 1;
        for (int i = 0; i < n_train; i++)
            if (train_cells[i].kv_pairs > t->targets_per_seq) t->targets_per_seq = train_cells[i].kv_pairs;
        for (int i = 0; i < n_test; i++)
            if (test_cells[i].kv_pairs > t->targets_per_seq) t->targets_per_seq = test_cells[i].kv_pairs;
    } else {
        const char *train_glob = cfg_str(c, "train_data"), *val_glob = cfg_str(c, "val_data");
        if (need_train) {
            if (!*train_glob) die_input("train_data: task = shards needs a glob of token shards");
            dataset_shards(&t->train, train_glob, "train_data", T, vocab);
            t->has_train = 1;
            if (vocab == 0) vocab = t->train.vocab_size;
        }
        if (*val_glob) {
            dataset_shards(&t->val, val_glob, "val_data", T, vocab);
            t->has_val = 1;
            if (vocab == 0) vocab = t->val.vocab_size;
        }
        if (vocab == 0) die_input("vocab_size: cannot be taken from the data without train_data or val_data");
        t->targets_per_seq = T;
    }
    t->vocab_size = vocab;
    snprintf(buf, sizeof buf, "%d", vocab);
    if (cfg_int(c, "vocab_size") == 0) config_set(c, "vocab_size", buf, "task");
}

void task_close(Task *t) {
    if (t->has_train) dataset_free(&t->train);
    if (t->has_val) dataset_free(&t->val);
    memset(t, 0, sizeof *t);
}
