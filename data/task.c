#include "data/task.h"

#include <stdio.h>
#include <stdlib.h>
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
    MqarCell cells[3][MQAR_MAX_CELLS];
    int n[3] = {task_mqar_cells(c, "mqar_cells", cells[0]), task_mqar_cells(c, "mqar_test_cells", cells[1]), 0};
    n[2] = n[1];  // validation: the test cells
    memcpy(cells[2], cells[1], sizeof cells[1]);
    static const char *keys[3] = {"mqar_train_examples", "mqar_test_examples", "mqar_val_examples"};
    double held[3], gen = 0, total = 0;
    int most = 0;
    for (int split = 0; split < 3; split++) {
        long N = cfg_int(c, keys[split]);
        held[split] = 2.0 * N * n[split] * T * sizeof(int32_t);  // inputs and labels [n_cells * N, T]
        total += held[split] + N * n[split] * 8.0;               // + the hashes of the disjointness check
        if (held[split] > held[most]) most = split;
        for (int i = 0; i < n[split]; i++) {
            double g = mqar_generator_bytes(cells[split][i], N, p.vocab_size, T);
            if (g > gen) gen = g;
            if (cells[split][i].kv_pairs > p.targets_per_seq) p.targets_per_seq = cells[split][i].kv_pairs;
        }
    }
    p.data_bytes = total + gen;  // the three splits held, the largest cell's generator on top
    p.data_key = keys[most];
    return p;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

// The sorted hashes of every sequence of ds (allocated).
static uint64_t *sorted_hashes(const Dataset *ds) {
    uint64_t *h = mallocCheck(sizeof(uint64_t) * (size_t)(ds->n ? ds->n : 1));
    for (long i = 0; i < ds->n; i++) h[i] = dataset_sequence_hash(ds, i);
    qsort(h, (size_t)ds->n, sizeof *h, cmp_u64);
    return h;
}

static int holds(const uint64_t *sorted, long n, uint64_t h) {
    return bsearch(&h, sorted, (size_t)n, sizeof h, cmp_u64) != NULL;
}

// How many sequences of ds have their hash in sorted[n].
static long count_held(const uint64_t *sorted, long n, const Dataset *ds) {
    long held = 0;
    for (long i = 0; i < ds->n; i++) held += holds(sorted, n, dataset_sequence_hash(ds, i));
    return held;
}

// Validation keeps no sequence that train (its sorted hashes) or test holds.
static void drop_shared_validation(Task *t, const Config *c, const uint64_t *train) {
    uint64_t *test = sorted_hashes(&t->test);
    unsigned char *keep = mallocCheck((size_t)(t->val.n ? t->val.n : 1));
    for (long i = 0; i < t->val.n; i++) {
        uint64_t h = dataset_sequence_hash(&t->val, i);
        keep[i] = !holds(train, t->train.n, h) && !holds(test, t->test.n, h);
    }
    long n = t->val.n;
    t->val_dropped = dataset_keep(&t->val, keep);
    free(keep), free(test);
    if (t->val.n == 0)
        die_input("%s: mqar_val_examples: all %ld validation sequences also occur in train or test (the cells have "
                  "too few distinct sequences; expected a larger vocab_size or longer cells)",
                  cfg_origin(c, "mqar_val_examples"), n);
    for (int k = 0; k < t->val.n_cells; k++)
        if (t->val.cell_first[k + 1] == t->val.cell_first[k])
            die_input("%s: mqar_val_examples: every validation sequence of cell %dx%d also occurs in train or test "
                      "(expected a cell with more distinct sequences)",
                      cfg_origin(c, "mqar_val_examples"), t->val.cells[k].kv_pairs, t->val.cells[k].seq_len);
}

static void open_mqar(Task *t, Config *c, int splits, int vocab) {
    int T = (int)cfg_int(c, "seq_len");
    MqarCell train_cells[MQAR_MAX_CELLS], test_cells[MQAR_MAX_CELLS];
    // validation needs train and test to be checked against: built, then dropped if not asked for
    int build = splits & TASK_VAL ? TASK_ALL : splits;
    // (./evaluate may have raised seq_len to its longest test cell: the training cells fit all the
    // more; without training, they are not built, nor checked)
    int n_train = build & TASK_TRAIN ? task_mqar_cells(c, "mqar_cells", train_cells) : 0;
    int n_test = task_mqar_cells(c, "mqar_test_cells", test_cells);
    static const struct {
        int split;
        const char *seed, *examples;
    } splits_keys[3] = {{TASK_TRAIN, "mqar_seed", "mqar_train_examples"},
                        {TASK_VAL, "mqar_val_seed", "mqar_val_examples"},
                        {TASK_TEST, "mqar_test_seed", "mqar_test_examples"}};
    Dataset *ds[3] = {&t->train, &t->val, &t->test};
    int *has[3] = {&t->has_train, &t->has_val, &t->has_test};
    for (int k = 0; k < 3; k++) {
        if (!(build & splits_keys[k].split)) continue;
        MqarSpec spec = mqar_spec(c, vocab, (uint32_t)cfg_int(c, splits_keys[k].seed), cfg_int(c, splits_keys[k].examples));
        if (k == 0) dataset_mqar_cells(ds[k], &spec, train_cells, n_train, T);
        else dataset_mqar_cells(ds[k], &spec, test_cells, n_test, T);
        *has[k] = 1;
    }
    t->test_in_train = -1;
    if ((build & TASK_TRAIN) && (build & TASK_TEST)) {  // always so when validation is built
        uint64_t *train = sorted_hashes(&t->train);
        t->test_in_train = count_held(train, t->train.n, &t->test);
        if (build & TASK_VAL) drop_shared_validation(t, c, train);
        free(train);
    }
    for (int k = 0; k < 3; k++)
        if (*has[k] && !(splits & splits_keys[k].split)) dataset_free(ds[k]), *has[k] = 0;
    for (int i = 0; i < n_train; i++)
        if (train_cells[i].kv_pairs > t->targets_per_seq) t->targets_per_seq = train_cells[i].kv_pairs;
    for (int i = 0; i < n_test; i++)
        if (test_cells[i].kv_pairs > t->targets_per_seq) t->targets_per_seq = test_cells[i].kv_pairs;
}

void task_open(Task *t, Config *c, int splits) {
    memset(t, 0, sizeof *t);
    int T = (int)cfg_int(c, "seq_len");
    int vocab = checked_vocab(c);
    char buf[32];
    if (!strcmp(cfg_str(c, "task"), "mqar")) {
        if (vocab == 0) vocab = 8192;  // zoology's MQAR vocabulary
        open_mqar(t, c, splits, vocab);
    } else {
        const char *train_glob = cfg_str(c, "train_data"), *val_glob = cfg_str(c, "val_data");
        if (splits & TASK_TRAIN) {
            if (!*train_glob) die_input("train_data: task = shards needs a glob of token shards");
            dataset_shards(&t->train, train_glob, "train_data", T, vocab);
            t->has_train = 1;
            if (vocab == 0) vocab = t->train.vocab_size;
        }
        if (*val_glob && (splits & TASK_VAL)) {
            dataset_shards(&t->val, val_glob, "val_data", T, vocab);
            t->has_val = 1;
            if (vocab == 0) vocab = t->val.vocab_size;
        }
        if (vocab == 0) die_input("vocab_size: cannot be taken from the data without train_data or val_data");
        t->targets_per_seq = T;
        t->test_in_train = -1;
    }
    t->vocab_size = vocab;
    snprintf(buf, sizeof buf, "%d", vocab);
    if (cfg_int(c, "vocab_size") == 0) config_set(c, "vocab_size", buf, "task");
}

void task_close(Task *t) {
    if (t->has_train) dataset_free(&t->train);
    if (t->has_val) dataset_free(&t->val);
    if (t->has_test) dataset_free(&t->test);
    memset(t, 0, sizeof *t);
}
