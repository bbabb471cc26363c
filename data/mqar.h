// MQAR, the multi-query associative recall task of Zoology (docs/mqar.md).
// With random_filler = 0 the generator reproduces zoology's numpy code token for token.
#pragma once
#include <stddef.h>
#include <stdint.h>

#define MQAR_IGNORE (-100)

typedef struct {
    int vocab_size;     // V: keys from [1, V/2), values from [V/2, V)
    int seq_len;        // L: even, V > L
    int kv_pairs;       // K: 4K <= L
    double power_a;     // query-gap power law exponent (zoology default 0.01)
    int random_filler;  // 0: filler token 0 (zoology Figure 2); 1: uniform random tokens (our RNG)
    uint32_t seed;      // MT19937 seed
    long n_examples;
} MqarSpec;

// NULL when the spec is valid, else a static message naming what is wrong (e.g. "seq_len must be even").
const char *mqar_spec_error(const MqarSpec *s);
// A cell of Zoology's capacity grids: examples of seq_len tokens holding kv_pairs key-value pairs.
// A run trains on a mixture of cells (mqar_cells) and reports accuracy per test cell.
#define MQAR_MAX_CELLS 32
#define MQAR_MAX_CELL 1000000  // the most pairs, and the longest length, of a cell
typedef struct {
    int kv_pairs, seq_len;
} MqarCell;
// Parses "4x64, 8x128" (PAIRSxLENGTH, separated by commas and/or spaces; no empty entry between
// commas) into cells[max]. Returns
// the count, or -1 with a message in err ("entry '8y128': expected PAIRSxLENGTH such as 8x128").
// Checks the form only; task.c checks each cell against the model and the vocabulary.
int mqar_cells_parse(const char *text, MqarCell *cells, int max, char *err, size_t errlen);
// "kv4_L64": the cell's name in records (acc_kv4_L64, S_recall_kv4_L64).
void mqar_cell_name(MqarCell c, char *buf, size_t n);

// Generates n_examples examples: inputs [n, L] and labels [n, L] (MQAR_IGNORE where unlabelled).
void mqar_generate(const MqarSpec *s, int32_t *inputs, int32_t *labels);
// The deterministic layout of one example from its draws: keys[K], values[K], gaps[K] (distinct in
// [0, (L-2K)/2)). Writes x[L] and y[L]. Exposed for tests.
void mqar_layout(int K, int L, const int *keys, const int *values, const int *gaps, int32_t *x, int32_t *y);
// The value position of query row i of an MQAR sequence inputs[T] whose target is `target`: the
// first j < i with inputs[j] == inputs[i] (the key) whose next token inputs[j + 1] == target and
// j + 1 < i; -1 when there is none. (eval/answer.h's answer_value_pos, and the model's training
// terms on the maps, model/focus.h.)
int mqar_value_pos(const int *inputs, int i, int target);
