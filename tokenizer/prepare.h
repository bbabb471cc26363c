// Text -> llm.c token shards for `task = shards`. Documents are blank-line separated paragraphs
// (a line holding only whitespace ends one; so does the end of a file), or whole files. Every
// document is preceded by <|endoftext|>, so the token stream reads EOT doc EOT doc ... like
// llm.c's data scripts. Document i goes to validation when floor((i+1) f) > floor(i f) for
// f = val_fraction: an evenly spaced, exact share, no randomness. Or, with val_input, every
// document of the inputs it marks goes to validation and every other to training (a split by
// file: no part of a validation file, e.g. a play's scenes, is trained on). Each split is cut into shards
// of shard_tokens tokens (a document may continue in the next shard): PREFIX_train_000.bin, ...,
// PREFIX_val_000.bin, ... (uint16 tokens; uint32 when the vocabulary needs it).
#pragma once
#include <stdint.h>

#include "tokenizer/bpe.h"

typedef struct {
    const char *out;      // PREFIX
    double val_fraction;  // [0, 1)
    long shard_tokens;    // > 0
    int by_file;          // 1: a document is a file; 0: paragraphs
    int progress;         // live line on a terminal
    // NULL: val_fraction picks the validation documents; else val_input[i] = 1 sends every
    // document of input i to validation, 0 to training (val_fraction is not used)
    const unsigned char *val_input;
} PrepareOptions;

typedef struct {
    long docs[2], tokens[2];  // [0] train, [1] val
    int shards[2];
    uint64_t bytes;  // text bytes read
} PrepareStats;

void prepare_shards(Bpe *bpe, char *const *inputs, int n_inputs, const PrepareOptions *o, PrepareStats *st);
// The shard path of split s (0 train, 1 val) number k: PREFIX_train_%03d.bin (allocated).
char *prepare_shard_path(const char *prefix, int split, int k);
